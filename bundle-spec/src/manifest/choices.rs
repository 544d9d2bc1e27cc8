//! The closed sets of values a manifest chooses from: the container runtime, the network plugin,
//! whether an image's referrers are bundled.
//!
//! Apart from [`kubernetes`](super::kubernetes): the raw YAML types deserialize these directly,
//! and the kubernetes section's checks read the raw types.

use std::fmt;

use serde::Deserialize;

/// The container runtime of the cluster's nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerRuntime {
    /// containerd (the default).
    #[default]
    Containerd,
    /// Docker Engine, through cri-dockerd.
    Docker,
}

impl ContainerRuntime {
    /// The name as written in a manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Containerd => "containerd",
            Self::Docker => "docker",
        }
    }
}

impl fmt::Display for ContainerRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cluster's network plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cni {
    /// Calico, through the Tigera operator (the default).
    #[default]
    Calico,
    /// Cilium.
    Cilium,
    /// Flannel.
    Flannel,
    /// Hybridnet.
    Hybridnet,
    /// Kube-OVN (KubeKey's config spells it `kubeovn`).
    #[serde(rename = "kube-ovn", alias = "kubeovn")]
    KubeOvn,
    /// No plugin: the user installs one.
    None,
}

impl Cni {
    /// The name as written in a manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Calico => "calico",
            Self::Cilium => "cilium",
            Self::Flannel => "flannel",
            Self::Hybridnet => "hybridnet",
            Self::KubeOvn => "kube-ovn",
            Self::None => "none",
        }
    }
}

impl fmt::Display for Cni {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `multiCni`: a secondary network plugin over [`Cni`], whose image the bundle then carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MultiCni {
    /// None (the default).
    #[default]
    None,
    /// Multus.
    Multus,
}

/// kube-proxy's mode, as far as the bundle is concerned: `ipvs` needs `ipset` and `ipvsadm` on
/// the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KubeProxyMode {
    /// iptables (the default).
    #[default]
    Iptables,
    /// IPVS.
    Ipvs,
}

/// Storage a cluster is meant to have, which brings packages and charts into the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Storage {
    /// NFS: a server on the `nfs` host, the client on every node, and the
    /// nfs-subdir-external-provisioner chart.
    Nfs,
}

/// An optional cluster addon the catalog adds to the bundle (`spec.kubernetes.addons`): its
/// chart and images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Addon {
    /// Spegel: a node-local OCI mirror that serves image layers from each node's containerd
    /// (its OCI chart and image).
    Spegel,
}

/// `referrers:` of an image: whether its OCI referrers (signatures, attestations, SBOMs) are
/// bundled with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Referrers {
    /// Every referrer of the image and of each platform manifest kept (the default).
    #[default]
    All,
    /// None.
    None,
}

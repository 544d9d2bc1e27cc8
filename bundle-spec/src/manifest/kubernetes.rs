//! `spec.kubernetes`: the cluster a bundle installs, expanded later by the builder's catalog.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::choices::{Addon, Cni, ContainerRuntime, KubeProxyMode, MultiCni, Storage};
use super::raw::RawKubernetes;
use super::rules::required;
use super::spanned_map::SpannedMap;

/// The Kubernetes cluster to bundle: the builder's version catalog expands it into the
/// images, binaries and charts that version needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Kubernetes {
    /// The Kubernetes release.
    pub version: KubernetesVersion,
    /// The container runtime the nodes run.
    pub container_runtime: ContainerRuntime,
    /// The network plugin to install.
    pub cni: Cni,
    /// `multiCni`: `multus` adds multus's image, for `cni.multi_cni: multus`.
    pub multi_cni: MultiCni,
    /// `kubeProxyMode`: `ipvs` adds the IPVS tools to every package set.
    pub kube_proxy_mode: KubeProxyMode,
    /// `storage`: `[nfs]` adds the NFS packages and the provisioner chart.
    pub storage: Vec<Storage>,
    /// `addons`: `[spegel]` adds the addon's chart and images; each once, sorted.
    pub addons: Vec<Addon>,
    /// `nodePackages` (default true): whether the catalog adds, to every set of
    /// `spec.osPackages`, the packages the cluster's features need.
    pub node_packages: bool,
    /// `components`: versions chosen in place of the catalog's for that minor, by component
    /// name (`containerd: 2.1.9`), as KubeKey's `containerRuntimes[].version` does.
    pub components: BTreeMap<String, String>,
}

/// The components whose version a manifest may choose (`spec.kubernetes.components`); the
/// others follow the Kubernetes version (kubeadm, kubelet, kubectl) or kubeadm's etcd tag unless
/// named here.
pub(super) const COMPONENTS: [&str; 8] = [
    "containerd",
    "runc",
    "docker",
    "cri-dockerd",
    "crictl",
    "cni-plugins",
    "etcd",
    "helm",
];

/// Whether `version` is a release version: `MAJOR.MINOR.PATCH`, with or without a leading `v`.
fn component_version(version: &str) -> bool {
    let numbers: Vec<&str> = version
        .strip_prefix('v')
        .unwrap_or(version)
        .split('.')
        .collect();
    numbers.len() == 3 && numbers.iter().all(|number| parse_number(number).is_some())
}

/// A Kubernetes release, `vMAJOR.MINOR.PATCH`. Displays with the leading `v`.
///
/// Pre-releases are not accepted: an airgapped cluster is a production cluster, and the
/// catalog only describes releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct KubernetesVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch version.
    pub patch: u32,
}

impl KubernetesVersion {
    /// Parses `vMAJOR.MINOR.PATCH`, rejecting leading zeros as Kubernetes tags never have them.
    pub fn parse(text: &str) -> Option<Self> {
        let mut numbers = text.strip_prefix('v')?.split('.').map(parse_number);
        let version = Self {
            major: numbers.next()??,
            minor: numbers.next()??,
            patch: numbers.next()??,
        };
        numbers.next().is_none().then_some(version)
    }
}

fn parse_number(text: &str) -> Option<u32> {
    let digits_only = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    let leading_zero = text.len() > 1 && text.starts_with('0');
    if digits_only && !leading_zero {
        text.parse().ok()
    } else {
        None
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

pub(super) fn validate(
    file: &Arc<str>,
    raw: &Spanned<RawKubernetes>,
) -> Result<Kubernetes, ManifestError> {
    let version = required(
        raw.value.version.as_ref(),
        "version",
        &SourceLocation::of(file, raw),
    )?;
    let parsed = KubernetesVersion::parse(&version.value).ok_or_else(|| {
        ManifestError::InvalidKubernetesVersion {
            at: SourceLocation::of(file, version),
            version: version.value.clone(),
        }
    })?;
    Ok(Kubernetes {
        version: parsed,
        container_runtime: raw.value.container_runtime,
        cni: raw.value.cni,
        multi_cni: raw.value.multi_cni,
        kube_proxy_mode: raw.value.kube_proxy_mode,
        storage: each_once(&raw.value.storage),
        addons: each_once(&raw.value.addons),
        node_packages: raw.value.node_packages,
        components: components(file, &raw.value.components)?,
    })
}

/// `components`, each name known and each version a release version.
fn components(
    file: &Arc<str>,
    raw: &SpannedMap<Spanned<String>>,
) -> Result<BTreeMap<String, String>, ManifestError> {
    let mut components = BTreeMap::new();
    for (name, version) in &raw.0 {
        if !COMPONENTS.contains(&name.value.as_str()) {
            return Err(ManifestError::UnknownComponent {
                at: SourceLocation::of(file, name),
                name: name.value.clone(),
                known: COMPONENTS.join(", "),
            });
        }
        if !component_version(&version.value) {
            return Err(ManifestError::InvalidComponentVersion {
                at: SourceLocation::of(file, version),
                name: name.value.clone(),
                version: version.value.clone(),
            });
        }
        components.insert(name.value.clone(), version.value.clone());
    }
    Ok(components)
}

/// The storage kinds or addons, each once, sorted: listing one twice asks for nothing more.
fn each_once<T: Ord + Copy>(raw: &[T]) -> Vec<T> {
    let mut chosen = raw.to_vec();
    chosen.sort();
    chosen.dedup();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_strictly() {
        let parsed = KubernetesVersion::parse("v1.31.4").expect("valid");
        assert_eq!((parsed.major, parsed.minor, parsed.patch), (1, 31, 4));
        assert_eq!(parsed.to_string(), "v1.31.4");
        for bad in [
            "1.31.4",
            "v1.31",
            "v1.31.4.1",
            "v1.031.4",
            "v1.31.x",
            "v1..4",
            "v1.31.4-rc.0",
        ] {
            assert_eq!(KubernetesVersion::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn component_versions_are_release_versions_with_or_without_v() {
        for good in ["2.1.9", "v1.3.3", "0.3.10"] {
            assert!(component_version(good), "{good}");
        }
        for bad in ["2.1", "v2.1.9-rc.1", "latest", "2.01.9", "", "v"] {
            assert!(!component_version(bad), "{bad}");
        }
    }
}

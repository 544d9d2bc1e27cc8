//! Kubernetes' own files: kubeadm's configuration, the kubelet's systemd units, and the static
//! Pods of kube-vip (control planes) and haproxy (workers). The Helm values of the CNI charts
//! live in `bundle_spec::charts`, which kk-bundle renders the charts with too.
//!
//! Every YAML document is built as a tree whose mappings keep the order they are written in
//! (so the files read like upstream's examples) and is serialized by serde-saphyr, which quotes
//! every string a YAML 1.1 reader could take for something else (`"true"`, `"6443"`, `"on"`):
//! kubeadm, the kubelet and Helm read YAML 1.1-ish, and an environment value or a token read
//! back as a bool or a number is a broken file. No quoting is written by hand.
//!
//! This module holds the paths, the YAML tree, the choice of kubeadm's config API and the
//! kubelet's units; kubeadm's init and join configurations live in `kubeadm`, and the API
//! endpoint's static Pods (kube-vip, haproxy) in `endpoint`. Their public items are re-exported
//! here.

use serde::ser::{Serialize, SerializeMap, Serializer};

mod endpoint;
mod kubeadm;

pub use endpoint::{
    HAPROXY_HEALTH_PORT, KubeVipInput, VipMode, haproxy_cfg, haproxy_manifest, kube_vip_manifest,
};
pub use kubeadm::{
    ClusterInput, EtcdMode, InitToken, JoinInput, JoinToken, KubeadmVersionError, init_config,
    join_config,
};

/// Where the files of this module live on the nodes.
/// The kubelet's cgroup driver (its `KubeletConfiguration`); containerd's runc runtime must use
/// the same (`SystemdCgroup`), or pods are put in cgroups the kubelet does not manage.
pub const CGROUP_DRIVER: &str = "systemd";

pub mod paths {
    /// The kubelet's unit.
    pub const KUBELET_UNIT: &str = "/etc/systemd/system/kubelet.service";
    /// kubeadm's drop-in for the kubelet's unit.
    pub const KUBEADM_DROPIN: &str = "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf";
    /// The static Pods the kubelet runs.
    pub const MANIFESTS: &str = "/etc/kubernetes/manifests";
    /// kube-vip's static Pod (control planes).
    pub const KUBE_VIP_MANIFEST: &str = "/etc/kubernetes/manifests/kube-vip.yaml";
    /// haproxy's static Pod (workers).
    pub const HAPROXY_MANIFEST: &str = "/etc/kubernetes/manifests/haproxy.yaml";
    /// haproxy's configuration directory, mounted into its Pod.
    pub const HAPROXY_DIR: &str = "/etc/kubekey/haproxy";
    /// haproxy's configuration.
    pub const HAPROXY_CFG: &str = "/etc/kubekey/haproxy/haproxy.cfg";
    /// The kubeconfig kubeadm writes for the cluster-admin role (every control plane).
    pub const ADMIN_CONF: &str = "/etc/kubernetes/admin.conf";
    /// The break-glass kubeconfig kubeadm >= v1.29 writes on the first control plane only.
    pub const SUPER_ADMIN_CONF: &str = "/etc/kubernetes/super-admin.conf";
    /// The certificates kubeadm uses (pre-filled by kk).
    pub const PKI: &str = "/etc/kubernetes/pki";
    /// kk's kubeadm configs and rendered charts (mode 0600: the configs hold the token).
    pub const KK_CONFIGS: &str = "/etc/kubernetes/kk";
    /// containerd's CRI socket, as kubeadm and the kubelet take it.
    pub const CRI_SOCKET: &str = "unix:///run/containerd/containerd.sock";
    /// kube-apiserver's client certificate for kk's external etcd.
    pub const APISERVER_ETCD_CLIENT_CERT: &str = "/etc/kubernetes/pki/apiserver-etcd-client.crt";
    /// Its key.
    pub const APISERVER_ETCD_CLIENT_KEY: &str = "/etc/kubernetes/pki/apiserver-etcd-client.key";
}

/// kubeadm's newest config API: from kubeadm v1.31.
const V1BETA4: &str = "kubeadm.k8s.io/v1beta4";
/// kubeadm's config API from v1.22; still read (deprecated) by v1.31 and newer.
const V1BETA3: &str = "kubeadm.k8s.io/v1beta3";

/// Major and minor of a Kubernetes version (`v1.33.0`, `1.30.5`).
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// kubeadm's config API for a Kubernetes version: `kubeadm.k8s.io/v1beta4` from v1.31 (the
/// first release that reads it), `v1beta3` for v1.22 to v1.30. Older versions (and a version
/// that does not parse) have none kk writes.
pub fn kubeadm_api(version: &str) -> Option<&'static str> {
    match major_minor(version)? {
        (1, minor) if minor >= 31 => Some(V1BETA4),
        (1, minor) if minor >= 22 => Some(V1BETA3),
        _ => None,
    }
}

/// Whether a Kubernetes version's first control plane needs `super-admin.conf` for kube-vip
/// during `kubeadm init`: from v1.29 (see [`kube_vip_manifest`]). A version that does not
/// parse answers `false`; init refuses it anyway.
pub fn kube_vip_needs_super_admin(version: &str) -> bool {
    matches!(major_minor(version), Some((major, minor)) if major > 1 || minor >= 29)
}

/// A YAML node whose mappings keep their keys in the order written (serde's own value types
/// sort them).
#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    Str(String),
    Int(u64),
    Bool(bool),
    List(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Serialize for Yaml {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Yaml::Str(text) => serializer.serialize_str(text),
            Yaml::Int(number) => serializer.serialize_u64(*number),
            Yaml::Bool(flag) => serializer.serialize_bool(*flag),
            Yaml::List(items) => serializer.collect_seq(items),
            Yaml::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl From<&str> for Yaml {
    fn from(text: &str) -> Self {
        Yaml::Str(text.to_owned())
    }
}

impl From<String> for Yaml {
    fn from(text: String) -> Self {
        Yaml::Str(text)
    }
}

impl From<bool> for Yaml {
    fn from(flag: bool) -> Self {
        Yaml::Bool(flag)
    }
}

impl From<u16> for Yaml {
    fn from(number: u16) -> Self {
        Yaml::Int(number.into())
    }
}

impl From<u32> for Yaml {
    fn from(number: u32) -> Self {
        Yaml::Int(number.into())
    }
}

impl From<u8> for Yaml {
    fn from(number: u8) -> Self {
        Yaml::Int(number.into())
    }
}

/// A mapping, in the order given.
fn map<'a>(entries: impl IntoIterator<Item = (&'a str, Yaml)>) -> Yaml {
    Yaml::Map(
        entries
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect(),
    )
}

/// A sequence of strings.
fn strings<T: ToString>(items: impl IntoIterator<Item = T>) -> Yaml {
    Yaml::List(
        items
            .into_iter()
            .map(|item| Yaml::Str(item.to_string()))
            .collect(),
    )
}

/// `docs` as one file, `---` between documents, under a comment naming the writer.
fn documents(what: &str, docs: &[Yaml]) -> String {
    // The tree has string keys and plain scalars only, which always serialize.
    let body = serde_saphyr::to_string_multiple(docs).expect("an ordered YAML tree serializes");
    format!("# Written by kk-install: {what}.\n{body}")
}

/// `/etc/systemd/system/kubelet.service`, shaped like the one kubernetes/release packages
/// (`cmd/krel/templates/latest/kubelet/kubelet.service`) with the binary where kk installs it.
/// The kubelet restarts forever until kubeadm writes its configuration: that crash loop is
/// how kubeadm expects to find it. It wants and starts after `cri_unit`, the unit serving the
/// container runtime's CRI (`containerd.service`, or `cri-docker.service` with docker), which
/// it needs.
pub fn kubelet_unit(cri_unit: &str) -> String {
    format!(
        "# Written by kk-install (upstream's kubelet.service).\n\
         [Unit]\n\
         Description=kubelet: The Kubernetes Node Agent\n\
         Documentation=https://kubernetes.io/docs/\n\
         Wants=network-online.target {cri_unit}\n\
         After=network-online.target {cri_unit}\n\n\
         [Service]\n\
         ExecStart=/usr/local/bin/kubelet\n\
         Restart=always\n\
         StartLimitInterval=0\n\
         RestartSec=10\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

/// `/etc/systemd/system/kubelet.service.d/10-kubeadm.conf`, upstream's drop-in
/// (kubernetes/release `cmd/krel/templates/latest/kubeadm/10-kubeadm.conf`, Debian's
/// `/etc/default/kubelet`): the kubelet's flags come from the files kubeadm writes. The empty
/// `ExecStart=` clears the unit's own before the drop-in sets its.
pub fn kubeadm_dropin() -> &'static str {
    "# Written by kk-install (upstream's 10-kubeadm.conf).\n\
     [Service]\n\
     Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"\n\
     Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n\
     # Written by kubeadm init and join: KUBELET_KUBEADM_ARGS.\n\
     EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n\
     # The operator's last-resort overrides: KUBELET_EXTRA_ARGS.\n\
     EnvironmentFile=-/etc/default/kubelet\n\
     ExecStart=\n\
     ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n"
}

#[cfg(test)]
mod tests;

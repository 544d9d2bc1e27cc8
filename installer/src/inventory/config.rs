//! The public shape of a `kind: Config` document, and its defaults.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use bundle_spec::manifest::{ContainerRuntime, KubernetesVersion};
use serde::Deserialize;
use serde_json::Value;

use super::Warning;
use super::cidr::{Cidr, ClusterCidr};

/// What to install and how: a KubeKey-shaped `kind: Config`, validated.
///
/// Every section has a default ([`Config::default`] is the config of a user who gives none);
/// keys kk does not read are kept in [`Config::extra`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// `spec.kubernetes`.
    pub kubernetes: KubernetesConfig,
    /// `spec.etcd`.
    pub etcd: EtcdConfig,
    /// `spec.cri`.
    pub cri: CriConfig,
    /// `spec.cni`.
    pub cni: CniConfig,
    /// `spec.image_registry`.
    pub image_registry: ImageRegistry,
    /// `spec.image_registry.auth.registry`: where nodes reach kk's registry.
    pub registry_address: RegistryAddress,
    /// `spec.image_registry.upstream_fallback`: whether containerd may try an image's own
    /// registry when kk's does not answer; default false (an airgap has no way out, and a
    /// fallback would only add timeouts and DNS queries that leak image names).
    pub upstream_fallback: bool,
    /// `spec.cluster_require`: the precheck's thresholds.
    pub precheck: PrecheckConfig,
    /// `spec.addons`: charts of the bundle installed after the network, in order.
    pub addons: Vec<Addon>,
    /// `spec.nfs`: the NFS server kk sets up on the `nfs` host.
    pub nfs: NfsConfig,
    /// `spec.storage_class`: the storage classes kk installs.
    pub storage_class: StorageClassConfig,
    /// `spec.trusted_keys`: public keys (cosign's `cosign.pub`), relative to the config file; the
    /// bundle must be signed by one of them, as with `--trusted-key`.
    pub trusted_keys: Vec<std::path::PathBuf>,
    /// Every key kk does not read, by dotted path below `spec` (`kubernetes.helm_version`), as
    /// written. A whole unknown section is one entry.
    pub extra: BTreeMap<String, Value>,
    pub(super) source_name: String,
    pub(super) name: Option<String>,
    pub(super) warnings: Vec<Warning>,
}

impl Config {
    /// The name given for the source, or `defaults` for [`Config::default`].
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// `metadata.name`, if given.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Keys that look like misspellings of keys kk reads (kept, but probably not meant).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
}

impl Default for Config {
    /// The config of a user who gives none: KubeKey's defaults, where kk has the same notion.
    fn default() -> Self {
        Self {
            kubernetes: KubernetesConfig::default(),
            etcd: EtcdConfig::default(),
            cri: CriConfig::default(),
            cni: CniConfig::default(),
            image_registry: ImageRegistry::Kk,
            registry_address: RegistryAddress::default(),
            upstream_fallback: false,
            precheck: PrecheckConfig::default(),
            addons: Vec::new(),
            nfs: NfsConfig::default(),
            storage_class: StorageClassConfig::default(),
            trusted_keys: Vec::new(),
            extra: BTreeMap::new(),
            source_name: "defaults".to_owned(),
            name: None,
            warnings: Vec::new(),
        }
    }
}

/// `spec.nfs`: the NFS server on the host of the `nfs` group, KubeKey-shaped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NfsConfig {
    /// `spec.nfs.share_dir`: the exported directory, an absolute path (KubeKey's default
    /// `/share/`).
    pub share_dir: String,
}

impl Default for NfsConfig {
    fn default() -> Self {
        Self {
            share_dir: "/share/".to_owned(),
        }
    }
}

/// `spec.storage_class`: the storage classes kk installs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StorageClassConfig {
    /// `spec.storage_class.nfs`: the NFS provisioner's class.
    pub nfs: NfsStorageClass,
}

/// `spec.storage_class.nfs`: the nfs-subdir-external-provisioner over the `nfs` host's share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NfsStorageClass {
    /// `enabled`: whether the provisioner is installed (default false).
    pub enabled: bool,
    /// `default`: whether its class is the cluster's default storage class (default false).
    pub default: bool,
}

/// `spec.addons[]`: a chart of the bundle, installed as KubeKey's addons are.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Addon {
    /// `name`: the release name (a DNS-1123 label).
    pub name: String,
    /// `namespace`; default `kube-system`.
    pub namespace: String,
    /// `sources.chart.name`: the chart's name in the bundle.
    pub chart: String,
    /// `sources.chart.values`: `key=value` pairs, as `helm --set` takes them.
    pub set: Vec<String>,
    /// `sources.chart.valuesFile`: a values file on the installer machine, relative to the
    /// config's directory.
    pub values_file: Option<std::path::PathBuf>,
}

/// `spec.kubernetes`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KubernetesConfig {
    /// `kube_version`; `None` (the default) installs the version the bundle carries.
    pub kube_version: Option<KubernetesVersion>,
    /// `control_plane_endpoint`.
    pub control_plane_endpoint: ControlPlaneEndpoint,
    /// `kube_proxy.mode`; default `iptables`.
    pub kube_proxy_mode: KubeProxyMode,
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        Self {
            kube_version: None,
            control_plane_endpoint: ControlPlaneEndpoint::default(),
            kube_proxy_mode: KubeProxyMode::Iptables,
        }
    }
}

/// `spec.kubernetes.control_plane_endpoint`: the address every node and client reaches the
/// API server at.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControlPlaneEndpoint {
    /// `host`: a DNS name or an IP; default `lb.kubesphere.local`, as KubeKey.
    pub host: String,
    /// `port`; default 6443.
    pub port: u16,
    /// `type` and its settings; default [`EndpointKind::Local`].
    pub kind: EndpointKind,
}

impl ControlPlaneEndpoint {
    /// KubeKey's default endpoint name.
    pub const DEFAULT_HOST: &'static str = "lb.kubesphere.local";
    /// The API server's port.
    pub const DEFAULT_PORT: u16 = 6443;
}

impl Default for ControlPlaneEndpoint {
    fn default() -> Self {
        Self {
            host: Self::DEFAULT_HOST.to_owned(),
            port: Self::DEFAULT_PORT,
            kind: EndpointKind::Local,
        }
    }
}

/// How `host` reaches a healthy API server (`control_plane_endpoint.type`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndpointKind {
    /// `local`: `/etc/hosts` maps `host` to 127.0.0.1 on control-plane nodes and to the first
    /// control-plane node elsewhere (or to an external load balancer the user runs).
    Local,
    /// `kube-vip` (also written `kube_vip`): a virtual IP moved between control-plane nodes.
    KubeVip(KubeVip),
    /// `haproxy`: a local haproxy on every worker, balancing over the control-plane nodes.
    Haproxy,
}

impl EndpointKind {
    /// The `type` as written in a config.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::KubeVip(_) => "kube-vip",
            Self::Haproxy => "haproxy",
        }
    }
}

/// `control_plane_endpoint.kube_vip`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KubeVip {
    /// `address`: the virtual IP (required with `type: kube-vip`).
    pub address: IpAddr,
    /// `mode`; default `ARP`.
    pub mode: KubeVipMode,
}

/// Defines a closed set of values read from YAML, with `as_str` and `Display` giving the
/// spelling a config uses.
macro_rules! names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$variant_meta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $name {
            /// The name as written in a config.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

names! {
    /// `kube_vip.mode`: how the virtual IP is announced.
    pub enum KubeVipMode {
        /// Gratuitous ARP from the leader (layer 2).
        #[serde(rename = "ARP", alias = "arp")]
        Arp => "ARP",
        /// BGP from every control-plane node (layer 3).
        #[serde(rename = "BGP", alias = "bgp")]
        Bgp => "BGP",
    }
}

names! {
    /// `kubernetes.kube_proxy.mode`.
    pub enum KubeProxyMode {
        /// iptables rules (the default).
        #[serde(rename = "iptables")]
        Iptables => "iptables",
        /// IPVS virtual servers.
        #[serde(rename = "ipvs")]
        Ipvs => "ipvs",
    }
}

names! {
    /// `etcd.deployment_type`, in KubeKey's sense.
    pub enum EtcdDeploymentType {
        /// etcd as a systemd service on the `etcd` group's hosts, installed by kk (the
        /// default, as in KubeKey).
        #[serde(rename = "external")]
        External => "external",
        /// etcd as kubeadm's static pods on the control-plane nodes.
        #[serde(rename = "internal")]
        Internal => "internal",
    }
}

names! {
    /// `cni.type`: the network plugin kk installs.
    pub enum NetworkPlugin {
        /// Calico (the default).
        #[serde(rename = "calico")]
        Calico => "calico",
        /// Cilium.
        #[serde(rename = "cilium")]
        Cilium => "cilium",
        /// Flannel.
        #[serde(rename = "flannel")]
        Flannel => "flannel",
        /// Kube-OVN (KubeKey's config spells it `kubeovn`, its precheck `kube-ovn`).
        #[serde(rename = "kube-ovn", alias = "kubeovn")]
        KubeOvn => "kube-ovn",
        /// Hybridnet.
        #[serde(rename = "hybridnet")]
        Hybridnet => "hybridnet",
        /// None: the user installs one (KubeKey's `other` means the same).
        #[serde(rename = "none", alias = "other")]
        None => "none",
    }
}

names! {
    /// `cni.multi_cni`: a secondary network plugin over the primary one (`cni.type`).
    pub enum MultiCni {
        /// None (the default).
        #[serde(rename = "none")]
        None => "none",
        /// Multus, delegating to the primary plugin.
        #[serde(rename = "multus")]
        Multus => "multus",
    }
}

/// `spec.etcd`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EtcdConfig {
    /// `deployment_type`; default `external`.
    pub deployment_type: EtcdDeploymentType,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        Self {
            deployment_type: EtcdDeploymentType::External,
        }
    }
}

/// `spec.cri`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CriConfig {
    /// `container_manager`; default `containerd`.
    pub container_manager: ContainerRuntime,
}

/// `spec.cni`: the network plugin and the cluster's address ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CniConfig {
    /// `type`; default `calico`.
    pub plugin: NetworkPlugin,
    /// `multi_cni`; default `none`.
    pub multi_cni: MultiCni,
    /// `pod_cidr`; default `10.233.64.0/18`, as KubeKey.
    pub pod_cidr: ClusterCidr,
    /// `service_cidr`; default `10.233.0.0/18`, as KubeKey.
    pub service_cidr: ClusterCidr,
    /// `max_pods`: pods per node; default 110, as the kubelet.
    pub max_pods: u32,
    /// `ipv4_mask_size`: the prefix length of each node's IPv4 pod range; default 24.
    pub ipv4_mask_size: u8,
    /// `ipv6_mask_size`: the prefix length of each node's IPv6 pod range; default 64.
    pub ipv6_mask_size: u8,
}

impl Default for CniConfig {
    fn default() -> Self {
        Self {
            plugin: NetworkPlugin::Calico,
            multi_cni: MultiCni::None,
            pod_cidr: ClusterCidr::single(Cidr::DEFAULT_POD),
            service_cidr: ClusterCidr::single(Cidr::DEFAULT_SERVICE),
            max_pods: 110,
            ipv4_mask_size: bundle_spec::charts::DEFAULT_IPV4_MASK_SIZE,
            ipv6_mask_size: bundle_spec::charts::DEFAULT_IPV6_MASK_SIZE,
        }
    }
}

/// `spec.image_registry`: where nodes pull images from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ImageRegistry {
    /// `kk` (the default): kk's own read-only registry on the `image_registry` host, serving
    /// the bundle in place.
    #[default]
    Kk,
    /// `external`: an existing registry (Harbor…) the bundle is pushed into.
    External(ExternalRegistry),
}

/// `spec.image_registry.auth.registry`: the `host:port` every node reaches kk's registry at.
///
/// A DNS name is mapped to the registry host's address in every node's `/etc/hosts` by the
/// install, and is one of the names the registry's certificate is issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistryAddress {
    /// A DNS name or an IP address.
    pub host: String,
    /// The port `kk-registry.service` listens on.
    pub port: u16,
}

impl RegistryAddress {
    /// KubeKey's registry name.
    pub const DEFAULT_HOST: &'static str = "dockerhub.kubekey.local";
    /// kk's registry port.
    pub const DEFAULT_PORT: u16 = 5443;

    /// Parses `host` or `host:port` (`[v6]:port` for an IPv6 address).
    pub fn parse(text: &str) -> Option<Self> {
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') || host.starts_with('[') => (
                host.trim_start_matches('[').trim_end_matches(']'),
                port.parse().ok()?,
            ),
            _ => (text, Self::DEFAULT_PORT),
        };
        (!host.is_empty() && port != 0).then(|| Self {
            host: host.to_owned(),
            port,
        })
    }

    /// The host as an IP address, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

impl Default for RegistryAddress {
    fn default() -> Self {
        Self {
            host: Self::DEFAULT_HOST.to_owned(),
            port: Self::DEFAULT_PORT,
        }
    }
}

impl fmt::Display for RegistryAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip() {
            Some(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// `image_registry` with `type: external`.
///
/// Only the name of the environment variable holding the password is in the file, so configs
/// can be shared and logged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExternalRegistry {
    /// `address`: `host[:port]`.
    pub address: String,
    /// `username`, if the registry needs credentials.
    pub username: Option<String>,
    /// `password_env`: the environment variable holding the password (set with `username`).
    pub password_env: Option<String>,
    /// `ca_file`: the PEM CA the registry's certificate chains to (relative to the config),
    /// trusted by the push and copied to every node for containerd; the system's CAs when unset.
    pub ca_file: Option<std::path::PathBuf>,
    /// `harbor`: the registry is a Harbor, whose projects (the first path component of every
    /// repository) the install creates first through Harbor's API; default false.
    pub harbor: bool,
}

/// `spec.cluster_require`: the precheck's thresholds, under KubeKey's key names.
///
/// KubeKey compares its `minimal_*_memory_mb` against `/proc/meminfo`'s kB; kk reads them
/// as the megabytes their names say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrecheckConfig {
    /// `allow_unsupported_distribution_setup`: install on an OS the precheck does not know;
    /// default false.
    pub allow_unsupported_distribution: bool,
    /// `minimal_master_memory_mb`: least memory of a control-plane node, in MB; default 1700
    /// (kubeadm's own preflight minimum).
    pub min_control_plane_memory_mb: u64,
    /// `minimal_node_memory_mb`: least memory of a worker, in MB; default 1024.
    pub min_worker_memory_mb: u64,
    /// `min_kernel_version`; default `4.9.17`, as KubeKey.
    pub min_kernel_version: KernelVersion,
}

impl Default for PrecheckConfig {
    fn default() -> Self {
        Self {
            allow_unsupported_distribution: false,
            min_control_plane_memory_mb: 1700,
            min_worker_memory_mb: 1024,
            min_kernel_version: KernelVersion {
                major: 4,
                minor: 9,
                patch: 17,
            },
        }
    }
}

/// A Linux kernel version, `MAJOR.MINOR[.PATCH]`; ordered, so a node's kernel can be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct KernelVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch level (0 when not written).
    pub patch: u32,
}

impl KernelVersion {
    /// Parses `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, decimal numbers only.
    pub fn parse(text: &str) -> Option<Self> {
        let numbers: Vec<u32> = text
            .split('.')
            .map(|part| {
                let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
                digits.then(|| part.parse().ok()).flatten()
            })
            .collect::<Option<_>>()?;
        match numbers[..] {
            [major, minor] => Some(Self::new(major, minor, 0)),
            [major, minor, patch] => Some(Self::new(major, minor, patch)),
            _ => None,
        }
    }

    /// The version `major.minor.patch`.
    pub fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }
}

impl fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_addresses_parse() {
        let parse = |text| RegistryAddress::parse(text).map(|a| a.to_string());
        for (text, expected) in [
            (
                "dockerhub.kubekey.local",
                Some("dockerhub.kubekey.local:5443"),
            ),
            ("10.0.0.5:5000", Some("10.0.0.5:5000")),
            ("[fd00::5]:5443", Some("[fd00::5]:5443")),
            ("reg:0", None),
            (":5443", None),
            ("reg:port", None),
        ] {
            assert_eq!(parse(text).as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn kernel_versions_parse_and_order() {
        let parse = |text| KernelVersion::parse(text);
        assert_eq!(parse("4.9.17"), Some(KernelVersion::new(4, 9, 17)));
        assert_eq!(parse("5.10"), Some(KernelVersion::new(5, 10, 0)));
        assert!(parse("5.10").expect("valid") > parse("4.19.255").expect("valid"));
        for bad in ["", "5", "5.", "5.10.1.2", "v5.10", "5.10-rc1", "5.x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}

//! kubeadm's configuration files: `kubeadm init`'s (`InitConfiguration`,
//! `ClusterConfiguration`, `KubeletConfiguration`, `KubeProxyConfiguration`) and
//! `kubeadm join`'s `JoinConfiguration`, in the config API the Kubernetes version reads.

use std::net::IpAddr;

use serde::Serialize;

use super::CGROUP_DRIVER;
use super::{V1BETA4, Yaml, documents, kubeadm_api, map, paths, strings};

/// A Kubernetes version kk writes no kubeadm configuration for.
#[derive(Debug, thiserror::Error)]
#[error(
    "Kubernetes {version}: kk writes kubeadm's v1beta3 or v1beta4 configuration, which \
     kubeadm reads from v1.22; this version is older or not a version"
)]
pub struct KubeadmVersionError {
    /// The version.
    pub version: String,
}

/// The config API for `version`, or the error init and join report.
fn api_for(version: &str) -> Result<&'static str, KubeadmVersionError> {
    kubeadm_api(version).ok_or_else(|| KubeadmVersionError {
        version: version.to_owned(),
    })
}

/// How the external etcd (kk's own members) or kubeadm's stacked etcd is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EtcdMode {
    /// kk's etcd members, reached with client certificates.
    External {
        /// Client URLs (`https://ip:2379`).
        endpoints: Vec<String>,
        /// The etcd CA kube-apiserver trusts.
        ca_file: String,
        /// kube-apiserver's client certificate.
        cert_file: String,
        /// Its key.
        key_file: String,
    },
    /// kubeadm runs etcd as a static Pod on each control plane.
    Stacked,
}

/// What `kubeadm init` needs, but the bootstrap token ([`InitToken`]): all of it is decided by
/// the plan, before any node is touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterInput {
    /// `v1.33.0`: `kubernetesVersion`, and the config API.
    pub version: String,
    /// The first control plane's node name (`nodeRegistration.name`).
    pub node_name: String,
    /// The API server's advertised address (`localAPIEndpoint.advertiseAddress`; one address
    /// even in a dual-stack cluster).
    pub advertise_address: IpAddr,
    /// The kubelet's `--node-ip`: the advertise address, and in a dual-stack cluster the
    /// node's address of the other family after it (the kubelet then reports both).
    pub node_ips: Vec<IpAddr>,
    /// The API server's own port (`localAPIEndpoint.bindPort`), the endpoint's port.
    pub bind_port: u16,
    /// `controlPlaneEndpoint`, `host:port`.
    pub endpoint: String,
    /// Extra names and addresses of the API server's certificate (`apiServer.certSANs`).
    pub cert_sans: Vec<String>,
    /// `10.233.64.0/18`, or `v4cidr,v6cidr` for dual stack.
    pub pod_subnet: String,
    /// Like `pod_subnet`.
    pub service_subnet: String,
    /// `cluster.local`.
    pub dns_domain: String,
    /// The controller-manager's `node-cidr-mask-size-ipv4` (when the pods have IPv4).
    pub node_mask_v4: u8,
    /// The controller-manager's `node-cidr-mask-size-ipv6` (when the pods have IPv6).
    pub node_mask_v6: u8,
    /// `KubeletConfiguration.maxPods`.
    pub max_pods: u32,
    /// `iptables` or `ipvs`: `KubeProxyConfiguration.mode`.
    pub proxy_mode: String,
    /// External or stacked etcd.
    pub etcd: EtcdMode,
    /// `unix:///run/containerd/containerd.sock`.
    pub cri_socket: String,
}

/// The bootstrap token `kubeadm init` registers. Made (or renewed) when the install runs, so it
/// is the one part of init's configuration the plan cannot hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitToken<'a> {
    /// The token joins use (`bootstrapTokens[0].token`).
    pub token: &'a str,
    /// Its remaining lifetime (`24h0m0s`).
    pub ttl: &'a str,
}

/// kubeadm's extra arguments in the config API's shape: v1beta4 lists `{name, value}` (so a
/// flag may repeat), v1beta3 maps flag names to values.
fn extra_args(api: &str, args: &[(&str, String)]) -> Yaml {
    if api == V1BETA4 {
        Yaml::List(
            args.iter()
                .map(|(name, value)| {
                    map([("name", (*name).into()), ("value", value.as_str().into())])
                })
                .collect(),
        )
    } else {
        map(args
            .iter()
            .map(|(name, value)| (*name, value.as_str().into())))
    }
}

/// Whether a comma-separated CIDR list (`pod_subnet`) has an IPv4 and an IPv6 range.
fn families(cidrs: &str) -> (bool, bool) {
    let mut v4 = false;
    let mut v6 = false;
    for cidr in cidrs.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        // An IPv6 address has colons; an IPv4 one never does.
        if cidr.contains(':') {
            v6 = true;
        } else {
            v4 = true;
        }
    }
    (v4, v6)
}

/// `/etc/kubernetes/kubeadm-config.yaml` for `kubeadm init --config`: `InitConfiguration`,
/// `ClusterConfiguration`, `KubeletConfiguration` and `KubeProxyConfiguration`, in the config
/// API of the version ([`kubeadm_api`]; an error before v1.22).
///
/// - No `imageRepository`: kubeadm pulls its images by their original names
///   (`registry.k8s.io/...`) and containerd's mirrors send them to kk's registry.
/// - `certificatesDir` is `/etc/kubernetes/pki`, which kk fills before init (kubeadm keeps
///   certificates it finds).
/// - `nodeRegistration` names the node and its CRI socket, and sets the kubelet's `node-ip` so
///   a node with several interfaces registers the address the plan chose; taints are left to
///   kubeadm's default (the control-plane taint).
/// - The controller-manager gets `node-cidr-mask-size-ipv4`/`-ipv6` for the pod families
///   present only: it refuses a family-specific mask for a family the cluster lacks.
/// - The kubelet uses the systemd cgroup driver (as containerd's runc is configured), and
///   kube-proxy's `clusterCIDR` is the pod subnet (comma-separated when dual stack).
pub fn init_config(
    input: &ClusterInput,
    token: InitToken<'_>,
) -> Result<String, KubeadmVersionError> {
    let api = api_for(&input.version)?;
    let node_ip = node_ip_arg(&input.node_ips);

    let init = map([
        ("apiVersion", api.into()),
        ("kind", "InitConfiguration".into()),
        (
            "bootstrapTokens",
            Yaml::List(vec![map([
                ("token", token.token.into()),
                ("ttl", token.ttl.into()),
            ])]),
        ),
        (
            "localAPIEndpoint",
            map([
                (
                    "advertiseAddress",
                    input.advertise_address.to_string().into(),
                ),
                ("bindPort", input.bind_port.into()),
            ]),
        ),
        (
            "nodeRegistration",
            map([
                ("name", input.node_name.as_str().into()),
                ("criSocket", input.cri_socket.as_str().into()),
                ("kubeletExtraArgs", extra_args(api, &[("node-ip", node_ip)])),
            ]),
        ),
    ]);

    let (v4, v6) = families(&input.pod_subnet);
    let mut masks = Vec::new();
    if v4 {
        masks.push(("node-cidr-mask-size-ipv4", input.node_mask_v4.to_string()));
    }
    if v6 {
        masks.push(("node-cidr-mask-size-ipv6", input.node_mask_v6.to_string()));
    }
    let mut cluster = vec![
        ("apiVersion", api.into()),
        ("kind", "ClusterConfiguration".into()),
        ("kubernetesVersion", input.version.as_str().into()),
        ("controlPlaneEndpoint", input.endpoint.as_str().into()),
        ("certificatesDir", paths::PKI.into()),
        (
            "networking",
            map([
                ("dnsDomain", input.dns_domain.as_str().into()),
                ("podSubnet", input.pod_subnet.as_str().into()),
                ("serviceSubnet", input.service_subnet.as_str().into()),
            ]),
        ),
        ("apiServer", map([("certSANs", strings(&input.cert_sans))])),
        (
            "controllerManager",
            map([("extraArgs", extra_args(api, &masks))]),
        ),
    ];
    // Stacked etcd is kubeadm's default (`etcd.local`); only external etcd is spelled out.
    if let EtcdMode::External {
        endpoints,
        ca_file,
        cert_file,
        key_file,
    } = &input.etcd
    {
        cluster.push((
            "etcd",
            map([(
                "external",
                map([
                    ("endpoints", strings(endpoints)),
                    ("caFile", ca_file.as_str().into()),
                    ("certFile", cert_file.as_str().into()),
                    ("keyFile", key_file.as_str().into()),
                ]),
            )]),
        ));
    }

    let kubelet = map([
        ("apiVersion", "kubelet.config.k8s.io/v1beta1".into()),
        ("kind", "KubeletConfiguration".into()),
        ("cgroupDriver", CGROUP_DRIVER.into()),
        ("clusterDomain", input.dns_domain.as_str().into()),
        ("maxPods", input.max_pods.into()),
    ]);
    let proxy = map([
        ("apiVersion", "kubeproxy.config.k8s.io/v1alpha1".into()),
        ("kind", "KubeProxyConfiguration".into()),
        ("mode", input.proxy_mode.as_str().into()),
        ("clusterCIDR", input.pod_subnet.as_str().into()),
    ]);

    Ok(documents(
        "kubeadm init's configuration",
        &[init, map(cluster), kubelet, proxy],
    ))
}

/// `--node-ip`'s value: the addresses, comma-separated.
fn node_ip_arg(ips: &[IpAddr]) -> String {
    ips.iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// What `kubeadm join` needs, but the bootstrap token and the CA's hash ([`JoinToken`]): all
/// of it is decided by the plan, before any node is touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinInput {
    /// `v1.33.0`: the config API.
    pub version: String,
    /// The joining node's name (`nodeRegistration.name`).
    pub node_name: String,
    /// The kubelet's `--node-ip`: the node's address, both families' in a dual-stack cluster.
    pub node_ips: Vec<IpAddr>,
    /// The API server to discover the cluster through (`host:port`).
    pub endpoint: String,
    /// For a control plane, the address and port its API server advertises.
    pub control_plane: Option<(IpAddr, u16)>,
    /// `nodeRegistration.ignorePreflightErrors`.
    pub ignore_preflight_errors: Vec<String>,
    /// `unix:///run/containerd/containerd.sock`.
    pub cri_socket: String,
}

/// How a joining node finds and trusts the cluster: made when the install runs (the token may
/// be renewed, the CA is issued then), so not part of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinToken<'a> {
    /// The bootstrap token.
    pub token: &'a str,
    /// `sha256:<hex>` of the cluster CA's public key (`caCertHashes`).
    pub ca_cert_hash: &'a str,
}

/// `kubeadm join --config`'s `JoinConfiguration`, in the config API of the version: discovery
/// through the bootstrap token with the CA pinned by its hash, and for a control plane its
/// `localAPIEndpoint`. No `certificateKey`: kk copies the shared certificates itself, so
/// kubeadm has nothing to download.
pub fn join_config(input: &JoinInput, token: JoinToken<'_>) -> Result<String, KubeadmVersionError> {
    let api = api_for(&input.version)?;
    let mut registration = vec![
        ("name", input.node_name.as_str().into()),
        ("criSocket", input.cri_socket.as_str().into()),
        (
            "kubeletExtraArgs",
            extra_args(api, &[("node-ip", node_ip_arg(&input.node_ips))]),
        ),
    ];
    if !input.ignore_preflight_errors.is_empty() {
        registration.push((
            "ignorePreflightErrors",
            strings(&input.ignore_preflight_errors),
        ));
    }
    let mut join = vec![
        ("apiVersion", api.into()),
        ("kind", "JoinConfiguration".into()),
        (
            "discovery",
            map([(
                "bootstrapToken",
                map([
                    ("apiServerEndpoint", input.endpoint.as_str().into()),
                    ("token", token.token.into()),
                    ("caCertHashes", strings([token.ca_cert_hash])),
                ]),
            )]),
        ),
        ("nodeRegistration", map(registration)),
    ];
    if let Some((address, port)) = input.control_plane {
        join.push((
            "controlPlane",
            map([(
                "localAPIEndpoint",
                map([
                    ("advertiseAddress", address.to_string().into()),
                    ("bindPort", port.into()),
                ]),
            )]),
        ));
    }
    Ok(documents("kubeadm join's configuration", &[map(join)]))
}

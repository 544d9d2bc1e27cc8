//! Kubernetes' own files: kubeadm's configuration, the kubelet's systemd units, the static Pods
//! of kube-vip (control planes) and haproxy (workers), and the Helm values of the CNI charts.
//!
//! Every YAML document is built as a tree whose mappings keep the order they are written in
//! (so the files read like upstream's examples) and is serialized by serde-saphyr, which quotes
//! every string a YAML 1.1 reader could take for something else (`"true"`, `"6443"`, `"on"`):
//! kubeadm, the kubelet and Helm read YAML 1.1-ish, and an environment value or a token read
//! back as a bool or a number is a broken file. No quoting is written by hand.

use std::net::IpAddr;

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Where the files of this module live on the nodes.
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
}

/// The port of haproxy's `/healthz` frontend, which the Pod's probes ask (as KubeKey's).
pub const HAPROXY_HEALTH_PORT: u16 = 8081;

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

/// The config API for `version`, or the error init and join report.
fn api_for(version: &str) -> Result<&'static str, String> {
    kubeadm_api(version).ok_or_else(|| {
        format!(
            "Kubernetes {version}: kk writes kubeadm's v1beta3 or v1beta4 configuration, which \
             kubeadm reads from v1.22; this version is older or not a version"
        )
    })
}

/// Whether a Kubernetes version's first control plane needs `super-admin.conf` for kube-vip
/// during `kubeadm init`: from v1.29 (see [`kube_vip_manifest`]). A version that does not
/// parse answers `false`; init refuses it anyway.
pub fn kube_vip_needs_super_admin(version: &str) -> bool {
    matches!(major_minor(version), Some((major, minor)) if major > 1 || minor >= 29)
}

/// How the external etcd (kk's own members) or kubeadm's stacked etcd is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// What `kubeadm init` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterInput {
    /// `v1.33.0`: `kubernetesVersion`, and the config API.
    pub version: String,
    /// The first control plane's node name (`nodeRegistration.name`).
    pub node_name: String,
    /// The API server's advertised address (`localAPIEndpoint.advertiseAddress`; one address
    /// even in a dual-stack cluster) and the kubelet's `--node-ip`.
    pub advertise_address: IpAddr,
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
    /// The bootstrap token joins use (`bootstrapTokens[0].token`).
    pub token: String,
    /// Its lifetime (`24h0m0s`).
    pub token_ttl: String,
    /// `unix:///run/containerd/containerd.sock`.
    pub cri_socket: String,
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
pub fn init_config(input: &ClusterInput) -> Result<String, String> {
    let api = api_for(&input.version)?;
    let node_ip = input.advertise_address.to_string();

    let init = map([
        ("apiVersion", api.into()),
        ("kind", "InitConfiguration".into()),
        (
            "bootstrapTokens",
            Yaml::List(vec![map([
                ("token", input.token.as_str().into()),
                ("ttl", input.token_ttl.as_str().into()),
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
        ("cgroupDriver", "systemd".into()),
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

/// What `kubeadm join` needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinInput {
    /// `v1.33.0`: the config API.
    pub version: String,
    /// The joining node's name (`nodeRegistration.name`).
    pub node_name: String,
    /// The node's address: the kubelet's `--node-ip`.
    pub node_ip: IpAddr,
    /// The API server to discover the cluster through (`host:port`).
    pub endpoint: String,
    /// The bootstrap token.
    pub token: String,
    /// `sha256:<hex>` of the cluster CA's public key (`caCertHashes`).
    pub ca_cert_hash: String,
    /// For a control plane, the address and port its API server advertises.
    pub control_plane: Option<(IpAddr, u16)>,
    /// `nodeRegistration.ignorePreflightErrors`.
    pub ignore_preflight_errors: Vec<String>,
    /// `unix:///run/containerd/containerd.sock`.
    pub cri_socket: String,
}

/// `kubeadm join --config`'s `JoinConfiguration`, in the config API of the version: discovery
/// through the bootstrap token with the CA pinned by its hash, and for a control plane its
/// `localAPIEndpoint`. No `certificateKey`: kk copies the shared certificates itself, so
/// kubeadm has nothing to download.
pub fn join_config(input: &JoinInput) -> Result<String, String> {
    let api = api_for(&input.version)?;
    let mut registration = vec![
        ("name", input.node_name.as_str().into()),
        ("criSocket", input.cri_socket.as_str().into()),
        (
            "kubeletExtraArgs",
            extra_args(api, &[("node-ip", input.node_ip.to_string())]),
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
                    ("token", input.token.as_str().into()),
                    ("caCertHashes", strings([&input.ca_cert_hash])),
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

/// `/etc/systemd/system/kubelet.service`, shaped like the one kubernetes/release packages
/// (`cmd/krel/templates/latest/kubelet/kubelet.service`) with the binary where kk installs it.
/// The kubelet restarts forever until kubeadm writes its configuration: that crash loop is
/// how kubeadm expects to find it. After containerd, which it needs.
pub fn kubelet_unit() -> &'static str {
    "# Written by kk-install (upstream's kubelet.service).\n\
     [Unit]\n\
     Description=kubelet: The Kubernetes Node Agent\n\
     Documentation=https://kubernetes.io/docs/\n\
     Wants=network-online.target\n\
     After=network-online.target containerd.service\n\n\
     [Service]\n\
     ExecStart=/usr/local/bin/kubelet\n\
     Restart=always\n\
     StartLimitInterval=0\n\
     RestartSec=10\n\n\
     [Install]\n\
     WantedBy=multi-user.target\n"
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

/// How kube-vip announces the control plane's virtual address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VipMode {
    /// Gratuitous ARP from the elected leader (one layer-2 segment).
    Arp,
    /// BGP from every control plane (KubeKey peers them with each other, as here).
    Bgp {
        /// This node's router ID (its address).
        router_id: IpAddr,
        /// The other control planes.
        peers: Vec<IpAddr>,
        /// The AS of this node and of its peers (KubeKey: 65000).
        asn: u32,
    },
}

/// kube-vip's static Pod on one control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeVipInput {
    /// The bundle's `ghcr.io/kube-vip/kube-vip:<tag>`.
    pub image: String,
    /// The virtual address (the endpoint's host).
    pub address: IpAddr,
    /// The API server's port, which kube-vip also uses to reach it.
    pub port: u16,
    /// The interface the address is bound to (`lo` in BGP mode, as KubeKey and kube-vip's
    /// docs do: every node holds it, and no interface should answer ARP for it).
    pub interface: String,
    /// ARP or BGP.
    pub mode: VipMode,
    /// The host kubeconfig mounted as `/etc/kubernetes/admin.conf` in the Pod:
    /// [`paths::SUPER_ADMIN_CONF`] on the first control plane during init when
    /// [`kube_vip_needs_super_admin`], [`paths::ADMIN_CONF`] otherwise.
    pub kubeconfig: String,
}

/// The leader election's lease, in seconds (kube-vip's docs and KubeKey): the address moves
/// within about five seconds of its holder's failure.
const VIP_LEASE: [(&str, &str); 3] = [
    ("vip_leaseduration", "5"),
    ("vip_renewdeadline", "3"),
    ("vip_retryperiod", "1"),
];

/// One `env` entry of a container.
fn env(name: &str, value: impl Into<String>) -> Yaml {
    map([("name", name.into()), ("value", Yaml::Str(value.into()))])
}

/// A BGP peer as kube-vip's `bgp_peers` reads it, `<address>:<AS>:<password>:<multihop>`
/// (kube-vip `pkg/kubevip/config_bgp.go`: an IPv6 address goes in brackets).
fn bgp_peer(ip: IpAddr, asn: u32) -> String {
    match ip {
        IpAddr::V4(ip) => format!("{ip}:{asn}::false"),
        IpAddr::V6(ip) => format!("[{ip}]:{asn}::false"),
    }
}

/// `/etc/kubernetes/manifests/kube-vip.yaml`: the static Pod kube-vip's own generator writes
/// (`kube-vip manifest pod`, v0.8 `pkg/kubevip/config_generator.go`, and the examples of
/// kube-vip's static-Pod docs), for the control-plane address only (`svc_enable=false`: kk
/// does not offer `LoadBalancer` Services through it).
///
/// kube-vip runs on the host network with `NET_ADMIN` and `NET_RAW` (it adds the address and
/// sends ARP or BGP), reaches the API server as `https://kubernetes:<port>` with `kubernetes`
/// pointed at `127.0.0.1`, and authenticates with the host kubeconfig mounted as
/// `/etc/kubernetes/admin.conf`. `vip_nodename` comes from the downward API: it is the lease
/// holder's identity, and two nodes with the same would both take the address.
///
/// ARP elects one holder through a lease (`plndr-cp-lock`); BGP has every control plane
/// announce the address, so it elects none (as kube-vip's BGP example and KubeKey's
/// template).
///
/// Why `super-admin.conf` on the first control plane during init from Kubernetes v1.29: since
/// v1.29 kubeadm's `admin.conf` is no longer in `system:masters`; its user gets its rights
/// from a `cluster-admin` binding that kubeadm creates only once the API server is up, and
/// the API server is reached through the address kube-vip has yet to announce. With
/// `admin.conf`, kube-vip cannot take its lease and `kubeadm init` times out (kube-vip issue
/// #684). `super-admin.conf` (group `system:masters`, written on that node only) works from
/// the start; the caller passes it there and `admin.conf` everywhere else, and switches the
/// first control plane back to `admin.conf` after init.
pub fn kube_vip_manifest(input: &KubeVipInput) -> String {
    let container = map([
        ("name", "kube-vip".into()),
        ("image", input.image.as_str().into()),
        ("imagePullPolicy", "IfNotPresent".into()),
        ("args", strings(["manager"])),
        ("env", kube_vip_env(input)),
        (
            "securityContext",
            map([(
                "capabilities",
                map([("add", strings(["NET_ADMIN", "NET_RAW"]))]),
            )]),
        ),
        (
            "volumeMounts",
            Yaml::List(vec![map([
                ("name", "kubeconfig".into()),
                ("mountPath", paths::ADMIN_CONF.into()),
            ])]),
        ),
    ]);
    let pod = map([
        ("apiVersion", "v1".into()),
        ("kind", "Pod".into()),
        (
            "metadata",
            map([
                ("name", "kube-vip".into()),
                ("namespace", "kube-system".into()),
            ]),
        ),
        (
            "spec",
            map([
                ("containers", Yaml::List(vec![container])),
                (
                    "hostAliases",
                    Yaml::List(vec![map([
                        ("ip", "127.0.0.1".into()),
                        ("hostnames", strings(["kubernetes"])),
                    ])]),
                ),
                ("hostNetwork", true.into()),
                (
                    "volumes",
                    Yaml::List(vec![map([
                        ("name", "kubeconfig".into()),
                        (
                            "hostPath",
                            // `File`: were the kubeconfig missing, the kubelet would otherwise
                            // create a directory in its place, which kubeadm cannot then write.
                            map([
                                ("path", input.kubeconfig.as_str().into()),
                                ("type", "File".into()),
                            ]),
                        ),
                    ])]),
                ),
            ]),
        ),
    ]);
    documents("kube-vip, the control plane's virtual address", &[pod])
}

/// kube-vip's environment, its whole configuration (`pkg/kubevip/config_envvar.go`).
fn kube_vip_env(input: &KubeVipInput) -> Yaml {
    let mut vars = vec![
        env("vip_arp", matches!(input.mode, VipMode::Arp).to_string()),
        env("port", input.port.to_string()),
        map([
            ("name", "vip_nodename".into()),
            (
                "valueFrom",
                map([("fieldRef", map([("fieldPath", "spec.nodeName".into())]))]),
            ),
        ]),
        env("vip_interface", input.interface.as_str()),
        // The address's own prefix: a host route, never a subnet on the interface.
        env(
            "vip_cidr",
            if input.address.is_ipv4() { "32" } else { "128" },
        ),
        env("cp_enable", "true"),
        env("cp_namespace", "kube-system"),
        env("svc_enable", "false"),
    ];
    match &input.mode {
        VipMode::Arp => {
            vars.push(env("vip_leaderelection", "true"));
            vars.push(env("vip_leasename", "plndr-cp-lock"));
            vars.extend(VIP_LEASE.iter().map(|(name, value)| env(name, *value)));
        }
        VipMode::Bgp {
            router_id,
            peers,
            asn,
        } => {
            vars.push(env("bgp_enable", "true"));
            vars.push(env("bgp_routerid", router_id.to_string()));
            vars.push(env("bgp_as", asn.to_string()));
            // kube-vip refuses an empty list, so a single control plane sets none.
            if !peers.is_empty() {
                let peers = peers
                    .iter()
                    .map(|ip| bgp_peer(*ip, *asn))
                    .collect::<Vec<_>>();
                vars.push(env("bgp_peers", peers.join(",")));
            }
        }
    }
    vars.push(env("address", input.address.to_string()));
    Yaml::List(vars)
}

/// A `host:port` for haproxy (an IPv6 address in brackets).
fn haproxy_address(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(ip) => format!("{ip}:{port}"),
        IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    }
}

/// `/etc/kubekey/haproxy/haproxy.cfg` for a worker (KubeKey's internal load balancer): the
/// kubelet and kube-proxy of a worker reach the API servers through `127.0.0.1:port`, which
/// haproxy spreads round-robin over the control planes (`backends`: name and address, each
/// API server on `port` too), checking each one's `/healthz` over TLS (answered without
/// credentials) so a stopped control plane leaves the rotation. `127.0.0.1:8081/healthz`
/// answers the Pod's probes.
///
/// TCP passthrough: TLS stays between the clients and the API servers. Client and server
/// timeouts are long because watches stay open and quiet for minutes.
pub fn haproxy_cfg(port: u16, backends: &[(String, IpAddr)]) -> String {
    let mut text = format!(
        "# Written by kk-install: the API servers behind 127.0.0.1:{port}.\n\
         global\n\
         \x20   maxconn 4000\n\
         \x20   log stdout format raw local0\n\n\
         defaults\n\
         \x20   mode tcp\n\
         \x20   log global\n\
         \x20   option tcplog\n\
         \x20   option dontlognull\n\
         \x20   option redispatch\n\
         \x20   retries 5\n\
         \x20   timeout connect 10s\n\
         \x20   timeout client 15m\n\
         \x20   timeout server 15m\n\
         \x20   timeout check 10s\n\
         \x20   maxconn 4000\n\n\
         frontend healthz\n\
         \x20   bind 127.0.0.1:{HAPROXY_HEALTH_PORT}\n\
         \x20   mode http\n\
         \x20   monitor-uri /healthz\n\n\
         frontend kube_api_frontend\n\
         \x20   bind 127.0.0.1:{port}\n\
         \x20   mode tcp\n\
         \x20   option tcplog\n\
         \x20   default_backend kube_api_backend\n\n\
         backend kube_api_backend\n\
         \x20   mode tcp\n\
         \x20   balance roundrobin\n\
         \x20   default-server inter 15s downinter 15s rise 2 fall 2 slowstart 60s maxconn 1000 maxqueue 256 weight 100\n\
         \x20   option httpchk GET /healthz\n\
         \x20   http-check expect status 200\n"
    );
    for (name, ip) in backends {
        text.push_str("    server ");
        text.push_str(name);
        text.push(' ');
        text.push_str(&haproxy_address(*ip, port));
        text.push_str(" check check-ssl verify none\n");
    }
    text
}

/// `/etc/kubernetes/manifests/haproxy.yaml`: haproxy as a static Pod on a worker's host
/// network (KubeKey's), its configuration mounted read-only from `/etc/kubekey/haproxy` where
/// the image reads it (`/usr/local/etc/haproxy/haproxy.cfg`).
///
/// The kubelet recreates a static Pod when its manifest changes, not when a file it mounts
/// does: the `cfg-checksum` annotation carries the configuration's SHA-256 (`cfg_sha256`), so
/// writing a new configuration with its new sum restarts haproxy on it. The probes ask
/// `127.0.0.1` explicitly: on the host network the kubelet would otherwise ask the node's
/// address, where the health frontend does not listen.
pub fn haproxy_manifest(image: &str, cfg_sha256: &str) -> String {
    let probe = map([(
        "httpGet",
        map([
            ("host", "127.0.0.1".into()),
            ("path", "/healthz".into()),
            ("port", HAPROXY_HEALTH_PORT.into()),
        ]),
    )]);
    let container = map([
        ("name", "haproxy".into()),
        ("image", image.into()),
        ("imagePullPolicy", "IfNotPresent".into()),
        (
            "resources",
            map([(
                "requests",
                map([("cpu", "25m".into()), ("memory", "32M".into())]),
            )]),
        ),
        ("livenessProbe", probe.clone()),
        ("readinessProbe", probe),
        (
            "volumeMounts",
            Yaml::List(vec![map([
                ("name", "etc-haproxy".into()),
                ("mountPath", "/usr/local/etc/haproxy/".into()),
                ("readOnly", true.into()),
            ])]),
        ),
    ]);
    let pod = map([
        ("apiVersion", "v1".into()),
        ("kind", "Pod".into()),
        (
            "metadata",
            map([
                ("name", "haproxy".into()),
                ("namespace", "kube-system".into()),
                ("labels", map([("k8s-app", "kube-haproxy".into())])),
                ("annotations", map([("cfg-checksum", cfg_sha256.into())])),
            ]),
        ),
        (
            "spec",
            map([
                ("hostNetwork", true.into()),
                ("dnsPolicy", "ClusterFirstWithHostNet".into()),
                ("nodeSelector", map([("kubernetes.io/os", "linux".into())])),
                ("priorityClassName", "system-node-critical".into()),
                ("containers", Yaml::List(vec![container])),
                (
                    "volumes",
                    Yaml::List(vec![map([
                        ("name", "etc-haproxy".into()),
                        (
                            "hostPath",
                            map([
                                ("path", paths::HAPROXY_DIR.into()),
                                ("type", "Directory".into()),
                            ]),
                        ),
                    ])]),
                ),
            ]),
        ),
    ]);
    documents("haproxy, a worker's way to the API servers", &[pod])
}

/// The network plugin and what its values need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cni {
    /// Calico through the `tigera-operator` chart.
    Calico {
        /// The registry host of the bundle's `calico/node` image (`docker.io` for 3.29,
        /// `quay.io` for 3.30).
        registry: String,
    },
    /// The `cilium` chart.
    Cilium,
    /// The `flannel` chart.
    Flannel,
}

/// The range `network/prefix`.
fn cidr((network, prefix): (IpAddr, u8)) -> String {
    format!("{network}/{prefix}")
}

/// Calico's block size for a pool: the node mask, within what Calico accepts (20–32 for IPv4,
/// 116–128 for IPv6, per its `IPPool` reference) and no larger than the pool itself.
fn calico_block_size(pool: (IpAddr, u8), node_mask_v4: u8, node_mask_v6: u8) -> u8 {
    let (mask, low, high) = if pool.0.is_ipv4() {
        (node_mask_v4, 20, 32)
    } else {
        (node_mask_v6, 116, 128)
    };
    mask.clamp(low, high).max(pool.1.min(high))
}

/// Helm values for the CNI chart: every image keeps its original name (containerd's mirrors
/// serve them), and the pod ranges are the cluster's.
///
/// - Calico (`tigera-operator`, whose chart turns `installation` into the `Installation`
///   resource): `installation.registry` is the bundle's registry with the trailing slash the
///   operator requires, since the operator's default differs between 3.29 and 3.30 (the
///   catalog's FACTS.md). One IP pool per family: the range, a block size from the node mask,
///   VXLAN across subnets, NAT outgoing, on every node (the operator's sample
///   `custom-resources.yaml`).
/// - Cilium (`cilium`): `envoy.enabled=false`, since the `cilium-envoy` image is not in the
///   bundle (Envoy then runs inside the agent); `ipam.mode=kubernetes`, so each node's pod
///   range is the one the controller-manager allocates from the pod subnet;
///   `kubeProxyReplacement="false"` (the chart's string values `"true"`/`"false"`), since
///   kube-proxy runs; `ipv4.enabled`/`ipv6.enabled` per family.
/// - Flannel (`flannel`): `podCidr` and `podCidrv6` (chart `values.yaml`); an empty `podCidr`
///   is how the chart turns IPv4 off (`config.yaml`: `EnableIPv4: false`), so it is always
///   written, overriding the chart's default `10.244.0.0/16`.
pub fn cni_values(
    cni: &Cni,
    pod_subnets: &[(IpAddr, u8)],
    node_mask_v4: u8,
    node_mask_v6: u8,
) -> String {
    let first = |v4: bool| {
        pod_subnets
            .iter()
            .find(|(network, _)| network.is_ipv4() == v4)
            .map(|subnet| cidr(*subnet))
    };
    let values = match cni {
        Cni::Calico { registry } => {
            let pools = pod_subnets
                .iter()
                .map(|subnet| {
                    map([
                        ("cidr", cidr(*subnet).into()),
                        (
                            "blockSize",
                            calico_block_size(*subnet, node_mask_v4, node_mask_v6).into(),
                        ),
                        ("encapsulation", "VXLANCrossSubnet".into()),
                        ("natOutgoing", "Enabled".into()),
                        ("nodeSelector", "all()".into()),
                    ])
                })
                .collect();
            let registry = format!("{}/", registry.trim_end_matches('/'));
            map([(
                "installation",
                map([
                    ("registry", registry.into()),
                    ("calicoNetwork", map([("ipPools", Yaml::List(pools))])),
                ]),
            )])
        }
        Cni::Cilium => map([
            ("envoy", map([("enabled", false.into())])),
            ("ipam", map([("mode", "kubernetes".into())])),
            ("kubeProxyReplacement", "false".into()),
            ("ipv4", map([("enabled", first(true).is_some().into())])),
            ("ipv6", map([("enabled", first(false).is_some().into())])),
        ]),
        Cni::Flannel => map([
            ("podCidr", first(true).unwrap_or_default().into()),
            ("podCidrv6", first(false).unwrap_or_default().into()),
        ]),
    };
    documents("the CNI chart's values", &[values])
}

#[cfg(test)]
mod tests;

//! The API endpoint's static Pods: kube-vip, which holds the control plane's virtual address
//! on the control planes, and haproxy, through which a worker reaches the API servers
//! (KubeKey's internal load balancer), with haproxy's configuration.

use std::net::IpAddr;

use serde::Serialize;

use super::{Yaml, documents, map, paths, strings};

/// The port of haproxy's `/healthz` frontend, which the Pod's probes ask (as KubeKey's).
pub const HAPROXY_HEALTH_PORT: u16 = 8081;

/// How kube-vip announces the control plane's virtual address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
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
    /// [`kube_vip_needs_super_admin`](super::kube_vip_needs_super_admin), [`paths::ADMIN_CONF`]
    /// otherwise.
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

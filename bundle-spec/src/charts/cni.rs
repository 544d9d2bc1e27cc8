//! The Helm values of the CNI charts (Calico's `tigera-operator`, Cilium, Flannel, Hybridnet,
//! Kube-OVN).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

/// KubeKey's default pod range, `10.233.64.0/18`: `kk-install`'s `cni.pod_cidr` when the config
/// sets none, and so the range `kk-bundle` renders the CNI chart with.
pub const DEFAULT_POD_SUBNET: (IpAddr, u8) = (IpAddr::V4(Ipv4Addr::new(10, 233, 64, 0)), 18);
/// KubeKey's default service range, `10.233.0.0/18`: `kk-install`'s `cni.service_cidr` when
/// the config sets none, and so the range `kk-bundle` renders the CNI chart with.
pub const DEFAULT_SERVICE_SUBNET: (IpAddr, u8) = (IpAddr::V4(Ipv4Addr::new(10, 233, 0, 0)), 18);
/// The default prefix length of each node's IPv4 pod range (`cni.ipv4_mask_size`), as KubeKey's.
pub const DEFAULT_IPV4_MASK_SIZE: u8 = 24;
/// The default prefix length of each node's IPv6 pod range (`cni.ipv6_mask_size`), as KubeKey's.
pub const DEFAULT_IPV6_MASK_SIZE: u8 = 64;

/// The network plugin's chart and what its values need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CniChart {
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
    /// The `hybridnet` chart.
    Hybridnet {
        /// How many control planes the cluster has: the replicas of hybridnet's manager and
        /// webhook, which run one a control plane.
        control_planes: usize,
        /// How many nodes the cluster has: typha's replicas are at most these (one a node).
        nodes: usize,
    },
    /// The `kube-ovn` chart.
    KubeOvn {
        /// The control planes' addresses, where OVN's databases run (`MASTER_NODES`).
        master_nodes: Vec<IpAddr>,
    },
}

/// The ranges of the cluster a CNI chart is installed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterRanges<'a> {
    /// The pod ranges, at most one per family.
    pub pods: &'a [(IpAddr, u8)],
    /// The service ranges, at most one per family.
    pub services: &'a [(IpAddr, u8)],
    /// The prefix length of each node's IPv4 pod range.
    pub node_mask_v4: u8,
    /// The prefix length of each node's IPv6 pod range.
    pub node_mask_v6: u8,
}

impl ClusterRanges<'static> {
    /// KubeKey's defaults: the ranges `kk-install` uses when the config sets none, and so the
    /// ones `kk-bundle` renders the CNI chart with.
    pub const DEFAULT: Self = Self {
        pods: &[DEFAULT_POD_SUBNET],
        services: &[DEFAULT_SERVICE_SUBNET],
        node_mask_v4: DEFAULT_IPV4_MASK_SIZE,
        node_mask_v6: DEFAULT_IPV6_MASK_SIZE,
    };
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
/// - Hybridnet (`hybridnet`): the chart creates one overlay subnet, `init`, at install; it is
///   the pod range (`init.cidr`, `init.ipVersion`, and `defaultIPFamily` of that family)
///   instead of the chart's `100.64.0.0/16`. The manager and webhook default to a
///   `node-role.kubernetes.io/master` node selector no node has since Kubernetes 1.24 (the
///   chart's own comment says so) and to 3 replicas with one a node: kk selects
///   `node-role.kubernetes.io/control-plane` and runs one a control plane; typha (host network,
///   one a node) runs on at most as many nodes as there are. Hybridnet takes no service range:
///   services stay kube-proxy's.
/// - Kube-OVN (`kube-ovn`): `MASTER_NODES`, the control planes' addresses, which the chart
///   otherwise looks up in the cluster (`lookup`, empty under `helm template`, where the chart
///   then fails); `networking.NET_STACK` from the families, and under the stack's key
///   (`ipv4`, `ipv6`, `dual_stack`, comma-separated for two families) `POD_CIDR`, its
///   `POD_GATEWAY` (the range's first address, as the chart's defaults), and `SVC_CIDR`, the
///   service range, instead of the chart's `10.16.0.0/16` and `10.96.0.0/12`.
///
/// The file is YAML written by serde-saphyr, which quotes every string a YAML 1.1 reader such
/// as Helm could take for something else (`"false"` stays a string); struct fields keep the
/// order they are written in, so the file reads like the charts' own examples.
pub fn cni_values(cni: &CniChart, ranges: &ClusterRanges<'_>) -> String {
    let pods = ranges.pods;
    let first = |v4: bool| {
        pods.iter()
            .find(|(network, _)| network.is_ipv4() == v4)
            .map(|subnet| cidr(*subnet))
    };
    let body = match cni {
        CniChart::Calico { registry } => yaml(&CalicoValues {
            installation: Installation {
                registry: format!("{}/", registry.trim_end_matches('/')),
                calico_network: CalicoNetwork {
                    ip_pools: pods
                        .iter()
                        .map(|subnet| IpPool {
                            cidr: cidr(*subnet),
                            block_size: calico_block_size(
                                *subnet,
                                ranges.node_mask_v4,
                                ranges.node_mask_v6,
                            ),
                            encapsulation: "VXLANCrossSubnet",
                            nat_outgoing: "Enabled",
                            node_selector: "all()",
                        })
                        .collect(),
                },
            },
        }),
        CniChart::Cilium => yaml(&CiliumValues {
            envoy: Enabled { enabled: false },
            ipam: Ipam { mode: "kubernetes" },
            kube_proxy_replacement: "false",
            ipv4: Enabled {
                enabled: first(true).is_some(),
            },
            ipv6: Enabled {
                enabled: first(false).is_some(),
            },
        }),
        CniChart::Flannel => yaml(&FlannelValues {
            pod_cidr: first(true).unwrap_or_default(),
            pod_cidr_v6: first(false).unwrap_or_default(),
        }),
        CniChart::Hybridnet {
            control_planes,
            nodes,
        } => yaml(&hybridnet_values(pods, *control_planes, *nodes)),
        CniChart::KubeOvn { master_nodes } => yaml(&kube_ovn_values(master_nodes, ranges)),
    };
    format!("# Written by kk: the CNI chart's values.\n{body}")
}

/// The label of Kubernetes' control-plane nodes, as a node selector.
const CONTROL_PLANE_SELECTOR: &str = "node-role.kubernetes.io/control-plane";

/// Hybridnet's values: its `init` subnet is the first pod range, IPv4 first.
fn hybridnet_values(pods: &[(IpAddr, u8)], control_planes: usize, nodes: usize) -> HybridnetValues {
    let subnet = pods
        .iter()
        .find(|(network, _)| network.is_ipv4())
        .or_else(|| pods.first())
        .copied()
        .unwrap_or(DEFAULT_POD_SUBNET);
    let v4 = subnet.0.is_ipv4();
    let on_control_planes = || OnNodes {
        replicas: control_planes.max(1),
        node_selector: BTreeMap::from([(CONTROL_PLANE_SELECTOR, "")]),
    };
    HybridnetValues {
        init: HybridnetInit {
            cidr: cidr(subnet),
            ip_version: if v4 { "4" } else { "6" },
        },
        default_ip_family: if v4 { "IPv4" } else { "IPv6" },
        manager: on_control_planes(),
        webhook: on_control_planes(),
        typha: Replicas {
            replicas: nodes.clamp(1, HYBRIDNET_TYPHA_REPLICAS),
        },
    }
}

/// The chart's default number of typha replicas.
const HYBRIDNET_TYPHA_REPLICAS: usize = 3;

/// Kube-OVN's values: the stack, and its pod range, gateway and service range.
fn kube_ovn_values(master_nodes: &[IpAddr], ranges: &ClusterRanges<'_>) -> KubeOvnValues {
    let family = |v4: bool, list: &[(IpAddr, u8)]| -> Vec<(IpAddr, u8)> {
        list.iter()
            .filter(|(network, _)| network.is_ipv4() == v4)
            .take(1)
            .copied()
            .collect()
    };
    // IPv4 first, as the chart's `dual_stack` defaults are written.
    let pods: Vec<_> = [true, false]
        .into_iter()
        .flat_map(|v4| family(v4, ranges.pods))
        .collect();
    let services: Vec<_> = [true, false]
        .into_iter()
        .flat_map(|v4| family(v4, ranges.services))
        .collect();
    let joined = |list: Vec<String>| list.join(",");
    let stack = KubeOvnStack {
        pod_cidr: joined(pods.iter().map(|subnet| cidr(*subnet)).collect()),
        pod_gateway: joined(
            pods.iter()
                .map(|subnet| first_address(*subnet).to_string())
                .collect(),
        ),
        svc_cidr: joined(services.iter().map(|subnet| cidr(*subnet)).collect()),
    };
    let (v4, v6) = (
        pods.iter().any(|(network, _)| network.is_ipv4()),
        pods.iter().any(|(network, _)| network.is_ipv6()),
    );
    let net_stack = match (v4, v6) {
        (true, true) => "dual_stack",
        (false, true) => "ipv6",
        _ => "ipv4",
    };
    KubeOvnValues {
        master_nodes: joined(master_nodes.iter().map(ToString::to_string).collect()),
        networking: KubeOvnNetworking { net_stack },
        ipv4: (net_stack == "ipv4").then(|| stack.clone()),
        ipv6: (net_stack == "ipv6").then(|| stack.clone()),
        dual_stack: (net_stack == "dual_stack").then_some(stack),
    }
}

/// The first host address of a range: the network address plus one.
fn first_address((network, _): (IpAddr, u8)) -> IpAddr {
    match network {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4).wrapping_add(1))),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6).wrapping_add(1))),
    }
}

fn yaml(values: &impl Serialize) -> String {
    // Plain structs of strings, numbers and booleans always serialize.
    #[allow(clippy::expect_used)]
    serde_saphyr::to_string(values).expect("the CNI values serialize")
}

#[derive(Serialize)]
struct CalicoValues {
    installation: Installation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Installation {
    registry: String,
    calico_network: CalicoNetwork,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CalicoNetwork {
    ip_pools: Vec<IpPool>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IpPool {
    cidr: String,
    block_size: u8,
    encapsulation: &'static str,
    nat_outgoing: &'static str,
    node_selector: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CiliumValues {
    envoy: Enabled,
    ipam: Ipam,
    kube_proxy_replacement: &'static str,
    ipv4: Enabled,
    ipv6: Enabled,
}

#[derive(Serialize)]
struct Enabled {
    enabled: bool,
}

#[derive(Serialize)]
struct Ipam {
    mode: &'static str,
}

#[derive(Serialize)]
struct FlannelValues {
    #[serde(rename = "podCidr")]
    pod_cidr: String,
    #[serde(rename = "podCidrv6")]
    pod_cidr_v6: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HybridnetValues {
    init: HybridnetInit,
    #[serde(rename = "defaultIPFamily")]
    default_ip_family: &'static str,
    manager: OnNodes,
    webhook: OnNodes,
    typha: Replicas,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HybridnetInit {
    cidr: String,
    ip_version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OnNodes {
    replicas: usize,
    node_selector: BTreeMap<&'static str, &'static str>,
}

#[derive(Serialize)]
struct Replicas {
    replicas: usize,
}

#[derive(Serialize)]
struct KubeOvnValues {
    #[serde(rename = "MASTER_NODES")]
    master_nodes: String,
    networking: KubeOvnNetworking,
    #[serde(skip_serializing_if = "Option::is_none")]
    ipv4: Option<KubeOvnStack>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ipv6: Option<KubeOvnStack>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dual_stack: Option<KubeOvnStack>,
}

#[derive(Serialize)]
struct KubeOvnNetworking {
    #[serde(rename = "NET_STACK")]
    net_stack: &'static str,
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
struct KubeOvnStack {
    pod_cidr: String,
    pod_gateway: String,
    svc_cidr: String,
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use serde_json::{Value, json};

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    /// The values as Helm reads them: one YAML document.
    fn yaml(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
    }

    /// The pod ranges `pods`, KubeKey's service range, node masks /24 and /120.
    fn ranges(pods: &[(IpAddr, u8)]) -> ClusterRanges<'_> {
        ClusterRanges {
            pods,
            services: &[DEFAULT_SERVICE_SUBNET],
            node_mask_v4: 24,
            node_mask_v6: 120,
        }
    }

    /// The value at a JSON pointer (`/a/b/0`), which must exist.
    fn at<'a>(value: &'a Value, pointer: &str) -> &'a Value {
        value
            .pointer(pointer)
            .unwrap_or_else(|| panic!("no {pointer} in {value:#}"))
    }

    #[test]
    fn calico_values_name_the_bundles_registry_and_one_pool_a_family() {
        let v4 = (ip("10.233.64.0"), 18);
        let v6 = (ip("fd85:ee78:d8a6:8607::1:0"), 112);
        for (registry, subnets, pools) in [
            (
                "quay.io",
                vec![v4],
                json!([{"cidr": "10.233.64.0/18", "blockSize": 24}]),
            ),
            (
                "docker.io/",
                vec![v4, v6],
                json!([
                    {"cidr": "10.233.64.0/18", "blockSize": 24},
                    {"cidr": "fd85:ee78:d8a6:8607::1:0/112", "blockSize": 120},
                ]),
            ),
        ] {
            let cni = CniChart::Calico {
                registry: registry.to_owned(),
            };
            let values = yaml(&cni_values(&cni, &ranges(&subnets)));
            let expected_registry = format!("{}/", registry.trim_end_matches('/'));
            assert_eq!(
                at(&values, "/installation/registry"),
                &json!(expected_registry)
            );
            let got = at(&values, "/installation/calicoNetwork/ipPools")
                .as_array()
                .expect("pools");
            let want = pools.as_array().expect("pools");
            assert_eq!(got.len(), want.len());
            for (pool, want) in got.iter().zip(want) {
                assert_eq!(pool["cidr"], want["cidr"]);
                assert_eq!(pool["blockSize"], want["blockSize"]);
                assert_eq!(pool["encapsulation"], "VXLANCrossSubnet");
                assert_eq!(pool["natOutgoing"], "Enabled");
                assert_eq!(pool["nodeSelector"], "all()");
            }
        }
    }

    #[test]
    fn calico_block_sizes_stay_within_what_calico_accepts_and_the_pool() {
        for (pool, v4_mask, v6_mask, block) in [
            ((ip("10.0.0.0"), 16), 24, 120, 24),
            ((ip("10.0.0.0"), 16), 16, 120, 20),
            ((ip("10.0.0.0"), 26), 24, 120, 26),
            ((ip("fd00::"), 108), 24, 64, 116),
            ((ip("fd00::"), 108), 24, 122, 122),
        ] {
            assert_eq!(calico_block_size(pool, v4_mask, v6_mask), block, "{pool:?}");
        }
    }

    #[test]
    fn cilium_and_flannel_values_follow_the_families_of_the_pod_ranges() {
        let v4 = (ip("10.233.64.0"), 18);
        let v6 = (ip("fd85:ee78:d8a6:8607::1:0"), 112);
        for (subnets, ipv4, ipv6) in [
            (vec![v4], true, false),
            (vec![v4, v6], true, true),
            (vec![v6], false, true),
        ] {
            let values = yaml(&cni_values(&CniChart::Cilium, &ranges(&subnets)));
            assert_eq!(at(&values, "/envoy/enabled"), false);
            assert_eq!(at(&values, "/ipam/mode"), "kubernetes");
            assert_eq!(at(&values, "/kubeProxyReplacement"), "false");
            assert_eq!(at(&values, "/ipv4/enabled"), ipv4);
            assert_eq!(at(&values, "/ipv6/enabled"), ipv6);
        }
        for (subnets, v4_cidr, v6_cidr) in [
            (vec![v4], "10.233.64.0/18", ""),
            (
                vec![v4, v6],
                "10.233.64.0/18",
                "fd85:ee78:d8a6:8607::1:0/112",
            ),
            (vec![v6], "", "fd85:ee78:d8a6:8607::1:0/112"),
        ] {
            let values = yaml(&cni_values(&CniChart::Flannel, &ranges(&subnets)));
            assert_eq!(at(&values, "/podCidr"), v4_cidr);
            assert_eq!(at(&values, "/podCidrv6"), v6_cidr);
        }
    }

    #[test]
    fn hybridnet_values_make_the_pod_range_its_init_subnet_on_the_control_planes() {
        let v4 = (ip("10.233.64.0"), 18);
        let v6 = (ip("fd85:ee78:d8a6:8607::1:0"), 112);
        // (pod ranges, control planes, nodes, init cidr, ip version, family, typha replicas)
        for (subnets, control_planes, nodes, init, version, family, typha) in [
            (vec![v4], 1, 2, "10.233.64.0/18", "4", "IPv4", 2),
            (vec![v6, v4], 3, 5, "10.233.64.0/18", "4", "IPv4", 3),
            (
                vec![v6],
                2,
                2,
                "fd85:ee78:d8a6:8607::1:0/112",
                "6",
                "IPv6",
                2,
            ),
        ] {
            let cni = CniChart::Hybridnet {
                control_planes,
                nodes,
            };
            let values = yaml(&cni_values(&cni, &ranges(&subnets)));
            assert_eq!(at(&values, "/init/cidr"), init);
            assert_eq!(at(&values, "/init/ipVersion"), version);
            assert_eq!(at(&values, "/defaultIPFamily"), family);
            for part in ["manager", "webhook"] {
                assert_eq!(at(&values, &format!("/{part}/replicas")), control_planes);
                assert_eq!(
                    at(&values, &format!("/{part}/nodeSelector")),
                    &json!({"node-role.kubernetes.io/control-plane": ""})
                );
            }
            assert_eq!(at(&values, "/typha/replicas"), typha);
        }
    }

    #[test]
    fn kube_ovn_values_carry_the_pod_and_service_ranges_under_the_stacks_key() {
        let (v4, v6) = (
            (ip("10.233.64.0"), 18),
            (ip("fd85:ee78:d8a6:8607::1:0"), 112),
        );
        let (s4, s6) = (
            (ip("10.233.0.0"), 18),
            (ip("fd85:ee78:d8a6:8607::1000"), 116),
        );
        // (pods, services, stack, pod cidr, gateway, service cidr)
        for (pods, services, stack, pod_cidr, gateway, svc_cidr) in [
            (
                vec![v4],
                vec![s4],
                "ipv4",
                "10.233.64.0/18",
                "10.233.64.1",
                "10.233.0.0/18",
            ),
            (
                vec![v6],
                vec![s6],
                "ipv6",
                "fd85:ee78:d8a6:8607::1:0/112",
                "fd85:ee78:d8a6:8607::1:1",
                "fd85:ee78:d8a6:8607::1000/116",
            ),
            (
                vec![v6, v4],
                vec![s4, s6],
                "dual_stack",
                "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112",
                "10.233.64.1,fd85:ee78:d8a6:8607::1:1",
                "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116",
            ),
        ] {
            let cni = CniChart::KubeOvn {
                master_nodes: vec![ip("192.0.2.10"), ip("192.0.2.11")],
            };
            let ranges = ClusterRanges {
                pods: &pods,
                services: &services,
                node_mask_v4: 24,
                node_mask_v6: 120,
            };
            let values = yaml(&cni_values(&cni, &ranges));
            assert_eq!(at(&values, "/MASTER_NODES"), "192.0.2.10,192.0.2.11");
            assert_eq!(at(&values, "/networking/NET_STACK"), stack);
            assert_eq!(at(&values, &format!("/{stack}/POD_CIDR")), pod_cidr);
            assert_eq!(at(&values, &format!("/{stack}/POD_GATEWAY")), gateway);
            assert_eq!(at(&values, &format!("/{stack}/SVC_CIDR")), svc_cidr);
            // Only the stack's own key is written: the others keep the chart's defaults.
            let keys = ["ipv4", "ipv6", "dual_stack"];
            for other in keys.iter().filter(|key| **key != stack) {
                assert!(values.get(other).is_none(), "{other} in {values:#}");
            }
        }
    }

    #[test]
    fn the_defaults_are_kubekeys() {
        assert_eq!(cidr(DEFAULT_SERVICE_SUBNET), "10.233.0.0/18");
        assert_eq!(cidr(DEFAULT_POD_SUBNET), "10.233.64.0/18");
        assert_eq!((DEFAULT_IPV4_MASK_SIZE, DEFAULT_IPV6_MASK_SIZE), (24, 64));
    }
}

//! The Helm values of the CNI charts (Calico's `tigera-operator`, Cilium, Flannel).

use std::net::{IpAddr, Ipv4Addr};

use serde::Serialize;

/// KubeKey's default pod range, `10.233.64.0/18`: `kk-install`'s `cni.pod_cidr` when the config
/// sets none, and so the range `kk-bundle` renders the CNI chart with.
pub const DEFAULT_POD_SUBNET: (IpAddr, u8) = (IpAddr::V4(Ipv4Addr::new(10, 233, 64, 0)), 18);
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
///
/// The file is YAML written by serde-saphyr, which quotes every string a YAML 1.1 reader such
/// as Helm could take for something else (`"false"` stays a string); struct fields keep the
/// order they are written in, so the file reads like the charts' own examples.
pub fn cni_values(
    cni: &CniChart,
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
    let body = match cni {
        CniChart::Calico { registry } => yaml(&CalicoValues {
            installation: Installation {
                registry: format!("{}/", registry.trim_end_matches('/')),
                calico_network: CalicoNetwork {
                    ip_pools: pod_subnets
                        .iter()
                        .map(|subnet| IpPool {
                            cidr: cidr(*subnet),
                            block_size: calico_block_size(*subnet, node_mask_v4, node_mask_v6),
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
    };
    format!("# Written by kk: the CNI chart's values.\n{body}")
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
            let values = yaml(&cni_values(&cni, &subnets, 24, 120));
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
            let values = yaml(&cni_values(&CniChart::Cilium, &subnets, 24, 120));
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
            let values = yaml(&cni_values(&CniChart::Flannel, &subnets, 24, 120));
            assert_eq!(at(&values, "/podCidr"), v4_cidr);
            assert_eq!(at(&values, "/podCidrv6"), v6_cidr);
        }
    }

    #[test]
    fn the_defaults_are_kubekeys() {
        assert_eq!(cidr(DEFAULT_POD_SUBNET), "10.233.64.0/18");
        assert_eq!((DEFAULT_IPV4_MASK_SIZE, DEFAULT_IPV6_MASK_SIZE), (24, 64));
    }
}

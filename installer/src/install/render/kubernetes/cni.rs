//! The Helm values of the CNI charts (Calico's `tigera-operator`, Cilium, Flannel).

use std::net::IpAddr;

use super::{Yaml, documents, map};

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
pub(super) fn calico_block_size(pool: (IpAddr, u8), node_mask_v4: u8, node_mask_v6: u8) -> u8 {
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

//! `network.*`: node interfaces, bridge filtering, the pod and service ranges, dual stack, the
//! network plugin and the pod address space.

use std::net::IpAddr;

use bundle_spec::charts::{MULTUS_IMAGE_PATH, MULTUS_MANIFEST_BINARY};

use super::version::Version;
use super::{CheckResult, Context, Node, list};
use crate::inventory::{Cidr, ClusterCidr, Host, K8S_CLUSTER, MultiCni, NetworkPlugin};

/// Dual stack became stable (on by default) in Kubernetes 1.21 and exists from 1.20.
const DUAL_STACK_SINCE: Version = Version::new(1, 20, 0);

/// Hybridnet's own requirement (its chart's `kubeVersion`, and the seeds' rule).
const HYBRIDNET_SINCE: Version = Version::new(1, 16, 0);

/// Kube-OVN's: its chart's `kubeVersion: ">= 1.29.0-0"` (the catalog's FACTS.md).
const KUBE_OVN_SINCE: Version = Version::new(1, 29, 0);

mod proxy;

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![
        interface(node),
        bridge_nf_call_iptables(node),
        proxy::proxy(node),
    ]
}

/// `network.bridge_nf_call_iptables`: bridged traffic goes through iptables (and ip6tables on a
/// node that uses IPv6), as kube-proxy's iptables rules and bridge-based network plugins need.
/// kubeadm checked it up to v1.29; kk's os phase sets it whatever the version (see
/// [`super::ESTABLISHED_BY_OS`]). The keys exist only once `br_netfilter` is loaded.
fn bridge_nf_call_iptables(node: &Node) -> CheckResult {
    const ID: &str = "network.bridge_nf_call_iptables";
    if !node.is_kubernetes() {
        return CheckResult::skip(ID, "not a Kubernetes node");
    }
    let mut keys = vec!["net.bridge.bridge-nf-call-iptables"];
    if node.uses_ipv6() {
        keys.push("net.bridge.bridge-nf-call-ip6tables");
    }
    super::kubeadm::sysctls_on(
        node,
        ID,
        &keys,
        "`modprobe br_netfilter`, set them to 1 in /etc/sysctl.d/99-kubernetes.conf and run `sysctl --system`",
    )
}

pub(super) fn cluster(cx: &Context) -> Vec<CheckResult> {
    vec![
        cidr(cx),
        dual_stack(cx),
        plugin(cx),
        multus(cx),
        address_space(cx),
        plugin_since(
            cx,
            "network.hybridnet",
            NetworkPlugin::Hybridnet,
            HYBRIDNET_SINCE,
        ),
        plugin_since(
            cx,
            "network.kube-ovn",
            NetworkPlugin::KubeOvn,
            KUBE_OVN_SINCE,
        ),
    ]
}

/// The internal addresses of `host`.
fn internal_addresses(host: &Host) -> Vec<IpAddr> {
    host.internal_ipv4
        .map(IpAddr::V4)
        .into_iter()
        .chain(host.internal_ipv6.map(IpAddr::V6))
        .collect()
}

/// `network.interface`: each internal address is on one of the node's interfaces.
fn interface(node: &Node) -> CheckResult {
    const ID: &str = "network.interface";
    let wanted = internal_addresses(node.host);
    if wanted.is_empty() {
        return CheckResult::skip(ID, "no internal address (see `kubernetes.ip`)");
    }
    let on = |address: &IpAddr| {
        node.facts
            .addresses
            .iter()
            .find_map(|(interface, addresses)| {
                addresses
                    .iter()
                    .any(|a| a.parse::<IpAddr>().ok() == Some(*address))
                    .then_some(interface.as_str())
            })
    };
    let missing: Vec<String> = wanted
        .iter()
        .filter(|a| on(a).is_none())
        .map(ToString::to_string)
        .collect();
    if missing.is_empty() {
        let found: Vec<String> = wanted
            .iter()
            .map(|a| format!("{a} on {}", on(a).unwrap_or_default()))
            .collect();
        return CheckResult::pass(ID, found.join(", "));
    }
    let has: Vec<&String> = node.facts.addresses.values().flatten().collect();
    CheckResult::fail(
        ID,
        format!(
            "internal address {} is on none of the node's interfaces (it has {}); fix: correct `internal_ipv4`/`internal_ipv6` in the inventory",
            list(&missing),
            if has.is_empty() {
                "none".to_owned()
            } else {
                list(&has)
            },
        ),
    )
}

/// `network.cidr`: what the ranges are, and that they hold no node and do not overlap (the
/// config reader already refused malformed and overlapping ranges; this reports them).
fn cidr(cx: &Context) -> CheckResult {
    const ID: &str = "network.cidr";
    let cni = &cx.config.cni;
    let (pod, service) = (cni.pod_cidr, cni.service_cidr);
    for s in service.ranges() {
        if let Some(p) = pod.ranges().find(|p| p.overlaps(&s)) {
            return CheckResult::fail(
                ID,
                format!(
                    "service range {s} overlaps pod range {p}; fix: choose disjoint `cni.pod_cidr` and `cni.service_cidr`"
                ),
            );
        }
    }
    for host in cx.inventory.hosts() {
        for address in internal_addresses(host) {
            let range = pod
                .ranges()
                .chain(service.ranges())
                .find(|r| r.contains(address));
            if let Some(range) = range {
                return CheckResult::fail(
                    ID,
                    format!(
                        "node `{}` address {address} is inside cluster range {range}; fix: choose `cni.pod_cidr` and `cni.service_cidr` outside the nodes' network",
                        host.name
                    ),
                );
            }
        }
    }
    CheckResult::pass(
        ID,
        format!("pods {}, services {}", show(pod), show(service)),
    )
}

fn show(cidr: ClusterCidr) -> String {
    cidr.ranges()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// `network.dual_stack`: dual stack needs Kubernetes 1.20 and both addresses on every node.
fn dual_stack(cx: &Context) -> CheckResult {
    const ID: &str = "network.dual_stack";
    let cni = &cx.config.cni;
    if !cni.pod_cidr.is_dual_stack() && !cni.service_cidr.is_dual_stack() {
        return CheckResult::skip(ID, "single stack");
    }
    match cx.kube_version() {
        Some(v) if Version::from(v) < DUAL_STACK_SINCE => {
            return CheckResult::fail(
                ID,
                format!(
                    "dual stack needs Kubernetes v{DUAL_STACK_SINCE} or newer, not {v}; fix: install a newer version, or use one address family"
                ),
            );
        }
        None => {
            return CheckResult::warn(
                ID,
                "dual stack, but the version to install is unknown (see `kubernetes.version`)",
            );
        }
        Some(_) => {}
    }
    let single: Vec<&str> = cx
        .inventory
        .group_members(K8S_CLUSTER)
        .into_iter()
        .filter(|h| h.internal_ipv4.is_none() || h.internal_ipv6.is_none())
        .map(|h| h.name.as_str())
        .collect();
    if single.is_empty() {
        CheckResult::pass(ID, "dual stack; every node has an IPv4 and an IPv6 address")
    } else {
        CheckResult::fail(
            ID,
            format!(
                "dual stack, but nodes {} lack `internal_ipv4` or `internal_ipv6`; fix: give every Kubernetes node both, or use one address family",
                list(&single)
            ),
        )
    }
}

/// `network.plugin`: a plugin kk installs, and its images in the bundle.
fn plugin(cx: &Context) -> CheckResult {
    const ID: &str = "network.plugin";
    let plugin = cx.config.cni.plugin;
    if plugin == NetworkPlugin::None {
        return CheckResult::pass(
            ID,
            "none: install a network plugin yourself after the cluster is up",
        );
    }
    let name = plugin.as_str();
    if cx.bundle.images.iter().any(|image| image.contains(name)) {
        CheckResult::pass(ID, format!("{name}, its images are in the bundle"))
    } else {
        CheckResult::fail(
            ID,
            format!(
                "`cni.type` is {name}, but the bundle has no {name} image; fix: build the bundle with {name} (or set `cni.type` to the plugin it carries)"
            ),
        )
    }
}

/// `network.multus`: `cni.multi_cni: multus` needs a primary plugin to delegate to, and its
/// manifest and image in the bundle (the plan refuses these too; the precheck names them
/// beside the rest).
fn multus(cx: &Context) -> CheckResult {
    const ID: &str = "network.multus";
    if cx.config.cni.multi_cni == MultiCni::None {
        return CheckResult::skip(ID, "`cni.multi_cni` is none");
    }
    let primary = cx.config.cni.plugin;
    if primary == NetworkPlugin::None {
        return CheckResult::fail(
            ID,
            "`cni.multi_cni` is multus, which delegates to the primary plugin, but `cni.type` is none; fix: set `cni.type` to the plugin multus delegates to",
        );
    }
    let image = cx
        .bundle
        .images
        .iter()
        .find(|image| image.contains(&format!("/{MULTUS_IMAGE_PATH}:")));
    let manifest = cx
        .bundle
        .binaries
        .iter()
        .any(|name| name == MULTUS_MANIFEST_BINARY);
    match image {
        Some(image) if manifest => CheckResult::pass(
            ID,
            format!("multus over {primary}, its manifest and {image} are in the bundle"),
        ),
        _ => CheckResult::fail(
            ID,
            format!(
                "`cni.multi_cni` is multus, but the bundle lacks its manifest (binary `{MULTUS_MANIFEST_BINARY}`) or its image (`{MULTUS_IMAGE_PATH}`); fix: build the bundle with `spec.kubernetes.multiCni: multus`"
            ),
        ),
    }
}

/// `network.address_space`: each node range holds `max_pods`, and there are enough node
/// ranges for the Kubernetes nodes. A range's usable addresses are 2^(host bits) − 2 (network
/// and broadcast aside, as KubeKey and the config reader count).
fn address_space(cx: &Context) -> CheckResult {
    const ID: &str = "network.address_space";
    let cni = &cx.config.cni;
    let nodes = cx.inventory.group_members(K8S_CLUSTER).len();
    let mut shown = Vec::new();
    for (range, mask, field) in [
        (
            cni.pod_cidr.ipv4(),
            cni.ipv4_mask_size,
            "cni.ipv4_mask_size",
        ),
        (
            cni.pod_cidr.ipv6(),
            cni.ipv6_mask_size,
            "cni.ipv6_mask_size",
        ),
    ] {
        let Some(range) = range else { continue };
        match node_ranges(range, mask, cni.max_pods, nodes, field) {
            Ok(text) => shown.push(text),
            Err(problem) => return CheckResult::fail(ID, problem.to_string()),
        }
    }
    CheckResult::pass(ID, shown.join("; "))
}

/// What `/mask` ranges out of `range` give, or what is wrong.
fn node_ranges(
    range: Cidr,
    mask: u8,
    max_pods: u32,
    nodes: usize,
    field: &str,
) -> Result<String, NodeRangeProblem> {
    let width: u8 = if range.is_ipv4() { 32 } else { 128 };
    let field = field.to_owned();
    if mask < range.prefix() || mask > width {
        return Err(NodeRangeProblem::MaskOutside {
            field,
            mask,
            range,
            width,
        });
    }
    let usable = 2_u64
        .checked_pow(u32::from(width - mask))
        .map_or(u64::MAX, |n| n.saturating_sub(2));
    if u64::from(max_pods) > usable {
        return Err(NodeRangeProblem::TooFewAddresses {
            field,
            mask,
            usable,
            max_pods,
        });
    }
    let ranges = 2_u64
        .checked_pow(u32::from(mask - range.prefix()))
        .unwrap_or(u64::MAX);
    if (nodes as u64) > ranges {
        return Err(NodeRangeProblem::TooFewRanges {
            field,
            mask,
            range,
            ranges,
            nodes,
        });
    }
    Ok(format!(
        "{range}: /{mask} per node, {usable} pod addresses for {max_pods} pods, {ranges} node ranges for {nodes} nodes"
    ))
}

/// Why a pod range cannot be cut into the node ranges the config asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NodeRangeProblem {
    /// The mask is shorter than the pod range's prefix or longer than an address.
    #[error(
        "`{field}` {mask} does not fit pod range {range}; fix: use a mask size from {} to {width}",
        range.prefix()
    )]
    MaskOutside {
        field: String,
        mask: u8,
        range: Cidr,
        width: u8,
    },
    /// A node range holds fewer addresses than a node may run pods.
    #[error(
        "a /{mask} node range holds {usable} pod addresses, fewer than `cni.max_pods` {max_pods}; fix: lower `cni.max_pods` or `{field}`"
    )]
    TooFewAddresses {
        field: String,
        mask: u8,
        usable: u64,
        max_pods: u32,
    },
    /// The pod range has fewer node ranges than there are nodes.
    #[error(
        "pod range {range} has {ranges} node ranges of /{mask}, fewer than the {nodes} Kubernetes nodes; fix: widen `cni.pod_cidr` or raise `{field}`"
    )]
    TooFewRanges {
        field: String,
        mask: u8,
        range: Cidr,
        ranges: u64,
        nodes: usize,
    },
}

/// `network.hybridnet`, `network.kube-ovn`: the plugin `wanted` needs Kubernetes `since` or
/// newer; skipped for another plugin.
fn plugin_since(
    cx: &Context,
    id: &'static str,
    wanted: NetworkPlugin,
    since: Version,
) -> CheckResult {
    let plugin = cx.config.cni.plugin;
    if plugin != wanted {
        return CheckResult::skip(id, format!("`cni.type` is {plugin}"));
    }
    match cx.kube_version() {
        Some(v) if Version::from(v) >= since => {
            CheckResult::pass(id, format!("{v} ({plugin} needs v{since})"))
        }
        Some(v) => CheckResult::fail(
            id,
            format!(
                "{plugin} needs Kubernetes v{since} or newer, not {v}; fix: install a newer version or another plugin"
            ),
        ),
        None => CheckResult::warn(
            id,
            "the version to install is unknown (see `kubernetes.version`)",
        ),
    }
}

#[cfg(test)]
mod tests;

//! `kubernetes.*`: node addresses, the kube-vip address, the version to install, and what a
//! node already has installed.

use std::net::IpAddr;

use bundle_spec::manifest::KubernetesVersion;

use super::version::Version;
use super::{CheckResult, Context, Node};
use crate::inventory::EndpointKind;

/// The oldest version kk installs: the oldest release the bundle builder's catalog describes.
pub(super) const MIN_VERSION: Version = Version::new(1, 29, 0);

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![ip(node), installed(node)]
}

pub(super) fn cluster(cx: &Context) -> Vec<CheckResult> {
    vec![kube_vip(cx), version(cx)]
}

/// `kubernetes.ip`: the node has an internal address.
fn ip(node: &Node) -> CheckResult {
    const ID: &str = "kubernetes.ip";
    let host = node.host;
    let addresses: Vec<String> = host
        .internal_ipv4
        .map(|a| a.to_string())
        .into_iter()
        .chain(host.internal_ipv6.map(|a| a.to_string()))
        .collect();
    if addresses.is_empty() {
        CheckResult::fail(
            ID,
            "no internal address; fix: set `internal_ipv4` or `internal_ipv6` of the host in the inventory",
        )
    } else {
        CheckResult::pass(ID, addresses.join(", "))
    }
}

/// `kubernetes.installed`: an installed kubelet or kubeadm is the version to install.
fn installed(node: &Node) -> CheckResult {
    const ID: &str = "kubernetes.installed";
    let found: Vec<(&str, Version)> = ["kubelet", "kubeadm"]
        .into_iter()
        .filter_map(|program| {
            let text = node.facts.versions.get(program)?;
            Some((program, Version::find(text)?))
        })
        .collect();
    if found.is_empty() {
        return CheckResult::pass(ID, "no kubelet or kubeadm installed");
    }
    let shown = found
        .iter()
        .map(|(program, version)| format!("{program} v{version}"))
        .collect::<Vec<_>>()
        .join(", ");
    let Some(target) = node.cx.kube_version() else {
        return CheckResult::warn(
            ID,
            format!(
                "{shown} installed, and the version to install is unknown; fix: set `kubernetes.kube_version`"
            ),
        );
    };
    if found.iter().all(|(_, v)| *v == Version::from(target)) {
        CheckResult::pass(ID, format!("{shown} installed, as configured"))
    } else {
        CheckResult::fail(
            ID,
            format!(
                "{shown} installed, but {target} is to be installed; fix: remove the old Kubernetes (`kubeadm reset`, remove its packages), or set `kubernetes.kube_version` to the installed version"
            ),
        )
    }
}

/// `kubernetes.kube_vip`: the virtual IP is usable and free.
fn kube_vip(cx: &Context) -> CheckResult {
    const ID: &str = "kubernetes.kube_vip";
    let EndpointKind::KubeVip(vip) = &cx.config.kubernetes.control_plane_endpoint.kind else {
        return CheckResult::skip(
            ID,
            format!(
                "control_plane_endpoint.type is `{}`",
                cx.config.kubernetes.control_plane_endpoint.kind.as_str()
            ),
        );
    };
    let address = vip.address;
    if let Some(problem) = vip_problem(address) {
        return CheckResult::fail(
            ID,
            format!(
                "kube-vip address {address} is {problem}; fix: choose a free unicast address on the nodes' network"
            ),
        );
    }
    if let Some(host) = cx.inventory.hosts().iter().find(|host| {
        host.internal_ipv4.map(IpAddr::V4) == Some(address)
            || host.internal_ipv6.map(IpAddr::V6) == Some(address)
    }) {
        return CheckResult::fail(
            ID,
            format!(
                "kube-vip address {address} is the address of node `{}`; fix: choose a free address, not a node's",
                host.name
            ),
        );
    }
    // On a cluster kk installed, kk's own kube-vip answers.
    let own = super::own::kube_vip(cx, address);
    match (cx.cluster.vip_answers, own) {
        (Some(true), Some(node)) => CheckResult::pass(
            ID,
            format!("{address} held by kk's kube-vip on node `{node}`"),
        ),
        (Some(true), None) => CheckResult::fail(
            ID,
            format!(
                "kube-vip address {address} already answers: another machine uses it; fix: choose a free address"
            ),
        ),
        (Some(false), _) => CheckResult::pass(ID, format!("{address}, free")),
        (None, _) => CheckResult::pass(ID, format!("{address} (not probed whether it is free)")),
    }
}

fn vip_problem(address: IpAddr) -> Option<&'static str> {
    if address.is_unspecified() {
        Some("unspecified")
    } else if address.is_loopback() {
        Some("a loopback address")
    } else if address.is_multicast() {
        Some("a multicast address")
    } else if matches!(address, IpAddr::V4(v4) if v4.is_broadcast()) {
        Some("the broadcast address")
    } else {
        None
    }
}

/// `kubernetes.version`: the version to install is known, recent enough, and the one the
/// bundle carries.
fn version(cx: &Context) -> CheckResult {
    const ID: &str = "kubernetes.version";
    let configured = cx.config.kubernetes.kube_version;
    let bundled = cx.bundle.kubernetes_version.as_deref();
    let Some(target) = cx.kube_version() else {
        return CheckResult::warn(
            ID,
            "the version to install is unknown: no `kubernetes.kube_version`, and the bundle names none; fix: set `kubernetes.kube_version` to the version of the bundle's kubeadm",
        );
    };
    if let (Some(configured), Some(bundled)) = (configured, bundled)
        && KubernetesVersion::parse(bundled) != Some(configured)
    {
        return CheckResult::fail(
            ID,
            format!(
                "`kubernetes.kube_version` is {configured}, but the bundle carries {bundled}; fix: set it to {bundled}, remove it, or build a bundle for {configured}"
            ),
        );
    }
    if Version::from(target) < MIN_VERSION {
        return CheckResult::fail(
            ID,
            format!(
                "{target} is older than v{MIN_VERSION}, the oldest kk installs; fix: install v{MIN_VERSION} or newer"
            ),
        );
    }
    CheckResult::pass(ID, format!("{target} (at least v{MIN_VERSION})"))
}

#[cfg(test)]
mod tests {
    use super::super::Status::{Fail, Pass, Skip, Warn};
    use super::super::fixtures::{Fixture, config, expect, inventory};

    #[test]
    fn internal_addresses() {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.on("node1", "kubernetes.ip"), Pass, &["10.0.0.1"]);
        fixture.inventory = inventory(
            "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {internal_ipv6: 'fd00::1'}\n    node2: {connector: {host: n2}}\n  groups:\n    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2]}\n",
        );
        expect(&fixture.on("node1", "kubernetes.ip"), Pass, &["fd00::1"]);
        expect(
            &fixture.on("node2", "kubernetes.ip"),
            Fail,
            &["internal_ipv4"],
        );
    }

    #[test]
    fn installed_versions() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.on("node2", "kubernetes.installed"),
            Pass,
            &["no kubelet"],
        );
        let versions = &mut fixture.node("node2").versions;
        versions.insert("kubelet".to_owned(), "Kubernetes v1.31.4".to_owned());
        versions.insert("kubeadm".to_owned(), "v1.31.4".to_owned());
        expect(
            &fixture.on("node2", "kubernetes.installed"),
            Pass,
            &["kubelet v1.31.4"],
        );
        let versions = &mut fixture.node("node2").versions;
        versions.insert("kubelet".to_owned(), "Kubernetes v1.30.2".to_owned());
        expect(
            &fixture.on("node2", "kubernetes.installed"),
            Fail,
            &[
                "kubelet v1.30.2",
                "v1.31.4 is to be installed",
                "kubeadm reset",
            ],
        );
        fixture.bundle.kubernetes_version = None;
        expect(
            &fixture.on("node2", "kubernetes.installed"),
            Warn,
            &["unknown"],
        );
    }

    #[test]
    fn kube_vip() {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.cluster("kubernetes.kube_vip"), Skip, &["`local`"]);
        let vip = |address: &str| {
            config(&format!(
                "  kubernetes:\n    control_plane_endpoint:\n      type: kube-vip\n      kube_vip: {{address: '{address}'}}\n"
            ))
        };
        fixture.config = vip("10.0.0.100");
        expect(
            &fixture.cluster("kubernetes.kube_vip"),
            Pass,
            &["not probed"],
        );
        fixture.cluster.vip_answers = Some(false);
        expect(&fixture.cluster("kubernetes.kube_vip"), Pass, &["free"]);
        fixture.cluster.vip_answers = Some(true);
        expect(
            &fixture.cluster("kubernetes.kube_vip"),
            Fail,
            &["already answers"],
        );
        fixture.cluster.vip_answers = None;
        fixture.config = vip("10.0.0.2");
        expect(
            &fixture.cluster("kubernetes.kube_vip"),
            Fail,
            &["node `node2`"],
        );
        for bad in ["127.0.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255"] {
            fixture.config = vip(bad);
            expect(&fixture.cluster("kubernetes.kube_vip"), Fail, &[bad]);
        }
    }

    #[test]
    fn versions() {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.cluster("kubernetes.version"), Pass, &["v1.31.4"]);
        fixture.config = config("  kubernetes: {kube_version: v1.31.4}\n");
        expect(&fixture.cluster("kubernetes.version"), Pass, &["v1.31.4"]);
        fixture.config = config("  kubernetes: {kube_version: v1.30.1}\n");
        expect(
            &fixture.cluster("kubernetes.version"),
            Fail,
            &["v1.30.1", "bundle carries v1.31.4"],
        );
        fixture.bundle.kubernetes_version = None;
        expect(&fixture.cluster("kubernetes.version"), Pass, &["v1.30.1"]);
        fixture.config = config("  kubernetes: {kube_version: v1.28.9}\n");
        expect(
            &fixture.cluster("kubernetes.version"),
            Fail,
            &["older than v1.29.0"],
        );
        fixture.config = config("  kubernetes: {kube_version: v1.29.0}\n");
        expect(&fixture.cluster("kubernetes.version"), Pass, &["v1.29.0"]);
        fixture.config = config("  kubernetes: {}\n");
        expect(&fixture.cluster("kubernetes.version"), Warn, &["unknown"]);
    }
}

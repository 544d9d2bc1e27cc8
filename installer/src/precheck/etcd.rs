//! `etcd.*`: the deployment type and member count, disk latency, and an etcd already there.

use super::{CheckResult, Context, Node, list};
use crate::inventory::{EtcdDeploymentType, Role};

/// etcd's guidance: the 99th percentile of WAL fdatasync should stay below 10 ms.
pub(super) const FSYNC_P99_LIMIT_SECONDS: f64 = 0.010;

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![disk_fsync(node), installed(node)]
}

pub(super) fn cluster(cx: &Context) -> Vec<CheckResult> {
    vec![deployment_type(cx)]
}

/// `etcd.deployment_type`: external etcd needs an odd, non-empty `etcd` group; stacked etcd
/// runs on the control plane, where an even count only warns.
fn deployment_type(cx: &Context) -> CheckResult {
    const ID: &str = "etcd.deployment_type";
    let kind = cx.config.etcd.deployment_type;
    let (role, group) = match kind {
        EtcdDeploymentType::External => (Role::Etcd, "etcd"),
        EtcdDeploymentType::Internal => (Role::ControlPlane, "kube_control_plane"),
    };
    let members: Vec<&str> = cx
        .inventory
        .role_members(role)
        .into_iter()
        .map(|h| h.name.as_str())
        .collect();
    let count = members.len();
    let plural = if count == 1 { "" } else { "s" };
    let shown = format!("{kind}: {count} member{plural} ({})", list(&members));
    if count == 0 {
        return CheckResult::fail(
            ID,
            format!(
                "etcd is {kind}, but group `{group}` is empty; fix: list an odd number of hosts in `{group}`"
            ),
        );
    }
    if count % 2 == 1 {
        return CheckResult::pass(ID, shown);
    }
    let problem =
        format!("{shown}: an even number of members tolerates no more failures than one fewer");
    match kind {
        EtcdDeploymentType::External => CheckResult::fail(
            ID,
            format!("{problem}; fix: list an odd number of hosts in `etcd` (1, 3, 5)"),
        ),
        EtcdDeploymentType::Internal => CheckResult::warn(
            ID,
            format!("{problem}; fix: use an odd number of control-plane nodes"),
        ),
    }
}

/// `etcd.disk_fsync`: fio's fdatasync p99 on etcd members, against etcd's 10 ms.
fn disk_fsync(node: &Node) -> CheckResult {
    const ID: &str = "etcd.disk_fsync";
    if !node.is_etcd_member() {
        return CheckResult::skip(ID, "not an etcd member");
    }
    let limit_ms = FSYNC_P99_LIMIT_SECONDS * 1000.0;
    let name = node.name();
    let Some(p99) = node.cx.cluster.etcd_fsync_p99_seconds.get(name) else {
        if !node.facts.has_command("fio") {
            return CheckResult::warn(
                ID,
                format!(
                    "node `{name}` runs an etcd member but has no `fio`, so its disk latency was not measured; fix: install fio (package `fio`) on the node to measure it"
                ),
            );
        }
        return CheckResult::warn(
            ID,
            format!(
                "node `{name}` runs an etcd member and has `fio`, but its disk latency was not measured (the measurement failed or did not run there); fix: see the node's log in the work directory, and run the precheck again"
            ),
        );
    };
    let p99_ms = p99 * 1000.0;
    if *p99 <= FSYNC_P99_LIMIT_SECONDS {
        CheckResult::pass(
            ID,
            format!("fdatasync p99 {p99_ms:.2} ms (at most {limit_ms} ms)"),
        )
    } else {
        CheckResult::fail(
            ID,
            format!(
                "fdatasync p99 {p99_ms:.2} ms, above the {limit_ms} ms etcd needs to keep its leader; fix: put /var/lib/etcd on an SSD or a faster disk"
            ),
        )
    }
}

/// `etcd.installed`: an etcd binary or data on an etcd member is reported.
fn installed(node: &Node) -> CheckResult {
    const ID: &str = "etcd.installed";
    if !node.is_etcd_member() {
        return CheckResult::skip(ID, "not an etcd member");
    }
    let facts = node.facts;
    let mut found = Vec::new();
    if let Some(version) = facts.versions.get("etcd") {
        found.push(format!("`{version}` is installed"));
    }
    if facts.etcd_data_present {
        found.push("/var/lib/etcd holds data".to_owned());
    }
    if found.is_empty() {
        CheckResult::pass(ID, "no etcd installed")
    } else if super::own::etcd_data(node) {
        CheckResult::pass(ID, format!("kk's own etcd member: {}", found.join(" and ")))
    } else {
        CheckResult::warn(
            ID,
            format!(
                "{}; fix: if this is a leftover, stop etcd and remove it and /var/lib/etcd",
                found.join(" and ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::Status::{Fail, Pass, Skip, Warn};
    use super::super::fixtures::{Fixture, config, expect, inventory};

    fn with_etcd(hosts: &str) -> crate::inventory::Inventory {
        inventory(&format!(
            "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {{internal_ipv4: 10.0.0.1}}\n    node2: {{internal_ipv4: 10.0.0.2}}\n    node3: {{internal_ipv4: 10.0.0.3}}\n    node4: {{internal_ipv4: 10.0.0.4}}\n  groups:\n    kube_control_plane: {{hosts: [node1, node2]}}\n    kube_worker: {{hosts: [node1, node2, node3, node4]}}\n    etcd: {{hosts: [{hosts}]}}\n"
        ))
    }

    #[test]
    fn member_counts() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.cluster("etcd.deployment_type"),
            Pass,
            &["external: 1 member ", "`node1`"],
        );
        fixture.inventory = with_etcd("node1, node2, node3");
        expect(
            &fixture.cluster("etcd.deployment_type"),
            Pass,
            &["3 members"],
        );
        fixture.inventory = with_etcd("node1, node2");
        expect(
            &fixture.cluster("etcd.deployment_type"),
            Fail,
            &["2 members", "odd"],
        );
        fixture.inventory = with_etcd("node1, node2, node3, node4");
        expect(
            &fixture.cluster("etcd.deployment_type"),
            Fail,
            &["4 members"],
        );
        fixture.inventory = with_etcd("");
        expect(
            &fixture.cluster("etcd.deployment_type"),
            Fail,
            &["`etcd` is empty"],
        );
        // Internal: the control plane (two nodes here) runs etcd; even only warns.
        fixture.config = config("  etcd: {deployment_type: internal}\n");
        expect(
            &fixture.cluster("etcd.deployment_type"),
            Warn,
            &["internal: 2 members"],
        );
    }

    #[test]
    fn fsync_latency_against_10_ms() {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.on("node1", "etcd.disk_fsync"), Pass, &["2.00 ms"]);
        expect(
            &fixture.on("node2", "etcd.disk_fsync"),
            Skip,
            &["not an etcd member"],
        );
        let latency = &mut fixture.cluster.etcd_fsync_p99_seconds;
        latency.insert("node1".to_owned(), 0.010);
        expect(&fixture.on("node1", "etcd.disk_fsync"), Pass, &["10.00 ms"]);
        let latency = &mut fixture.cluster.etcd_fsync_p99_seconds;
        latency.insert("node1".to_owned(), 0.0153);
        expect(
            &fixture.on("node1", "etcd.disk_fsync"),
            Fail,
            &["15.30 ms", "SSD"],
        );
        fixture.cluster.etcd_fsync_p99_seconds.clear();
        expect(
            &fixture.on("node1", "etcd.disk_fsync"),
            Warn,
            &["node `node1`", "has `fio`, but", "not measured", "fix: "],
        );
        fixture.node("node1").commands.retain(|c| c != "fio");
        expect(
            &fixture.on("node1", "etcd.disk_fsync"),
            Warn,
            &["node `node1`", "has no `fio`", "fix: install fio"],
        );
    }

    /// fio measures the hosts that run etcd: the `etcd` group with external etcd, the control
    /// plane with stacked etcd (whatever the `etcd` group says).
    #[test]
    fn the_disk_check_follows_where_etcd_runs() {
        let mut fixture = Fixture::three_nodes();
        fixture.inventory = with_etcd("node3");
        let names = |fixture: &Fixture| -> Vec<String> {
            crate::precheck::etcd_members(&fixture.inventory, &fixture.config)
                .into_iter()
                .map(|h| h.name.clone())
                .collect()
        };
        assert_eq!(names(&fixture), ["node3"]);
        fixture.cluster.etcd_fsync_p99_seconds = [("node3".to_owned(), 0.002)].into();
        expect(&fixture.on("node3", "etcd.disk_fsync"), Pass, &[]);
        expect(
            &fixture.on("node1", "etcd.disk_fsync"),
            Skip,
            &["not an etcd member"],
        );
        fixture.config = config("  etcd: {deployment_type: internal}\n");
        assert_eq!(names(&fixture), ["node1", "node2"]);
        expect(
            &fixture.on("node3", "etcd.disk_fsync"),
            Skip,
            &["not an etcd member"],
        );
        // A control plane is measured where fio is; one not measured says why.
        expect(
            &fixture.on("node1", "etcd.disk_fsync"),
            Warn,
            &["has `fio`, but"],
        );
        fixture.cluster.etcd_fsync_p99_seconds = [("node1".to_owned(), 0.003)].into();
        expect(&fixture.on("node1", "etcd.disk_fsync"), Pass, &["3.00 ms"]);
    }

    #[test]
    fn existing_etcd() {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.on("node1", "etcd.installed"), Pass, &["no etcd"]);
        fixture
            .node("node1")
            .versions
            .insert("etcd".to_owned(), "etcd Version: 3.4.23".to_owned());
        fixture.node("node1").etcd_data_present = true;
        expect(
            &fixture.on("node1", "etcd.installed"),
            Warn,
            &["3.4.23", "/var/lib/etcd holds data"],
        );
        expect(
            &fixture.on("node2", "etcd.installed"),
            Skip,
            &["not an etcd member"],
        );
    }
}

use super::fixtures::Fixture;
use super::*;

#[test]
fn waivers_match_ids_and_prefixes_at_dots() {
    let ignore: BTreeSet<String> = ["kubeadm.port", "os.arch"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    let waived = waive(CheckResult::fail("kubeadm.port.6443", "in use"), &ignore);
    assert_eq!(waived.status, Status::Skip);
    assert!(waived.message.starts_with(WAIVED), "{}", waived.message);
    assert!(waived.message.contains("would be fail: in use"));
    assert_eq!(
        waive(CheckResult::fail("os.arch", "x"), &ignore).status,
        Status::Skip
    );
    // `os.arch` does not waive `os.architecture`, nor `kubeadm.port` `kubeadm.ports`.
    assert_eq!(
        waive(CheckResult::fail("os.architecture", "x"), &ignore).status,
        Status::Fail
    );
    assert_eq!(
        waive(CheckResult::fail("kubeadm.ports", "x"), &ignore).status,
        Status::Fail
    );
}

#[test]
fn evaluate_lists_every_rule_for_every_reachable_node_and_waives() {
    let mut fixture = Fixture::three_nodes();
    fixture.facts.remove("node3");
    fixture.node("node2").swap_bytes = 1 << 30;
    let ignore = BTreeSet::from(["kubeadm.swap".to_owned()]);
    let report = fixture.evaluate(&ignore);
    assert_eq!(
        report.nodes.keys().collect::<Vec<_>>(),
        ["node1", "node2"],
        "unreachable node3 gets no node rules"
    );
    let ids =
        |name: &str| -> Vec<String> { report.nodes[name].iter().map(|r| r.id.clone()).collect() };
    assert_eq!(ids("node1"), ids("node2"));
    let swap = report.nodes["node2"]
        .iter()
        .find(|r| r.id == "kubeadm.swap")
        .expect("listed");
    assert_eq!(swap.status, Status::Skip);
    assert!(swap.message.contains("1024 MiB"), "{}", swap.message);
    let table = report.render_table();
    assert!(!report.failed(), "{table}");
    assert!(
        table.contains("precheck passed: 2 nodes, 0 failed"),
        "{table}"
    );
    assert!(table.contains("kubeadm.port.6443"), "{table}");
}

/// The rules of [`ESTABLISHED_BY_OS`] that, still unmet after the os phase, only warn (as
/// kubeadm does); the others fail.
const WARN_AFTER_OS: &[&str] = &["kubeadm.hostname_resolves"];

/// A minimal server, as found before the install: swap on, forwarding off, no
/// `br_netfilter` (so no bridge sysctls), no modules loaded, its name not in /etc/hosts.
fn minimal(fixture: &mut Fixture, node: &str) {
    let facts = fixture.node(node);
    facts.name_resolves = false;
    facts.swap_bytes = 1 << 30;
    facts.sysctls = BTreeMap::from([("net.ipv4.ip_forward".to_owned(), "0".to_owned())]);
    facts.modules.clear();
    facts.filesystems.clear();
}

#[test]
fn what_the_os_phase_sets_is_not_a_failure_before_the_install() {
    let mut fixture = Fixture::three_nodes();
    minimal(&mut fixture, "node2");
    let report = fixture.evaluate(&BTreeSet::new());
    let table = report.render_table();
    assert!(!report.failed(), "{table}");
    let set: Vec<&str> = report.nodes["node2"]
        .iter()
        .filter(|r| r.status == Status::SetByInstall)
        .map(|r| r.id.as_str())
        .collect();
    // Exactly the rules the os phase establishes, and nothing is `set` elsewhere.
    let mut expected = ESTABLISHED_BY_OS.to_vec();
    expected.sort_unstable();
    let mut found = set.clone();
    found.sort_unstable();
    assert_eq!(found, expected, "{table}");
    for (node, results) in &report.nodes {
        for result in results {
            if result.status == Status::SetByInstall {
                assert_eq!(node, "node2");
                assert!(
                    result.message.starts_with(SET_BY_INSTALL),
                    "{}",
                    result.message
                );
            }
        }
    }
    assert!(
        table.contains(
            "precheck passed: 3 nodes, 0 failed, 0 warnings, 5 set by the install, 0 waived"
        ),
        "{table}"
    );
    assert!(
        table.contains("node2  kubeadm.swap: now swap is on (1024 MiB)"),
        "{table}"
    );
    assert_eq!(report.to_json()["nodes"]["node2"][0]["status"], "pass");

    // After the os phase, the same facts fail (or warn, where kubeadm only warns), and
    // only those rules.
    let after = fixture.evaluate_at(&BTreeSet::new(), Stage::AfterOs);
    let with = |status: Status| -> Vec<&str> {
        let mut ids: Vec<&str> = after.nodes["node2"]
            .iter()
            .filter(|r| r.status == status)
            .map(|r| r.id.as_str())
            .collect();
        ids.sort_unstable();
        ids
    };
    let failing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|id| !WARN_AFTER_OS.contains(id))
        .collect();
    assert_eq!(with(Status::Fail), failing);
    assert_eq!(with(Status::Warn), WARN_AFTER_OS);
}

#[test]
fn established_by_os_judges_only_those_rules_for_real() {
    let mut fixture = Fixture::three_nodes();
    minimal(&mut fixture, "node2");
    // Problems the os phase does not fix are not its report's business.
    fixture.node("node2").commands.clear();
    fixture.node("node3").uid = 1000;
    let report = established_by_os(&fixture.context(), &BTreeSet::new());
    assert!(report.cluster.is_empty());
    assert_eq!(
        report.nodes.keys().collect::<Vec<_>>(),
        ["node1", "node2", "node3"]
    );
    for (node, results) in &report.nodes {
        let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let mut expected = ESTABLISHED_BY_OS.to_vec();
        expected.sort_unstable();
        assert_eq!(sorted, expected, "{node}");
        for result in results {
            let status = match node.as_str() {
                "node2" if WARN_AFTER_OS.contains(&result.id.as_str()) => Status::Warn,
                "node2" => Status::Fail,
                _ => Status::Pass,
            };
            assert_eq!(result.status, status, "{node}: {result:#?}");
        }
    }
    assert!(report.failed());
    // Waivers apply here too.
    let ignore: BTreeSet<String> = ESTABLISHED_BY_OS
        .iter()
        .map(|id| (*id).to_owned())
        .collect();
    let waived = established_by_os(&fixture.context(), &ignore);
    assert!(!waived.failed(), "{}", waived.render_table());
    // A node whose facts were not gathered again is not judged.
    fixture.facts.remove("node1");
    let report = established_by_os(&fixture.context(), &BTreeSet::new());
    assert!(!report.nodes.contains_key("node1"));
}

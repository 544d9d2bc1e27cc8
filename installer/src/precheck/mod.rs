//! The precheck: rules that judge whether the nodes, the config and the bundle can make a
//! cluster, before anything is changed.
//!
//! # How the types fit
//!
//! A [`Context`] holds everything the rules read: the [`Inventory`] and [`Config`], the
//! [`Facts`] gathered from each reachable node, what the bundle carries ([`BundleFacts`]) and
//! what was measured across nodes ([`ClusterFacts`]: the kube-vip probe, fio latencies).
//! [`evaluate`] runs every rule over it and returns a [`Report`]: per node, one
//! [`CheckResult`] per node rule; for the cluster, one per cluster rule. Rules are grouped by
//! family, one module each (`os`, `kubernetes`, `network`, `etcd`, `cri`, `services` for nfs
//! and the image registry, `kubeadm` for kubeadm's own preflight, `airgap`), each exposing
//! `node(&Node)` and/or `cluster(&Context)`.
//!
//! # Why pure
//!
//! No rule touches a node: facts are gathered once, in one round trip per node
//! (`crate::facts`), and the rules are plain functions of recorded data. So every rule is unit
//! tested from a fixture `Facts` without a node, and a recorded `facts.json` reproduces a
//! user's report exactly.
//!
//! # Conventions
//!
//! - Every rule has a stable id (`kubeadm.swap`, `kubeadm.port.6443`…) and yields `fail` or
//!   `warn` when violated; messages say what was found and how to fix it.
//! - A node rule that does not apply to a node (control-plane ports on a worker) is listed
//!   for it as `skip` with the reason, so every node has every rule.
//! - `--ignore ID` waives a rule; an id also waives its sub-ids (`kubeadm.port` waives
//!   `kubeadm.port.6443`…). A waived rule is still listed, as `skip`, with what it found.
//! - **Units.** Memory minimums in the config are "MB" as KubeKey names them; kk reads them as
//!   MiB (1 MB = 1024 × 1024 bytes), as kubeadm does for its own 1700 MB (it divides
//!   `Totalram` by 1024 twice). `Facts::memory_bytes` is bytes (`MemTotal`, a little less
//!   than the RAM installed). Messages print MiB and GiB.

mod airgap;
mod cri;
mod etcd;
mod kubeadm;
mod kubernetes;
mod network;
mod os;
mod report;
mod services;
mod version;

#[cfg(test)]
mod fixtures;

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::manifest::KubernetesVersion;
use serde::Serialize;

use crate::facts::Facts;
use crate::inventory::{Config, EtcdDeploymentType, Host, Inventory, K8S_CLUSTER};

pub use report::Report;

/// Everything the rules read.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The machines and their groups.
    pub inventory: &'a Inventory,
    /// What to install.
    pub config: &'a Config,
    /// Facts by inventory host name; a host missing here was unreachable and gets no node
    /// rules.
    pub facts: &'a BTreeMap<String, Facts>,
    /// What the bundle carries.
    pub bundle: &'a BundleFacts,
    /// What was measured across nodes.
    pub cluster: &'a ClusterFacts,
}

/// What the bundle carries, as far as the rules care.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BundleFacts {
    /// Platforms, `os/arch` (`linux/amd64`).
    pub platforms: Vec<String>,
    /// The Kubernetes version of the bundle's catalog expansion (`v1.31.4`), if any.
    pub kubernetes_version: Option<String>,
    /// Bytes the store and binaries need on disk once unpacked.
    pub content_bytes: u64,
    /// Names of the binary artifacts (`kubeadm`, `etcd`, `containerd`…).
    pub binaries: Vec<String>,
    /// Image references.
    pub images: Vec<String>,
}

/// Measurements that need more than one node's facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFacts {
    /// Whether the kube-vip address answers already; `None`: not probed.
    pub vip_answers: Option<bool>,
    /// fio's fdatasync p99 latency in seconds, by host; absent where fio is missing.
    pub etcd_fsync_p99_seconds: BTreeMap<String, f64>,
}

/// The outcome of one rule on one node or on the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// The rule's id, e.g. `kubeadm.port.6443`.
    pub id: String,
    /// Pass, warn, fail or skip.
    pub status: Status,
    /// What was found, and for a warning or failure how to fix it.
    pub message: String,
}

/// How a rule came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The requirement is met.
    Pass,
    /// Not met, but the install can go on.
    Warn,
    /// Not met: the install would fail or make a broken cluster.
    Fail,
    /// Not applicable here, or waived by `--ignore`.
    Skip,
}

impl Status {
    /// `pass`, `warn`, `fail` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Warn => "warn",
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }
}

impl CheckResult {
    /// A result with `status`.
    pub fn new(id: impl Into<String>, status: Status, message: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            status,
            message: message.into(),
        }
    }

    /// A pass.
    pub fn pass(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(id, Status::Pass, message)
    }

    /// A warning.
    pub fn warn(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(id, Status::Warn, message)
    }

    /// A failure.
    pub fn fail(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(id, Status::Fail, message)
    }

    /// Not applicable, with the reason.
    pub fn skip(id: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(id, Status::Skip, message)
    }
}

/// Runs every rule: node rules on each host with facts, cluster rules once; then waives what
/// `ignore` names (an id, or a prefix of ids ending before a `.`).
pub fn evaluate(context: &Context, ignore: &BTreeSet<String>) -> Report {
    let mut nodes = BTreeMap::new();
    for host in context.inventory.hosts() {
        let Some(facts) = context.facts.get(&host.name) else {
            continue;
        };
        let node = Node {
            cx: context,
            host,
            facts,
        };
        let results = node_rules(&node)
            .into_iter()
            .map(|r| waive(r, ignore))
            .collect();
        nodes.insert(host.name.clone(), results);
    }
    let cluster = cluster_rules(context)
        .into_iter()
        .map(|r| waive(r, ignore))
        .collect();
    Report { nodes, cluster }
}

fn node_rules(node: &Node) -> Vec<CheckResult> {
    let mut results = Vec::new();
    results.extend(os::node(node));
    results.extend(kubernetes::node(node));
    results.extend(network::node(node));
    results.extend(etcd::node(node));
    results.extend(cri::node(node));
    results.extend(kubeadm::node(node));
    results.extend(airgap::node(node));
    results
}

fn cluster_rules(cx: &Context) -> Vec<CheckResult> {
    let mut results = Vec::new();
    results.extend(kubernetes::cluster(cx));
    results.extend(network::cluster(cx));
    results.extend(etcd::cluster(cx));
    results.extend(cri::cluster(cx));
    results.extend(services::cluster(cx));
    results
}

/// The start of the message of a waived rule.
const WAIVED: &str = "waived by --ignore";

/// `result` as `skip` when `ignore` names its id or a prefix of it.
fn waive(result: CheckResult, ignore: &BTreeSet<String>) -> CheckResult {
    let by = ignore.iter().find(|waiver| {
        result.id == **waiver
            || result
                .id
                .strip_prefix(waiver.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    });
    match by {
        Some(waiver) => CheckResult::skip(
            result.id,
            format!(
                "{WAIVED} `{waiver}` (would be {}: {})",
                result.status.as_str(),
                result.message
            ),
        ),
        None => result,
    }
}

/// One reachable host, with its facts and the context: what node rules take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node<'a> {
    pub(crate) cx: &'a Context<'a>,
    pub(crate) host: &'a Host,
    pub(crate) facts: &'a Facts,
}

impl Node<'_> {
    /// The inventory name.
    fn name(&self) -> &str {
        &self.host.name
    }

    /// Whether the node gets a kubelet (is in `k8s_cluster`).
    fn is_kubernetes(&self) -> bool {
        self.cx.is_kubernetes(self.name())
    }

    /// Whether the node runs an etcd member: the `etcd` group with external etcd, the control
    /// plane with internal (stacked) etcd.
    fn is_etcd_member(&self) -> bool {
        let roles = self.host.roles;
        match self.cx.config.etcd.deployment_type {
            EtcdDeploymentType::External => roles.is_etcd(),
            EtcdDeploymentType::Internal => roles.is_control_plane(),
        }
    }
}

impl Context<'_> {
    /// The version to install: `kube_version`, else the bundle's.
    fn kube_version(&self) -> Option<KubernetesVersion> {
        self.config.kubernetes.kube_version.or_else(|| {
            self.bundle
                .kubernetes_version
                .as_deref()
                .and_then(KubernetesVersion::parse)
        })
    }

    /// Whether host `name` is in `k8s_cluster`.
    fn is_kubernetes(&self, name: &str) -> bool {
        self.inventory
            .group_members(K8S_CLUSTER)
            .iter()
            .any(|host| host.name == name)
    }
}

/// `bytes` in MiB, rounded down.
fn mib(bytes: u64) -> u64 {
    bytes / (1024 * 1024)
}

/// `bytes` in GiB with one decimal.
fn gib(bytes: u64) -> String {
    // Precision loss above 2^53 bytes is irrelevant for a display with one decimal.
    #[allow(clippy::cast_precision_loss)]
    let value = bytes as f64 / (1024.0 * 1024.0 * 1024.0);
    format!("{value:.1} GiB")
}

/// `names` as `` `a`, `b` ``.
fn list(names: &[impl AsRef<str>]) -> String {
    names
        .iter()
        .map(|name| format!("`{}`", name.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
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
        let ids = |name: &str| -> Vec<String> {
            report.nodes[name].iter().map(|r| r.id.clone()).collect()
        };
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
}

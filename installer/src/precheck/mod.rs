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
//! and the image registry, `nfs` for the NFS server's and clients' nodes, `packages` for the
//! bundle's operating-system packages, `kubeadm` for kubeadm's own preflight, `airgap`), each
//! exposing
//! `node(&Node)` and/or `cluster(&Context)`.
//!
//! # Stages: what the install sets itself
//!
//! Some conditions are not the operator's to prepare: kk's os phase establishes them on every
//! Kubernetes node (the rules of [`ESTABLISHED_BY_OS`]: swap off, IPv4 forwarding and IPv6
//! forwarding where IPv6 is used, `bridge-nf-call-iptables`, the `overlay` and `br_netfilter`
//! modules, the node's name resolving through kk's `/etc/hosts` block). Failing a fresh
//! minimal server on them would stop an install over something the install fixes. So the
//! rules run at a [`Stage`]: [`Stage::BeforeInstall`] (what [`evaluate`] and `kk-install
//! precheck` use) reports such an unmet condition as [`Status::SetByInstall`], with what the
//! node has now; [`Stage::AfterOs`] judges it for real. The installer calls
//! [`established_by_os`] on facts gathered again after its os phase: the same rules, nothing
//! else, now failing if the phase did not establish them (the node's name only warning, as
//! kubeadm does).
//!
//! kk's packages phase (after the os phase and kk's registry) establishes more: on each node
//! whose distribution release and architecture the bundle carries packages for, it installs
//! the packages meant for the node that dpkg says it lacks (the rules of
//! [`ESTABLISHED_BY_PACKAGES`]: the packages themselves, `packages.distro`; kubeadm's commands
//! they bring, `kubeadm.commands`; the NFS server's and client's commands,
//! `nfs.server_commands` and `nfs.client`). Before that phase ([`Stage::BeforeInstall`],
//! [`Stage::AfterOs`]) a command a root package of the node's set brings is `set` ("set by the
//! install: `socat` (package socat from the bundle)"), and the packages the node lacks are
//! `set`, naming what the install brings, as the resolver computes it from the node's dpkg
//! state. A node the bundle carries no set for cannot get them: `packages.distro` fails there,
//! before anything is changed. The installer calls [`established_by_packages`] on facts
//! gathered again after the packages phase ([`Stage::AfterPackages`]): those rules judged for
//! real, a root package still missing failing.
//!
//! # What kk installed
//!
//! Run again on nodes kk installed (`kk-install --phase precheck`), the rules meet kk's own
//! cluster: its API server, kubelet, etcd and registry on their ports, kubeadm's static pods,
//! etcd's data, kube-vip on the virtual IP. `own` alone decides what is kk's, from the process
//! holding a port and kk's record of its phases on the node (`Facts::kk_phases`); such a rule
//! passes naming it ("6443 held by kk's kube-apiserver"), while anything else still fails,
//! naming the process.
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
//!   `warn` when violated (or `set` before the install, see above); messages say what was
//!   found and how to fix it.
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
mod nfs;
mod os;
mod own;
mod packages;
mod report;
mod services;
mod system;
mod version;

#[cfg(test)]
mod fixtures;

#[cfg(test)]
pub(crate) use kubeadm::COMMANDS as KUBEADM_COMMANDS;

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::manifest::KubernetesVersion;
use serde::Serialize;

use crate::facts::Facts;
use crate::inventory::{Config, EtcdDeploymentType, Host, Inventory, K8S_CLUSTER, Role};

pub use report::Report;

/// The ids of the node rules whose condition kk's os phase establishes on every Kubernetes
/// node: unmet before the install, they are [`Status::SetByInstall`]; [`established_by_os`]
/// runs exactly these.
pub const ESTABLISHED_BY_OS: &[&str] = &[
    "kubeadm.swap",
    "kubeadm.ip_forward",
    "network.bridge_nf_call_iptables",
    "os.modules",
    "kubeadm.hostname_resolves",
];

/// The ids of the node rules whose condition kk's packages phase establishes, from the bundle's
/// packages: unmet before it, on a node whose distribution the bundle carries, they are
/// [`Status::SetByInstall`]; [`established_by_packages`] runs exactly these.
pub const ESTABLISHED_BY_PACKAGES: &[&str] = &[
    "packages.distro",
    "kubeadm.commands",
    "nfs.server_commands",
    "nfs.client",
];

/// When the rules run, which decides how a condition kk's os phase (or its packages phase)
/// establishes is judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stage {
    /// Before anything is installed: an unmet condition of [`ESTABLISHED_BY_OS`] is
    /// [`Status::SetByInstall`], naming what the node has now.
    #[default]
    BeforeInstall,
    /// After kk's os phase, on facts gathered again: every rule is judged as it stands, but for
    /// those of [`ESTABLISHED_BY_PACKAGES`], whose phase comes later.
    AfterOs,
    /// After kk's packages phase (which follows the os phase), on facts gathered again: every
    /// rule is judged as it stands.
    AfterPackages,
}

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
    /// The hex digests of the blobs the bundle carries: those already in kk's store on the
    /// registry host need no new room there.
    pub blobs: BTreeSet<String>,
    /// Names of the binary artifacts (`kubeadm`, `etcd`, `containerd`…).
    pub binaries: Vec<String>,
    /// Image references.
    pub images: Vec<String>,
    /// The operating-system packages, one set per distribution release and architecture
    /// (`Description.packages`).
    pub packages: Vec<bundle_spec::packages::PackageSet>,
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
    /// Not met now, but kk's os phase establishes it (only before the install, only for the
    /// rules of [`ESTABLISHED_BY_OS`]), or its packages phase does (until that phase, only for
    /// the rules of [`ESTABLISHED_BY_PACKAGES`]); the install goes on and judges it again after
    /// that phase. `set` in the table and in JSON.
    #[serde(rename = "set")]
    SetByInstall,
    /// Not met, but the install can go on.
    Warn,
    /// Not met: the install would fail or make a broken cluster.
    Fail,
    /// Not applicable here, or waived by `--ignore`.
    Skip,
}

impl Status {
    /// `pass`, `set`, `warn`, `fail` or `skip`: the table's and the JSON's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::SetByInstall => "set",
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

/// The start of the message of every [`Status::SetByInstall`] result; what the install sets
/// follows.
const SET_BY: &str = "set by the install: ";

/// The start of the message of a [`Status::SetByInstall`] result of the os phase, which names
/// what the node has now ([`SET_BY`] and `now `).
const SET_BY_INSTALL: &str = "set by the install: now ";

/// Runs every rule before the install ([`Stage::BeforeInstall`]): see [`evaluate_at`].
pub fn evaluate(context: &Context, ignore: &BTreeSet<String>) -> Report {
    evaluate_at(context, ignore, Stage::BeforeInstall)
}

/// Runs every rule at `stage`: node rules on each host with facts, cluster rules once; then
/// waives what `ignore` names (an id, or a prefix of ids ending before a `.`).
pub fn evaluate_at(context: &Context, ignore: &BTreeSet<String>, stage: Stage) -> Report {
    let nodes = each_node(context, stage, |node| {
        node_rules(node)
            .into_iter()
            .map(|r| waive(r, ignore))
            .collect()
    });
    let cluster = cluster_rules(context)
        .into_iter()
        .map(|r| waive(r, ignore))
        .collect();
    Report { nodes, cluster }
}

/// Judges, for real, only the rules of [`ESTABLISHED_BY_OS`] on every host with facts (no
/// cluster rules): what the installer runs on facts gathered again after its os phase, so that
/// a condition the phase should have established and did not fails the install there. `ignore`
/// waives as in [`evaluate_at`].
pub fn established_by_os(context: &Context, ignore: &BTreeSet<String>) -> Report {
    let nodes = each_node(context, Stage::AfterOs, |node| {
        node_rules(node)
            .into_iter()
            .filter(|r| ESTABLISHED_BY_OS.contains(&r.id.as_str()))
            .map(|r| waive(r, ignore))
            .collect()
    });
    Report {
        nodes,
        cluster: Vec::new(),
    }
}

/// Judges, for real, only the rules of [`ESTABLISHED_BY_PACKAGES`] on every host with facts (no
/// cluster rules): what the installer runs on facts gathered again after its packages phase, so
/// that a package, or a command it brings, that the phase should have installed and did not
/// fails the install there. `ignore` waives as in [`evaluate_at`].
pub fn established_by_packages(context: &Context, ignore: &BTreeSet<String>) -> Report {
    let nodes = each_node(context, Stage::AfterPackages, |node| {
        node_rules(node)
            .into_iter()
            .filter(|r| ESTABLISHED_BY_PACKAGES.contains(&r.id.as_str()))
            .map(|r| waive(r, ignore))
            .collect()
    });
    Report {
        nodes,
        cluster: Vec::new(),
    }
}

/// `rules` of every inventory host with facts, by host name.
fn each_node(
    context: &Context,
    stage: Stage,
    rules: impl Fn(&Node) -> Vec<CheckResult>,
) -> BTreeMap<String, Vec<CheckResult>> {
    let mut nodes = BTreeMap::new();
    for host in context.inventory.hosts() {
        let Some(facts) = context.facts.get(&host.name) else {
            continue;
        };
        let node = Node {
            cx: context,
            host,
            facts,
            stage,
        };
        nodes.insert(host.name.clone(), rules(&node));
    }
    nodes
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
    results.extend(packages::node(node));
    results.extend(nfs::node(node));
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
    /// How a condition of [`ESTABLISHED_BY_OS`] or [`ESTABLISHED_BY_PACKAGES`] is judged.
    pub(crate) stage: Stage,
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

    /// Whether the node carries IPv6 cluster traffic: the cluster's pod or service range has
    /// an IPv6 part (dual stack, or IPv6 alone), or the node's address, the one kubeadm
    /// advertises (the IPv4 one when it has both), is IPv6. kubeadm then checks IPv6
    /// forwarding where it reads it (`/proc/sys/net/ipv6/conf/default/forwarding`,
    /// `ipv6DefaultForwarding` of its preflight) and, up to v1.29, `bridge-nf-call-ip6tables`;
    /// kk's os phase sets both for a dual-stack cluster. An IPv6 address beside the IPv4 one of
    /// a node in a single-stack IPv4 cluster carries no cluster traffic and needs neither.
    fn uses_ipv6(&self) -> bool {
        let cni = &self.cx.config.cni;
        (self.host.internal_ipv4.is_none() && self.host.internal_ipv6.is_some())
            || cni.pod_cidr.ipv6().is_some()
            || cni.service_cidr.ipv6().is_some()
    }

    /// The verdict on an unmet condition of [`ESTABLISHED_BY_OS`], `found` saying what the
    /// node has now: before the install, `set` (the os phase establishes it); after the os
    /// phase, `fail` with `fix`, since the phase should have and did not.
    fn unmet_until_os(&self, id: &str, found: &str, fix: &str) -> CheckResult {
        self.unmet_until_os_as(Status::Fail, id, found, fix)
    }

    /// [`Node::unmet_until_os`] for a condition that, still unmet after the os phase, is only
    /// `after` (a warning where kubeadm only warns).
    fn unmet_until_os_as(&self, after: Status, id: &str, found: &str, fix: &str) -> CheckResult {
        match self.stage {
            Stage::BeforeInstall => {
                CheckResult::new(id, Status::SetByInstall, format!("{SET_BY_INSTALL}{found}"))
            }
            Stage::AfterOs | Stage::AfterPackages => CheckResult::new(
                id,
                after,
                format!("{found} after kk's os phase, which should have set it; fix: {fix}"),
            ),
        }
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

/// The hosts that run an etcd member: the `etcd` group with external etcd, the control plane
/// with stacked (internal) etcd. Where the etcd rules apply, and where the etcd disk check
/// (fio) is to measure.
pub fn etcd_members<'a>(inventory: &'a Inventory, config: &Config) -> Vec<&'a Host> {
    match config.etcd.deployment_type {
        EtcdDeploymentType::External => inventory.role_members(Role::Etcd),
        EtcdDeploymentType::Internal => inventory.role_members(Role::ControlPlane),
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
mod tests;

//! The upgrade's executor: reads the versions the nodes run, makes the upgrade plan (every
//! refusal before a node is changed), then runs its steps in order, each on its nodes one at a
//! time (kubeadm's guide drains and upgrades one node at a time), recording every finished step
//! in the upgrade state; it stops at the first failure with the cluster serving.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Instant;

use super::error::{UpgradeError, UpgradePlanError};
use super::node::{self, Failure};
use super::plan::{UpgradeAction, UpgradePlan, UpgradeStep};
use super::state::UpgradeState;
use super::version::KubeVersion;
use crate::install::lock::StateLock;
use crate::install::phases::{self, Cx, sh};
use crate::install::plan::{Action, Phase, Plan};
use crate::install::run::{Event, StepEvent, StepStatus, Summary, installed_json};
use crate::install::state::State;
use crate::install::target::Target;
use crate::inventory::Inventory;
use crate::ssh::Node;

pub use crate::install::phases::precheck::Checks;

/// Everything an upgrade reads.
#[derive(Debug)]
pub struct Upgrade<'a> {
    /// The install plan of the next bundle.
    pub target: &'a Plan,
    /// The next bundle as given on the command line.
    pub bundle_path: &'a std::path::Path,
    /// The kk-install binary the registry host has.
    pub installer_binary: &'a std::path::Path,
    /// The node agent every node has ([`crate::agent::locate`]).
    pub agent_binary: &'a std::path::Path,
    /// The cluster, the bundle's facts, how nodes are reached.
    pub checks: Checks<'a>,
}

/// Runs the upgrade on the connected `nodes` (every host of the inventory), holding the work
/// directory's `lock`. Returns the final table's content.
pub async fn run(
    upgrade: &Upgrade<'_>,
    _lock: &StateLock,
    nodes: &[Node],
    report: &(dyn Fn(Event<'_>) + Sync),
) -> Result<Summary, UpgradeError> {
    let started = Instant::now();
    let work_dir = &upgrade.checks.reach.work_dir;
    let target = upgrade.target;
    let mut state = UpgradeState::begin(work_dir, &target.bundle.to_string())?;
    let first = first_control_plane(target, nodes)?;
    if state.from.kubernetes().is_none() {
        // An install by an older kk-install recorded no versions: kubeadm on the first control
        // plane says which it installed (read once, before anything changes, then recorded).
        let read = read_version(first, "/usr/local/bin/kubeadm version -o short").await?;
        state.from.versions.insert("kubeadm".to_owned(), read.text);
    }
    let precheck_started = Instant::now();
    let kubelets = kubelet_versions(target, nodes).await?;
    let plan = UpgradePlan::new(&state.from, target, &kubelets)?;
    state.save(work_dir)?;
    let pki = OnceLock::new();
    let bootstrap = OnceLock::new();
    let cx = Cx {
        plan: target,
        checks: &upgrade.checks,
        bundle_path: upgrade.bundle_path,
        installer_binary: upgrade.installer_binary,
        agent_binary: upgrade.agent_binary,
        work_dir,
        pki: &pki,
        bootstrap: &bootstrap,
    };
    let mut progress = Progress {
        state,
        summary: Summary::default(),
        finished: 0,
        total: plan.steps.iter().map(count).sum(),
        report,
    };
    for step in &plan.steps {
        match step.action {
            UpgradeAction::Precheck => {
                let seconds = precheck_started.elapsed().as_secs_f64();
                progress.finish(&cx, &Target::Cluster, step, StepStatus::Unchanged, seconds)?;
            }
            UpgradeAction::Record if progress.state.is_done(&Target::Cluster, &step.id) => {
                progress.finish(&cx, &Target::Cluster, step, StepStatus::Done, 0.0)?;
            }
            UpgradeAction::Record => {
                let started = Instant::now();
                record(&cx, nodes, &progress.state).await?;
                progress.state.finished = true;
                let seconds = started.elapsed().as_secs_f64();
                progress.finish(&cx, &Target::Cluster, step, StepStatus::Changed, seconds)?;
            }
            UpgradeAction::Install { ref action, .. } if action.is_cluster_wide() => {
                cluster_step(&cx, step, action, &mut progress).await?;
            }
            _ => run_step(&cx, nodes, first, step, &mut progress).await?,
        }
    }
    let mut summary = progress.summary;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The upgrade of the work directory's install to the bundle `target` installs, from what the
/// states record alone (`kk-install plan --upgrade`): every node's kubelet taken to run the
/// installed version, as the install left it.
pub fn preview(work_dir: &std::path::Path, target: &Plan) -> Result<UpgradePlan, UpgradeError> {
    let state = UpgradeState::begin(work_dir, &target.bundle.to_string())?;
    if state.from.kubernetes().is_none() {
        return Err(UpgradePlanError::UnknownVersion {
            path: work_dir.join(crate::install::state::STATE_FILE),
        }
        .into());
    }
    let kubelet = state
        .from
        .versions
        .get("kubelet")
        .map(|v| KubeVersion::parse(v));
    let kubelets = match (kubelet, &target.kubernetes) {
        (Some(version), Some(kubernetes)) => {
            let version = version?;
            kubernetes
                .control_planes
                .iter()
                .chain(&kubernetes.workers)
                .map(|(name, _)| (name.clone(), version.clone()))
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(UpgradePlan::new(&state.from, target, &kubelets)?)
}

/// Events counted for `step`: one, or one per node.
fn count(step: &UpgradeStep) -> usize {
    if step.action.is_cluster_wide() {
        1
    } else {
        step.nodes.len()
    }
}

/// The state, the table and the counts of a run.
struct Progress<'a> {
    state: UpgradeState,
    summary: Summary,
    finished: usize,
    total: usize,
    report: &'a (dyn Fn(Event<'_>) + Sync),
}

impl Progress<'_> {
    /// Records a finished step (persisted at once) and tells the caller.
    fn finish(
        &mut self,
        cx: &Cx<'_>,
        target: &Target,
        step: &UpgradeStep,
        status: StepStatus,
        seconds: f64,
    ) -> Result<(), UpgradeError> {
        if matches!(status, StepStatus::Changed | StepStatus::Unchanged) {
            self.state.mark_done(target, &step.id, seconds);
            self.state.save(cx.work_dir)?;
        }
        if status != StepStatus::Failed {
            let cells: Vec<&String> = match target {
                Target::Cluster => step.nodes.iter().collect(),
                Target::Node(node) => vec![node],
            };
            for name in cells {
                let cell = self
                    .summary
                    .nodes
                    .entry(name.clone())
                    .or_default()
                    .entry(column(&step.id).to_owned())
                    .or_insert_with(|| "done".to_owned());
                if status == StepStatus::Changed && matches!(target, Target::Node(_)) {
                    "changed".clone_into(cell);
                }
            }
        }
        self.finished += 1;
        (self.report)(Event::Step(&StepEvent {
            target: target.clone(),
            step: step.id.clone(),
            status,
            seconds,
            finished: self.finished,
            total: self.total,
        }));
        Ok(())
    }
}

/// The final table's column of a step: its `what`, the charts together.
fn column(step: &str) -> &str {
    let what = step.strip_prefix("upgrade.").unwrap_or(step);
    if what.contains('.') { "charts" } else { what }
}

/// The final table's columns, in step order.
const COLUMNS: [&str; 10] = [
    "precheck", "unpack", "runtime", "etcd", "kubeadm", "apply", "node", "kubelet", "charts",
    "record",
];

/// The final table as text: a row per node, a column per step the upgrade had.
pub fn render(summary: &Summary, inventory: &Inventory) -> String {
    let columns: Vec<&str> = COLUMNS
        .into_iter()
        .filter(|column| {
            summary
                .nodes
                .values()
                .any(|cells| cells.contains_key(*column))
        })
        .collect();
    let mut text = format!("{:<12}", "node");
    for column in &columns {
        let _ = write!(text, " {column:<9}");
    }
    text.push('\n');
    for host in inventory.hosts() {
        let _ = write!(text, "{:<12}", host.name);
        let cells = summary.nodes.get(&host.name);
        for column in &columns {
            let cell = cells
                .and_then(|c| c.get(*column))
                .map_or("-", String::as_str);
            let _ = write!(text, " {cell:<9}");
        }
        text.push('\n');
    }
    let _ = writeln!(text, "finished in {:.1}s", summary.seconds);
    text
}

/// Runs a cluster-wide step of the install (the push into an external registry) on the
/// installer machine, unless done before.
async fn cluster_step(
    cx: &Cx<'_>,
    step: &UpgradeStep,
    action: &Action,
    progress: &mut Progress<'_>,
) -> Result<(), UpgradeError> {
    if progress.state.is_done(&Target::Cluster, &step.id) {
        return progress.finish(cx, &Target::Cluster, step, StepStatus::Done, 0.0);
    }
    let started = Instant::now();
    let note = phases::run_cluster(cx, action, Phase::Push, &[], false)
        .await
        .map_err(|source| UpgradeError::Step {
            step: step.id.clone(),
            target: Target::Cluster,
            source: Box::new(source),
        })?;
    if let Some(note) = note {
        (progress.report)(Event::Note(note));
    }
    let seconds = started.elapsed().as_secs_f64();
    progress.finish(cx, &Target::Cluster, step, StepStatus::Changed, seconds)
}

/// Runs a node step on each of its nodes, one at a time, skipping those done before.
async fn run_step(
    cx: &Cx<'_>,
    nodes: &[Node],
    first: &Node,
    step: &UpgradeStep,
    progress: &mut Progress<'_>,
) -> Result<(), UpgradeError> {
    for name in &step.nodes {
        let target = Target::node(name);
        if progress.state.is_done(&target, &step.id) {
            progress.finish(cx, &target, step, StepStatus::Done, 0.0)?;
            continue;
        }
        let node = node_named(nodes, name)?;
        let started = Instant::now();
        let result = node::run(cx, &step.action, node, first).await;
        let seconds = started.elapsed().as_secs_f64();
        match result {
            Ok(outcome) => {
                for note in &outcome.notes {
                    (progress.report)(Event::Note(format!("{name}: {}: {note}", step.id)));
                }
                let status = if outcome.changed {
                    StepStatus::Changed
                } else {
                    StepStatus::Unchanged
                };
                progress.finish(cx, &target, step, status, seconds)?;
            }
            Err(Failure { source, cordoned }) => {
                progress.finish(cx, &target, step, StepStatus::Failed, seconds)?;
                let source = Box::new(source);
                let step = step.id.clone();
                return Err(if cordoned {
                    UpgradeError::Cordoned {
                        step,
                        node: name.clone(),
                        source,
                    }
                } else {
                    UpgradeError::Step {
                        step,
                        target,
                        source,
                    }
                });
            }
        }
    }
    Ok(())
}

/// The connected node `name`.
fn node_named<'n>(nodes: &'n [Node], name: &str) -> Result<&'n Node, UpgradeError> {
    nodes
        .iter()
        .find(|n| n.name() == name)
        .ok_or_else(|| UpgradeError::Step {
            step: "upgrade.precheck".to_owned(),
            target: Target::node(name),
            source: Box::new(crate::install::error::StepError::not_in_plan(format!(
                "node `{name}` is in the plan but was not connected"
            ))),
        })
}

/// The first control plane, connected.
fn first_control_plane<'n>(target: &Plan, nodes: &'n [Node]) -> Result<&'n Node, UpgradeError> {
    let kubernetes = target
        .kubernetes
        .as_ref()
        .ok_or(UpgradePlanError::NoKubernetes)?;
    node_named(nodes, kubernetes.first_control_plane())
}

/// The kubelet version every Kubernetes node runs (`kubelet --version`): what kubeadm's rule
/// on kubelets judges. Reading it also proves every node reachable.
async fn kubelet_versions(
    target: &Plan,
    nodes: &[Node],
) -> Result<Vec<(String, KubeVersion)>, UpgradeError> {
    let Some(kubernetes) = &target.kubernetes else {
        return Ok(Vec::new());
    };
    let mut versions = Vec::new();
    for (name, _) in kubernetes.control_planes.iter().chain(&kubernetes.workers) {
        let node = node_named(nodes, name)?;
        let version = read_version(node, "/usr/local/bin/kubelet --version").await?;
        versions.push((name.clone(), version));
    }
    Ok(versions)
}

/// The version `command` prints on `node`.
async fn read_version(node: &Node, command: &str) -> Result<KubeVersion, UpgradeError> {
    let printed = sh(node, command)
        .await
        .map_err(|source| UpgradeError::Versions {
            node: node.name().to_owned(),
            source: Box::new(source),
        })?;
    Ok(KubeVersion::parse(&printed)?)
}

/// `upgrade.record`: the install state moved to the next bundle (every step of its install
/// plan done where the installed bundle's install had been, the files kk wrote kept), then
/// every node's `/etc/kubekey/installed.json` rewritten from it. A later install of the next
/// bundle then finds everything done.
async fn record(cx: &Cx<'_>, nodes: &[Node], upgrade: &UpgradeState) -> Result<(), UpgradeError> {
    let old = State::load(cx.work_dir)?.unwrap_or_else(|| State::new(&upgrade.from.bundle));
    let installed = moved_state(cx.plan, &old);
    installed.save(cx.work_dir)?;
    for node in nodes.iter().filter(|n| installed.has_node(n.name())) {
        let content = installed_json(cx.plan, &installed, node.name());
        phases::put_record(cx, node, &content)
            .await
            .map_err(|source| UpgradeError::Step {
                step: "upgrade.record".to_owned(),
                target: Target::node(node.name()),
                source: Box::new(source),
            })?;
    }
    Ok(())
}

/// The install state of `target`'s bundle for a cluster `old` recorded: every step of the
/// plan done on the nodes `old` had (a node added to the inventory since is still to install).
fn moved_state(target: &Plan, old: &State) -> State {
    let mut state = State::new(&target.bundle.to_string());
    state.files.clone_from(&old.files);
    state.versions.clone_from(&target.versions);
    let installed: BTreeSet<&str> = target
        .steps
        .iter()
        .flat_map(|s| &s.nodes)
        .filter(|name| old.has_node(name))
        .map(String::as_str)
        .collect();
    for step in &target.steps {
        if step.action.is_cluster_wide() {
            state.mark_done(&Target::Cluster, &step.id, 0.0);
            continue;
        }
        for name in step.nodes.iter().filter(|n| installed.contains(n.as_str())) {
            state.mark_done(&Target::node(name), &step.id, 0.0);
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::install::plan::tests_support::sample_plan;

    #[test]
    fn the_moved_state_has_every_step_done_on_installed_nodes_only() {
        let plan = sample_plan();
        let mut old = State::new("sha256:aa");
        old.mark_done(&Target::node("cp1"), "os.swap", 1.0);
        old.add_files("cp1", ["/etc/sysctl.d/99-kk.conf".to_owned()]);
        let moved = moved_state(&plan, &old);
        assert_eq!(moved.bundle, plan.bundle.to_string());
        assert_eq!(moved.versions, plan.versions);
        assert_eq!(moved.files, old.files);
        for step in plan.steps.iter().filter(|s| !s.action.is_cluster_wide()) {
            if step.nodes.iter().any(|n| n == "cp1") {
                assert!(moved.is_done(&Target::node("cp1"), &step.id), "{}", step.id);
            }
        }
        assert!(!moved.has_node("w1"), "w1 was never installed");
        assert!(
            moved.is_done(&Target::Cluster, "precheck.rules")
                || plan.steps.iter().all(|s| s.id != "precheck.rules")
        );
    }

    #[test]
    fn the_table_has_a_column_per_step_and_the_charts_in_one() {
        assert_eq!(column("upgrade.kubelet"), "kubelet");
        assert_eq!(column("upgrade.network.cni"), "charts");
        let inventory = Inventory::from_str_named(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n",
            "inventory.yaml",
        )
        .expect("inventory");
        let mut summary = Summary::default();
        summary.nodes.insert(
            "cp1".to_owned(),
            BTreeMap::from([("apply".to_owned(), "changed".to_owned())]),
        );
        summary.nodes.insert(
            "w1".to_owned(),
            BTreeMap::from([("kubelet".to_owned(), "done".to_owned())]),
        );
        let table = render(&summary, &inventory);
        let lines: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines[0], ["node", "apply", "kubelet"]);
        assert_eq!(lines[1], ["cp1", "changed", "-"]);
    }
}

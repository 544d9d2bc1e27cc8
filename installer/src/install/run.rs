//! The executor: runs the plan phase by phase and, inside a phase, step by step, each step on
//! all its nodes at once (bounded by `--concurrency`); records every finished step in the
//! state file; stops after the first step that failed on any node.
//!
//! Steps are run step-major (every node does step 1, then every node step 2) rather than node by
//! node: etcd members must all be started before any can report healthy, and a failing step
//! stops the install before the next one begins anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use serde::Serialize;

use super::error::InstallError;
use super::lock::StateLock;
use super::phases::precheck::Rules;
use super::phases::{self, Cx};
use super::plan::{Action, Phase, Plan, Step};
use super::render::paths;
use super::state::{State, Target};
use crate::inventory::Inventory;
use crate::precheck::Report;
use crate::ssh::{Node, fan_out};

pub use super::phases::precheck::{Checks, report as precheck_report};

/// Everything an install reads.
#[derive(Debug)]
pub struct Install<'a> {
    /// The plan.
    pub plan: &'a Plan,
    /// The bundle as given on the command line.
    pub bundle_path: &'a Path,
    /// The kk-install binary copied to the registry host.
    pub installer_binary: &'a Path,
    /// The node agent copied to every node ([`crate::agent::locate`]).
    pub agent_binary: &'a Path,
    /// The cluster, the bundle's facts, how nodes are reached.
    pub checks: Checks<'a>,
}

/// How this run goes.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Only this phase, with its steps run again even if done.
    pub phase: Option<Phase>,
    /// Require a state to resume from.
    pub resume: bool,
}

/// What happened to a step on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// It ran and changed something.
    Changed,
    /// It ran; everything was in place already.
    Unchanged,
    /// A previous run did it.
    Done,
    /// It failed.
    Failed,
}

/// A step finished on a node (or, for a cluster-wide step, on the installer machine).
#[derive(Debug, Clone, Serialize)]
pub struct StepEvent {
    /// The node, or the cluster for cluster-wide steps.
    pub target: Target,
    /// The step id.
    pub step: String,
    /// What happened.
    pub status: StepStatus,
    /// How long it took, in seconds.
    pub seconds: f64,
    /// Steps finished so far in this run, of `total`.
    pub finished: usize,
    /// Steps of this run.
    pub total: usize,
}

/// What the caller is told while the install runs.
#[derive(Debug)]
pub enum Event<'a> {
    /// A step finished.
    Step(&'a StepEvent),
    /// The precheck's report.
    Precheck(&'a Report),
    /// A line for the operator.
    Note(String),
}

/// Phase × node: the final table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Per node, per phase: `done`, `changed`, or absent when the phase has nothing there.
    pub nodes: BTreeMap<String, BTreeMap<String, String>>,
    /// Bytes the installer machine sent to each node.
    pub sent: BTreeMap<String, u64>,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
}

impl Summary {
    /// The table as text.
    pub fn render(&self, inventory: &Inventory, phases: &[Phase]) -> String {
        let mut text = format!("{:<12}", "node");
        for phase in phases {
            let _ = write!(text, " {:<10}", phase.name());
        }
        text.push_str(" sent\n");
        for host in inventory.hosts() {
            let _ = write!(text, "{:<12}", host.name);
            let cells = self.nodes.get(&host.name);
            for phase in phases {
                let cell = cells
                    .and_then(|c| c.get(phase.name()))
                    .map_or("-", String::as_str);
                let _ = write!(text, " {cell:<10}");
            }
            let sent = self.sent.get(&host.name).copied().unwrap_or(0);
            let _ = writeln!(text, " {}", bytesize::ByteSize(sent));
        }
        let _ = writeln!(text, "finished in {:.1}s", self.seconds);
        text
    }
}

/// Shared progress of a run.
struct Progress<'a> {
    state: Mutex<State>,
    summary: Mutex<Summary>,
    work_dir: &'a Path,
    finished: Mutex<usize>,
    total: usize,
    report: &'a (dyn Fn(Event<'_>) + Sync),
}

impl Progress<'_> {
    fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a finished step (persisted at once) and tells the caller.
    fn finish(
        &self,
        target: &Target,
        step: &Step,
        status: StepStatus,
        seconds: f64,
        outcome: Option<&phases::Outcome>,
    ) -> Result<(), InstallError> {
        if status != StepStatus::Failed {
            let mut state = Self::lock(&self.state);
            if status != StepStatus::Done {
                state.mark_done(target, &step.id, seconds);
            }
            if let (Some(outcome), Target::Node(node)) = (outcome, target) {
                state.add_files(node, outcome.files.iter().cloned());
            }
            state.save(self.work_dir)?;
        }
        if let (Some(outcome), Target::Node(node)) = (outcome, target) {
            let mut summary = Self::lock(&self.summary);
            *summary.sent.entry(node.clone()).or_default() += outcome.sent;
        }
        if status != StepStatus::Failed {
            // A cluster-wide step (hooks, precheck) counts as done on every node it covered;
            // "changed" is kept for what changed a node itself.
            let (cells, changed): (Vec<&str>, bool) = match target {
                Target::Cluster => (step.nodes.iter().map(String::as_str).collect(), false),
                Target::Node(node) => (vec![node.as_str()], status == StepStatus::Changed),
            };
            let mut summary = Self::lock(&self.summary);
            for name in cells {
                let cell = summary
                    .nodes
                    .entry(name.to_owned())
                    .or_default()
                    .entry(step.phase.name().to_owned())
                    .or_insert_with(|| "done".to_owned());
                if changed {
                    "changed".clone_into(cell);
                }
            }
        }
        let finished = {
            let mut finished = Self::lock(&self.finished);
            *finished += 1;
            *finished
        };
        (self.report)(Event::Step(&StepEvent {
            target: target.clone(),
            step: step.id.clone(),
            status,
            seconds,
            finished,
            total: self.total,
        }));
        Ok(())
    }
}

/// Runs the install on the connected `nodes` (every host of the inventory), holding the work
/// directory's `lock` (taken before the nodes were connected).
pub async fn run(
    install: &Install<'_>,
    _lock: &StateLock,
    nodes: &[Node],
    options: &RunOptions,
    report: &(dyn Fn(Event<'_>) + Sync),
) -> Result<Summary, InstallError> {
    let started = Instant::now();
    let work_dir = &install.checks.reach.work_dir;
    let state = starting_state(install.plan, work_dir, options)?;
    let phases: Vec<Phase> = options
        .phase
        .map_or_else(|| Phase::ALL.to_vec(), |p| vec![p]);
    let steps: Vec<&Step> = install
        .plan
        .steps
        .iter()
        .filter(|s| phases.contains(&s.phase))
        .collect();
    let total = steps
        .iter()
        .map(|s| {
            if s.action.is_cluster_wide() {
                1
            } else {
                s.nodes.len()
            }
        })
        .sum();
    let progress = Progress {
        state: Mutex::new(state),
        summary: Mutex::new(Summary::default()),
        work_dir,
        finished: Mutex::new(0),
        total,
        report,
    };
    let pki = OnceLock::new();
    let bootstrap = OnceLock::new();
    let cx = Cx {
        plan: install.plan,
        checks: &install.checks,
        bundle_path: install.bundle_path,
        installer_binary: install.installer_binary,
        agent_binary: install.agent_binary,
        work_dir,
        pki: &pki,
        bootstrap: &bootstrap,
    };
    for phase in &phases {
        for step in steps.iter().filter(|s| s.phase == *phase) {
            run_step(&cx, nodes, step, &progress).await?;
        }
        record(&cx, nodes, Some(*phase), &progress).await?;
    }
    // Every node's record once more at the end, so it names the last phases too (a rerun
    // then finds it as it left it and rewrites nothing).
    record(&cx, nodes, None, &progress).await?;
    let mut summary = Progress::lock(&progress.summary).clone();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The state to start from: the work directory's, when it belongs to this bundle.
fn starting_state(
    plan: &Plan,
    work_dir: &Path,
    options: &RunOptions,
) -> Result<State, InstallError> {
    let bundle = plan.bundle.to_string();
    let mut state = match State::load(work_dir)? {
        Some(state) if state.bundle != bundle => {
            return Err(InstallError::OtherBundle {
                path: work_dir.join(super::state::STATE_FILE),
                recorded: state.bundle,
                bundle,
            });
        }
        Some(state) => state,
        None if options.resume => {
            return Err(InstallError::NothingToResume {
                path: work_dir.join(super::state::STATE_FILE),
            });
        }
        None => State::new(&bundle),
    };
    if let Some(phase) = options.phase {
        for step in plan.phase(phase) {
            state.forget(&step.id);
        }
    }
    // The same bundle always installs the same versions: recorded (again) for an upgrade.
    state.versions.clone_from(&plan.versions);
    state.save(work_dir)?;
    Ok(state)
}

/// The connected nodes `step` runs on.
fn nodes_of<'n>(step: &Step, nodes: &'n [Node]) -> Vec<&'n Node> {
    nodes
        .iter()
        .filter(|n| step.nodes.iter().any(|name| name == n.name()))
        .collect()
}

async fn run_step(
    cx: &Cx<'_>,
    nodes: &[Node],
    step: &Step,
    progress: &Progress<'_>,
) -> Result<(), InstallError> {
    if step.action.is_cluster_wide() {
        return run_cluster_step(cx, nodes, step, progress).await;
    }
    let targets = nodes_of(step, nodes);
    let results = fan_out(&targets, cx.checks.reach.concurrency, |node| async move {
        let target = Target::node(node.name());
        if Progress::lock(&progress.state).is_done(&target, &step.id) {
            progress.finish(&target, step, StepStatus::Done, 0.0, None)?;
            return Ok(());
        }
        let started = Instant::now();
        let result = phases::run(cx, &step.action, node).await;
        let seconds = started.elapsed().as_secs_f64();
        match result {
            Ok(outcome) => {
                for note in &outcome.notes {
                    (progress.report)(Event::Note(format!("{}: {}: {note}", node.name(), step.id)));
                }
                let status = if outcome.changed {
                    StepStatus::Changed
                } else {
                    StepStatus::Unchanged
                };
                progress.finish(&target, step, status, seconds, Some(&outcome))
            }
            Err(source) => {
                progress.finish(&target, step, StepStatus::Failed, seconds, None)?;
                Err(InstallError::Step {
                    phase: step.phase.name().to_owned(),
                    step: step.id.clone(),
                    target,
                    source: Box::new(source),
                })
            }
        }
    })
    .await;
    results.into_iter().collect()
}

async fn run_cluster_step(
    cx: &Cx<'_>,
    nodes: &[Node],
    step: &Step,
    progress: &Progress<'_>,
) -> Result<(), InstallError> {
    // The certificates are needed by later steps in this run even when a previous run made
    // them: `pki.issue` always runs (it keeps every file that exists) and is never reported
    // as skipped.
    // Likewise the bootstrap token: joins in this run need it, and an expired one is replaced.
    let done = Progress::lock(&progress.state).is_done(&Target::Cluster, &step.id);
    // And the certificates reissued for a control plane added reach the nodes that hold them.
    let always = matches!(
        step.action,
        Action::IssueCertificates | Action::BootstrapToken | Action::SpreadCertificates
    );
    if step.action == Action::Precheck {
        return precheck(cx, nodes, step, progress, done).await;
    }
    if done && !always {
        return progress.finish(&Target::Cluster, step, StepStatus::Done, 0.0, None);
    }
    let started = Instant::now();
    let note = phases::run_cluster(cx, &step.action, step.phase, &nodes_of(step, nodes), done)
        .await
        .map_err(|source| InstallError::Step {
            phase: step.phase.name().to_owned(),
            step: step.id.clone(),
            target: Target::Cluster,
            source: Box::new(source),
        })?;
    if let Some(note) = note {
        (progress.report)(Event::Note(note));
    }
    let status = if done {
        StepStatus::Unchanged
    } else {
        StepStatus::Changed
    };
    progress.finish(
        &Target::Cluster,
        step,
        status,
        started.elapsed().as_secs_f64(),
        None,
    )
}

/// The precheck: on every node the first time; on a rerun (`done`), again for the nodes added
/// to the inventory since (no step done there yet), with their node rules only.
async fn precheck(
    cx: &Cx<'_>,
    nodes: &[Node],
    step: &Step,
    progress: &Progress<'_>,
    done: bool,
) -> Result<(), InstallError> {
    let (targets, rules): (Vec<&Node>, Rules) = if done {
        let state = Progress::lock(&progress.state);
        let new = nodes_of(step, nodes)
            .into_iter()
            .filter(|n| !state.has_node(n.name()))
            .collect();
        (new, Rules::NodesOnly)
    } else {
        (nodes.iter().collect(), Rules::All)
    };
    if targets.is_empty() {
        return progress.finish(&Target::Cluster, step, StepStatus::Done, 0.0, None);
    }
    let started = Instant::now();
    let report = phases::precheck::rules(cx.checks, &targets, rules).await?;
    (progress.report)(Event::Precheck(&report));
    if report.failed() {
        return Err(InstallError::Precheck);
    }
    let status = if done {
        StepStatus::Unchanged
    } else {
        StepStatus::Changed
    };
    progress.finish(
        &Target::Cluster,
        step,
        status,
        started.elapsed().as_secs_f64(),
        None,
    )
}

/// `/etc/kubekey/installed.json` on every node of `phase`: the bundle, the Kubernetes version,
/// the phases done there and the files kk wrote. Rewritten only when it changes.
async fn record(
    cx: &Cx<'_>,
    nodes: &[Node],
    phase: Option<Phase>,
    progress: &Progress<'_>,
) -> Result<(), InstallError> {
    let involved: BTreeSet<&str> = cx
        .plan
        .steps
        .iter()
        .filter(|s| phase.is_none_or(|p| s.phase == p) && !s.action.is_cluster_wide())
        .flat_map(|s| s.nodes.iter().map(String::as_str))
        .collect();
    let step = &phase.map_or_else(|| "record".to_owned(), |p| format!("{p}.record"));
    let targets: Vec<&Node> = nodes
        .iter()
        .filter(|n| involved.contains(n.name()))
        .collect();
    let results = fan_out(&targets, cx.checks.reach.concurrency, |node| async move {
        let content = installed_json(cx.plan, &Progress::lock(&progress.state), node.name());
        phases::put_record(cx, node, &content)
            .await
            .map_err(|source| InstallError::Step {
                phase: phase.map_or("record", Phase::name).to_owned(),
                step: step.to_owned(),
                target: Target::node(node.name()),
                source: Box::new(source),
            })
    })
    .await;
    results.into_iter().collect()
}

/// The record's content for `node`: deterministic, so an unchanged install rewrites nothing.
pub fn installed_json(plan: &Plan, state: &State, node: &str) -> Vec<u8> {
    #[derive(Serialize)]
    struct Record<'a> {
        bundle: String,
        kubernetes_version: Option<&'a str>,
        phases: Vec<&'static str>,
        files: Vec<&'a str>,
        /// On the `nfs` host: the share directory (its data is the volumes'; reset keeps it
        /// unless purging).
        #[serde(skip_serializing_if = "Option::is_none")]
        nfs_share: Option<&'a str>,
    }
    let phases = Phase::ALL
        .into_iter()
        .filter(|phase| {
            let mut steps = plan
                .phase(*phase)
                .filter(|s| s.nodes.iter().any(|n| n == node))
                .peekable();
            steps.peek().is_some()
                && steps.all(|s| {
                    let target = if s.action.is_cluster_wide() {
                        Target::Cluster
                    } else {
                        Target::node(node)
                    };
                    state.is_done(&target, &s.id)
                })
        })
        .map(Phase::name)
        .collect();
    let mut files: Vec<&str> = state
        .files
        .get(node)
        .map(|f| f.iter().map(String::as_str).collect())
        .unwrap_or_default();
    files.push(paths::INSTALLED);
    files.sort_unstable();
    files.dedup();
    let record = Record {
        bundle: plan.bundle.to_string(),
        kubernetes_version: plan.kubernetes_version.as_deref(),
        phases,
        files,
        nfs_share: plan
            .nfs
            .as_ref()
            .filter(|nfs| nfs.node == node)
            .map(|nfs| nfs.share_dir.as_str()),
    };
    let mut json = serde_json::to_vec_pretty(&record).unwrap_or_default();
    json.push(b'\n');
    json
}

/// Where the state and logs of a run live, for messages.
pub fn state_path(work_dir: &Path) -> PathBuf {
    work_dir.join(super::state::STATE_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::plan::tests_support::sample_plan;

    #[test]
    fn a_run_starts_from_the_recorded_state_of_its_own_bundle_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = sample_plan();
        let fresh = RunOptions::default();
        let resume = RunOptions {
            resume: true,
            ..RunOptions::default()
        };
        let error = starting_state(&plan, dir.path(), &resume).expect_err("nothing to resume");
        assert!(
            error.to_string().contains("no install to resume"),
            "{error}"
        );

        let mut state = starting_state(&plan, dir.path(), &fresh).expect("fresh");
        assert_eq!(state.bundle, plan.bundle.to_string());
        // Recorded for a later upgrade: what the bundle installs.
        assert_eq!(
            state.versions.get("kubeadm").map(String::as_str),
            Some("v1.33.0")
        );
        assert_eq!(state.versions, plan.versions);
        let cp1 = Target::node("cp1");
        state.mark_done(&cp1, "os.swap", 0.1);
        state.mark_done(&cp1, "runtime.pull", 0.1);
        state.save(dir.path()).expect("save");
        let resumed = starting_state(&plan, dir.path(), &resume).expect("resume");
        assert!(resumed.is_done(&cp1, "os.swap") && resumed.is_done(&cp1, "runtime.pull"));

        let os_again = RunOptions {
            phase: Some(Phase::Os),
            ..RunOptions::default()
        };
        let again = starting_state(&plan, dir.path(), &os_again).expect("phase");
        assert!(
            !again.is_done(&cp1, "os.swap"),
            "`--phase os` runs os again"
        );
        assert!(
            again.is_done(&cp1, "runtime.pull"),
            "other phases stay done"
        );

        let mut other = plan.clone();
        other.bundle = bundle_spec::Sha256Digest::of(b"another bundle");
        let error = starting_state(&other, dir.path(), &fresh).expect_err("other bundle");
        assert!(error.to_string().contains("not of this bundle"), "{error}");
    }

    #[test]
    fn the_table_has_a_row_per_node_and_a_column_per_phase() {
        let inventory = Inventory::from_str_named(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    w1: {internal_ipv4: 10.0.0.2}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    kube_worker: {hosts: [w1]}\n",
            "inventory.yaml",
        )
        .expect("inventory");
        let mut summary = Summary::default();
        summary.nodes.insert(
            "cp1".to_owned(),
            BTreeMap::from([
                ("os".to_owned(), "changed".to_owned()),
                ("etcd".to_owned(), "done".to_owned()),
            ]),
        );
        summary.sent.insert("cp1".to_owned(), 2048);
        let table = summary.render(&inventory, &[Phase::Os, Phase::Etcd]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["node", "os", "etcd", "sent"]
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["cp1", "changed", "done", "2.0", "KiB"]
        );
        assert_eq!(lines[2].split_whitespace().next(), Some("w1"));
        assert!(
            lines[2].contains(" - "),
            "a phase with nothing on w1 is `-`: {table}"
        );
    }

    #[test]
    fn the_record_lists_phases_done_on_the_node_and_its_files_in_order() {
        let plan = sample_plan();
        let mut state = State::new(&plan.bundle.to_string());
        for step in plan.phase(Phase::Os) {
            let target = if step.action.is_cluster_wide() {
                Target::Cluster
            } else {
                Target::node("w1")
            };
            state.mark_done(&target, &step.id, 0.1);
        }
        state.add_files("w1", ["/etc/sysctl.d/99-kk.conf".to_owned()]);
        let record: serde_json::Value =
            serde_json::from_slice(&installed_json(&plan, &state, "w1")).expect("json");
        assert_eq!(record["phases"], serde_json::json!(["os"]));
        assert_eq!(
            record["files"],
            serde_json::json!(["/etc/kubekey/installed.json", "/etc/sysctl.d/99-kk.conf"])
        );
        assert_eq!(
            installed_json(&plan, &state, "w1"),
            installed_json(&plan, &state, "w1"),
            "the same state gives the same bytes"
        );
    }

    #[test]
    fn the_nfs_hosts_record_names_its_share_and_the_exports_it_keeps_a_block_in() {
        let plan = crate::install::plan::tests_support::packages_plan();
        let mut state = State::new(&plan.bundle.to_string());
        state.mark_done(&Target::node("store"), "nfs.server", 0.1);
        state.add_files("store", ["/etc/exports".to_owned()]);
        let record: serde_json::Value =
            serde_json::from_slice(&installed_json(&plan, &state, "store")).expect("json");
        assert_eq!(record["nfs_share"], "/share");
        assert!(
            record["phases"]
                .as_array()
                .expect("phases")
                .contains(&"nfs".into())
        );
        assert_eq!(
            record["files"],
            serde_json::json!(["/etc/exports", "/etc/kubekey/installed.json"])
        );
        let other: serde_json::Value =
            serde_json::from_slice(&installed_json(&plan, &state, "w1")).expect("json");
        assert!(other.get("nfs_share").is_none(), "{other}");
    }

    #[test]
    fn a_node_named_installer_has_its_steps_files_row_and_record_as_any_node() {
        // `installer` is a valid inventory name: nothing may take its steps for the cluster's.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut plan = sample_plan();
        for name in plan.steps.iter_mut().flat_map(|s| s.nodes.iter_mut()) {
            if name == "w1" {
                "installer".clone_into(name);
            }
        }
        let events = Mutex::new(Vec::new());
        let report = |event: Event<'_>| {
            if let Event::Step(step) = event {
                Progress::lock(&events).push(step.target.clone());
            }
        };
        let progress = Progress {
            state: Mutex::new(State::new(&plan.bundle.to_string())),
            summary: Mutex::new(Summary::default()),
            work_dir: dir.path(),
            finished: Mutex::new(0),
            total: 0,
            report: &report,
        };
        let installer = Target::node("installer");
        let outcome = phases::Outcome {
            changed: true,
            files: vec!["/etc/sysctl.d/99-kk.conf".to_owned()],
            sent: 7,
            notes: Vec::new(),
        };
        for step in plan.phase(Phase::Os) {
            let target = if step.action.is_cluster_wide() {
                Target::Cluster
            } else {
                installer.clone()
            };
            progress
                .finish(&target, step, StepStatus::Changed, 0.1, Some(&outcome))
                .expect("finish");
        }
        let state = State::load(dir.path()).expect("load").expect("saved");
        assert!(state.is_done(&installer, "os.swap"), "{state:?}");
        assert!(!state.is_done(&Target::Cluster, "os.swap"), "{state:?}");
        assert!(state.is_done(&Target::Cluster, "os.verify"), "{state:?}");
        let record: serde_json::Value =
            serde_json::from_slice(&installed_json(&plan, &state, "installer")).expect("json");
        assert_eq!(record["phases"], serde_json::json!(["os"]));
        assert_eq!(
            record["files"],
            serde_json::json!(["/etc/kubekey/installed.json", "/etc/sysctl.d/99-kk.conf"])
        );
        let summary = Progress::lock(&progress.summary);
        assert_eq!(summary.nodes["installer"]["os"], "changed");
        assert!(summary.sent["installer"] > 0);
        assert!(Progress::lock(&events).contains(&installer));
    }
}

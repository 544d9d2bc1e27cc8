//! The executor: runs the plan phase by phase and, inside a phase, segment by segment (see
//! `segments`), each on all its nodes at once (bounded by `--jobs`); records every finished
//! node-step in the state and saves the state once per segment, after it ended on every node
//! (also when it failed); stops after the first segment that failed on any node.
//!
//! A segment is one step, run step-major (every node finishes it before any starts the next):
//! etcd members must all be started before any can report healthy, joins need the first
//! control plane, cluster-wide steps need every node. Or it is a run of consecutive node steps
//! of one phase that need no other node ([`Action::pipelines`]: the os phase's steps, the
//! certificates, fetches, the runtime, the kubelet's unit), which each node goes through on its
//! own: a barrier after each of them made the wall time the sum of every step's slowest node,
//! which grows with the number of nodes. Every node-step is still recorded and reported.
//!
//! One save per segment rather than one per node-step: a save is a durable write of the whole
//! state (O(nodes) bytes, two fsyncs), and one per node-step made saving grow with nodes × nodes
//! and stall the async workers that drive every connection. Saves run on the blocking pool. A
//! killed installer forgets at most the node-steps of the segment that was running, and those
//! run again: every step checks before it changes, so redoing one changes nothing.

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

pub use super::phases::precheck::{Checks, judge as precheck_judge};

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

    /// Records a finished step in memory (persisted by [`Progress::save`] after the step) and
    /// tells the caller.
    fn finish(
        &self,
        target: &Target,
        step: &Step,
        status: StepStatus,
        seconds: f64,
        outcome: Option<&phases::Outcome>,
    ) {
        if status != StepStatus::Failed {
            let mut state = Self::lock(&self.state);
            if status != StepStatus::Done {
                state.mark_done(target, &step.id, seconds);
            }
            if let (Some(outcome), Target::Node(node)) = (outcome, target) {
                state.add_files(node, outcome.files.iter().cloned());
            }
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
    }

    /// Writes the state durably, on the blocking pool: the async workers keep driving the
    /// nodes' connections meanwhile.
    async fn save(&self) -> Result<(), InstallError> {
        let state = Self::lock(&self.state).clone();
        let work_dir = self.work_dir.to_path_buf();
        tokio::task::spawn_blocking(move || state.save(&work_dir))
            .await
            .unwrap_or_else(|panicked| std::panic::resume_unwind(panicked.into_panic()))
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
        let of_phase: Vec<&Step> = steps
            .iter()
            .copied()
            .filter(|s| s.phase == *phase)
            .collect();
        for segment in segments(&of_phase) {
            let ran = run_segment(&cx, nodes, &segment, &progress).await;
            // Saved on failure too: the nodes where a step succeeded need not redo it.
            let saved = progress.save().await;
            ran?;
            saved?;
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

/// Consecutive steps run as one: a step alone, or a run of node steps of one phase that each
/// [pipeline](Action::pipelines), which every node goes through on its own without waiting
/// for the others between them.
fn segments<'s>(steps: &[&'s Step]) -> Vec<Vec<&'s Step>> {
    let mut segments: Vec<Vec<&Step>> = Vec::new();
    for step in steps {
        match segments.last_mut() {
            Some(last)
                if step.action.pipelines()
                    && last.last().is_some_and(|prev| {
                        prev.phase == step.phase && prev.action.pipelines()
                    }) =>
            {
                last.push(step);
            }
            _ => segments.push(vec![step]),
        }
    }
    segments
}

/// Runs a segment of [`segments`]: each node its steps of the segment in order, stopping at
/// its first failure; the segment fails when any node did.
async fn run_segment(
    cx: &Cx<'_>,
    nodes: &[Node],
    segment: &[&Step],
    progress: &Progress<'_>,
) -> Result<(), InstallError> {
    if let [step] = segment
        && step.action.is_cluster_wide()
    {
        return run_cluster_step(cx, nodes, step, progress).await;
    }
    let on = |node: &Node, step: &Step| step.nodes.iter().any(|name| name == node.name());
    let targets: Vec<&Node> = nodes
        .iter()
        .filter(|node| segment.iter().any(|step| on(node, step)))
        .collect();
    let results = fan_out(&targets, cx.checks.reach.concurrency, |node| async move {
        for step in segment.iter().filter(|step| on(node, step)) {
            run_node_step(cx, node, step, progress).await?;
        }
        Ok(())
    })
    .await;
    results.into_iter().collect()
}

/// Runs `step` on `node`, unless the state has it done there; records and reports it.
async fn run_node_step(
    cx: &Cx<'_>,
    node: &Node,
    step: &Step,
    progress: &Progress<'_>,
) -> Result<(), InstallError> {
    let target = Target::node(node.name());
    if Progress::lock(&progress.state).is_done(&target, &step.id) {
        progress.finish(&target, step, StepStatus::Done, 0.0, None);
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
            progress.finish(&target, step, status, seconds, Some(&outcome));
            Ok(())
        }
        Err(source) => {
            progress.finish(&target, step, StepStatus::Failed, seconds, None);
            Err(InstallError::Step {
                phase: step.phase.name().to_owned(),
                step: step.id.clone(),
                target,
                source: Box::new(source),
            })
        }
    }
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
        progress.finish(&Target::Cluster, step, StepStatus::Done, 0.0, None);
        return Ok(());
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
    );
    Ok(())
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
        progress.finish(&Target::Cluster, step, StepStatus::Done, 0.0, None);
        return Ok(());
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
    );
    Ok(())
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
mod tests;

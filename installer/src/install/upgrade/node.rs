//! What each upgrade step does on a node, as kubeadm's upgrade guide does it by hand. kubectl
//! runs on the first control plane (it has `admin.conf`); everything else on the node itself.
//! The install's own steps (unpack, fetch, containerd's config, etcd's health, the charts) are
//! run through the install's phases, not copied.

use super::plan::UpgradeAction;
use crate::install::error::StepError;
use crate::install::phases::{self, Cx, Outcome, sh};
use crate::install::plan::{Action, BinaryFetch};
use crate::install::render::kubernetes::paths::ADMIN_CONF;
use crate::ssh::{Node, quote};

/// Why a node step failed, and whether its node was left drained (cordoned).
#[derive(Debug)]
pub(super) struct Failure {
    /// What happened.
    pub(super) source: StepError,
    /// Whether the node was drained before it failed.
    pub(super) cordoned: bool,
}

impl From<StepError> for Failure {
    fn from(source: StepError) -> Self {
        Self {
            source,
            cordoned: false,
        }
    }
}

impl From<crate::ssh::SshError> for Failure {
    fn from(source: crate::ssh::SshError) -> Self {
        StepError::from(source).into()
    }
}

/// Runs the per-node `action` on `node`; `first` is the first control plane.
pub(super) async fn run(
    cx: &Cx<'_>,
    action: &UpgradeAction,
    node: &Node,
    first: &Node,
) -> Result<Outcome, Failure> {
    match action {
        UpgradeAction::Unpack => Ok(phases::run(cx, &Action::UnpackBundle, node).await?),
        UpgradeAction::Runtime { binaries } => {
            drained(first, node, runtime(cx, node, binaries)).await
        }
        UpgradeAction::Etcd { binary } => Ok(etcd(cx, node, binary).await?),
        UpgradeAction::Kubeadm { binary } => Ok(fetch(cx, node, vec![binary.clone()]).await?),
        UpgradeAction::Apply { version } => {
            let command = format!(
                "/usr/local/bin/kubeadm upgrade apply {} --yes 2>&1",
                quote(version)
            );
            Ok(kubeadm(node, &command).await?)
        }
        UpgradeAction::Node => Ok(kubeadm(node, "/usr/local/bin/kubeadm upgrade node 2>&1").await?),
        UpgradeAction::Kubelet { binaries } => {
            let outcome = drained(first, node, kubelet(cx, node, binaries)).await?;
            ready(first, node).await.map_err(|source| Failure {
                source,
                cordoned: false,
            })?;
            Ok(outcome)
        }
        UpgradeAction::Install { action, .. } => Ok(phases::run(cx, action, node).await?),
        UpgradeAction::Precheck | UpgradeAction::Record => Err(StepError::not_in_plan(format!(
            "`{action:?}` is a cluster-wide step, not a node step"
        ))
        .into()),
    }
}

/// `work` on `node` drained (from `first`) and uncordoned after it; a failure after the drain
/// leaves the node cordoned, and says so.
async fn drained(
    first: &Node,
    node: &Node,
    work: impl Future<Output = Result<Outcome, StepError>>,
) -> Result<Outcome, Failure> {
    let name = quote(node.name());
    kubectl(
        first,
        &format!("drain {name} --ignore-daemonsets --delete-emptydir-data"),
    )
    .await?;
    let cordoned = |source| Failure {
        source,
        cordoned: true,
    };
    let mut outcome = work.await.map_err(cordoned)?;
    kubectl(first, &format!("uncordon {name}"))
        .await
        .map_err(cordoned)?;
    outcome.changed = true;
    Ok(outcome)
}

/// The runtime's binaries swapped in, containerd's config as the next bundle has it, containerd
/// restarted when its binaries changed.
async fn runtime(cx: &Cx<'_>, node: &Node, binaries: &[BinaryFetch]) -> Result<Outcome, StepError> {
    let mut outcome = fetch(cx, node, binaries.to_vec()).await?;
    let config = phases::run(cx, &Action::Containerd, node).await?;
    if outcome.changed && !config.changed {
        sh(node, "systemctl restart containerd.service").await?;
    }
    outcome.changed |= config.changed;
    outcome.files.extend(config.files);
    Ok(outcome)
}

/// The member's binaries swapped in and the member restarted when they changed; every member
/// healthy before the step counts as done (the next member waits for it).
async fn etcd(cx: &Cx<'_>, node: &Node, binary: &BinaryFetch) -> Result<Outcome, StepError> {
    let outcome = fetch(cx, node, vec![binary.clone()]).await?;
    if outcome.changed {
        sh(node, "systemctl restart etcd.service").await?;
    }
    phases::run(cx, &Action::EtcdHealth, node).await?;
    Ok(outcome)
}

/// kubelet and kubectl swapped in and the kubelet restarted: always, because a run cut after
/// the swap left the old kubelet running with the new binary in place.
async fn kubelet(cx: &Cx<'_>, node: &Node, binaries: &[BinaryFetch]) -> Result<Outcome, StepError> {
    let outcome = fetch(cx, node, binaries.to_vec()).await?;
    sh(
        node,
        "systemctl daemon-reload && systemctl restart kubelet.service",
    )
    .await?;
    Ok(outcome)
}

/// The node Ready again, as the API server sees it.
async fn ready(first: &Node, node: &Node) -> Result<(), StepError> {
    kubectl(
        first,
        &format!(
            "wait --for=condition=Ready {} --timeout=300s",
            quote(&format!("node/{}", node.name()))
        ),
    )
    .await
}

/// The install's fetch step for `binaries`.
async fn fetch(cx: &Cx<'_>, node: &Node, binaries: Vec<BinaryFetch>) -> Result<Outcome, StepError> {
    phases::run(cx, &Action::Fetch { binaries }, node).await
}

/// A kubeadm upgrade command: it changes the control plane whenever it runs (a rerun of the
/// same version rewrites the same manifests).
async fn kubeadm(node: &Node, command: &str) -> Result<Outcome, StepError> {
    let said = sh(node, command).await?;
    Ok(Outcome {
        changed: true,
        notes: said
            .lines()
            .filter(|line| line.contains("SUCCESS"))
            .map(str::to_owned)
            .collect(),
        ..Outcome::default()
    })
}

/// The bundle's kubectl with `admin.conf` on the first control plane.
async fn kubectl(first: &Node, args: &str) -> Result<(), StepError> {
    sh(
        first,
        &format!("/usr/local/bin/kubectl --kubeconfig {ADMIN_CONF} {args} 2>&1"),
    )
    .await?;
    Ok(())
}

//! The upgrade's errors: the plan's refusals ([`UpgradePlanError`], made before any node is
//! touched) and the run's ([`UpgradeError`]), which names the step and node that failed.

use std::path::PathBuf;

use crate::install::error::{InstallError, PlanError, StepError};
use crate::install::target::Target;
use crate::ssh::SshError;

/// The upgrade cannot be planned: kubeadm would refuse it, or nothing says what is installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpgradePlanError {
    /// A version that is not `vX.Y.Z`.
    #[error("`{text}` is not a Kubernetes version; hint: kubeadm versions look like `v1.32.3`")]
    Version {
        /// The text read.
        text: String,
    },
    /// The target is older than the installed version.
    #[error(
        "the bundle's Kubernetes {to} is older than the installed {from}: kubeadm does not downgrade a cluster; hint: give a bundle of {from} or newer"
    )]
    Downgrade {
        /// The installed version.
        from: String,
        /// The bundle's version.
        to: String,
    },
    /// The target skips a minor version.
    #[error(
        "the bundle's Kubernetes {to} skips a minor version from the installed {from}: kubeadm upgrades one minor version at a time; hint: upgrade to the next minor of {from} first, with a bundle of it"
    )]
    SkipsMinor {
        /// The installed version.
        from: String,
        /// The bundle's version.
        to: String,
    },
    /// A kubelet runs a newer minor than the target API server.
    #[error(
        "the kubelet of node `{node}` runs {kubelet}, newer than the bundle's API server {to}: kubeadm refuses a kubelet newer than the API server; hint: give a bundle of {kubelet} or newer"
    )]
    KubeletNewer {
        /// The node.
        node: String,
        /// Its kubelet's version.
        kubelet: String,
        /// The bundle's version.
        to: String,
    },
    /// The bundle lacks an image the target version's control plane needs.
    #[error(
        "the bundle has no `{image}`, which Kubernetes {to} needs (upgrading from {from}); hint: build the bundle with `spec.kubernetes: {to}` (the catalog adds every image kubeadm pulls)"
    )]
    MissingImage {
        /// The image (repository, with the tag when it is the Kubernetes version).
        image: String,
        /// The installed version.
        from: String,
        /// The bundle's version.
        to: String,
    },
    /// The bundle carries no kubeadm.
    #[error(
        "the bundle carries no kubeadm, so it has no Kubernetes version to upgrade to; hint: build it with `spec.kubernetes`"
    )]
    NoKubernetes,
    /// No install is recorded in the work directory.
    #[error(
        "`{}` records no install to upgrade; hint: give the `--work-dir` of the install", path.display()
    )]
    NotInstalled {
        /// The install state looked for.
        path: PathBuf,
    },
    /// The install state predates recorded versions (only `kk-install upgrade` reads them on
    /// the first control plane).
    #[error(
        "`{}` does not record the installed Kubernetes version (an install by an older kk-install); hint: run `kk-install upgrade`, which reads it on the first control plane before it changes anything", path.display()
    )]
    UnknownVersion {
        /// The install state.
        path: PathBuf,
    },
    /// Another upgrade is half done.
    #[error(
        "`{}` records an unfinished upgrade to bundle `{recorded}`, not to this bundle `{bundle}`; hint: finish it first by running `kk-install upgrade` with that bundle again", path.display()
    )]
    OtherUpgrade {
        /// The upgrade state.
        path: PathBuf,
        /// The bundle it upgrades to.
        recorded: String,
        /// The bundle given.
        bundle: String,
    },
    /// The target install plan cannot be made.
    #[error("cannot plan the install of the bundle upgraded to")]
    Target(#[source] PlanError),
}

/// The upgrade stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpgradeError {
    /// Refused before any node was touched.
    #[error(transparent)]
    Plan(#[from] UpgradePlanError),
    /// The upgrade state cannot be read or written.
    #[error("cannot read or write the upgrade state `{}`", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The install state, the lock, or reaching a node.
    #[error(transparent)]
    Install(#[from] InstallError),
    /// Reading the versions on a node failed.
    #[error("cannot read the Kubernetes versions on node `{node}`")]
    Versions {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: Box<SshError>,
    },
    /// A step failed; the cluster serves as before it.
    #[error("upgrade step `{step}` failed {}; the cluster keeps serving; hint: fix the cause and rerun the same command", target.place())]
    Step {
        /// The step id.
        step: String,
        /// Where it ran.
        target: Target,
        /// What happened, with the remote output.
        #[source]
        source: Box<StepError>,
    },
    /// A step failed after its node was drained: the node stays cordoned.
    #[error(
        "upgrade step `{step}` failed on node `{node}` after it was drained, so it stays cordoned; the cluster keeps serving; hint: fix the cause and rerun the same command, or `kubectl uncordon {node}` to put it back as it is"
    )]
    Cordoned {
        /// The step id.
        step: String,
        /// The node.
        node: String,
        /// What happened, with the remote output.
        #[source]
        source: Box<StepError>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_left_cordoned_is_named_with_the_uncordon_to_run() {
        let error = UpgradeError::Cordoned {
            step: "upgrade.kubelet".to_owned(),
            node: "w1".to_owned(),
            source: Box::new(StepError::not_in_plan("kubelet did not start")),
        };
        let message = error.to_string();
        assert!(
            message.contains("`upgrade.kubelet`")
                && message.contains("stays cordoned")
                && message.contains("`kubectl uncordon w1`"),
            "{message}"
        );
        let error = UpgradeError::Step {
            step: "upgrade.apply".to_owned(),
            target: Target::node("cp1"),
            source: Box::new(StepError::not_in_plan("kubeadm refused")),
        };
        let message = error.to_string();
        assert!(
            message.contains("on node `cp1`") && !message.contains("cordoned"),
            "{message}"
        );
    }
}

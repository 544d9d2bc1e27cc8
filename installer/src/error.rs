//! Errors of the installer library: those of the install (the plan and its run), and every
//! other module's re-exported from the module that owns it.
//!
//! Modules import an error from its owner, never from here: this module imports them all.

use std::path::PathBuf;

pub use crate::fetch::FetchError;
pub use crate::hooks::HookError;
pub use crate::inventory::{CidrError, InventoryError};
pub use crate::pki::PkiError;
pub use crate::push::PushError;
pub use crate::registry::RegistryError;
pub use crate::ssh::{FactsError, SshError};

/// The inventory, config and bundle do not make an installable plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// An external registry is configured; the install only sets up kk's own so far.
    #[error(
        "`image_registry.type: external` (`{address}`) is not installed by kk-install yet; hint: use kk's registry (`type: kk`), or push the bundle with `kk-install registry push` and install by hand"
    )]
    ExternalRegistry {
        /// The configured address.
        address: String,
    },
    /// Neither `image_registry` nor `kube_control_plane` has a host.
    #[error(
        "no host can serve kk's registry; hint: put a host in the `image_registry` or `kube_control_plane` group"
    )]
    NoRegistryHost,
    /// A host has no internal address.
    #[error(
        "host `{node}` has no `internal_ipv4` or `internal_ipv6`; hint: the cluster needs the address it reaches the node at"
    )]
    NoAddress {
        /// The inventory name.
        node: String,
    },
    /// The bundle lacks a binary the install needs.
    #[error(
        "the bundle has no binary `{name}`; hint: build it with `spec.kubernetes` (the catalog adds it) or list it under `spec.binaries`"
    )]
    MissingBinary {
        /// The binary's name.
        name: String,
    },
    /// The bundle has no pause image.
    #[error(
        "the bundle has no pause image (`registry.k8s.io/pause:…`), which containerd needs as its sandbox image; hint: build it with `spec.kubernetes`, or add the image"
    )]
    NoPauseImage,
    /// The bundle lacks a chart the install needs.
    #[error(
        "the bundle has no chart `{name}`; hint: build it with `spec.kubernetes` (the catalog adds the CNI's chart) or list it under `spec.charts`"
    )]
    MissingChart {
        /// The chart's name.
        name: String,
    },
    /// The bundle lacks an image the config asks for.
    #[error(
        "the bundle has no `{name}` image, which the config's control-plane endpoint needs; hint: build the bundle with `spec.kubernetes` (the catalog adds it) or list the image under `spec.images`"
    )]
    MissingImage {
        /// The repository path looked for.
        name: String,
    },
    /// No control plane in the inventory.
    #[error(
        "the inventory has no host in `kube_control_plane`; hint: Kubernetes needs at least one control plane"
    )]
    NoControlPlane,
    /// A network plugin kk does not install.
    #[error(
        "`spec.cni.type: {plugin}` is not installed by kk-install; hint: use calico, cilium or flannel, or `none` and install it as an addon"
    )]
    UnsupportedCni {
        /// The plugin.
        plugin: &'static str,
    },
    /// The inventory holds what kubeadm would refuse (a node name).
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// kubeadm would refuse the config.
    #[error(
        "`{field}` is `{value}`: {reason}; hint: change it in the config (kubeadm would refuse it on the node)"
    )]
    Kubeadm {
        /// The config field.
        field: String,
        /// Its value.
        value: String,
        /// Why kubeadm refuses it.
        reason: String,
    },
}

/// The install stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A step failed on a node.
    #[error("{phase} phase, step `{step}` failed on node `{node}`: {cause}")]
    Step {
        /// The phase.
        phase: String,
        /// The step id.
        step: String,
        /// The node (`installer` for a step on the installer machine).
        node: String,
        /// What happened, with the remote command's output.
        cause: String,
    },
    /// The precheck found problems.
    #[error(
        "the precheck failed: fix what the table marks `fail`, or waive a check with `--ignore ID`"
    )]
    Precheck,
    /// The state file belongs to another bundle.
    #[error("`{}` records an install of bundle `{recorded}`, not of this bundle `{bundle}`; hint: use another `--work-dir`, or remove the file to start over", path.display())]
    OtherBundle {
        /// The state file.
        path: PathBuf,
        /// The bundle it names.
        recorded: String,
        /// The bundle given.
        bundle: String,
    },
    /// `--resume` without anything to resume.
    #[error("`--resume`: `{}` does not exist, so there is no install to resume; hint: run without `--resume`", path.display())]
    NothingToResume {
        /// The state file looked for.
        path: PathBuf,
    },
    /// The state file cannot be read or written.
    #[error("cannot read or write the install state `{}`", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A node could not be reached.
    #[error(transparent)]
    Ssh(Box<SshError>),
    /// The plan could not be made.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl From<SshError> for InstallError {
    fn from(error: SshError) -> Self {
        Self::Ssh(Box::new(error))
    }
}

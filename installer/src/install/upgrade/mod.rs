//! The upgrade: `kk-install upgrade --bundle NEXT -i INV` (and `kk-install plan --upgrade`).
//!
//! # How the parts fit
//!
//! The next bundle's install plan ([`crate::install::Plan::new`] with its description) says
//! what the cluster looks like once upgraded; [`plan::UpgradePlan::new`] derives the upgrade's
//! steps from it and from what is installed ([`plan::Installed`], recorded in the install state
//! at install time), in kubeadm's documented order, and makes kubeadm's refusals
//! ([`version::check`], the images the target version needs) before any node is touched.
//! [`run::run`] executes the steps one node at a time ([`node`] for what each does on a node,
//! reusing the install's phases for unpack, fetch, containerd, etcd's health and the charts);
//! [`state::UpgradeState`] records every finished step, so the same command continues a killed
//! upgrade. The last step moves the install state to the next bundle, so a later install of it
//! changes nothing.

pub mod error;
mod node;
pub mod plan;
pub mod run;
pub mod state;
pub mod version;

pub use error::{UpgradeError, UpgradePlanError};
pub use plan::{Installed, UpgradePlan};
pub use run::{Upgrade, run};
pub use state::UpgradeState;

#[cfg(test)]
mod tests;

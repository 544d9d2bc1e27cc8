//! The install: `kk-install --bundle B -i INV -c CFG`.
//!
//! # How the parts fit
//!
//! [`plan::Plan::new`] turns the inventory, the config and the verified bundle's description
//! into ordered [`plan::Step`]s, each naming its phase, what it does ([`plan::Action`]) and the
//! nodes it runs on. It touches nothing, so `kk-install plan` prints exactly what an install
//! would do and the plan is table-tested. [`run::run`] executes it on connected nodes: phase by
//! phase, step by step across nodes, each node step implemented in `phases` against a
//! [`crate::ssh::Node`]; the files those steps write are rendered by [`render`], pure and
//! tested against what containerd, systemd and etcd read. [`state::State`] records every
//! finished step in the work directory, so a rerun continues from the first step not done. A step
//! runs for a [`state::Target`]: a node, or the cluster as a whole (the cluster-wide steps run on
//! the installer machine). An install or reset holds the work directory's [`lock::StateLock`]
//! from before it connects to a node until it ends, so two never run on one state.
//!
//! # Why it is built this way
//!
//! - **The installer machine sends commands, not gigabytes.** The bundle goes once to the
//!   registry host; every other node gets one copy of kk-install and fetches its binaries from
//!   kk's registry itself (`kk-install fetch`, TLS verified against the cluster CA, digests
//!   checked against the verified bundle). Images are never copied at all: containerd pulls
//!   them by their original names through `certs.d` mirrors.
//! - **Check before change.** Every file is written only when its content or mode differs, a
//!   service is restarted only when something it reads changed, a certificate is never
//!   reissued. So a rerun after success changes nothing, and a rerun after a crash redoes at
//!   most the step that was cut — which changes nothing it had already done.
//! - **Stop at the first failure**, naming node, phase, step and the remote output; the post
//!   hooks only run after everything else succeeded.

pub mod bootstrap;
pub mod error;
pub mod lock;
pub mod plan;
pub mod render;
pub mod reset;
pub mod run;
pub mod state;
mod target;
pub mod upgrade;

mod phases;

pub use error::{InstallError, PlanError, StepError};
pub use lock::StateLock;
pub use plan::{Phase, Plan};
pub use run::{Event, Install, RunOptions, StepEvent, StepStatus, Summary};
pub use state::{State, Target};

//! `kk-install` as a library: the parts of the installer that tests and the binary share.

pub mod agent;
pub mod certs;
pub mod cluster;
pub mod error;
pub mod facts;
pub use kk_node::fetch;
pub mod hooks;
pub mod install;
pub mod inventory;
pub mod pki;
pub mod precheck;
pub mod push;
pub mod registry;
pub mod ssh;
pub mod trust;

// The durable write is shared with the builder; `crate::durable` names it here.
use bundle_spec::durable;

/// Tests of the node-side fetch across several registry hosts against this crate's own
/// registry and PKI (which the agent crate does not have).
#[cfg(test)]
mod fetch_failover_tests;
#[cfg(test)]
mod snapshot_tests;

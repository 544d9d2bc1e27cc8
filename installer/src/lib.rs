//! `kk-install` as a library: the parts of the installer that tests and the binary share.

pub mod cluster;
pub mod error;
pub mod facts;
pub mod hooks;
pub mod inventory;
pub mod precheck;
pub mod push;
pub mod registry;
pub mod ssh;

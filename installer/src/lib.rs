//! `kk-install` as a library: the parts of the installer that tests and the binary share.

pub mod error;
pub mod push;
pub mod registry;

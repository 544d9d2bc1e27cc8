//! `kk-node`, kk's node agent: what a node runs for the install, and nothing else.
//!
//! The installer machine sends each node this small static program instead of the whole
//! `kk-install` (registry server, bundle reader, SSH client, planner): a node only has to fetch
//! verified binaries from kk's registry ([`fetch::fetch`]) and wait for that registry to answer
//! ([`fetch::ping`]). `kk-install fetch` and `kk-install registry ping` call the same library.

pub mod cli;
pub mod fetch;

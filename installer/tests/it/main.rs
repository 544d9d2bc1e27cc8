//! kk-install's integration tests, one binary: the registry over a hand-built layout
//! (`registry`), push mode against Debian's real `docker-registry` (`push`), and store revisions
//! and pruning under a running registry (`prune`).
#![allow(clippy::unwrap_used, clippy::too_many_lines)]

mod prune;
mod push;
mod registry;

//! The error of running the operator's hook scripts.

use crate::ssh::SshError;

/// A hook script could not be run, or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The script exited with an error: the install stops here.
    #[error("hook `{script}` failed on node `{node}` (exit {}); the install stops here:\n{output}", code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string()))]
    Failed {
        /// The inventory name.
        node: String,
        /// The script's path on the node.
        script: String,
        /// Its exit code; `None` for a signal.
        code: Option<u32>,
        /// What it printed.
        output: String,
    },
    /// The node could not be reached or the script not copied.
    #[error(transparent)]
    Ssh(#[from] SshError),
}

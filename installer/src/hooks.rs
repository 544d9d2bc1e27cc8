//! `pre_hook` and `post_hook`: the operator's own scripts, run on the nodes before and after
//! the install, exactly as KubeKey runs them.
//!
//! For each node, `<work dir>/pre_install_<inventory name>.sh` (if it exists) is copied to
//! `/etc/kubekey/scripts/` on that node with mode 0755; then every `pre_install_*.sh` in that
//! directory runs, in name order — scripts left there earlier or put there by other means
//! included, as KubeKey does. `post_hook` is the same with `post_install_`. A script that fails
//! stops the run, naming the node, the script and its exit code, with its output.

use std::path::Path;

mod error;

use crate::ssh::{Node, fan_out, quote};
pub use error::HookError;

/// Where hook scripts live on a node.
pub const SCRIPT_DIR: &str = "/etc/kubekey/scripts";

/// Which hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Before everything: `pre_install_*.sh`.
    Pre,
    /// After everything succeeded: `post_install_*.sh`.
    Post,
}

impl Hook {
    /// The file name prefix of its scripts.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Pre => "pre_install_",
            Self::Post => "post_install_",
        }
    }
}

/// What one node ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The node's inventory name.
    pub node: String,
    /// The scripts run, in order (full paths on the node).
    pub scripts: Vec<String>,
}

/// Runs `hook` on every node, `concurrency` nodes at a time, taking the per-node scripts from
/// `work_dir`. Returns what ran, in node order; the first failure (in node order) is the error.
pub async fn run(
    hook: Hook,
    nodes: &[&Node],
    work_dir: &Path,
    concurrency: usize,
) -> Result<Vec<HookRun>, HookError> {
    let results = fan_out(nodes, concurrency, |node| run_on(hook, node, work_dir)).await;
    results.into_iter().collect()
}

async fn run_on(hook: Hook, node: &Node, work_dir: &Path) -> Result<HookRun, HookError> {
    let own = format!("{}{}.sh", hook.prefix(), node.name());
    let local = work_dir.join(&own);
    if local.is_file() {
        node.upload(&local, &format!("{SCRIPT_DIR}/{own}"), 0o755)
            .await?;
    }
    let listing = node
        .run_checked(&format!(
            "for f in {SCRIPT_DIR}/{}*.sh; do [ -f \"$f\" ] && echo \"$f\"; done; true",
            hook.prefix()
        ))
        .await?;
    let mut scripts: Vec<String> = listing.stdout_text().lines().map(str::to_owned).collect();
    // The shell's glob order depends on the node's locale; name order does not.
    scripts.sort();
    for script in &scripts {
        let output = node.run(&quote(script)).await?;
        if !output.success() {
            return Err(HookError::Failed {
                node: node.name().to_owned(),
                script: script.clone(),
                code: output.code,
                output: output.combined_text(),
            });
        }
    }
    Ok(HookRun {
        node: node.name().to_owned(),
        scripts,
    })
}

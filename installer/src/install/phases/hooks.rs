//! The `pre_hook` and `post_hook` phases (on the installer machine, for every node): the operator's
//! scripts, run by [`crate::hooks`].

use super::Cx;
use crate::hooks::{self, Hook};
use crate::install::error::StepError;
use crate::install::plan::Phase;
use crate::ssh::Node;

/// `pre_hook.scripts`, `post_hook.scripts`: the hook of `phase` on `nodes`; returns the line
/// the operator is told (how many scripts ran on how many nodes).
pub(crate) async fn scripts(
    cx: &Cx<'_>,
    phase: Phase,
    nodes: &[&Node],
) -> Result<String, StepError> {
    let hook = if phase == Phase::PreHook {
        Hook::Pre
    } else {
        Hook::Post
    };
    let reach = cx.checks.reach;
    let ran = hooks::run(hook, nodes, &reach.work_dir, reach.concurrency).await?;
    let count: usize = ran.iter().map(|r| r.scripts.len()).sum();
    Ok(format!("{phase}: {count} scripts on {} nodes", ran.len()))
}

//! The nfs phase: the NFS server on the `nfs` host, as the plan decided it — the share
//! directory, kk's block of `/etc/exports` (the operator's own lines stay), `exportfs -ra`, and
//! `nfs-server` enabled, started only where the kernel has nfsd. A rerun changes nothing.

use super::{Cx, Outcome, StepResult, put, sh};
use crate::install::error::StepError;
use crate::install::render;
use crate::ssh::{Node, quote};

/// The file kk keeps its export block in.
pub(crate) const EXPORTS: &str = "/etc/exports";

/// The share directory's mode: the provisioner creates each volume's directory as root, which
/// the server squashes to nobody, so the share must be writable by anyone.
const SHARE_MODE: &str = "0777";

/// `nfs.server`: share directory, exports, `exportfs -ra`, the server unit.
pub(super) async fn server(cx: &Cx<'_>, node: &Node) -> StepResult {
    let nfs = cx
        .plan
        .nfs
        .as_ref()
        .ok_or_else(|| StepError::not_in_plan("the plan has no nfs server"))?;
    let said = sh(node, &share_dir_command(&nfs.share_dir)).await?;
    let mut outcome = Outcome {
        changed: !said.trim().is_empty(),
        ..Outcome::default()
    };
    let current = sh(node, &format!("cat {EXPORTS} 2>/dev/null || true")).await?;
    let wanted = render::exports_file(&current, &nfs.share_dir, &nfs.clients);
    if wanted == current {
        outcome.files.push(EXPORTS.to_owned());
    } else {
        outcome.merge(put(cx, node, wanted.as_bytes(), EXPORTS, 0o644).await?);
    }
    // `exportfs -ra` always: cheap, idempotent, and its refusal of the exports is the step's
    // error (a rerun after a failed one must see it again).
    sh(node, "exportfs -ra 2>&1").await?;
    let said = sh(node, SERVER_COMMAND).await?;
    outcome.changed |= said
        .lines()
        .any(|line| line == "enabled" || line == "started");
    if said.lines().any(|line| line == "no-nfsd") {
        outcome.notes.push(
            "nfs-server is enabled but cannot start: the kernel has no nfsd (`modprobe nfsd` fails)"
                .to_owned(),
        );
    }
    Ok(outcome)
}

/// Creates the share directory with [`SHARE_MODE`] unless it is there with that mode; prints
/// a word when it changed something.
fn share_dir_command(dir: &str) -> String {
    format!(
        "d={dir}; if [ ! -d \"$d\" ]; then mkdir -p \"$d\" && echo created || exit 1; fi; \
         if [ \"$(stat -c %a \"$d\")\" != {mode} ]; then chmod {SHARE_MODE} \"$d\" && echo mode; fi",
        dir = quote(dir),
        mode = SHARE_MODE.trim_start_matches('0'),
    )
}

/// `nfs-server` enabled; started when the kernel has nfsd (loaded, or loadable) and it is not
/// running. Prints `enabled`, `started` or `no-nfsd` for what it did or could not do.
const SERVER_COMMAND: &str = "u=nfs-server.service; \
    if ! systemctl is-enabled --quiet $u 2>/dev/null; then systemctl enable --quiet $u || exit 1; echo enabled; fi; \
    if ! grep -qw nfsd /proc/filesystems && ! modprobe nfsd 2>/dev/null; then echo no-nfsd; exit 0; fi; \
    if ! systemctl is-active --quiet $u; then systemctl start $u || { systemctl status --no-pager $u; exit 1; }; echo started; fi";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_dir_is_quoted_and_made_world_writable_only_when_it_is_not() {
        let command = share_dir_command("/srv/nfs share");
        assert!(command.starts_with("d='/srv/nfs share';"), "{command}");
        assert!(command.contains("!= 777 ]; then chmod 0777"), "{command}");
    }

    #[test]
    fn the_server_is_started_only_where_the_kernel_has_nfsd() {
        let enable = SERVER_COMMAND.find("systemctl enable").expect("enable");
        let nfsd = SERVER_COMMAND.find("no-nfsd").expect("nfsd check");
        let start = SERVER_COMMAND.find("systemctl start").expect("start");
        assert!(enable < nfsd && nfsd < start, "{SERVER_COMMAND}");
    }
}

//! The installer's own machine as a node (`connector.type: local`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use bundle_spec::Sha256Digest;
use tokio::io::AsyncWriteExt as _;

use super::CommandOutput;
use crate::error::SshError;

/// Runs `command` with `sh -c`, ending it when `timeout` passes.
pub(super) async fn run(
    node: &str,
    command: &str,
    timeout: Duration,
) -> Result<CommandOutput, SshError> {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| SshError::Lost {
            node: node.to_owned(),
            command: command.to_owned(),
            reason: e.to_string(),
        })?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => Err(SshError::Timeout {
            node: node.to_owned(),
            command: command.to_owned(),
            seconds: timeout.as_secs(),
        }),
        Ok(Err(e)) => Err(SshError::Lost {
            node: node.to_owned(),
            command: command.to_owned(),
            reason: e.to_string(),
        }),
        Ok(Ok(output)) => Ok(CommandOutput {
            code: output.status.code().and_then(|c| u32::try_from(c).ok()),
            stdout: output.stdout,
            stderr: output.stderr,
        }),
    }
}

/// Copies `from` to `to` on this machine: a new file in a directory just made for this upload
/// (see [`super::Node::upload`]); an existing file or link there is refused, never written
/// through.
pub(super) async fn copy(node: &str, from: &Path, to: &str) -> Result<(), SshError> {
    let failed = |e: std::io::Error| SshError::Upload {
        node: node.to_owned(),
        path: to.to_owned(),
        reason: e.to_string(),
    };
    let mut source = tokio::fs::File::open(from).await.map_err(failed)?;
    let mut target = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .await
        .map_err(failed)?;
    tokio::io::copy(&mut source, &mut target)
        .await
        .map_err(failed)?;
    // tokio writes in the background: the node's sha256sum must see every byte.
    target.flush().await.map_err(failed)
}

/// The sha256 and size of a local file, hashed off the async threads.
pub(super) async fn sha256_of(path: &Path) -> Result<(Sha256Digest, u64), SshError> {
    let owned = path.to_owned();
    let hashed = tokio::task::spawn_blocking(move || {
        std::fs::File::open(&owned).and_then(Sha256Digest::of_reader)
    })
    .await
    .map_err(std::io::Error::other)
    .and_then(|result| result);
    hashed.map_err(|source| SshError::LocalFile {
        path: path.to_owned(),
        source,
    })
}

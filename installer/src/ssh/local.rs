//! The installer's own machine as a node (`connector.type: local`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use bundle_spec::Sha256Digest;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::SshError;
use super::{CommandOutput, MAX_COMMAND_OUTPUT, output_too_large};

/// Runs `command` with `sh -c`, ending it when `timeout` passes or when it prints more than
/// [`MAX_COMMAND_OUTPUT`] on a stream.
pub(super) async fn run(
    node: &str,
    command: &str,
    timeout: Duration,
) -> Result<CommandOutput, SshError> {
    let lost = |e: std::io::Error| SshError::Lost {
        node: node.to_owned(),
        command: command.to_owned(),
        reason: e.to_string(),
    };
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(lost)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(lost(std::io::Error::other("its output is not piped")));
    };
    let run = async {
        let (stdout, stderr) =
            tokio::try_join!(at_most(stdout, "stdout"), at_most(stderr, "stderr"))?;
        let status = child.wait().await.map_err(Stop::Io)?;
        Ok::<_, Stop>((status, stdout, stderr))
    };
    // Dropping the child (an error, the time limit) kills it.
    let (status, stdout, stderr) = match tokio::time::timeout(timeout, run).await {
        Err(_) => {
            return Err(SshError::Timeout {
                node: node.to_owned(),
                command: command.to_owned(),
                seconds: timeout.as_secs(),
            });
        }
        Ok(Err(Stop::Io(e))) => return Err(lost(e)),
        Ok(Err(Stop::TooLarge(stream))) => return Err(output_too_large(node, command, stream)),
        Ok(Ok(ran)) => ran,
    };
    Ok(CommandOutput {
        code: status.code().and_then(|c| u32::try_from(c).ok()),
        stdout,
        stderr,
    })
}

/// Why reading a command's output stopped early.
enum Stop {
    Io(std::io::Error),
    /// The stream named passed [`MAX_COMMAND_OUTPUT`].
    TooLarge(&'static str),
}

/// What `stream` gives; stops, without holding more, at one byte past [`MAX_COMMAND_OUTPUT`]
/// (the other stream's read then stops too, rather than wait for a command that cannot go on).
async fn at_most(
    stream: impl tokio::io::AsyncRead + Unpin,
    name: &'static str,
) -> Result<Vec<u8>, Stop> {
    let mut bytes = Vec::new();
    stream
        .take(MAX_COMMAND_OUTPUT as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(Stop::Io)?;
    if bytes.len() > MAX_COMMAND_OUTPUT {
        return Err(Stop::TooLarge(name));
    }
    Ok(bytes)
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

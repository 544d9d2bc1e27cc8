//! A node over SSH: commands on exec channels, files over SFTP.

use std::path::Path;
use std::time::Duration;

use russh::ChannelMsg;
use russh::client::Handle;
use russh_sftp::client::SftpSession;
use russh_sftp::protocol::OpenFlags;
use tokio::io::AsyncWriteExt as _;

use super::SshError;
use super::connect::{self, Address, Checker};
use super::{Auth, CommandOutput, HostKeyPolicy, MAX_COMMAND_OUTPUT, output_too_large, quote};

/// An authenticated SSH connection.
pub(super) struct Remote {
    handle: Handle<Checker>,
    /// The login user.
    user: String,
    /// Whether commands go through `sudo -n` (any login but root).
    sudo: bool,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The handle holds channels and keys; what identifies a connection is its node.
        f.debug_struct("Remote")
            .field("user", &self.user)
            .field("sudo", &self.sudo)
            .finish_non_exhaustive()
    }
}

impl Remote {
    pub(super) async fn connect(
        address: &Address<'_>,
        auth: &Auth,
        policy: &HostKeyPolicy,
        timeout: Duration,
    ) -> Result<Self, SshError> {
        let handle = connect::open(address, auth, policy, timeout).await?;
        Ok(Self {
            handle,
            user: address.user.to_owned(),
            sudo: address.user != "root",
        })
    }

    /// The user that SFTP writes as, when it is not root: an upload lands in a directory given
    /// to this user, since its SFTP session cannot write into one of root's.
    pub(super) fn landing_owner(&self) -> Option<&str> {
        self.sudo.then_some(self.user.as_str())
    }

    /// Runs `command` with `sh`, as root.
    pub(super) async fn run(
        &self,
        node: &str,
        command: &str,
        timeout: Duration,
    ) -> Result<CommandOutput, SshError> {
        let line = if self.sudo {
            format!("sudo -n sh -c {}", quote(command))
        } else {
            format!("sh -c {}", quote(command))
        };
        let lost = |e: russh::Error| SshError::Lost {
            node: node.to_owned(),
            command: command.to_owned(),
            reason: e.to_string(),
        };
        let mut channel = self.handle.channel_open_session().await.map_err(lost)?;
        channel.exec(true, line).await.map_err(lost)?;
        let mut output = CommandOutput {
            code: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        let collect = async {
            while let Some(message) = channel.wait().await {
                let (stream, buffer, data) = match message {
                    ChannelMsg::Data { data } => ("stdout", &mut output.stdout, data),
                    ChannelMsg::ExtendedData { data, .. } => ("stderr", &mut output.stderr, data),
                    ChannelMsg::ExitStatus { exit_status } => {
                        output.code = Some(exit_status);
                        continue;
                    }
                    _ => continue,
                };
                buffer.extend_from_slice(&data);
                if buffer.len() > MAX_COMMAND_OUTPUT {
                    // Dropping the channel closes it: the command gets no more room to print.
                    return Err(output_too_large(node, command, stream));
                }
            }
            Ok(())
        };
        match tokio::time::timeout(timeout, collect).await {
            Err(_) => Err(SshError::Timeout {
                node: node.to_owned(),
                command: command.to_owned(),
                seconds: timeout.as_secs(),
            }),
            Ok(Err(error)) => Err(error),
            Ok(Ok(())) => Ok(output),
        }
    }

    /// Copies `from` over SFTP to `to`, a new file in a directory the node just made for this
    /// upload (see [`super::Node::upload`]); an existing file there is refused, never
    /// overwritten.
    pub(super) async fn copy(&self, node: &str, from: &Path, to: &str) -> Result<(), SshError> {
        let failed = |reason: String| SshError::Upload {
            node: node.to_owned(),
            path: to.to_owned(),
            reason,
        };
        let channel = self
            .handle
            .channel_open_session()
            .await
            .map_err(|e| failed(e.to_string()))?;
        channel
            .request_subsystem(true, "sftp")
            .await
            .map_err(|e| failed(e.to_string()))?;
        let sftp = SftpSession::new(channel.into_stream())
            .await
            .map_err(|e| failed(format!("the node offers no SFTP: {e}")))?;
        let mut remote = sftp
            .open_with_flags(
                to,
                OpenFlags::CREATE | OpenFlags::EXCLUDE | OpenFlags::WRITE,
            )
            .await
            .map_err(|e| failed(format!("cannot create `{to}`: {e}")))?;
        let mut local = tokio::fs::File::open(from)
            .await
            .map_err(|e| failed(format!("cannot read `{}`: {e}", from.display())))?;
        tokio::io::copy(&mut local, &mut remote)
            .await
            .map_err(|e| failed(format!("copy cut off: {e}")))?;
        remote.shutdown().await.map_err(|e| failed(e.to_string()))?;
        let _ = sftp.close().await;
        Ok(())
    }

    pub(super) async fn close(self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }
}

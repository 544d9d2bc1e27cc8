//! A node over SSH: commands on exec channels, files over SFTP.

use std::path::Path;
use std::time::Duration;

use russh::ChannelMsg;
use russh::client::Handle;
use russh_sftp::client::SftpSession;
use russh_sftp::protocol::OpenFlags;
use tokio::io::AsyncWriteExt as _;

use super::connect::{self, Address, Checker};
use super::{Auth, CommandOutput, HostKeyPolicy, quote};
use crate::error::SshError;

/// An authenticated SSH connection.
pub(super) struct Remote {
    handle: Handle<Checker>,
    /// Whether commands go through `sudo -n` (any login but root).
    sudo: bool,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The handle holds channels and keys; what identifies a connection is its node.
        f.debug_struct("Remote")
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
            sudo: address.user != "root",
        })
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
                match message {
                    ChannelMsg::Data { data } => output.stdout.extend_from_slice(&data),
                    ChannelMsg::ExtendedData { data, .. } => output.stderr.extend_from_slice(&data),
                    ChannelMsg::ExitStatus { exit_status } => output.code = Some(exit_status),
                    _ => {}
                }
            }
        };
        if tokio::time::timeout(timeout, collect).await.is_err() {
            return Err(SshError::Timeout {
                node: node.to_owned(),
                command: command.to_owned(),
                seconds: timeout.as_secs(),
            });
        }
        Ok(output)
    }

    /// Copies `from` over SFTP to `beside` (root) or to a private temporary file (other users,
    /// who cannot write to system directories; the caller's root step moves it). Returns where
    /// the copy is.
    pub(super) async fn copy(
        &self,
        node: &str,
        from: &Path,
        beside: &str,
    ) -> Result<String, SshError> {
        let failed = |reason: String| SshError::Upload {
            node: node.to_owned(),
            path: beside.to_owned(),
            reason,
        };
        let staged = if self.sudo {
            let file = beside.rsplit('/').next().unwrap_or(beside);
            format!("/tmp/{file}.{}", std::process::id())
        } else {
            beside.to_owned()
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
                &staged,
                OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::WRITE,
            )
            .await
            .map_err(|e| failed(format!("cannot create `{staged}`: {e}")))?;
        let mut local = tokio::fs::File::open(from)
            .await
            .map_err(|e| failed(format!("cannot read `{}`: {e}", from.display())))?;
        tokio::io::copy(&mut local, &mut remote)
            .await
            .map_err(|e| failed(format!("copy cut off: {e}")))?;
        remote.shutdown().await.map_err(|e| failed(e.to_string()))?;
        let _ = sftp.close().await;
        Ok(staged)
    }

    pub(super) async fn close(self) {
        let _ = self
            .handle
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }
}

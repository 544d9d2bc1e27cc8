//! Reaching the nodes: SSH with `russh`, or the machine itself for a `local` connector.
//!
//! A [`Target`] says how to reach one node (address, port, user, [`Auth`]); [`Node::connect`]
//! turns it into a live [`Node`] that runs shell commands ([`Node::run`]) and uploads files
//! ([`Node::upload`]). Both connector kinds offer the same operations, so every install step is
//! written once and runs the same way on a remote node and on the installer's own machine.
//! [`fan_out`] runs one step on many nodes at once, bounded by `--concurrency`.
//!
//! # Why it is built this way
//!
//! - **Host keys are checked, never assumed.** [`HostKeyPolicy`] names the `known_hosts` file. An
//!   unknown key is refused unless the operator opted in with `--accept-new-host-keys` (then it is
//!   recorded, as OpenSSH's `accept-new` does); a key that differs from the recorded one is always
//!   refused, naming the line to remove. A datacenter that moves a node's address to another
//!   machine must notice.
//! - **Non-root users go through `sudo -n`.** Every command of a non-root target is wrapped in
//!   `sudo -n sh -c '…'`: `-n` makes a missing sudo rule fail at once instead of hanging on a
//!   password prompt no one sees.
//! - **Uploads are verified on the node.** A file goes to a temporary name beside its target,
//!   its sha256 is computed *on the node* and compared with the local one, and only then is it
//!   renamed into place: a node never runs a half-copied binary, and a rerun after a cut starts
//!   clean.
//! - **Secrets stay secret.** A password is held in [`Password`], whose `Debug` prints `<redacted>`; no
//!   command line, log line or error carries a password or key material. Per-node logs
//!   ([`NodeLog`]) record each command, its exit code and its output.

mod connect;
mod fanout;
mod local;
mod log;
mod remote;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use fanout::fan_out;
pub use log::NodeLog;

use crate::error::SshError;
pub use crate::inventory::Password;

/// How to authenticate to a node. Tried as given; [`Auth::Agent`] asks the agent of
/// `SSH_AUTH_SOCK` for its keys and tries each.
#[derive(Debug, Clone)]
pub enum Auth {
    /// A private key file (OpenSSH or PEM; ed25519, ECDSA or RSA, used with SHA-2).
    Key(PathBuf),
    /// A password.
    Password(Password),
    /// The SSH agent.
    Agent,
}

/// How to reach one node.
#[derive(Debug, Clone)]
pub struct Target {
    /// The node's inventory name: what messages and log files call it.
    pub name: String,
    /// What kind of connection.
    pub connector: Connector,
}

/// The connection to a node.
#[derive(Debug, Clone)]
pub enum Connector {
    /// The installer's own machine: commands run with `sh -c`, files are copied.
    Local,
    /// SSH.
    Ssh {
        /// Address or DNS name.
        host: String,
        /// Port.
        port: u16,
        /// The login user; a user other than `root` runs commands through `sudo -n`.
        user: String,
        /// How to authenticate.
        auth: Auth,
    },
}

/// Which host keys to trust.
#[derive(Debug, Clone)]
pub struct HostKeyPolicy {
    /// The `known_hosts` file (OpenSSH format; hashed entries are understood).
    pub known_hosts: PathBuf,
    /// Record the key of a host the file does not know instead of refusing it.
    pub accept_new: bool,
}

/// Time limits of a connection.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Connecting and authenticating.
    pub connect: Duration,
    /// One command, unless the caller gives its own.
    pub command: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(15),
            command: Duration::from_secs(300),
        }
    }
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Exit code; `None` if the command was ended by a signal.
    pub code: Option<u32>,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

impl CommandOutput {
    /// Whether the command exited with 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Standard output as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard output and standard error, as text, for error messages.
    pub fn combined_text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&self.stderr));
        text
    }
}

/// A connected node.
#[derive(Debug)]
pub struct Node {
    name: String,
    link: Link,
    timeouts: Timeouts,
    log: NodeLog,
}

#[derive(Debug)]
enum Link {
    Local,
    Ssh(remote::Remote),
}

impl Node {
    /// Connects to `target`, checking its host key against `policy`; commands and their
    /// output go to `log`.
    pub async fn connect(
        target: &Target,
        policy: &HostKeyPolicy,
        timeouts: Timeouts,
        log: NodeLog,
    ) -> Result<Self, SshError> {
        let link = match &target.connector {
            Connector::Local => Link::Local,
            Connector::Ssh {
                host,
                port,
                user,
                auth,
            } => {
                let address = connect::Address {
                    node: &target.name,
                    host,
                    port: *port,
                    user,
                };
                Link::Ssh(remote::Remote::connect(&address, auth, policy, timeouts.connect).await?)
            }
        };
        log.line(&format!("connected ({})", describe(&target.connector)));
        Ok(Self {
            name: target.name.clone(),
            link,
            timeouts,
            log,
        })
    }

    /// The node's inventory name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `command` with `sh` as root (through `sudo -n` for a non-root login), within the
    /// default command timeout. A non-zero exit is not an error here: see [`Node::run_checked`].
    pub async fn run(&self, command: &str) -> Result<CommandOutput, SshError> {
        self.run_within(command, self.timeouts.command).await
    }

    /// Like [`Node::run`] with its own time limit.
    pub async fn run_within(
        &self,
        command: &str,
        timeout: Duration,
    ) -> Result<CommandOutput, SshError> {
        self.log.line(&format!("$ {command}"));
        let result = match &self.link {
            Link::Local => local::run(&self.name, command, timeout).await,
            Link::Ssh(remote) => remote.run(&self.name, command, timeout).await,
        };
        match &result {
            Ok(output) => self.log.output(output),
            Err(error) => self.log.line(&format!("error: {error}")),
        }
        result
    }

    /// Runs `command` and fails, naming the node, the command, its exit code and its output,
    /// unless it exits with 0.
    pub async fn run_checked(&self, command: &str) -> Result<CommandOutput, SshError> {
        let output = self.run(command).await?;
        if output.success() {
            Ok(output)
        } else {
            Err(SshError::CommandFailed {
                node: self.name.clone(),
                command: command.to_owned(),
                code: output.code,
                output: output.combined_text(),
            })
        }
    }

    /// Copies the local file `from` to `to` on the node with mode `mode`: written under a
    /// temporary name, checked by its sha256 on the node, then renamed into place in `to`'s
    /// directory (created if needed).
    pub async fn upload(&self, from: &Path, to: &str, mode: u32) -> Result<(), SshError> {
        let (digest, size) = local::sha256_of(from).await?;
        self.log.line(&format!(
            "upload {} -> {to} ({size} bytes, sha256 {digest})",
            from.display()
        ));
        let (dir, file) = to.rsplit_once('/').unwrap_or((".", to));
        let beside = format!("{dir}/.kk-upload-{file}");
        self.run_checked(&format!("mkdir -p {}", quote(dir)))
            .await?;
        let staged = match &self.link {
            Link::Local => {
                local::copy(&self.name, from, &beside).await?;
                beside.clone()
            }
            Link::Ssh(remote) => remote.copy(&self.name, from, &beside).await?,
        };
        let check = format!(
            "set -e; got=$(sha256sum {staged} | cut -d' ' -f1); \
             if [ \"$got\" != {hex} ]; then rm -f {staged}; echo \"found sha256 $got\" >&2; exit 3; fi; \
             if [ {staged} != {beside} ]; then cp {staged} {beside}; rm -f {staged}; fi; \
             chmod {mode:o} {beside}; mv -f {beside} {to}",
            to = quote(to),
            staged = quote(&staged),
            beside = quote(&beside),
            hex = digest.hex(),
        );
        let output = self.run(&check).await?;
        if output.success() {
            return Ok(());
        }
        Err(SshError::Upload {
            node: self.name.clone(),
            path: to.to_owned(),
            reason: if output.code == Some(3) {
                format!(
                    "the copy on the node does not match the local file (expected sha256 {}, {})",
                    digest.hex(),
                    String::from_utf8_lossy(&output.stderr).trim()
                )
            } else {
                output.combined_text()
            },
        })
    }

    /// Closes the connection.
    pub async fn close(self) {
        if let Link::Ssh(remote) = self.link {
            remote.close().await;
        }
    }
}

/// `text` quoted for `sh`.
pub fn quote(text: &str) -> String {
    shlex::try_quote(text).map_or_else(
        // Only a NUL byte makes quoting fail; no path or command of ours holds one.
        |_| format!("'{}'", text.replace('\0', "")),
        std::borrow::Cow::into_owned,
    )
}

fn describe(connector: &Connector) -> String {
    match connector {
        Connector::Local => "local".to_owned(),
        Connector::Ssh {
            host, port, user, ..
        } => format!("ssh {user}@{host}:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_output() {
        let auth = Auth::Password(Password::new("hunter2"));
        assert_eq!(format!("{auth:?}"), "Password(<redacted>)");
    }

    #[test]
    fn quoting_survives_the_shell() {
        for (text, quoted) in [
            ("plain", "plain"),
            ("with space", "'with space'"),
            ("it's", "\"it's\""),
        ] {
            assert_eq!(quote(text), quoted);
        }
    }
}

//! The errors of reaching nodes and running commands and uploads on them.
//!
//! [`FactsError`] is declared here too, though the facts module reads the output it is about:
//! [`SshError::Facts`] carries it, and the facts module runs its script through this one, so
//! declaring it there would make the two modules import each other.

use std::path::PathBuf;

/// A node could not be reached, or a command or upload on it failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SshError {
    /// No connection could be made.
    #[error("cannot connect to node `{node}` at `{address}`: {reason}")]
    Connect {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// Why.
        reason: String,
    },
    /// The host key is not in `known_hosts`.
    #[error(
        "node `{node}` at `{address}` has a host key `known_hosts` does not know ({fingerprint}); hint: check the fingerprint on the node's console (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`), then add it to `{}` or rerun with `--accept-new-host-keys`",
        known_hosts.display()
    )]
    UnknownHostKey {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// The key's SHA256 fingerprint.
        fingerprint: String,
        /// The file consulted.
        known_hosts: PathBuf,
    },
    /// The host key differs from the recorded one.
    #[error(
        "node `{node}` at `{address}` presents a different host key ({fingerprint}) from the one recorded at `{}` line {line}: refusing to connect; hint: if the node was reinstalled, remove that line (`ssh-keygen -R` the host) and connect again",
        known_hosts.display()
    )]
    ChangedHostKey {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// The new key's SHA256 fingerprint.
        fingerprint: String,
        /// The file consulted.
        known_hosts: PathBuf,
        /// The 1-based line holding the recorded key.
        line: usize,
    },
    /// `known_hosts` could not be read or written.
    #[error("cannot check the host key of node `{node}` against `{}`: {reason}", known_hosts.display())]
    HostKeyCheck {
        /// The inventory name.
        node: String,
        /// The file.
        known_hosts: PathBuf,
        /// Why.
        reason: String,
    },
    /// Authentication failed.
    #[error("node `{node}` refused user `{user}`: {reason}")]
    Auth {
        /// The inventory name.
        node: String,
        /// The login user.
        user: String,
        /// Why (never a password).
        reason: String,
    },
    /// The connection broke while a command ran.
    #[error(
        "lost node `{node}` while running `{command}`: {reason}; hint: rerun, finished steps are skipped"
    )]
    Lost {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// A command did not finish in time.
    #[error("`{command}` on node `{node}` did not finish within {seconds}s")]
    Timeout {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// The limit.
        seconds: u64,
    },
    /// A command printed more than a command of kk ever does.
    #[error(
        "`{command}` on node `{node}` printed more than {limit} bytes on {stream}; it was ended there (node output is held in memory, and no step of kk prints that much)"
    )]
    OutputTooLarge {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The limit.
        limit: usize,
    },
    /// A command exited with an error.
    #[error("`{command}` failed on node `{node}` (exit {}):\n{output}", code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string()))]
    CommandFailed {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// Its exit code; `None` for a signal.
        code: Option<u32>,
        /// What it printed.
        output: String,
    },
    /// An upload failed or arrived damaged.
    #[error("cannot upload `{path}` to node `{node}`: {reason}")]
    Upload {
        /// The inventory name.
        node: String,
        /// The path on the node.
        path: String,
        /// Why.
        reason: String,
    },
    /// A local file to upload cannot be read.
    #[error("cannot read `{}`", path.display())]
    LocalFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The node's facts hold a value no machine has.
    #[error("node `{node}` reports facts kk cannot use: {source}")]
    Facts {
        /// The inventory name.
        node: String,
        /// What is wrong.
        #[source]
        source: FactsError,
    },
    /// `known_hosts` names the host with a key of another algorithm than the one it offers.
    #[error(
        "node `{node}` at `{address}` offers a {offered} host key ({fingerprint}), but `{}` line {line} records a {recorded} key for it: refusing to connect, as for a changed key; hint: if the node's keys were regenerated, remove that line (`ssh-keygen -R` the host) and connect again",
        known_hosts.display()
    )]
    HostKeyAlgorithmChanged {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// The algorithm of the key the node offers, e.g. `ssh-ed25519`.
        offered: String,
        /// The offered key's SHA256 fingerprint.
        fingerprint: String,
        /// The algorithm recorded, e.g. `ssh-rsa`.
        recorded: String,
        /// The file consulted.
        known_hosts: PathBuf,
        /// The 1-based line holding the recorded key.
        line: usize,
    },
}

/// The output of the fact-gathering script holds a value no machine has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FactsError {
    /// A number beyond what the field can hold.
    #[error(
        "`{field}` of `{file}` is `{value}`, more than any machine has; hint: check `{file}` on the node, kk reads it as printed"
    )]
    OutOfRange {
        /// The file on the node, e.g. `/proc/meminfo`.
        file: &'static str,
        /// The field, e.g. `MemTotal`.
        field: &'static str,
        /// The value as printed.
        value: String,
    },
}

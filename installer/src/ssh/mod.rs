//! Reaching the nodes: SSH with `russh`, or the machine itself for a `local` connector.
//!
//! A [`Target`] says how to reach one node (address, port, user, [`Auth`]); [`Node::connect`]
//! turns it into a live [`Node`] that runs shell commands ([`Node::run`]) and uploads files
//! ([`Node::upload`]). Both connector kinds offer the same operations, so every install step is
//! written once and runs the same way on a remote node and on the installer's own machine.
//! [`fan_out`] runs one step on many nodes at once, bounded by `--jobs`.
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
//! - **Uploads are verified on the node, and staged where no one else can write.** The node
//!   itself makes a fresh directory (`mktemp -d`, mode 0700) beside the target; the file is
//!   written there, its sha256 is computed *on the node* and compared with the local one, and
//!   only then is it renamed into place: a node never runs a half-copied binary, and a failed
//!   upload removes its directory. No name is predictable, so no local user can plant a file or
//!   a link where an upload will write (a fixed `.kk-upload-<file>` or `/tmp/<file>.<pid>`
//!   could be pre-created, and root would then write through it). A login other than root, whose
//!   SFTP session cannot write into a root-owned directory, gets a second fresh directory of its
//!   own in `/tmp` to land the file in; root copies it from there into the staging directory and
//!   checks that copy.
//! - **Secrets stay secret.** A password is held in [`Password`], whose `Debug` prints `<redacted>`; no
//!   command line, log line or error carries a password or key material. Per-node logs
//!   ([`NodeLog`]) record each command, its exit code and its output.

mod connect;
mod error;
mod fanout;
mod local;
mod log;
mod remote;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use connect::KeyFileError;
pub(crate) use connect::check_key_file;
pub use fanout::fan_out;
pub use log::NodeLog;

pub use crate::inventory::Password;
pub use error::{FactsError, SshError};

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

/// The most a command may print on one stream. Node output is untrusted and held in memory;
/// the largest that kk reads (a rendered chart, a kubeconfig) is a few MiB.
pub(crate) const MAX_COMMAND_OUTPUT: usize = 64 << 20;

/// The error for a command whose `stream` passed [`MAX_COMMAND_OUTPUT`].
fn output_too_large(node: &str, command: &str, stream: &'static str) -> SshError {
    SshError::OutputTooLarge {
        node: node.to_owned(),
        command: command.to_owned(),
        stream,
        limit: MAX_COMMAND_OUTPUT,
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

    /// Copies the local file `from` to `to` on the node with mode `mode`: staged in a fresh
    /// directory the node makes beside `to` (created if needed), checked by its sha256 on the
    /// node, then renamed into place; see the module documentation.
    pub async fn upload(&self, from: &Path, to: &str, mode: u32) -> Result<(), SshError> {
        let (digest, size) = local::sha256_of(from).await?;
        self.log.line(&format!(
            "upload {} -> {to} ({size} bytes, sha256 {digest})",
            from.display()
        ));
        let (dir, file) = split_target(to);
        let failed = |reason: String| SshError::Upload {
            node: self.name.clone(),
            path: to.to_owned(),
            reason,
        };
        let owner = match &self.link {
            Link::Local => None,
            Link::Ssh(remote) => remote.landing_owner(),
        };
        let printed = self.run_checked(&stage_script(dir, owner)).await?;
        let stage = Stage::parse(&printed.stdout_text(), dir).ok_or_else(|| {
            failed(format!(
                "the node made no staging directory ({})",
                printed.combined_text().trim()
            ))
        })?;
        let landed = format!("{}/{file}", stage.landing);
        let copied = match &self.link {
            Link::Local => local::copy(&self.name, from, &landed).await,
            Link::Ssh(remote) => remote.copy(&self.name, from, &landed).await,
        };
        if let Err(error) = copied {
            // Best effort: the copy failed, and so may the connection.
            let _ = self.run(&stage.remove_script()).await;
            return Err(error);
        }
        let output = self
            .run(&stage.finish_script(file, to, &digest.hex(), mode))
            .await?;
        if output.success() {
            return Ok(());
        }
        Err(failed(if output.code == Some(3) {
            format!(
                "the copy on the node does not match the local file (expected sha256 {}, {})",
                digest.hex(),
                String::from_utf8_lossy(&output.stderr).trim()
            )
        } else {
            output.combined_text()
        }))
    }

    /// Closes the connection.
    pub async fn close(self) {
        if let Link::Ssh(remote) = self.link {
            remote.close().await;
        }
    }
}

/// The directory and file name of an upload's target (`.` for a bare name).
fn split_target(to: &str) -> (&str, &str) {
    match to.rsplit_once('/') {
        Some(("", file)) => ("/", file),
        Some((dir, file)) => (dir, file),
        None => (".", to),
    }
}

/// The prefix of an upload's staging directories (`mktemp` completes it).
const STAGE_PREFIX: &str = ".kk-upload-";

/// The command that makes an upload's directories on the node and prints them, one a line:
/// the staging directory in `dir` (made first, with `dir` itself if need be), then, for a login
/// `owner` other than root, a landing directory in `/tmp` given to that user. Both by
/// `mktemp -d`: fresh, unpredictable, 0700.
fn stage_script(dir: &str, owner: Option<&str>) -> String {
    let dir = quote(dir);
    let mut script = format!(
        "set -e; mkdir -p -- {dir}; s=$(mktemp -d {dir}/{STAGE_PREFIX}XXXXXXXXXX); echo \"$s\""
    );
    if let Some(owner) = owner {
        let _ = write!(
            script,
            "; l=$(mktemp -d /tmp/kk-upload-XXXXXXXXXX) && chown -- {} \"$l\" || {{ rm -rf -- \"$s\" \"$l\"; exit 1; }}; echo \"$l\"",
            quote(owner)
        );
    }
    script
}

/// An upload's directories on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stage {
    /// Root's directory beside the target, where the checked copy is renamed from.
    staging: String,
    /// Where the file is copied to: the staging directory itself, or the login user's own.
    landing: String,
}

impl Stage {
    /// The directories [`stage_script`] printed for `dir`: each must be a directory it could
    /// have made (the staging one in `dir`, the landing one in `/tmp`), so that a confused
    /// output never makes a later `rm -rf` aim elsewhere.
    fn parse(output: &str, dir: &str) -> Option<Self> {
        let mut lines = output.lines().map(str::trim).filter(|l| !l.is_empty());
        let staging = lines.next()?;
        let landing = lines.next().unwrap_or(staging);
        let made_in = |path: &str, parent: &str, prefix: &str| {
            let parent = parent.trim_end_matches('/');
            path.strip_prefix(parent)
                .and_then(|rest| rest.strip_prefix('/'))
                .and_then(|name| name.strip_prefix(prefix))
                .is_some_and(|tail| !tail.is_empty() && !tail.contains('/'))
        };
        let ok = made_in(staging, dir, STAGE_PREFIX)
            && (landing == staging || made_in(landing, "/tmp", "kk-upload-"))
            && lines.next().is_none();
        ok.then(|| Self {
            staging: staging.to_owned(),
            landing: landing.to_owned(),
        })
    }

    /// Removes both directories and what is in them.
    fn remove_script(&self) -> String {
        format!(
            "rm -rf -- {} {}",
            quote(&self.staging),
            quote(&self.landing)
        )
    }

    /// Moves `file` from the landing directory into the staging one (when they differ), checks
    /// its sha256 against `hex` (exit 3 when it differs, naming what was found), sets `mode` and
    /// renames it to `to`. Any failure removes both directories.
    fn finish_script(&self, file: &str, to: &str, hex: &str, mode: u32) -> String {
        let (s, l) = (quote(&self.staging), quote(&self.landing));
        let staged = quote(&format!("{}/{file}", self.staging));
        let landed = quote(&format!("{}/{file}", self.landing));
        format!(
            "fail() {{ rm -rf -- {s} {l}; exit \"$1\"; }}; \
             if [ {l} != {s} ]; then cp -- {landed} {staged} || fail 1; rm -rf -- {l}; fi; \
             got=$(sha256sum -- {staged} | cut -d' ' -f1) || fail 1; \
             if [ \"$got\" != {hex} ]; then echo \"found sha256 $got\" >&2; fail 3; fi; \
             chmod {mode:o} {staged} || fail 1; \
             mv -f -- {staged} {to} || fail 1; \
             rmdir -- {s}",
            to = quote(to),
        )
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
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

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

    #[test]
    fn upload_targets_split_into_directory_and_file() {
        for (to, dir, file) in [
            ("/usr/local/bin/kubeadm", "/usr/local/bin", "kubeadm"),
            ("/kubeadm", "/", "kubeadm"),
            ("kubeadm", ".", "kubeadm"),
            ("a/b", "a", "b"),
        ] {
            assert_eq!(split_target(to), (dir, file), "{to}");
        }
    }

    /// Only directories the stage script could have made are used (and later removed).
    #[test]
    fn staging_directories_are_checked_before_use() {
        let stage = |staging: &str, landing: &str| Stage {
            staging: staging.to_owned(),
            landing: landing.to_owned(),
        };
        let table: &[(&str, &str, Option<Stage>)] = &[
            (
                "/usr/local/bin/.kk-upload-Ab3dE\n",
                "/usr/local/bin",
                Some(stage(
                    "/usr/local/bin/.kk-upload-Ab3dE",
                    "/usr/local/bin/.kk-upload-Ab3dE",
                )),
            ),
            (
                "/opt/.kk-upload-x1\n/tmp/kk-upload-y2\n",
                "/opt",
                Some(stage("/opt/.kk-upload-x1", "/tmp/kk-upload-y2")),
            ),
            (
                "/.kk-upload-q\n",
                "/",
                Some(stage("/.kk-upload-q", "/.kk-upload-q")),
            ),
            (
                "./.kk-upload-q\n",
                ".",
                Some(stage("./.kk-upload-q", "./.kk-upload-q")),
            ),
            ("", "/opt", None),
            ("/etc\n", "/opt", None),
            ("/opt/.kk-upload-\n", "/opt", None),
            ("/opt/.kk-upload-x/../../etc\n", "/opt", None),
            ("/optx/.kk-upload-x\n", "/opt", None),
            ("/opt/.kk-upload-x\n/home/me\n", "/opt", None),
            ("/opt/.kk-upload-x\n/tmp/kk-upload-y\nmore\n", "/opt", None),
        ];
        for (output, dir, expected) in table {
            assert_eq!(Stage::parse(output, dir), *expected, "{output:?} in {dir}");
        }
    }

    fn local_node() -> Node {
        Node {
            name: "local".to_owned(),
            link: Link::Local,
            timeouts: Timeouts::default(),
            log: NodeLog::discard(),
        }
    }

    /// Node output is untrusted: a command that prints without end is ended at the limit, with
    /// an error naming the node, the command and the stream, instead of filling memory.
    #[tokio::test]
    async fn a_command_that_prints_too_much_is_ended_at_the_limit() {
        let node = local_node();
        let limit = MAX_COMMAND_OUTPUT;
        let err = node
            .run("yes kk | head -c 100000000; sleep 600")
            .await
            .expect_err("too much");
        assert!(
            matches!(&err, SshError::OutputTooLarge { node, stream: "stdout", limit: l, .. } if node == "local" && *l == limit),
            "{err}"
        );
        let err = node
            .run("yes kk | head -c 100000000 >&2")
            .await
            .expect_err("too much");
        assert!(
            matches!(
                &err,
                SshError::OutputTooLarge {
                    stream: "stderr",
                    ..
                }
            ),
            "{err}"
        );
        let fits = node.run("head -c 1000000 /dev/zero").await.expect("fits");
        assert_eq!(fits.stdout.len(), 1_000_000);
    }

    /// `.kk-upload-<file>` was predictable (as `/tmp/<file>.<pid>` of a non-root login): a
    /// link planted there made the upload write through it. Now nothing is written but into a
    /// directory the node just made.
    #[tokio::test]
    async fn an_upload_never_writes_through_a_planted_name() {
        let tmp = tempfile::tempdir().expect("tmp");
        let payload = tmp.path().join("payload");
        std::fs::write(&payload, b"the real binary").expect("payload");
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").expect("victim");
        let dir = tmp.path().join("bin");
        std::fs::create_dir(&dir).expect("dir");
        std::os::unix::fs::symlink(&victim, dir.join(".kk-upload-app")).expect("link");
        let to = dir.join("app");
        local_node()
            .upload(&payload, to.to_str().expect("utf-8"), 0o750)
            .await
            .expect("uploads");
        assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
        let meta = std::fs::symlink_metadata(&to).expect("meta");
        assert!(meta.is_file(), "a regular file, not the planted link");
        assert_eq!(meta.permissions().mode() & 0o777, 0o750);
        assert_eq!(std::fs::read(&to).expect("read"), b"the real binary");
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [".kk-upload-app", "app"],
            "only the planted link stays"
        );
    }

    /// The steps of a non-root login, run with `sh` here: root stages beside the target, the
    /// login user gets its own landing directory; both 0700, both gone afterwards.
    #[tokio::test]
    async fn a_login_user_lands_in_its_own_directory_and_root_checks_the_copy() {
        let node = local_node();
        let user = node.run_checked("id -un").await.expect("id").stdout_text();
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("new/bin");
        let dir = dir.to_str().expect("utf-8");
        let made = node
            .run_checked(&stage_script(dir, Some(user.trim())))
            .await
            .expect("stages");
        let stage = Stage::parse(&made.stdout_text(), dir).expect("two directories");
        assert_ne!(stage.staging, stage.landing);
        for path in [&stage.staging, &stage.landing] {
            let meta = std::fs::metadata(path).expect("made");
            assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{path}");
        }
        let uid = std::fs::metadata(tmp.path()).expect("meta").uid();
        assert_eq!(std::fs::metadata(&stage.landing).expect("meta").uid(), uid);

        let bytes = b"payload";
        std::fs::write(format!("{}/app", stage.landing), bytes).expect("lands");
        let to = format!("{dir}/app");
        let hex = bundle_spec::Sha256Digest::of(bytes).hex();
        let done = node
            .run(&stage.finish_script("app", &to, &hex, 0o755))
            .await
            .expect("runs");
        assert!(done.success(), "{}", done.combined_text());
        assert_eq!(std::fs::read(&to).expect("moved"), bytes);
        for path in [&stage.staging, &stage.landing] {
            assert!(!Path::new(path).exists(), "{path} is removed");
        }
    }

    /// A copy that does not match is never renamed into place, and its directories go.
    #[tokio::test]
    async fn a_damaged_copy_is_refused_and_its_directories_removed() {
        let node = local_node();
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().to_str().expect("utf-8");
        let made = node
            .run_checked(&stage_script(dir, None))
            .await
            .expect("stages");
        let stage = Stage::parse(&made.stdout_text(), dir).expect("one directory");
        std::fs::write(format!("{}/app", stage.staging), b"damaged").expect("lands");
        let to = format!("{dir}/app");
        let hex = bundle_spec::Sha256Digest::of(b"payload").hex();
        let done = node
            .run(&stage.finish_script("app", &to, &hex, 0o755))
            .await
            .expect("runs");
        assert_eq!(done.code, Some(3), "{}", done.combined_text());
        assert!(String::from_utf8_lossy(&done.stderr).contains("found sha256"));
        assert!(!Path::new(&to).exists(), "nothing renamed into place");
        assert!(
            !Path::new(&stage.staging).exists(),
            "the staging directory is removed"
        );

        // A failed copy: the upload removes what it made.
        let made = node
            .run_checked(&stage_script(dir, None))
            .await
            .expect("stages");
        let stage = Stage::parse(&made.stdout_text(), dir).expect("one directory");
        node.run_checked(&stage.remove_script())
            .await
            .expect("removes");
        assert!(!Path::new(&stage.staging).exists());
    }
}

//! Opening an SSH connection: the host key against `known_hosts`, then authentication.
//!
//! # Host keys
//!
//! What `known_hosts` records for a host decides, for the key the host offers ([`judge`]):
//! the same key is known; another key of the same algorithm is a changed key; a host recorded
//! only with keys of other algorithms (an `ssh-rsa` line, and the host now offers ed25519) is
//! a changed key too — a machine that lost the key it was known by is not a new machine, so
//! `--accept-new-host-keys` never applies to it; only a host with no line at all is unknown.
//! So that a host that still has a recorded key is asked for that one, the algorithms recorded
//! for it are offered first in the key exchange ([`preferred_algorithms`]), as OpenSSH does.

use std::borrow::Cow;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::{Algorithm, HashAlg, PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};

use super::SshError;
use super::{Auth, HostKeyPolicy};
use crate::durable;

/// Where a connection goes, for connecting and for messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct Address<'a> {
    /// The inventory name.
    pub(super) node: &'a str,
    pub(super) host: &'a str,
    pub(super) port: u16,
    pub(super) user: &'a str,
}

/// What the host key check decided, kept for the error message: russh only learns yes or no.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Known,
    Learned,
    Unknown {
        fingerprint: String,
    },
    Changed {
        line: usize,
        fingerprint: String,
    },
    /// Only keys of other algorithms are recorded: refused like a changed key.
    OtherAlgorithm {
        line: usize,
        offered: String,
        recorded: String,
        fingerprint: String,
    },
    Unreadable {
        reason: String,
    },
}

/// What `known_hosts` says of an offered key, from the keys it records for the host (each with
/// its line as russh counts lines: comments skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Judgement {
    /// The offered key is recorded.
    Known,
    /// Nothing is recorded for the host.
    Unknown,
    /// Another key of the offered key's algorithm is recorded, first on `line`.
    Changed { line: usize },
    /// Only keys of other algorithms are recorded, the first on `line`, of `recorded`.
    OtherAlgorithm { line: usize, recorded: Algorithm },
}

/// Judges `offered` against the keys `recorded` for its host (see the module documentation).
fn judge(recorded: &[(usize, PublicKey)], offered: &PublicKey) -> Judgement {
    if recorded
        .iter()
        .any(|(_, key)| key.key_data() == offered.key_data())
    {
        return Judgement::Known;
    }
    if let Some((line, _)) = recorded
        .iter()
        .find(|(_, key)| key.algorithm() == offered.algorithm())
    {
        return Judgement::Changed { line: *line };
    }
    match recorded.first() {
        Some((line, key)) => Judgement::OtherAlgorithm {
            line: *line,
            recorded: key.algorithm(),
        },
        None => Judgement::Unknown,
    }
}

/// The host key algorithms to offer, most preferred first: russh's default order, with the
/// algorithms of the keys `recorded` for the host moved ahead (in their own default order),
/// so that a host offering several keys presents one `known_hosts` can check. A recorded
/// `ssh-rsa` key brings every RSA signature algorithm (the key is the same).
fn preferred_algorithms(recorded: &[(usize, PublicKey)]) -> Vec<Algorithm> {
    let same_key_type = |algorithm: &Algorithm, key: &PublicKey| match algorithm {
        Algorithm::Rsa { .. } => key.algorithm().is_rsa(),
        other => *other == key.algorithm(),
    };
    let (mut first, rest): (Vec<Algorithm>, Vec<Algorithm>) = russh::Preferred::DEFAULT
        .key
        .iter()
        .cloned()
        .partition(|algorithm| {
            recorded
                .iter()
                .any(|(_, key)| same_key_type(algorithm, key))
        });
    first.extend(rest);
    first
}

/// The russh event handler: checks the server's host key.
pub(super) struct Checker {
    host: String,
    port: u16,
    policy: HostKeyPolicy,
    verdict: Arc<Mutex<Option<Verdict>>>,
}

impl Checker {
    fn decide(&self, key: &PublicKey) -> Verdict {
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let known_hosts = &self.policy.known_hosts;
        let recorded = match recorded_keys(&self.host, self.port, known_hosts) {
            Ok(recorded) => recorded,
            Err(error) => {
                return Verdict::Unreadable {
                    reason: error.to_string(),
                };
            }
        };
        match judge(&recorded, key) {
            Judgement::Known => Verdict::Known,
            Judgement::Unknown if self.policy.accept_new => {
                match learn(&self.host, self.port, key, known_hosts) {
                    Ok(()) => Verdict::Learned,
                    Err(e) => Verdict::Unreadable {
                        reason: format!("cannot record the new key: {e}"),
                    },
                }
            }
            Judgement::Unknown => Verdict::Unknown { fingerprint },
            Judgement::Changed { line } => Verdict::Changed {
                line: physical_line(known_hosts, line),
                fingerprint,
            },
            Judgement::OtherAlgorithm { line, recorded } => Verdict::OtherAlgorithm {
                line: physical_line(known_hosts, line),
                offered: key.algorithm().as_str().to_owned(),
                recorded: recorded.as_str().to_owned(),
                fingerprint,
            },
        }
    }
}

/// The keys `known_hosts` records for `host:port`, with their lines as russh counts them; none
/// when the file does not exist.
fn recorded_keys(
    host: &str,
    port: u16,
    known_hosts: &Path,
) -> Result<Vec<(usize, PublicKey)>, russh::keys::Error> {
    russh::keys::known_hosts::known_host_keys_path(host, port, known_hosts)
}

/// Only one node at a time records its key: each rewrites the whole file.
static LEARNING: Mutex<()> = Mutex::new(());

/// Adds `key` for `host:port` to `known_hosts` (created with its directory if needed), as
/// OpenSSH writes it, durably: the file is rewritten through a synced temporary file and a
/// rename (see `crate::durable`), so a crash leaves the old file or the new one, never a
/// half-written line. A `known_hosts` that is a link (to a dotfiles repository) is updated where
/// it points; its mode is kept.
fn learn(host: &str, port: u16, key: &PublicKey, known_hosts: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;

    let _one_at_a_time = LEARNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(dir) = known_hosts.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let target = match std::fs::canonicalize(known_hosts) {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => known_hosts.to_owned(),
        Err(e) => return Err(e),
    };
    let (mut text, mode) = match std::fs::read(&target) {
        Ok(text) => {
            let mode = std::fs::metadata(&target)?.permissions().mode() & 0o7777;
            (text, mode)
        }
        // OpenSSH's file under the usual umask.
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), 0o644),
        Err(e) => return Err(e),
    };
    if !text.is_empty() && !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    let name = if port == 22 {
        host.to_owned()
    } else {
        format!("[{host}]:{port}")
    };
    let entry = key.to_openssh().map_err(io::Error::other)?;
    text.extend_from_slice(format!("{name} {entry}\n").as_bytes());
    durable::write(&target, &text, mode, ".known_hosts.kk-")
}

impl client::Handler for Checker {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_public_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let verdict = match server_public_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => self.decide(key),
            PublicKeyOrCertificate::Certificate(certificate) => Verdict::Unreadable {
                reason: format!(
                    "the host presented a certificate (key id `{}`), which is not checked against known_hosts; configure a plain host key",
                    certificate.key_id()
                ),
            },
        };
        let accepted = matches!(verdict, Verdict::Known | Verdict::Learned);
        if let Ok(mut slot) = self.verdict.lock() {
            *slot = Some(verdict);
        }
        Ok(accepted)
    }
}

/// The 1-based line of `known_hosts` that russh calls `counted`: it numbers lines skipping those
/// that start with `#`, while an operator's editor counts every line.
fn physical_line(known_hosts: &Path, counted: usize) -> usize {
    let Ok(text) = std::fs::read_to_string(known_hosts) else {
        return counted;
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.starts_with('#'))
        .nth(counted.saturating_sub(1))
        .map_or(counted, |(index, _)| index + 1)
}

/// Connects to `address`, checks its host key, and authenticates with `auth`.
pub(super) async fn open(
    address: &Address<'_>,
    auth: &Auth,
    policy: &HostKeyPolicy,
    timeout: Duration,
) -> Result<Handle<Checker>, SshError> {
    let verdict = Arc::new(Mutex::new(None));
    let checker = Checker {
        host: address.host.to_owned(),
        port: address.port,
        policy: policy.clone(),
        verdict: Arc::clone(&verdict),
    };
    // An unreadable file leaves the default order; the check itself then reports it.
    let recorded =
        recorded_keys(address.host, address.port, &policy.known_hosts).unwrap_or_default();
    // A node silent for about 15 s (3 keepalives 5 s apart) is gone: the install stops there,
    // naming it, instead of waiting for the command timeout. sshd answers keepalives while a
    // long command runs, so a slow step is not mistaken for a lost node.
    let config = Arc::new(client::Config {
        keepalive_interval: Some(Duration::from_secs(5)),
        keepalive_max: 3,
        nodelay: true,
        preferred: russh::Preferred {
            key: Cow::Owned(preferred_algorithms(&recorded)),
            ..russh::Preferred::DEFAULT
        },
        ..client::Config::default()
    });
    let connecting = client::connect(config, (address.host, address.port), checker);
    let connected = tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| SshError::Connect {
            node: address.node.to_owned(),
            address: format!("{}:{}", address.host, address.port),
            reason: format!("no answer within {}s", timeout.as_secs()),
        })?;
    let mut handle = match connected {
        Ok(handle) => handle,
        Err(error) => {
            let verdict = verdict.lock().ok().and_then(|mut v| v.take());
            return Err(refusal(address, policy, verdict, &error));
        }
    };
    let authenticated = tokio::time::timeout(timeout, authenticate(&mut handle, address, auth))
        .await
        .map_err(|_| SshError::Auth {
            node: address.node.to_owned(),
            user: address.user.to_owned(),
            reason: format!("no answer within {}s", timeout.as_secs()),
        })??;
    if authenticated {
        Ok(handle)
    } else {
        Err(SshError::Auth {
            node: address.node.to_owned(),
            user: address.user.to_owned(),
            reason: format!("the node refused the {}", auth_kind(auth)),
        })
    }
}

/// The error for a connection that failed before authentication.
fn refusal(
    address: &Address<'_>,
    policy: &HostKeyPolicy,
    verdict: Option<Verdict>,
    error: &russh::Error,
) -> SshError {
    let node = address.node.to_owned();
    let endpoint = format!("{}:{}", address.host, address.port);
    let known_hosts = policy.known_hosts.clone();
    match verdict {
        Some(Verdict::Unknown { fingerprint }) => SshError::UnknownHostKey {
            node,
            address: endpoint,
            fingerprint,
            known_hosts,
        },
        Some(Verdict::Changed { line, fingerprint }) => SshError::ChangedHostKey {
            node,
            address: endpoint,
            fingerprint,
            known_hosts,
            line,
        },
        Some(Verdict::OtherAlgorithm {
            line,
            offered,
            recorded,
            fingerprint,
        }) => SshError::HostKeyAlgorithmChanged {
            node,
            address: endpoint,
            offered,
            fingerprint,
            recorded,
            known_hosts,
            line,
        },
        Some(Verdict::Unreadable { reason }) => SshError::HostKeyCheck {
            node,
            known_hosts,
            reason,
        },
        Some(Verdict::Known | Verdict::Learned) | None => SshError::Connect {
            node,
            address: endpoint,
            reason: error.to_string(),
        },
    }
}

/// A private key file the inventory names that kk refuses, before any connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The file cannot be read.
    // No hint after the message: the cause follows it (`…: No such file or directory`).
    #[error("node `{node}`: cannot read the private key `{}` (`private_key` in the inventory)", path.display())]
    Missing {
        /// The inventory name.
        node: String,
        /// The key file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file is open to group or others, which OpenSSH refuses to use.
    #[error(
        "node `{node}`: the private key `{}` has mode {mode:04o}, open to group or others (OpenSSH refuses such a key); hint: `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    Mode {
        /// The inventory name.
        node: String,
        /// The key file.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// Refuses a private key file of `node` that is missing or open to group or others: OpenSSH
/// would not use the latter, and neither does kk.
pub(crate) fn check_key_file(node: &str, path: &Path) -> Result<(), KeyFileError> {
    use std::os::unix::fs::PermissionsExt as _;
    let metadata = std::fs::metadata(path).map_err(|source| KeyFileError::Missing {
        node: node.to_owned(),
        path: path.to_path_buf(),
        source,
    })?;
    let mode = metadata.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(KeyFileError::Mode {
            node: node.to_owned(),
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// Authenticates `handle`; `Ok(false)` when the node refused.
async fn authenticate(
    handle: &mut Handle<Checker>,
    address: &Address<'_>,
    auth: &Auth,
) -> Result<bool, SshError> {
    let failed = |reason: String| SshError::Auth {
        node: address.node.to_owned(),
        user: address.user.to_owned(),
        reason,
    };
    let user = address.user;
    match auth {
        Auth::Key(path) => {
            let key = russh::keys::load_secret_key(path, None).map_err(|e| {
                failed(format!(
                    "cannot load the private key `{}`: {e} (an encrypted key needs the agent)",
                    path.display()
                ))
            })?;
            // RSA keys sign with SHA-2 (OpenSSH refuses SHA-1 signatures); others ignore it.
            let hash = handle
                .best_supported_rsa_hash()
                .await
                .map_err(|e| failed(e.to_string()))?
                .flatten();
            let result = handle
                .authenticate_publickey(user, PrivateKeyWithHashAlg::new(Arc::new(key), hash))
                .await
                .map_err(|e| failed(e.to_string()))?;
            Ok(result.success())
        }
        Auth::Password(password) => {
            let result = handle
                .authenticate_password(user, password.expose())
                .await
                .map_err(|e| failed(e.to_string()))?;
            Ok(result.success())
        }
        Auth::Agent => authenticate_with_agent(handle, user)
            .await
            .map_err(|e| failed(format!("ssh agent: {e}"))),
    }
}

/// Tries every key the agent holds.
async fn authenticate_with_agent(
    handle: &mut Handle<Checker>,
    user: &str,
) -> Result<bool, russh::keys::Error> {
    let mut agent = russh::keys::agent::client::AgentClient::connect_env().await?;
    let hash = handle
        .best_supported_rsa_hash()
        .await
        .ok()
        .flatten()
        .flatten();
    for identity in agent.request_identities().await? {
        let key = identity.public_key().into_owned();
        match handle
            .authenticate_publickey_with(user, key, hash, &mut agent)
            .await
        {
            Ok(result) if result.success() => return Ok(true),
            Ok(_) | Err(_) => {}
        }
    }
    Ok(false)
}

fn auth_kind(auth: &Auth) -> &'static str {
    match auth {
        Auth::Key(_) => "private key",
        Auth::Password(_) => "password",
        Auth::Agent => "keys of the ssh agent",
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::PathBuf;

    use super::*;
    use crate::durable::journal;

    const RSA: &str = "AAAAB3NzaC1yc2EAAAADAQABAAAAgQDCXOziuz/4g5zx0l3BJAxSx8rbD98QTqfYozw85OliW/DuBBCL2l6IP4Mc7xFQPoSq4XgYqAGA2WZLFNHR1WVSkt2vBQ2X6SVPEZEFqwIbk6eySEgizFacngyU4CTbxTzhN46z3xIPW74cB2gy7zTNHKNgvhSXHCezuq/bP5u20Q==";
    const ED25519: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIHee3s+nRXskD559OrNXK518czQiQrCnxMrAuO4CqjQa";
    const ED25519_OTHER: &str =
        "AAAAC3NzaC1lZDI1NTE5AAAAIJnUP9ekR/NebvpyggdrvD31/0E0m2GkZYUunRfF9oAL";
    const ECDSA: &str = "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBH8VFvcZdLVA9G+JYpwf3+w+08L3P0P0/fCgQzxlNttJViKcGa0R1Ao/TbYMPNvD1YGptZQ7Hf6Bml+WpNAjgsg=";

    #[test]
    fn a_missing_or_open_private_key_is_refused_naming_file_and_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().expect("tmp");
        let key = tmp.path().join("id_ed25519");
        let missing = check_key_file("n1", &key).expect_err("missing");
        assert!(
            missing
                .to_string()
                .contains(&format!("`{}`", key.display())),
            "{missing}"
        );
        std::fs::write(&key, "key").expect("key");
        for (mode, refused) in [
            (0o644, true),
            (0o640, true),
            (0o604, true),
            (0o600, false),
            (0o400, false),
        ] {
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let result = check_key_file("n1", &key);
            assert_eq!(result.is_err(), refused, "{mode:o}");
            if let Err(error) = result {
                let message = error.to_string();
                assert!(message.contains(&format!("mode {mode:04o}")), "{message}");
                assert!(
                    message.contains(&format!("chmod 600 {}", key.display())),
                    "{message}"
                );
            }
        }
    }

    fn key(base64: &str) -> PublicKey {
        russh::keys::parse_public_key_base64(base64).expect("a key")
    }

    #[test]
    fn changed_key_lines_count_comments_too() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("known_hosts");
        std::fs::write(&path, "# a\nh1 k1\n# b\n# c\nh2 k2\n").expect("write");
        for (counted, physical) in [(1, 2), (2, 5), (9, 9)] {
            assert_eq!(physical_line(&path, counted), physical);
        }
    }

    #[test]
    fn a_key_of_another_algorithm_than_the_recorded_ones_is_a_changed_key() {
        /// The keys recorded for the host, the key offered, the judgement.
        type Row<'a> = (&'a [(usize, &'a PublicKey)], &'a PublicKey, Judgement);
        let (rsa, ed, ed2, ecdsa) = (key(RSA), key(ED25519), key(ED25519_OTHER), key(ECDSA));
        let table: &[Row] = &[
            (&[], &ed, Judgement::Unknown),
            (&[(1, &ed)], &ed, Judgement::Known),
            (&[(3, &rsa), (4, &ed)], &ed, Judgement::Known),
            (&[(2, &ed2)], &ed, Judgement::Changed { line: 2 }),
            // A recorded key of the offered algorithm decides over other algorithms.
            (&[(1, &rsa), (5, &ed2)], &ed, Judgement::Changed { line: 5 }),
            // known_hosts has ssh-rsa, the server offers ed25519: changed, not unknown.
            (
                &[(7, &rsa)],
                &ed,
                Judgement::OtherAlgorithm {
                    line: 7,
                    recorded: Algorithm::Rsa { hash: None },
                },
            ),
            (
                &[(1, &ecdsa), (2, &rsa)],
                &ed,
                Judgement::OtherAlgorithm {
                    line: 1,
                    recorded: ecdsa.algorithm(),
                },
            ),
            (&[(1, &ed), (2, &rsa)], &rsa, Judgement::Known),
        ];
        for (recorded, offered, expected) in table {
            let recorded: Vec<(usize, PublicKey)> =
                recorded.iter().map(|(l, k)| (*l, (*k).clone())).collect();
            assert_eq!(judge(&recorded, offered), *expected, "{recorded:?}");
        }
    }

    #[test]
    fn recorded_algorithms_are_offered_first() {
        let names = |recorded: &[(usize, PublicKey)]| -> Vec<String> {
            preferred_algorithms(recorded)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        let default = names(&[]);
        assert_eq!(default[0], "ssh-ed25519");
        let rsa_first = names(&[(1, key(RSA))]);
        assert_eq!(
            rsa_first[..3],
            ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
            "{rsa_first:?}"
        );
        let mut sorted = rsa_first.clone();
        sorted.sort();
        let mut all = default.clone();
        all.sort();
        assert_eq!(sorted, all, "the same algorithms, reordered");
        let both = names(&[(1, key(RSA)), (2, key(ECDSA))]);
        assert_eq!(both[0], "ecdsa-sha2-nistp256", "{both:?}");
        assert!(both[1..4].iter().all(|a| a.contains("rsa")), "{both:?}");
    }

    fn checker(known_hosts: PathBuf, accept_new: bool) -> Checker {
        Checker {
            host: "10.250.0.11".to_owned(),
            port: 22,
            policy: HostKeyPolicy {
                known_hosts,
                accept_new,
            },
            verdict: Arc::new(Mutex::new(None)),
        }
    }

    #[test]
    fn accepting_new_keys_never_accepts_a_host_known_by_another_algorithm() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("known_hosts");
        let text =
            format!("# lab\n10.250.0.12 ssh-ed25519 {ED25519_OTHER}\n10.250.0.11 ssh-rsa {RSA}\n");
        std::fs::write(&path, &text).expect("write");
        let verdict = checker(path.clone(), true).decide(&key(ED25519));
        let Verdict::OtherAlgorithm {
            line,
            offered,
            recorded,
            ..
        } = &verdict
        else {
            panic!("{verdict:?}");
        };
        assert_eq!(
            (*line, offered.as_str(), recorded.as_str()),
            (3, "ssh-ed25519", "ssh-rsa")
        );
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            text,
            "nothing recorded"
        );

        let error = refusal(
            &Address {
                node: "node1",
                host: "10.250.0.11",
                port: 22,
                user: "root",
            },
            &HostKeyPolicy {
                known_hosts: path.clone(),
                accept_new: true,
            },
            Some(verdict),
            &russh::Error::UnknownKey,
        )
        .to_string();
        for words in [
            "node `node1`",
            "line 3",
            "ssh-rsa",
            "ssh-ed25519",
            "ssh-keygen -R",
        ] {
            assert!(error.contains(words), "{error} lacks {words}");
        }

        // The same key of the same algorithm is known; a host with no line is learned.
        assert_eq!(
            checker(path.clone(), false).decide(&key(RSA)),
            Verdict::Known
        );
        let mut other = checker(path.clone(), true);
        other.host = "10.250.0.13".to_owned();
        journal::take();
        assert_eq!(other.decide(&key(ECDSA)), Verdict::Learned);
        journal::assert_durable(&journal::take(), &path);
        assert_eq!(
            checker(path.clone(), false).decide(&key(RSA)),
            Verdict::Known
        );
        other.policy.accept_new = false;
        assert_eq!(other.decide(&key(ECDSA)), Verdict::Known);
    }

    #[test]
    fn learning_rewrites_known_hosts_durably_keeping_every_entry() {
        let dir = tempfile::tempdir().expect("tmp");
        let real = dir.path().join("dotfiles/known_hosts");
        std::fs::create_dir_all(real.parent().expect("dir")).expect("dir");
        // No final newline, a comment, a mode of its own; reached through a link.
        std::fs::write(&real, format!("# mine\nh1 ssh-ed25519 {ED25519_OTHER}")).expect("write");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("mode");
        let link = dir.path().join("ssh/known_hosts");
        std::fs::create_dir_all(link.parent().expect("dir")).expect("dir");
        std::os::unix::fs::symlink(&real, &link).expect("link");
        journal::take();
        learn("10.250.0.11", 2222, &key(ED25519), &link).expect("learns");
        journal::assert_durable(&journal::take(), &real);
        assert_eq!(
            std::fs::read_to_string(&real).expect("read"),
            format!(
                "# mine\nh1 ssh-ed25519 {ED25519_OTHER}\n[10.250.0.11]:2222 ssh-ed25519 {ED25519}\n"
            )
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777,
            0o600
        );
        // What it wrote, russh reads back.
        let recorded = recorded_keys("10.250.0.11", 2222, &link).expect("reads");
        assert_eq!(judge(&recorded, &key(ED25519)), Judgement::Known);
        // A new file, in a new directory.
        let fresh = dir.path().join("new/known_hosts");
        learn("h2", 22, &key(RSA), &fresh).expect("learns");
        assert_eq!(
            std::fs::read_to_string(&fresh).expect("read"),
            format!("h2 ssh-rsa {RSA}\n")
        );
    }
}

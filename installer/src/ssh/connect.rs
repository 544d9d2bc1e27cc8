//! Opening an SSH connection: the host key against `known_hosts`, then authentication.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh::client::{self, Handle};
use russh::keys::{PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};

use super::{Auth, HostKeyPolicy};
use crate::error::SshError;

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
#[derive(Debug, Clone)]
enum Verdict {
    Known,
    Learned,
    Unknown { fingerprint: String },
    Changed { line: usize, fingerprint: String },
    Unreadable { reason: String },
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
        let fingerprint = key.fingerprint(russh::keys::HashAlg::Sha256).to_string();
        let known_hosts = &self.policy.known_hosts;
        match russh::keys::check_known_hosts_path(&self.host, self.port, key, known_hosts) {
            Ok(true) => Verdict::Known,
            Ok(false) if self.policy.accept_new => {
                match russh::keys::known_hosts::learn_known_hosts_path(
                    &self.host,
                    self.port,
                    key,
                    known_hosts,
                ) {
                    Ok(()) => Verdict::Learned,
                    Err(e) => Verdict::Unreadable {
                        reason: format!("cannot record the new key: {e}"),
                    },
                }
            }
            Ok(false) => Verdict::Unknown { fingerprint },
            Err(russh::keys::Error::KeyChanged { line }) => Verdict::Changed {
                line: physical_line(known_hosts, line),
                fingerprint,
            },
            Err(e) => Verdict::Unreadable {
                reason: e.to_string(),
            },
        }
    }
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
    let config = Arc::new(client::Config {
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 4,
        nodelay: true,
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
    use super::physical_line;

    #[test]
    fn changed_key_lines_count_comments_too() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("known_hosts");
        std::fs::write(&path, "# a\nh1 k1\n# b\n# c\nh2 k2\n").expect("write");
        for (counted, physical) in [(1, 2), (2, 5), (9, 9)] {
            assert_eq!(physical_line(&path, counted), physical);
        }
    }
}

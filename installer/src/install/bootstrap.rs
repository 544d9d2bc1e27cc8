//! How nodes join: the bootstrap token and the CA's public-key hash, both made by kk.
//!
//! kk makes the token itself and puts it in the init config's `bootstrapTokens`, and computes
//! `--discovery-token-ca-cert-hash` from the CA certificate it issued, so nothing depends on
//! parsing what `kubeadm init` prints. The token and its expiry live in the work directory
//! (`kubeadm-token.json`, mode 0600): a later run whose token expired makes a new one and
//! registers it with `kubeadm token create` before anything joins.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The record's file name in the work directory.
pub const TOKEN_FILE: &str = "kubeadm-token.json";

/// How long a token kk makes stays valid (kubeadm's default TTL).
pub const TOKEN_TTL_HOURS: i64 = 24;

/// A bootstrap token and when it expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapToken {
    /// `[a-z0-9]{6}.[a-z0-9]{16}`.
    pub token: String,
    /// When kubeadm deletes it.
    pub expires: jiff::Timestamp,
}

impl BootstrapToken {
    /// A fresh random token valid for [`TOKEN_TTL_HOURS`] from `now`.
    pub fn generate(now: jiff::Timestamp) -> std::io::Result<Self> {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let mut random = [0u8; 22];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut random)?;
        // 36 symbols: a byte modulo 36 is skewed by under 1%, far below what guessing a
        // 16-symbol secret within its day of validity could use.
        let mut text: String = random
            .iter()
            .map(|byte| char::from(ALPHABET[usize::from(*byte) % ALPHABET.len()]))
            .collect();
        text.insert(6, '.');
        text.truncate(23);
        Ok(Self {
            token: text,
            expires: now + jiff::SignedDuration::from_hours(TOKEN_TTL_HOURS),
        })
    }

    /// Whether the token is still good for a join started at `now` (with ten minutes to spare,
    /// so that a slow join does not outlive it).
    pub fn is_valid_at(&self, now: jiff::Timestamp) -> bool {
        now + jiff::SignedDuration::from_mins(10) < self.expires
    }

    /// kubeadm's `ttl` for the rest of the token's life, e.g. `23h59m0s`.
    pub fn ttl_from(&self, now: jiff::Timestamp) -> String {
        let seconds = self.expires.duration_since(now).as_secs().max(60);
        format!("{}h{}m0s", seconds / 3600, seconds % 3600 / 60)
    }

    /// Whether `text` has kubeadm's token format.
    pub fn is_well_formed(text: &str) -> bool {
        let symbol = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        text.split_once('.').is_some_and(|(id, secret)| {
            id.len() == 6
                && secret.len() == 16
                && id.bytes().all(symbol)
                && secret.bytes().all(symbol)
        })
    }

    /// The record in `work_dir`, if any.
    pub fn load(work_dir: &Path) -> Result<Option<Self>, TokenError> {
        let path = record_path(work_dir);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Self>(&bytes)
                .ok()
                .filter(|token| Self::is_well_formed(&token.token))
                .map(Some)
                .ok_or(TokenError::Damaged { path }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(TokenError::Read { path, source }),
        }
    }

    /// Writes the record to `work_dir` (mode 0600, durably).
    pub fn save(&self, work_dir: &Path) -> Result<(), TokenError> {
        let path = record_path(work_dir);
        let write = |source| TokenError::Write {
            path: path.clone(),
            source,
        };
        let mut json = serde_json::to_vec_pretty(self).map_err(|e| write(e.into()))?;
        json.push(b'\n');
        crate::durable::write(&path, &json, 0o600, ".kubeadm-token").map_err(write)
    }
}

/// The bootstrap token's record, or the CA hash, cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The record is there but is not one.
    #[error("`{}` is not a token record; hint: remove it and run again", path.display())]
    Damaged {
        /// The record.
        path: PathBuf,
    },
    /// The record cannot be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The record.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The record cannot be written.
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The record.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No randomness for a new token.
    #[error("cannot make a bootstrap token")]
    Generate(#[source] std::io::Error),
    /// The CA certificate is not PEM.
    #[error("the CA certificate is not PEM")]
    CaPem(#[source] x509_parser::nom::Err<x509_parser::error::PEMError>),
    /// The CA certificate does not parse.
    #[error("the CA certificate does not parse")]
    CaCertificate(#[source] x509_parser::nom::Err<x509_parser::error::X509Error>),
}

/// Where the token record is kept.
pub fn record_path(work_dir: &Path) -> PathBuf {
    work_dir.join(TOKEN_FILE)
}

/// `sha256:<hex>` of the DER `SubjectPublicKeyInfo` of the CA certificate `ca_pem`: what
/// `--discovery-token-ca-cert-hash` pins.
pub fn ca_cert_hash(ca_pem: &[u8]) -> Result<String, TokenError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(ca_pem).map_err(TokenError::CaPem)?;
    let certificate = pem.parse_x509().map_err(TokenError::CaCertificate)?;
    let spki = certificate.tbs_certificate.subject_pki.raw;
    Ok(format!("sha256:{}", hex::encode(Sha256::digest(spki))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_have_kubeadms_format_and_expire_after_a_day() {
        let now = jiff::Timestamp::from_second(1_800_000_000).expect("time");
        let token = BootstrapToken::generate(now).expect("token");
        assert!(BootstrapToken::is_well_formed(&token.token), "{token:?}");
        assert_ne!(token, BootstrapToken::generate(now).expect("second"));
        assert!(token.is_valid_at(now));
        assert_eq!(token.ttl_from(now), "24h0m0s");
        let later = now + jiff::SignedDuration::from_hours(24);
        assert!(!token.is_valid_at(later), "an expired token is replaced");
    }

    #[test]
    fn token_format_is_kubeadms() {
        for (text, ok) in [
            ("abcdef.0123456789abcdef", true),
            ("abcde.0123456789abcdef", false),
            ("ABCDEF.0123456789abcdef", false),
            ("abcdef0123456789abcdef", false),
            ("abcdef.0123456789abcde_", false),
        ] {
            assert_eq!(BootstrapToken::is_well_formed(text), ok, "{text}");
        }
    }

    #[test]
    fn the_record_round_trips_and_a_damaged_one_is_named() {
        let dir = tempfile::tempdir().expect("dir");
        assert_eq!(BootstrapToken::load(dir.path()).expect("none"), None);
        let token = BootstrapToken::generate(jiff::Timestamp::now()).expect("token");
        token.save(dir.path()).expect("save");
        assert_eq!(BootstrapToken::load(dir.path()).expect("load"), Some(token));
        std::fs::write(record_path(dir.path()), b"{}").expect("damage");
        let error = BootstrapToken::load(dir.path()).expect_err("damaged");
        assert!(error.to_string().contains(TOKEN_FILE), "{error}");
    }

    #[test]
    fn the_ca_hash_is_the_sha256_of_the_subject_public_key_info() {
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        let cert = params.self_signed(&key).expect("cert");
        let expected = format!(
            "sha256:{}",
            hex::encode(Sha256::digest(
                rcgen::PublicKeyData::subject_public_key_info(&key)
            ))
        );
        assert_eq!(ca_cert_hash(cert.pem().as_bytes()).expect("hash"), expected);
        assert!(ca_cert_hash(b"not a certificate").is_err());
    }
}

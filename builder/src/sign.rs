//! Signing bundles: the signing key, `kk-bundle sign` of an existing bundle, and the
//! `<bundle>.sigstore.json` written beside every signed bundle (SPEC §3.6).

use std::path::{Path, PathBuf};

use bundle_spec::BundleError;
use bundle_spec::sign::keys::{
    COSIGN_PRIVATE_KEY_LABEL, KeyError, SIGSTORE_PRIVATE_KEY_LABEL, fingerprint, read_private_key,
};
use bundle_spec::sign::verify::sidecar_path;
use p256::ecdsa::SigningKey;
use zeroize::Zeroizing;

use crate::passphrase::{PassphraseError, read_passphrase};

/// Why a bundle could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The key file cannot be read.
    #[error("cannot read the signing key `{}`", path.display())]
    ReadKey {
        /// The key file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The key file holds no usable key.
    #[error("cannot use the signing key `{}`", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: KeyError,
    },
    /// The key file is encrypted and its passphrase cannot be had.
    #[error("cannot read the passphrase of the signing key `{}`", path.display())]
    Passphrase {
        /// The key file.
        path: PathBuf,
        /// Why.
        #[source]
        source: PassphraseError,
    },
    /// The signature beside the bundle cannot be written or removed.
    #[error("cannot write the signature `{}`", path.display())]
    Sidecar {
        /// The `<bundle>.sigstore.json`.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The bundle cannot be verified or rewritten.
    #[error("cannot sign the bundle")]
    Bundle(#[source] BundleError),
}

/// Reads the signing key at `path`, cosign's encrypted `cosign.key` (its passphrase from
/// `COSIGN_PASSWORD` or the terminal, as cosign asks it) or a plain PKCS#8 or SEC1 key.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, SignError> {
    let pem =
        Zeroizing::new(
            std::fs::read_to_string(path).map_err(|source| SignError::ReadKey {
                path: path.to_owned(),
                source,
            })?,
        );
    // Only an encrypted key needs a passphrase: asking for one for a plain key would make
    // unattended signing with an imported key hang on a terminal prompt.
    let encrypted = [SIGSTORE_PRIVATE_KEY_LABEL, COSIGN_PRIVATE_KEY_LABEL]
        .iter()
        .any(|label| pem.contains(&format!("-----BEGIN {label}-----")));
    let passphrase = if encrypted {
        read_passphrase(false).map_err(|source| SignError::Passphrase {
            path: path.to_owned(),
            source,
        })?
    } else {
        Zeroizing::new(String::new())
    };
    read_private_key(&pem, passphrase.as_bytes()).map_err(|source| SignError::Key {
        path: path.to_owned(),
        source,
    })
}

/// Writes `signature` beside the bundle at `bundle` as `<bundle>.sigstore.json`, durably, or
/// (for `None`, an unsigned build) removes one left from an earlier bundle of that name, which
/// would be about other bytes. Returns the sidecar's path.
pub fn write_sidecar(bundle: &Path, signature: Option<&[u8]>) -> Result<PathBuf, SignError> {
    let path = sidecar_path(bundle);
    let failed = |source| SignError::Sidecar {
        path: path.clone(),
        source,
    };
    match signature {
        Some(bytes) => {
            bundle_spec::durable::write(&path, bytes, 0o644, ".kk-signature-").map_err(failed)?;
        }
        None => match std::fs::remove_file(&path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(failed(error));
            }
            _ => {}
        },
    }
    Ok(path)
}

/// What `kk-bundle sign` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignReport {
    /// The fingerprint of the key that signed.
    pub fingerprint: String,
    /// Whether the signature was embedded (a split bundle gets only the sidecar).
    pub embedded: bool,
    /// The `<bundle>.sigstore.json` written.
    pub sidecar: PathBuf,
}

/// Verifies the bundle at `bundle`, signs it with `key`, embeds the signature (single-file
/// bundles) and writes it beside the bundle.
pub fn sign_existing(bundle: &Path, key: &SigningKey) -> Result<SignReport, SignError> {
    let signed = bundle_spec::write::sign_bundle(bundle, key).map_err(SignError::Bundle)?;
    let sidecar = write_sidecar(bundle, Some(&signed.signature))?;
    Ok(SignReport {
        fingerprint: fingerprint(key.verifying_key()),
        embedded: signed.embedded,
        sidecar,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use p256::pkcs8::{EncodePrivateKey as _, LineEnding};

    use super::*;

    #[test]
    fn reads_a_pkcs8_key_and_names_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_slice(&[5; 32]).unwrap();
        let path = dir.path().join("cosign.key");
        std::fs::write(&path, key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes()).unwrap();
        assert_eq!(load_signing_key(&path).unwrap(), key);
        std::fs::write(&path, "not a key").unwrap();
        let error = load_signing_key(&path).unwrap_err();
        assert!(matches!(error, SignError::Key { .. }), "{error}");
        let missing = load_signing_key(&dir.path().join("none")).unwrap_err();
        assert!(matches!(missing, SignError::ReadKey { .. }), "{missing}");
    }

    /// An unsigned build removes the signature an earlier bundle of that name left beside it:
    /// it is about other bytes, and `kk-install` would refuse the new bundle for it.
    #[test]
    fn unsigned_build_removes_a_stale_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("b.kkb");
        let written = write_sidecar(&bundle, Some(b"{}\n")).unwrap();
        assert_eq!(written, dir.path().join("b.kkb.sigstore.json"));
        assert_eq!(std::fs::read(&written).unwrap(), b"{}\n");
        assert_eq!(write_sidecar(&bundle, None).unwrap(), written);
        assert!(!written.exists());
        assert_eq!(write_sidecar(&bundle, None).unwrap(), written);
    }
}

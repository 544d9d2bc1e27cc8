//! Cosign key files: the public key (PEM `PUBLIC KEY`, `SubjectPublicKeyInfo`) and the private key.
//!
//! Only ECDSA P-256 is accepted: it is what `cosign generate-key-pair` makes and what a
//! Sigstore bundle signed with a key names as `PKIX_ECDSA_P256_SHA_256`.

use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use sha2::{Digest, Sha256};

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The public key is not a PEM `PUBLIC KEY` holding a P-256 key.
    #[error(
        "not an ECDSA P-256 public key in PEM: {0}; hint: give the `cosign.pub` that `cosign generate-key-pair` or `kk-bundle keygen` wrote"
    )]
    PublicKey(String),
    /// The private key is not a PKCS#8 P-256 key.
    #[error("not an ECDSA P-256 private key in PKCS#8 PEM: {0}")]
    PrivateKey(String),
}

/// Reads a PEM `PUBLIC KEY` (what `cosign.pub` holds).
pub fn read_public_key(pem: &str) -> Result<VerifyingKey, KeyError> {
    VerifyingKey::from_public_key_pem(pem.trim())
        .map_err(|error| KeyError::PublicKey(error.to_string()))
}

/// Reads an unencrypted PKCS#8 PEM `PRIVATE KEY` (what `cosign import-key-pair` takes).
pub fn read_pkcs8_private_key(pem: &str) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_pem(pem.trim()).map_err(|error| KeyError::PrivateKey(error.to_string()))
}

/// The key's fingerprint: the lowercase hex sha256 of its `SubjectPublicKeyInfo` DER (the bytes
/// `cosign.pub` encodes), so an operator can compare it with `openssl pkey -pubin -outform der`.
///
/// # Panics
///
/// Never: a P-256 public key always encodes.
pub fn fingerprint(key: &VerifyingKey) -> String {
    let der = key
        .to_public_key_der()
        .expect("a P-256 public key always encodes as SubjectPublicKeyInfo");
    hex::encode(Sha256::digest(der.as_bytes()))
}

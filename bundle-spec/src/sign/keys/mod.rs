//! Cosign key files: the public key (PEM `PUBLIC KEY`, `SubjectPublicKeyInfo`) and the private key
//! (cosign's encrypted PEM, or a plain PKCS#8 or SEC1 key as `cosign import-key-pair` takes).
//!
//! Only ECDSA P-256 is accepted: it is what `cosign generate-key-pair` makes and what a
//! Sigstore bundle signed with a key names as `PKIX_ECDSA_P256_SHA_256`. A key of another
//! algorithm is refused with that algorithm named.

mod algorithm;
mod encrypted;

use p256::ecdsa::{SigningKey, VerifyingKey};
use p256::elliptic_curve::Generate as _;
use p256::pkcs8::der::pem::{self, LineEnding};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey as _, EncodePublicKey};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// The PEM label cosign writes its encrypted private keys under.
pub const SIGSTORE_PRIVATE_KEY_LABEL: &str = "ENCRYPTED SIGSTORE PRIVATE KEY";
/// The label cosign wrote before it, still read.
pub const COSIGN_PRIVATE_KEY_LABEL: &str = "ENCRYPTED COSIGN PRIVATE KEY";
/// A plain PKCS#8 private key.
const PKCS8_LABEL: &str = "PRIVATE KEY";
/// A plain SEC1 elliptic-curve private key (what `openssl ecparam -genkey` writes).
const SEC1_LABEL: &str = "EC PRIVATE KEY";
/// A `SubjectPublicKeyInfo`: `cosign.pub`.
const PUBLIC_KEY_LABEL: &str = "PUBLIC KEY";

/// Why a key file could not be used. The caller names the file.
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
    /// The key is of another algorithm or curve than ECDSA P-256.
    #[error(
        "a `{algorithm}` key, but kk signs and verifies with ECDSA P-256 keys only; hint: make a key pair with `kk-bundle keygen` or `cosign generate-key-pair`"
    )]
    Algorithm {
        /// The algorithm the key is for, e.g. `ECDSA P-384`, `RSA` (or its OID).
        algorithm: String,
    },
    /// The file is not PEM at all.
    #[error("not a PEM key file: {0}")]
    Pem(String),
    /// A PEM block of a kind that holds no private key kk reads.
    #[error(
        "a PEM `{0}` is not a private key kk reads; hint: give cosign's `cosign.key` (`{SIGSTORE_PRIVATE_KEY_LABEL}`) or a plain `{PKCS8_LABEL}` or `{SEC1_LABEL}`"
    )]
    Label(String),
    /// The encrypted key's body is not cosign's JSON envelope.
    #[error("the encrypted private key is not cosign's JSON envelope: {0}")]
    Envelope(#[source] serde_json::Error),
    /// The encrypted key names a key derivation, cipher or parameters cosign never writes.
    #[error(
        "unsupported {what} `{value}` in the encrypted private key; hint: cosign writes `scrypt` (N=32768, r=8, p=1) and `nacl/secretbox`"
    )]
    Unsupported {
        /// Which part: `key derivation`, `cipher`, `scrypt parameters`, `nonce length`.
        what: &'static str,
        /// Its value as written.
        value: String,
    },
    /// The passphrase does not open the encrypted key (or the file was altered: the same check
    /// fails).
    #[error(
        "the passphrase does not decrypt the private key (or the key file was altered); hint: set `COSIGN_PASSWORD` to the passphrase the key pair was made with, empty if none"
    )]
    WrongPassphrase,
    /// The system's random source failed while making a key or encrypting one.
    #[error("the system's random source failed: {0}")]
    Random(#[source] getrandom::Error),
}

/// A new key pair in cosign's files.
pub struct KeyPair {
    /// The private key.
    pub signing_key: SigningKey,
    /// `cosign.key`: the private key encrypted under the passphrase, PEM
    /// `ENCRYPTED SIGSTORE PRIVATE KEY`.
    pub private_pem: Zeroizing<String>,
    /// `cosign.pub`: PEM `PUBLIC KEY`.
    pub public_pem: String,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the private key, not even encrypted.
        f.debug_struct("KeyPair")
            .field(
                "fingerprint",
                &fingerprint(self.signing_key.verifying_key()),
            )
            .finish_non_exhaustive()
    }
}

/// Makes a P-256 key pair as `cosign generate-key-pair` does: the private key encrypted under
/// `passphrase` (which may be empty, as cosign allows).
pub fn generate_key_pair(passphrase: &[u8]) -> Result<KeyPair, KeyError> {
    let signing_key = SigningKey::try_generate().map_err(KeyError::Random)?;
    Ok(KeyPair {
        private_pem: encrypt_private_key(&signing_key, passphrase)?,
        public_pem: public_key_pem(signing_key.verifying_key()),
        signing_key,
    })
}

/// `key` encrypted under `passphrase` in cosign's `ENCRYPTED SIGSTORE PRIVATE KEY` PEM.
///
/// # Panics
///
/// Never: a P-256 key always encodes as PKCS#8 and PEM.
pub fn encrypt_private_key(
    key: &SigningKey,
    passphrase: &[u8],
) -> Result<Zeroizing<String>, KeyError> {
    let der = key
        .to_pkcs8_der()
        .expect("a P-256 private key always encodes as PKCS#8");
    let body = Zeroizing::new(encrypted::seal(der.as_bytes(), passphrase)?);
    Ok(Zeroizing::new(
        pem::encode_string(SIGSTORE_PRIVATE_KEY_LABEL, LineEnding::LF, &body)
            .expect("a short body always encodes as PEM"),
    ))
}

/// `key` as `cosign.pub` holds it: PEM `PUBLIC KEY` (`SubjectPublicKeyInfo`).
///
/// # Panics
///
/// Never: a P-256 public key always encodes.
pub fn public_key_pem(key: &VerifyingKey) -> String {
    key.to_public_key_pem(LineEnding::LF)
        .expect("a P-256 public key always encodes as PEM")
}

/// Reads a PEM `PUBLIC KEY` (what `cosign.pub` holds).
pub fn read_public_key(pem: &str) -> Result<VerifyingKey, KeyError> {
    VerifyingKey::from_public_key_pem(pem.trim()).map_err(|error| {
        let other = pem::decode_vec(pem.trim().as_bytes())
            .ok()
            .filter(|(label, _)| *label == PUBLIC_KEY_LABEL)
            .and_then(|(_, der)| algorithm::of_public_key(&der));
        refusal(other, || KeyError::PublicKey(error.to_string()))
    })
}

/// Reads a private key file: cosign's encrypted PEM (either label), opened with `passphrase`,
/// or a plain PKCS#8 `PRIVATE KEY` or SEC1 `EC PRIVATE KEY` (the passphrase unused).
pub fn read_private_key(pem: &str, passphrase: &[u8]) -> Result<SigningKey, KeyError> {
    let (label, der) =
        pem::decode_vec(pem.trim().as_bytes()).map_err(|error| KeyError::Pem(error.to_string()))?;
    let der = Zeroizing::new(der);
    match label {
        SIGSTORE_PRIVATE_KEY_LABEL | COSIGN_PRIVATE_KEY_LABEL => {
            from_pkcs8_der(&encrypted::open(&der, passphrase)?)
        }
        PKCS8_LABEL => from_pkcs8_der(&der),
        SEC1_LABEL => p256::SecretKey::from_sec1_der(&der)
            .map(SigningKey::from)
            .map_err(|error| KeyError::PrivateKey(error.to_string())),
        other => Err(KeyError::Label(other.to_owned())),
    }
}

/// A P-256 key from PKCS#8 DER, or the refusal naming the key's algorithm.
fn from_pkcs8_der(der: &[u8]) -> Result<SigningKey, KeyError> {
    SigningKey::from_pkcs8_der(der).map_err(|error| {
        refusal(algorithm::of_private_key(der), || {
            KeyError::PrivateKey(error.to_string())
        })
    })
}

/// Why a key did not decode: its algorithm if it names one other than P-256, else `otherwise`.
fn refusal(algorithm: Option<String>, otherwise: impl FnOnce() -> KeyError) -> KeyError {
    match algorithm {
        Some(algorithm) if algorithm != "ECDSA P-256" => KeyError::Algorithm { algorithm },
        _ => otherwise(),
    }
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

#[cfg(test)]
mod tests;

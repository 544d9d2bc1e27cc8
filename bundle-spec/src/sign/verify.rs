//! Checking a Sigstore message signature over a bundle's checksum list, and which signatures a
//! bundle has: the embedded member and the `<bundle>.sigstore.json` beside it.
//!
//! With trusted keys, every signature present must verify with one of them and at least one
//! must be present: a signature added beside the bundle after it was copied (the sidecar) can
//! vouch for an unsigned bundle, but can never outvote a bad embedded one. Without trusted keys
//! the signatures are only read, to report the key that made them.

use std::fmt;
use std::path::{Path, PathBuf};

use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{DerSignature, VerifyingKey};
use sha2::{Digest as _, Sha256};

use super::SignatureError;
use super::keys::fingerprint;
use super::sigstore::{MessageSignature, parse};
use crate::Bundle;
use crate::member::SIGNATURE_PATH;

/// The file beside a bundle that holds its detached signature: `<bundle>.sigstore.json`. For a
/// split bundle given by its parts index (`<bundle>.split.json`) or first part
/// (`<bundle>.part001`), it is named after the bundle too, beside the parts.
pub fn sidecar_path(bundle: &Path) -> PathBuf {
    // A name that is not UTF-8 is kept whole: kk never writes one as a parts index or part.
    let base = bundle
        .to_str()
        .and_then(|text| {
            text.strip_suffix(".split.json")
                .or_else(|| text.strip_suffix(".part001"))
        })
        .map_or_else(|| bundle.to_owned(), PathBuf::from);
    let mut name = base.into_os_string();
    name.push(".sigstore.json");
    PathBuf::from(name)
}

/// Checks that `json` signs exactly `artifact` with one of `trusted`; returns the fingerprint
/// of the key that verified it.
pub fn verify(
    json: &[u8],
    artifact: &[u8],
    trusted: &[VerifyingKey],
) -> Result<String, SignatureError> {
    let (_, signature) = read_over(json, artifact)?;
    trusted
        .iter()
        .find(|key| key.verify(artifact, &signature).is_ok())
        .map(fingerprint)
        .ok_or_else(|| SignatureError::Untrusted {
            tried: trusted
                .iter()
                .map(|key| format!("`{}`", fingerprint(key)))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Parses `json` and checks that it signs `artifact`'s digest with a well-formed signature,
/// without checking who made it.
fn read_over(
    json: &[u8],
    artifact: &[u8],
) -> Result<(MessageSignature, DerSignature), SignatureError> {
    let message = parse(json)?;
    let actual: [u8; 32] = Sha256::digest(artifact).into();
    if message.digest != actual {
        return Err(SignatureError::OtherArtifact {
            signed: hex::encode(message.digest),
            actual: hex::encode(actual),
        });
    }
    let signature =
        DerSignature::try_from(message.signature.as_slice()).map_err(SignatureError::Der)?;
    Ok((message, signature))
}

/// Where a bundle's signature was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The member [`SIGNATURE_PATH`] inside the bundle.
    Embedded,
    /// The `<bundle>.sigstore.json` beside it.
    Sidecar(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Embedded => write!(f, "the embedded signature `{SIGNATURE_PATH}`"),
            Self::Sidecar(path) => write!(f, "the signature `{}`", path.display()),
        }
    }
}

/// A signature a bundle has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSignature {
    /// Where it is.
    pub origin: Origin,
    /// The signing key's fingerprint: checked when `trusted`, otherwise as the bundle's key hint
    /// states it (`None` when the hint is not cosign's hash of the key).
    pub fingerprint: Option<String>,
    /// Whether it verified with a trusted key.
    pub trusted: bool,
}

/// The signatures of `bundle` (embedded, then the sidecar beside it), checked against its
/// checksum list.
///
/// With `trusted` keys the bundle must be signed and every signature must verify with one of
/// them (fail closed: anything unreadable is an error). Without, each signature is only read:
/// it must still be well-formed and over this bundle's checksum list.
pub fn check_bundle(
    bundle: &mut Bundle,
    trusted: &[VerifyingKey],
) -> Result<Vec<FoundSignature>, SignatureError> {
    let artifact = bundle.checksums().to_bytes();
    let mut sources = Vec::new();
    if let Some(json) = bundle
        .signature()
        .map_err(|e| SignatureError::Embedded(Box::new(e)))?
    {
        sources.push((Origin::Embedded, json));
    }
    let sidecar = sidecar_path(bundle.path());
    match std::fs::read(&sidecar) {
        Ok(json) => sources.push((Origin::Sidecar(sidecar), json)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(SignatureError::Sidecar {
                path: sidecar,
                source,
            });
        }
    }
    if sources.is_empty() && !trusted.is_empty() {
        return Err(SignatureError::Unsigned {
            bundle: bundle.path().to_owned(),
        });
    }
    sources
        .into_iter()
        .map(|(origin, json)| check_one(&json, &artifact, trusted, origin))
        .collect()
}

fn check_one(
    json: &[u8],
    artifact: &[u8],
    trusted: &[VerifyingKey],
    origin: Origin,
) -> Result<FoundSignature, SignatureError> {
    let in_origin = |source| SignatureError::In {
        origin: origin.to_string(),
        source: Box::new(source),
    };
    if trusted.is_empty() {
        let (message, _) = read_over(json, artifact).map_err(in_origin)?;
        return Ok(FoundSignature {
            fingerprint: message.hinted_fingerprint(),
            origin,
            trusted: false,
        });
    }
    let fingerprint = verify(json, artifact, trusted).map_err(in_origin)?;
    Ok(FoundSignature {
        origin,
        fingerprint: Some(fingerprint),
        trusted: true,
    })
}

//! The Sigstore bundle JSON that carries a key-made signature over a blob: what
//! `cosign sign-blob --key --bundle --new-bundle-format` writes with the transparency log off.
//!
//! Only the parts a key-only message signature uses are read: the media type, the public key
//! hint and the `messageSignature` (digest and signature). What a signature made with a key
//! needs no transparency log for is accepted (v0.2 and v0.3); v0.1 required a log entry, and a
//! DSSE envelope signs an attestation rather than the blob, so both are refused by name.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{DerSignature, SigningKey, VerifyingKey};
use p256::pkcs8::EncodePublicKey as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::SignatureError;

/// The media type kk writes: Sigstore bundle v0.3, in the spelling cosign writes.
pub const MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// Media types read, and whether they need a transparency log entry (v0.1 does).
const MEDIA_TYPES: [(&str, bool); 4] = [
    ("application/vnd.dev.sigstore.bundle+json;version=0.1", true),
    (
        "application/vnd.dev.sigstore.bundle+json;version=0.2",
        false,
    ),
    (
        "application/vnd.dev.sigstore.bundle+json;version=0.3",
        false,
    ),
    (MEDIA_TYPE, false),
];

/// The digest algorithm name of a message digest (the protobuf enum's JSON spelling).
const SHA2_256: &str = "SHA2_256";

/// A parsed message signature: what was signed (its sha256) and the DER signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSignature {
    /// The bundle's media type, as written.
    pub media_type: String,
    /// The public key hint, if any (cosign's: the base64 sha256 of the key's
    /// `SubjectPublicKeyInfo` DER).
    pub hint: Option<String>,
    /// The sha256 of the signed bytes, as the bundle states it.
    pub digest: [u8; 32],
    /// The ECDSA signature, DER-encoded, not yet parsed.
    pub signature: Vec<u8>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Json {
    media_type: String,
    verification_material: Option<Material>,
    message_signature: Option<MessageJson>,
    /// Only looked at to name it: an attestation instead of a message signature.
    #[serde(skip_serializing)]
    dsse_envelope: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    public_key: Option<PublicKeyHint>,
    #[serde(default)]
    tlog_entries: Vec<serde_json::Value>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PublicKeyHint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageJson {
    message_digest: Option<DigestJson>,
    signature: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct DigestJson {
    algorithm: String,
    digest: String,
}

/// The public key hint cosign writes: the base64 (standard, padded) sha256 of the key's
/// `SubjectPublicKeyInfo` DER. It is the same hash as [`super::keys::fingerprint`], in base64.
///
/// # Panics
///
/// Never: a P-256 public key always encodes.
pub fn key_hint(key: &VerifyingKey) -> String {
    let der = key
        .to_public_key_der()
        .expect("a P-256 public key always encodes as SubjectPublicKeyInfo");
    STANDARD.encode(Sha256::digest(der.as_bytes()))
}

/// Signs `artifact` (ECDSA P-256 over its SHA-256, deterministic per RFC 6979) and returns the
/// Sigstore bundle v0.3 JSON, one line with a final newline.
///
/// # Panics
///
/// Never: the JSON holds only strings.
pub fn sign(key: &SigningKey, artifact: &[u8]) -> Vec<u8> {
    let signature: DerSignature = key.sign(artifact);
    let json = Json {
        media_type: MEDIA_TYPE.to_owned(),
        verification_material: Some(Material {
            public_key: Some(PublicKeyHint {
                hint: Some(key_hint(key.verifying_key())),
            }),
            tlog_entries: Vec::new(),
        }),
        message_signature: Some(MessageJson {
            message_digest: Some(DigestJson {
                algorithm: SHA2_256.to_owned(),
                digest: STANDARD.encode(Sha256::digest(artifact)),
            }),
            signature: STANDARD.encode(signature.as_ref()),
        }),
        dsse_envelope: None,
    };
    let mut bytes = serde_json::to_vec(&json).expect("the bundle JSON always serializes");
    bytes.push(b'\n');
    bytes
}

/// Parses a Sigstore bundle JSON holding a message signature made with a key.
pub fn parse(bytes: &[u8]) -> Result<MessageSignature, SignatureError> {
    let json: Json = serde_json::from_slice(bytes).map_err(SignatureError::Json)?;
    match MEDIA_TYPES
        .iter()
        .find(|(name, _)| *name == json.media_type)
    {
        None => {
            return Err(SignatureError::MediaType {
                found: json.media_type,
            });
        }
        Some((_, true)) => {
            return Err(SignatureError::NeedsTransparencyLog {
                media_type: json.media_type,
            });
        }
        Some(_) => {}
    }
    if json.dsse_envelope.is_some() {
        return Err(SignatureError::DsseEnvelope);
    }
    let message = json
        .message_signature
        .ok_or(SignatureError::NoMessageSignature)?;
    let message_digest = message
        .message_digest
        .ok_or(SignatureError::NoMessageSignature)?;
    if message_digest.algorithm != SHA2_256 {
        return Err(SignatureError::DigestAlgorithm {
            found: message_digest.algorithm,
        });
    }
    let digest = decode("messageDigest.digest", &message_digest.digest)?;
    let digest =
        <[u8; 32]>::try_from(digest.as_slice()).map_err(|_| SignatureError::DigestLength {
            length: digest.len(),
        })?;
    Ok(MessageSignature {
        media_type: json.media_type,
        hint: json
            .verification_material
            .and_then(|m| m.public_key)
            .and_then(|k| k.hint),
        digest,
        signature: decode("messageSignature.signature", &message.signature)?,
    })
}

fn decode(field: &'static str, value: &str) -> Result<Vec<u8>, SignatureError> {
    STANDARD
        .decode(value)
        .map_err(|source| SignatureError::Base64 { field, source })
}

impl MessageSignature {
    /// The fingerprint (lowercase hex sha256 of the `SubjectPublicKeyInfo`) the hint names,
    /// when the hint is cosign's: unverified, for reports only.
    pub fn hinted_fingerprint(&self) -> Option<String> {
        let hash = STANDARD.decode(self.hint.as_deref()?).ok()?;
        (hash.len() == 32).then(|| hex::encode(hash))
    }
}

//! Who made a bundle: cosign-compatible keys and the signature over a bundle's identity.
//!
//! A bundle's checksum list is its root of trust ([`crate::Bundle::identity`] is its sha256), so
//! signing those bytes vouches for every member. The keys are cosign's own files, so operators
//! keep the keys and the `cosign verify-blob` check they already have.

pub mod image;
pub mod keys;
pub mod sigstore;
#[cfg(test)]
mod tests;
pub mod verify;

use std::path::PathBuf;

use crate::bundle_error::BundleError;

/// Why a signature was refused.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The file is not JSON of a Sigstore bundle's shape.
    #[error("not a Sigstore bundle JSON")]
    Json(#[source] serde_json::Error),
    /// A media type that is no Sigstore bundle version kk reads.
    #[error(
        "media type `{found}` is not a Sigstore bundle version kk reads; hint: v0.2 and v0.3 are read"
    )]
    MediaType {
        /// The media type found.
        found: String,
    },
    /// A Sigstore bundle v0.1, which always requires a transparency log entry.
    #[error(
        "media type `{media_type}` (Sigstore bundle v0.1) requires a transparency log, which a key-only signature has none of; hint: sign again with `kk-bundle sign` or `cosign sign-blob --new-bundle-format`"
    )]
    NeedsTransparencyLog {
        /// The media type found.
        media_type: String,
    },
    /// A DSSE envelope (an attestation) instead of a signature over the checksum list.
    #[error(
        "it holds a DSSE envelope (an attestation), not a `messageSignature` over the checksum list"
    )]
    DsseEnvelope,
    /// No `messageSignature` with a `messageDigest`.
    #[error("it holds no `messageSignature` with a `messageDigest`")]
    NoMessageSignature,
    /// A message digest other than SHA-256.
    #[error("message digest algorithm `{found}` is not `SHA2_256`")]
    DigestAlgorithm {
        /// The algorithm found.
        found: String,
    },
    /// A message digest that is not 32 bytes long.
    #[error("the message digest is {length} bytes long, not the 32 of a sha256")]
    DigestLength {
        /// Its length.
        length: usize,
    },
    /// A field that is not valid base64.
    #[error("`{field}` is not valid base64")]
    Base64 {
        /// The JSON field.
        field: &'static str,
        /// What the decoder said.
        #[source]
        source: base64::DecodeError,
    },
    /// The signature is over other bytes than this bundle's checksum list.
    #[error(
        "it signs another checksum list (sha256 `{signed}`), not this bundle's (sha256 `{actual}`): the signature of another bundle, or content changed after signing"
    )]
    OtherArtifact {
        /// The sha256 the signature states.
        signed: String,
        /// The sha256 of this bundle's checksum list.
        actual: String,
    },
    /// The signature bytes are not a DER ECDSA signature.
    #[error("the signature is not a DER-encoded ECDSA P-256 signature (truncated or damaged)")]
    Der(#[source] p256::ecdsa::Error),
    /// The signature verifies with none of the trusted keys.
    #[error(
        "signature verification failed with every trusted key (fingerprints {tried}): signed by another key, or the signature was altered"
    )]
    Untrusted {
        /// The fingerprints tried, in backticks.
        tried: String,
    },
    /// Trusted keys were given but the bundle has no signature.
    #[error(
        "bundle `{}` is not signed, and trusted keys were given; hint: sign it with `kk-bundle sign`, or put its `.sigstore.json` beside it", bundle.display()
    )]
    Unsigned {
        /// The bundle.
        bundle: PathBuf,
    },
    /// The embedded signature member could not be read.
    #[error("cannot read the embedded signature")]
    Embedded(#[source] Box<BundleError>),
    /// The signature beside the bundle could not be read.
    #[error("cannot read the signature `{}`", path.display())]
    Sidecar {
        /// The sidecar file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A signature of a bundle was refused; says which one.
    #[error("{origin} is refused")]
    In {
        /// Which signature (embedded or the sidecar file).
        origin: String,
        /// Why it was refused.
        #[source]
        source: Box<SignatureError>,
    },
}

//! Cosign's signatures of container images ("simple signing"), checked with a key.
//!
//! `cosign sign --key` stores a signature manifest beside the image: under the tag
//! `sha256-<hex>.sig`, or (OCI 1.1 mode) as a referrer whose `subject` is the image with
//! `artifactType` [`SIGNATURE_ARTIFACT_TYPE`]. Each of its layers is a payload of media type
//! [`SIMPLE_SIGNING_MEDIA_TYPE`], a small JSON document naming the signed manifest digest
//! (`critical.image.docker-manifest-digest`), with the ECDSA P-256/SHA-256 signature over the
//! payload's bytes, DER then base64, in the layer's [`SIGNATURE_ANNOTATION`]. An image is
//! signed by a key when one layer's signature verifies with the key *and* its payload names
//! the image's digest: a valid signature of another image proves nothing about this one.

use base64::Engine as _;
use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{Signature, VerifyingKey};
use serde::Deserialize;

use crate::Sha256Digest;

/// The media type of a cosign signature payload layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 DER signature over the payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `artifactType` of a cosign signature manifest in OCI 1.1 (referrers) mode.
pub const SIGNATURE_ARTIFACT_TYPE: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// The `critical.type` of a simple-signing payload.
pub const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";

/// One layer of a signature manifest, with its payload read.
#[derive(Debug, Clone, Copy)]
pub struct SignatureLayer<'a> {
    /// The layer's media type.
    pub media_type: &'a str,
    /// Its [`SIGNATURE_ANNOTATION`], if it has one.
    pub signature: Option<&'a str>,
    /// The payload: the layer blob's bytes.
    pub payload: &'a [u8],
}

/// Checks that `layer` is a simple-signing signature of the manifest `image` made with `key`.
pub fn verify_layer(
    key: &VerifyingKey,
    layer: &SignatureLayer<'_>,
    image: Sha256Digest,
) -> Result<(), ImageSignatureError> {
    if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE {
        return Err(ImageSignatureError::MediaType {
            found: layer.media_type.to_owned(),
        });
    }
    let encoded = layer.signature.ok_or(ImageSignatureError::NoAnnotation)?;
    let der = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|error| ImageSignatureError::Base64(error.to_string()))?;
    let signature =
        Signature::from_der(&der).map_err(|_| ImageSignatureError::SignatureEncoding)?;
    key.verify(layer.payload, &signature)
        .map_err(|_| ImageSignatureError::OtherKey)?;
    let signed = signed_digest(layer.payload)?;
    if signed != image.to_string() {
        return Err(ImageSignatureError::OtherDigest {
            signed,
            image: image.to_string(),
        });
    }
    Ok(())
}

/// The manifest digest a simple-signing payload names.
fn signed_digest(payload: &[u8]) -> Result<String, ImageSignatureError> {
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        image: Image,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest")]
        digest: String,
    }
    serde_json::from_slice::<Payload>(payload)
        .map(|payload| payload.critical.image.digest)
        .map_err(|error| ImageSignatureError::Payload(error.to_string()))
}

/// The simple-signing payload cosign signs for `image` (its manifest digest), pulled as
/// `reference` (the repository, as `docker-reference`).
pub fn simple_signing_payload(reference: &str, image: Sha256Digest) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": { "docker-reference": reference },
            "image": { "docker-manifest-digest": image.to_string() },
            "type": SIMPLE_SIGNING_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// Why a signature layer does not vouch for an image.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImageSignatureError {
    /// The layer is not a simple-signing payload.
    #[error("the layer's media type is `{found}`, not `{SIMPLE_SIGNING_MEDIA_TYPE}`")]
    MediaType {
        /// The media type found.
        found: String,
    },
    /// The layer carries no signature annotation.
    #[error("the layer has no `{SIGNATURE_ANNOTATION}` annotation")]
    NoAnnotation,
    /// The annotation is not base64.
    #[error("the signature is not base64: {0}")]
    Base64(String),
    /// The decoded signature is not an ASN.1 DER ECDSA signature.
    #[error("the signature is not a DER-encoded ECDSA signature")]
    SignatureEncoding,
    /// The signature does not verify with the key: another key made it, or the payload changed.
    #[error("the signature does not verify with the key (signed by another key?)")]
    OtherKey,
    /// The payload is not simple-signing JSON.
    #[error("the payload is not a cosign simple-signing document: {0}")]
    Payload(String),
    /// The payload names another manifest.
    #[error("the payload signs `{signed}`, not the image `{image}`")]
    OtherDigest {
        /// The digest the payload names.
        signed: String,
        /// The image's digest.
        image: String,
    },
}

#[cfg(test)]
mod tests {
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer as _;

    use super::*;

    /// A table row: name, layer media type, annotation, payload, expected outcome.
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        &'a [u8],
        Result<(), ImageSignatureError>,
    );

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_slice(&[byte; 32]).expect("a valid scalar")
    }

    fn sign(key: &SigningKey, payload: &[u8]) -> String {
        let signature: Signature = key.sign(payload);
        base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
    }

    #[test]
    fn a_simple_signing_layer_vouches_for_its_image_only() {
        let (image, other) = (Sha256Digest::of(b"image"), Sha256Digest::of(b"other"));
        let signer = key(7);
        let payload = simple_signing_payload("example.org/app", image);
        let good = sign(&signer, &payload);
        let other_payload = simple_signing_payload("example.org/app", other);
        let other_digest = sign(&signer, &other_payload);
        let by_other_key = sign(&key(9), &payload);
        let not_json = sign(&signer, b"not json");
        let cases: [Case<'_>; 8] = [
            (
                "good",
                SIMPLE_SIGNING_MEDIA_TYPE,
                Some(&good),
                &payload,
                Ok(()),
            ),
            (
                "another key",
                SIMPLE_SIGNING_MEDIA_TYPE,
                Some(&by_other_key),
                &payload,
                Err(ImageSignatureError::OtherKey),
            ),
            (
                "another digest",
                SIMPLE_SIGNING_MEDIA_TYPE,
                Some(&other_digest),
                &other_payload,
                Err(ImageSignatureError::OtherDigest {
                    signed: other.to_string(),
                    image: image.to_string(),
                }),
            ),
            (
                "a changed payload",
                SIMPLE_SIGNING_MEDIA_TYPE,
                Some(&good),
                &other_payload,
                Err(ImageSignatureError::OtherKey),
            ),
            (
                "bad base64",
                SIMPLE_SIGNING_MEDIA_TYPE,
                Some("!!"),
                &payload,
                Err(ImageSignatureError::Base64(
                    "Invalid symbol 33, offset 0.".to_owned(),
                )),
            ),
            (
                "not DER",
                SIMPLE_SIGNING_MEDIA_TYPE,
                Some("AAAA"),
                &payload,
                Err(ImageSignatureError::SignatureEncoding),
            ),
            (
                "wrong layer media type",
                "application/vnd.oci.image.layer.v1.tar",
                Some(&good),
                &payload,
                Err(ImageSignatureError::MediaType {
                    found: "application/vnd.oci.image.layer.v1.tar".to_owned(),
                }),
            ),
            (
                "no annotation",
                SIMPLE_SIGNING_MEDIA_TYPE,
                None,
                &payload,
                Err(ImageSignatureError::NoAnnotation),
            ),
        ];
        let key = *signer.verifying_key();
        for (name, media_type, signature, payload, expected) in cases {
            let layer = SignatureLayer {
                media_type,
                signature,
                payload,
            };
            assert_eq!(verify_layer(&key, &layer, image), expected, "{name}");
        }
        let layer = SignatureLayer {
            media_type: SIMPLE_SIGNING_MEDIA_TYPE,
            signature: Some(&not_json),
            payload: b"not json",
        };
        assert!(matches!(
            verify_layer(&key, &layer, image),
            Err(ImageSignatureError::Payload(_))
        ));
    }
}

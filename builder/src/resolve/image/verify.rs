//! `verify: {key}`: an image must carry a cosign signature made with the key, over the digest
//! its tag points at (the top document: what `cosign sign` signs), before it is bundled.

use bundle_spec::Sha256Digest;
use bundle_spec::sign::image::{SIGNATURE_ANNOTATION, SignatureLayer, verify_layer};
use oci_client::Reference;

use super::{ImageSource, KeyCheck, Referrer, RegistryAccess, fetch_blob};
use crate::cache::Cache;
use crate::resolve::ResolveError;

/// Checks that one of `referrers` is a cosign signature of `image` (the top document's digest)
/// that verifies with `check`'s key. Fails naming the image, the key file and why: no
/// signature, or what was wrong with each one found.
pub async fn verify_signed(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
    image: Sha256Digest,
    referrers: &[Referrer],
    check: &KeyCheck,
) -> Result<(), ResolveError> {
    let mut reasons = Vec::new();
    let signatures = referrers
        .iter()
        .filter(|r| r.subject == image && r.is_signature());
    for signature in signatures {
        let document = &signature.document;
        let layers = document
            .blobs
            .iter()
            .skip(usize::from(document.config.is_some()));
        for (layer, blob) in signature.raw.layers.iter().zip(layers) {
            let cached = fetch_blob(access, cache, source, fetch, blob, &|_, _| {}).await?;
            let payload =
                tokio::fs::read(&cached.path)
                    .await
                    .map_err(|source| ResolveError::File {
                        path: cached.path.clone(),
                        source,
                    })?;
            let layer = SignatureLayer {
                media_type: layer.media_type.as_deref().unwrap_or_default(),
                signature: layer.annotation(SIGNATURE_ANNOTATION),
                payload: &payload,
            };
            match verify_layer(&check.key, &layer, image) {
                Ok(()) => return Ok(()),
                Err(error) => reasons.push(format!("`{}`: {error}", signature.document.digest)),
            }
        }
    }
    let reason = if reasons.is_empty() {
        format!(
            "no cosign signature of `{image}` (tag `{}.sig` or a referrer of artifact type `{}`)",
            super::digest_tag(&image),
            bundle_spec::sign::image::SIGNATURE_ARTIFACT_TYPE
        )
    } else {
        reasons.join("; ")
    };
    Err(ResolveError::NotSigned {
        reference: source.name(),
        key: check.path.clone(),
        reason,
    })
}

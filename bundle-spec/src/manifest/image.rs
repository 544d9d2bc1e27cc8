//! `spec.images`: container image references, pinned and normalised.

use std::sync::Arc;

use oci_spec::distribution::Reference;
use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::rules::Seen;

/// An image from `spec.images`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImageRef {
    /// The reference as written, e.g. `busybox:1.36`.
    pub original: String,
    /// The fully qualified form, e.g. `docker.io/library/busybox:1.36`; the identity used for
    /// duplicate detection and in the lock.
    pub normalized: String,
    /// The parsed reference (registry, repository, tag and/or digest).
    pub reference: Reference,
    /// Where the manifest lists it.
    pub location: SourceLocation,
}

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &[Spanned<String>],
) -> Result<Vec<ImageRef>, ManifestError> {
    let mut seen = Seen::default();
    raw.iter()
        .map(|entry| {
            let image = validate(file, entry)?;
            seen.insert(image.normalized.clone(), &image.location)
                .map_err(|first| ManifestError::DuplicateImage {
                    at: image.location.clone(),
                    reference: image.original.clone(),
                    normalized: image.normalized.clone(),
                    first,
                })?;
            Ok(image)
        })
        .collect()
}

fn validate(file: &Arc<str>, raw: &Spanned<String>) -> Result<ImageRef, ManifestError> {
    let at = SourceLocation::of(file, raw);
    let original = raw.value.clone();
    let reference: Reference = match original.parse() {
        Ok(reference) => reference,
        Err(source) => {
            return Err(ManifestError::InvalidImageReference {
                at,
                reference: original,
                source,
            });
        }
    };
    // The parser fills in `latest` when both are absent; we refuse to guess instead, since
    // a bundle is meant to be reproducible.
    if !has_tag_or_digest(&original) {
        return Err(ManifestError::ImageNotPinned {
            at,
            reference: original,
        });
    }
    if reference
        .digest()
        .is_some_and(|digest| digest.bytes().any(|byte| byte.is_ascii_uppercase()))
    {
        return Err(ManifestError::UppercaseImageDigest {
            at,
            reference: original,
        });
    }
    Ok(ImageRef {
        normalized: reference.whole(),
        original,
        reference,
        location: at,
    })
}

/// Whether a (syntactically valid) reference spells out a tag or digest: the last path
/// component carries `:tag` or `@digest`. Only the first component may hold a `:port`.
pub(super) fn has_tag_or_digest(reference: &str) -> bool {
    let last = reference.rsplit('/').next().unwrap_or(reference);
    last.contains([':', '@'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_or_digest_detection() {
        assert!(has_tag_or_digest("busybox:1.36"));
        assert!(has_tag_or_digest("localhost:5000/app:1"));
        assert!(has_tag_or_digest("quay.io/app@sha256:00"));
        assert!(!has_tag_or_digest("localhost:5000/app"));
        assert!(!has_tag_or_digest("busybox"));
    }
}

//! `spec.images`: container image references, pinned and normalised, with what to carry beside
//! them (their OCI referrers) and how to check them (`verify`).

use std::path::PathBuf;
use std::sync::Arc;

use oci_spec::distribution::Reference;
use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::choices::Referrers;
use super::raw::{RawImage, RawVerify};
use super::rules::{Seen, required};

/// `verify:` (under `spec` for every image of `spec.images`, or under one image): the image
/// must carry a cosign signature made with this key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verify {
    /// The cosign public key (PEM), as written: relative to the manifest's directory.
    pub key: PathBuf,
    /// Where the manifest names the key.
    pub location: SourceLocation,
}

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
    /// Whether its referrers are bundled.
    pub referrers: Referrers,
    /// Its own `verify:`, which overrides `spec.verify`.
    pub verify: Option<Verify>,
}

impl ImageRef {
    /// The key check that applies to this image: its own, or else the manifest's `spec.verify`.
    pub fn verify<'a>(&'a self, spec: &'a super::Spec) -> Option<&'a Verify> {
        self.verify.as_ref().or(spec.verify.as_ref())
    }
}

/// Validates a `verify:` mapping.
pub(super) fn validate_verify(
    file: &Arc<str>,
    raw: &Spanned<RawVerify>,
) -> Result<Verify, ManifestError> {
    let key = required(
        raw.value.key.as_ref(),
        "key",
        &SourceLocation::of(file, raw),
    )?;
    Ok(Verify {
        key: key.value.clone(),
        location: SourceLocation::of(file, key),
    })
}

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &[Spanned<RawImage>],
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

fn validate(file: &Arc<str>, raw: &Spanned<RawImage>) -> Result<ImageRef, ManifestError> {
    let at = SourceLocation::of(file, raw);
    match &raw.value {
        RawImage::Reference(text) => reference(at, text),
        RawImage::Detailed(entry) => {
            let written = required(entry.reference.as_ref(), "ref", &at)?;
            let mut image = reference(SourceLocation::of(file, written), &written.value)?;
            image.referrers = entry.referrers;
            image.verify = entry
                .verify
                .as_ref()
                .map(|verify| validate_verify(file, verify))
                .transpose()?;
            Ok(image)
        }
    }
}

/// A reference written at `at`, with the default options.
fn reference(at: SourceLocation, text: &str) -> Result<ImageRef, ManifestError> {
    let original = text.to_owned();
    let reference = match crate::oci::parse_reference(&original) {
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
        referrers: Referrers::All,
        verify: None,
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

//! From [`raw`](super::raw) to the public types: every check that is not YAML shape.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::raw::{RawManifest, RawSpec};
use super::{
    Metadata, SourceLocation, Spec, binary, chart, file_mirrors, image, kubernetes, registry,
};
use super::ManifestError;
use crate::platform::Platform;

/// Remembers where each key was first seen, to report duplicates with both locations.
pub(super) struct Seen<K>(HashMap<K, SourceLocation>);

impl<K> Default for Seen<K> {
    fn default() -> Self {
        Self(HashMap::new())
    }
}

impl<K: Hash + Eq> Seen<K> {
    /// Records `key` at `at`; if it was already seen, returns where.
    pub(super) fn insert(&mut self, key: K, at: &SourceLocation) -> Result<(), SourceLocation> {
        match self.0.entry(key) {
            Entry::Occupied(first) => Err(first.get().clone()),
            Entry::Vacant(slot) => {
                slot.insert(at.clone());
                Ok(())
            }
        }
    }
}

/// `value`, or a [`ManifestError::MissingField`] pointing at the mapping (`parent`) lacking it.
pub(super) fn required<'a, T>(
    value: Option<&'a T>,
    field: &'static str,
    parent: &SourceLocation,
) -> Result<&'a T, ManifestError> {
    value.ok_or_else(|| ManifestError::MissingField {
        at: parent.clone(),
        field,
    })
}

pub(super) fn manifest(
    file: &Arc<str>,
    raw: &Spanned<RawManifest>,
) -> Result<(Metadata, Spec), ManifestError> {
    let root = SourceLocation::of(file, raw);
    let metadata = required(raw.value.metadata.as_ref(), "metadata", &root)?;
    let name = required(
        metadata.value.name.as_ref(),
        "name",
        &SourceLocation::of(file, metadata),
    )?;
    let metadata = Metadata {
        name: dns_name(file, name, "manifest name")?,
    };
    let spec = spec(file, required(raw.value.spec.as_ref(), "spec", &root)?)?;
    Ok((metadata, spec))
}

fn spec(file: &Arc<str>, raw: &Spanned<RawSpec>) -> Result<Spec, ManifestError> {
    let at = SourceLocation::of(file, raw);
    let raw = &raw.value;
    let platforms = platforms(file, raw.platforms.as_ref())?;
    let spec = Spec {
        kubernetes: raw
            .kubernetes
            .as_ref()
            .map(|kubernetes| kubernetes::validate(file, kubernetes))
            .transpose()?,
        images: image::validate_all(file, &raw.images)?,
        binaries: binary::validate_all(file, &raw.binaries, &platforms)?,
        charts: chart::validate_all(file, &raw.charts)?,
        registries: registry::validate_all(file, &raw.registries)?,
        file_mirrors: file_mirrors::validate_all(file, &raw.file_mirrors)?,
        platforms,
    };
    let empty = spec.kubernetes.is_none()
        && spec.images.is_empty()
        && spec.binaries.is_empty()
        && spec.charts.is_empty();
    if empty {
        return Err(ManifestError::NothingToBundle { at });
    }
    Ok(spec)
}

fn platforms(
    file: &Arc<str>,
    raw: Option<&Spanned<Vec<Spanned<String>>>>,
) -> Result<Vec<Platform>, ManifestError> {
    let Some(raw) = raw else {
        return Ok(vec![Platform::linux_amd64()]);
    };
    if raw.value.is_empty() {
        return Err(ManifestError::EmptyPlatforms {
            at: SourceLocation::of(file, raw),
        });
    }
    let mut seen = Seen::default();
    raw.value
        .iter()
        .map(|entry| {
            let at = SourceLocation::of(file, entry);
            let platform: Platform =
                entry
                    .value
                    .parse()
                    .map_err(|source| ManifestError::InvalidPlatform {
                        at: at.clone(),
                        value: entry.value.clone(),
                        source,
                    })?;
            seen.insert(platform.clone(), &at).map_err(|first| {
                ManifestError::DuplicatePlatform {
                    at,
                    value: entry.value.clone(),
                    platform: platform.to_string(),
                    first,
                }
            })?;
            Ok(platform)
        })
        .collect()
}

/// A DNS-1123 subdomain: lowercase letters, digits, `-` and `.`, alphanumeric at both ends.
/// Such names are safe as file names, URL path segments and Kubernetes object names.
pub(super) fn dns_name(
    file: &Arc<str>,
    raw: &Spanned<String>,
    what: &'static str,
) -> Result<String, ManifestError> {
    let name = &raw.value;
    let allowed = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
    let valid = (1..=253).contains(&name.len())
        && name
            .bytes()
            .all(|byte| allowed(byte) || byte == b'-' || byte == b'.')
        && name.bytes().next().is_some_and(allowed)
        && name.bytes().last().is_some_and(allowed);
    if valid {
        Ok(name.clone())
    } else {
        Err(ManifestError::InvalidName {
            at: SourceLocation::of(file, raw),
            what,
            name: name.clone(),
        })
    }
}

/// A binary or chart version: it is substituted into URLs and file names, so it must be
/// non-empty and made of characters that are safe in both.
pub(super) fn plain_version(
    file: &Arc<str>,
    raw: &Spanned<String>,
    what: &'static str,
) -> Result<String, ManifestError> {
    let version = &raw.value;
    let valid = (1..=128).contains(&version.len())
        && version
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b".-+_".contains(&byte));
    if valid {
        Ok(version.clone())
    } else {
        Err(ManifestError::InvalidVersion {
            at: SourceLocation::of(file, raw),
            what,
            version: version.clone(),
        })
    }
}

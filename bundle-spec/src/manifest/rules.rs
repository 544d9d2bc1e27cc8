//! The checks every part of the manifest shares: required fields, duplicates, names and versions.
//!
//! Apart from [`validate`](super::validate), which calls each part's checks: the parts use these
//! and `validate` uses the parts, so they live where neither imports the other.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use crate::diagnostics::SourceLocation;

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

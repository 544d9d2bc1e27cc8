//! `spec.binaries`: files downloaded per platform and verified against a checksum.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SpannedMap;
use super::raw::{RawBinary, RawSha256};
use super::rules::{Seen, dns_name, plain_version, required};
use super::{SourceLocation, UrlTemplate};
use crate::platform::{Platform, parse_architecture};

/// A binary from `spec.binaries`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Binary {
    /// The name, unique among binaries (a DNS-1123 name).
    pub name: String,
    /// The version, substituted for `{version}`.
    pub version: String,
    /// Where to download it from.
    pub url: UrlTemplate,
    /// How to verify what was downloaded.
    pub checksum: BinaryChecksum,
    /// The project's own names for architectures in `{arch}` (`archNames: {amd64: x86_64}`, as
    /// Docker's static binaries need); architectures not listed keep their OCI name.
    pub arch_names: BTreeMap<String, String>,
    /// Where the manifest lists it.
    pub location: SourceLocation,
}

impl Binary {
    /// The download URL for `platform`.
    pub fn url_for(&self, platform: &Platform) -> String {
        self.url
            .expand_with_arch(&self.version, platform, self.arch_name(platform))
    }

    /// The checksum file URL for `platform`, when the binary is verified by one.
    pub fn checksum_url_for(&self, platform: &Platform) -> Option<String> {
        match &self.checksum {
            BinaryChecksum::ChecksumUrl(template) => {
                Some(template.expand_with_arch(&self.version, platform, self.arch_name(platform)))
            }
            _ => None,
        }
    }

    /// What `{arch}` becomes for `platform`.
    pub fn arch_name<'a>(&'a self, platform: &'a Platform) -> &'a str {
        self.arch_names
            .get(platform.architecture())
            .map_or(platform.architecture(), String::as_str)
    }
}

/// How a binary is verified.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BinaryChecksum {
    /// One SHA-256 (lowercase hex) for every platform, written as a single string. Only
    /// allowed when `url` expands to the same file for every platform of the manifest.
    Sha256(String),
    /// A SHA-256 per architecture (Go names, aliases normalised), covering at least every
    /// architecture of `spec.platforms`. Keyed by architecture alone because `{arch}` is.
    Sha256PerArchitecture(BTreeMap<String, String>),
    /// A checksum list in `sha256sum` format to download, a template like `url`.
    ChecksumUrl(UrlTemplate),
    /// No published checksum: the first build records the file's sha256 in the lock, which
    /// pins it from then on. A manifest cannot spell this (its binaries need `sha256` or
    /// `checksumUrl`); only kk-bundle's version catalog gives it, for upstreams that publish
    /// no checksum (Docker's static tarballs).
    PinnedByLock,
}

impl BinaryChecksum {
    /// The expected SHA-256 for `architecture`, or `None` when it comes from a checksum list.
    pub fn sha256_for(&self, architecture: &str) -> Option<&str> {
        match self {
            Self::Sha256(digest) => Some(digest),
            Self::Sha256PerArchitecture(digests) => digests.get(architecture).map(String::as_str),
            Self::ChecksumUrl(_) | Self::PinnedByLock => None,
        }
    }
}

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &[Spanned<RawBinary>],
    platforms: &[Platform],
) -> Result<Vec<Binary>, ManifestError> {
    let mut seen = Seen::default();
    raw.iter()
        .map(|entry| {
            let binary = validate(file, entry, platforms)?;
            seen.insert(binary.name.clone(), &binary.location)
                .map_err(|first| ManifestError::DuplicateBinary {
                    at: binary.location.clone(),
                    name: binary.name.clone(),
                    first,
                })?;
            Ok(binary)
        })
        .collect()
}

fn validate(
    file: &Arc<str>,
    raw: &Spanned<RawBinary>,
    platforms: &[Platform],
) -> Result<Binary, ManifestError> {
    let location = SourceLocation::of(file, raw);
    let name = required(raw.value.name.as_ref(), "name", &location)?;
    let name = dns_name(file, name, "binary name")?;
    let version = required(raw.value.version.as_ref(), "version", &location)?;
    let version = plain_version(file, version, "binary")?;
    let url = UrlTemplate::parse(file, required(raw.value.url.as_ref(), "url", &location)?)?;
    let checksum = match (&raw.value.sha256, &raw.value.checksum_url) {
        (Some(_), Some(_)) => Err(ManifestError::ConflictingChecksums {
            at: location.clone(),
            binary: name.clone(),
        }),
        (None, None) => Err(ManifestError::MissingChecksum {
            at: location.clone(),
            binary: name.clone(),
        }),
        (None, Some(checksum_url)) => {
            UrlTemplate::parse(file, checksum_url).map(BinaryChecksum::ChecksumUrl)
        }
        (Some(sha256), None) => {
            let binary = Context {
                file,
                name: &name,
                version: &version,
                url: &url,
                platforms,
            };
            binary.sha256(sha256)
        }
    }?;
    Ok(Binary {
        name,
        version,
        url,
        checksum,
        arch_names: arch_names(file, &raw.value.arch_names)?,
        location,
    })
}

/// `archNames`: keys are architectures (normalised like platforms), values plain names.
fn arch_names(
    file: &Arc<str>,
    raw: &SpannedMap<Spanned<String>>,
) -> Result<BTreeMap<String, String>, ManifestError> {
    let mut names = BTreeMap::new();
    for (key, value) in &raw.0 {
        let architecture =
            parse_architecture(&key.value).map_err(|_| ManifestError::InvalidArchName {
                at: SourceLocation::of(file, key),
                name: key.value.clone(),
            })?;
        let plain = !value.value.is_empty()
            && value
                .value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !plain {
            return Err(ManifestError::InvalidArchName {
                at: SourceLocation::of(file, value),
                name: value.value.clone(),
            });
        }
        names.insert(architecture, value.value.clone());
    }
    Ok(names)
}

/// What checking a `sha256` needs to know about its binary.
struct Context<'a> {
    file: &'a Arc<str>,
    name: &'a str,
    version: &'a str,
    url: &'a UrlTemplate,
    platforms: &'a [Platform],
}

impl Context<'_> {
    fn sha256(&self, raw: &Spanned<RawSha256>) -> Result<BinaryChecksum, ManifestError> {
        let at = SourceLocation::of(self.file, raw);
        match &raw.value {
            RawSha256::Single(digest) => {
                check_sha256(digest, &at)?;
                self.check_single_file(at)?;
                Ok(BinaryChecksum::Sha256(digest.clone()))
            }
            RawSha256::PerArchitecture(map) => {
                let digests = self.per_architecture(map)?;
                self.check_covers_platforms(&digests, at)?;
                Ok(BinaryChecksum::Sha256PerArchitecture(digests))
            }
        }
    }

    /// One digest can only describe one file: the URL must not vary between platforms.
    fn check_single_file(&self, at: SourceLocation) -> Result<(), ManifestError> {
        let urls: BTreeSet<String> = self
            .platforms
            .iter()
            .map(|platform| self.url.expand(self.version, platform))
            .collect();
        if urls.len() > 1 {
            return Err(ManifestError::SharedSha256ForDistinctFiles {
                at,
                binary: self.name.to_owned(),
            });
        }
        Ok(())
    }

    fn per_architecture(
        &self,
        map: &SpannedMap<Spanned<String>>,
    ) -> Result<BTreeMap<String, String>, ManifestError> {
        let mut digests = BTreeMap::new();
        for (key, digest) in &map.0 {
            let key_at = SourceLocation::of(self.file, key);
            let architecture = parse_architecture(&key.value).map_err(|source| {
                ManifestError::InvalidSha256Architecture {
                    at: key_at.clone(),
                    architecture: key.value.clone(),
                    source,
                }
            })?;
            check_sha256(&digest.value, &SourceLocation::of(self.file, digest))?;
            // Distinct keys can still collide once aliases are normalised (`x86_64`, `amd64`).
            if digests.insert(architecture, digest.value.clone()).is_some() {
                return Err(ManifestError::DuplicateKey {
                    at: key_at,
                    key: key.value.clone(),
                });
            }
        }
        Ok(digests)
    }

    fn check_covers_platforms(
        &self,
        digests: &BTreeMap<String, String>,
        at: SourceLocation,
    ) -> Result<(), ManifestError> {
        let missing = self
            .platforms
            .iter()
            .map(Platform::architecture)
            .find(|architecture| !digests.contains_key(*architecture));
        match missing {
            Some(architecture) => Err(ManifestError::MissingSha256Architecture {
                at,
                binary: self.name.to_owned(),
                architecture: architecture.to_owned(),
            }),
            None => Ok(()),
        }
    }
}

fn check_sha256(digest: &str, at: &SourceLocation) -> Result<(), ManifestError> {
    let valid = digest.len() == 64
        && digest
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
    if valid {
        Ok(())
    } else {
        Err(ManifestError::InvalidSha256 {
            at: at.clone(),
            value: digest.to_owned(),
        })
    }
}

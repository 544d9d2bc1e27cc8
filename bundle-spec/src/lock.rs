//! The lock: what a manifest resolved to, exactly.
//!
//! A build records every URL, checksum and digest it used, so a later build with `--locked`
//! fetches the same bytes or fails. The lock is stored in the bundle description too, which makes
//! a bundle reproducible from itself.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Digest;

/// The lock format version this crate writes.
pub const LOCK_VERSION: u32 = 1;

/// A resolved manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lock {
    /// The lock format version.
    pub version: u32,
    /// When the resolution happened; a bundle built from this lock is dated with it unless
    /// `SOURCE_DATE_EPOCH` is set.
    pub created: Timestamp,
    /// Images, each pinned to the digest of its manifest or index.
    #[serde(default)]
    pub images: Vec<LockedImage>,
    /// Binaries, one entry per platform.
    #[serde(default)]
    pub binaries: Vec<LockedFile>,
    /// Helm charts.
    #[serde(default)]
    pub charts: Vec<LockedFile>,
    /// Operating-system packages, one entry per `.deb`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<LockedPackage>,
    /// The OCI referrers (signatures, attestations, SBOMs) bundled with the images, in the
    /// order found; a locked build fetches exactly these and discovers none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub referrers: Vec<LockedReferrer>,
}

/// A manifest that refers to an image's manifest or index, pinned to its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockedReferrer {
    /// The image's reference, as its [`LockedImage::reference`].
    pub image: String,
    /// The manifest or index it refers to.
    pub subject: Sha256Digest,
    /// The tag it was found under (cosign's `sha256-<hex>.sig`, `.att`, `.sbom`); none for a
    /// referrer found through the referrers API or its tag-schema index (it has a `subject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Its digest.
    pub digest: Sha256Digest,
    /// Its media type.
    pub media_type: String,
}

/// A `.deb` (or, later, another package format's file) pinned to its sha256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockedPackage {
    /// The distribution release it is for (`debian-12`).
    pub distro: String,
    /// Debian's architecture name of the set (`amd64`).
    pub arch: String,
    /// The package name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Where it was fetched from.
    pub url: String,
    /// Its sha256, as the repository's index gives it.
    pub digest: Sha256Digest,
    /// Its size in bytes.
    pub size: u64,
}

/// An image reference pinned to a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockedImage {
    /// The fully qualified reference as written in the manifest, e.g.
    /// `docker.io/library/busybox:1.36`.
    pub reference: String,
    /// The digest of the manifest or index the reference resolved to.
    pub digest: Sha256Digest,
    /// The media type of that manifest or index.
    pub media_type: String,
}

/// A downloaded file pinned to its sha256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockedFile {
    /// The binary's or chart's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The platform, for platform-specific files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// Where it was fetched from.
    pub url: String,
    /// Its sha256.
    pub digest: Sha256Digest,
    /// Its size in bytes.
    pub size: u64,
}

impl Lock {
    /// An empty lock dated `created`.
    pub fn new(created: Timestamp) -> Self {
        Self {
            version: LOCK_VERSION,
            created,
            images: Vec::new(),
            binaries: Vec::new(),
            charts: Vec::new(),
            packages: Vec::new(),
            referrers: Vec::new(),
        }
    }
}

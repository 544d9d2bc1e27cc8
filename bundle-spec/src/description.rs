//! The bundle description `kk-bundle/bundle.json`: what a bundle holds and where it came from.

use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;
pub use crate::format_version::{DELTA_FORMAT_VERSION, FORMAT_VERSION, FormatVersion};
use crate::lock::Lock;

/// The bundle description. Unknown fields are ignored when reading, so that a newer minor
/// version stays readable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    /// The format version the bundle follows.
    pub format_version: FormatVersion,
    /// The program that wrote the bundle.
    pub builder: BuilderInfo,
    /// When the bundle was built: `SOURCE_DATE_EPOCH` if set, else the lock's time, never the
    /// clock at write time. Every member's mtime equals it.
    pub created: Timestamp,
    /// The manifest the bundle was built from, verbatim.
    pub manifest: SourceManifest,
    /// The resolved lock the bundle was built from.
    pub lock: Lock,
    /// One entry per artifact (per platform, where an artifact has several).
    pub artifacts: Vec<Artifact>,
    /// For a delta bundle (format 2), the bundle it builds on and the blobs taken from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<DeltaBase>,
    /// The operating-system packages, one set per distribution release and architecture.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<crate::packages::PackageSet>,
}

/// What a delta bundle needs from the bundle it builds on.
///
/// The delta's `index.json` and artifacts describe the whole content; its checksum list names
/// only the blobs it carries. The rest are listed here, so a reader checks a store for them
/// without walking any manifest, and names the base in the error when one is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaBase {
    /// The identity (sha256 of the checksum list) of the bundle the delta builds on.
    pub identity: Sha256Digest,
    /// The blobs the delta needs and does not carry, sorted by digest.
    pub blobs: Vec<BaseBlob>,
}

/// A blob a delta bundle takes from its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseBlob {
    /// Its digest.
    pub digest: Sha256Digest,
    /// Its size in bytes.
    pub size: u64,
}

/// The name and version of the builder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuilderInfo {
    /// Program name, e.g. `kk-bundle`.
    pub name: String,
    /// Program version.
    pub version: String,
}

/// The source manifest, kept byte for byte (comments included) as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceManifest {
    /// The file name the manifest had, for display only.
    pub name: String,
    /// The manifest's text.
    pub text: String,
}

/// What kind of thing an artifact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactKind {
    /// A container image (manifest or index), stored as upstream served it.
    Image,
    /// An executable or archive of executables, as an ORAS-style file artifact.
    Binary,
    /// A Helm chart, with Helm's OCI media types.
    Chart,
    /// Any other file, as an ORAS-style file artifact.
    File,
    /// An operating-system package (a `.deb`), as an ORAS-style file artifact.
    Package,
}

impl fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Image => "image",
            Self::Binary => "binary",
            Self::Chart => "chart",
            Self::File => "file",
            Self::Package => "package",
        })
    }
}

/// One artifact in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// What it is.
    pub kind: ArtifactKind,
    /// Its name: the repository of an image (`docker.io/library/busybox`), a binary's or a
    /// chart's name.
    pub name: String,
    /// Its version: an image's tag or digest, a binary's or chart's version.
    pub version: String,
    /// The platform, `os/arch[/variant]`, for platform-specific content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The value of `org.opencontainers.image.ref.name` under which `index.json` names it.
    pub reference: String,
    /// The digest of its manifest (or index).
    pub digest: Sha256Digest,
    /// The total size of the blobs it needs in this bundle, manifests included.
    pub size: u64,
    /// Platforms an upstream index offers that the bundle leaves out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted_platforms: Vec<String>,
}

/// The time a bundle is dated with: `SOURCE_DATE_EPOCH` (whole seconds since 1970) when the
/// variable is set, otherwise the time its lock was resolved — never the clock at write time, so
/// that one lock always gives one byte sequence.
pub fn creation_time(lock: &Lock) -> Result<Timestamp, BundleError> {
    creation_time_from(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref(), lock)
}

fn creation_time_from(
    source_date_epoch: Option<&str>,
    lock: &Lock,
) -> Result<Timestamp, BundleError> {
    let Some(text) = source_date_epoch else {
        return Ok(Timestamp::from_second(lock.created.as_second()).unwrap_or(lock.created));
    };
    text.parse::<i64>()
        .ok()
        .filter(|seconds| *seconds >= 0)
        .and_then(|seconds| Timestamp::from_second(seconds).ok())
        .ok_or_else(|| BundleError::SourceDateEpoch(text.to_owned()))
}

impl Description {
    /// The canonical JSON bytes of the description: keys sorted, no whitespace.
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        canonical_json(self)
    }
}

/// Serialises `value` with object keys sorted, so equal values give equal bytes (several OCI
/// types keep annotations in hash maps, whose order would otherwise vary run to run).
pub(crate) fn canonical_json<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    // serde_json's `Value` keeps objects in a BTreeMap (the `preserve_order` feature is off),
    // so a round trip through it sorts every object's keys.
    serde_json::to_vec(&serde_json::to_value(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_time_prefers_source_date_epoch_then_the_lock() {
        let lock = Lock::new("2026-01-02T03:04:05.678Z".parse().unwrap());
        let cases: &[(Option<&str>, Result<&str, ()>)] = &[
            (None, Ok("2026-01-02T03:04:05Z")),
            (Some("0"), Ok("1970-01-01T00:00:00Z")),
            (Some("1795000000"), Ok("2026-11-18T11:06:40Z")),
            (Some("-1"), Err(())),
            (Some("1.5"), Err(())),
            (Some(""), Err(())),
            (Some("tomorrow"), Err(())),
        ];
        for (env, expected) in cases {
            let got = creation_time_from(*env, &lock)
                .map(|t| t.to_string())
                .map_err(|_| ());
            assert_eq!(
                got.as_deref(),
                expected.as_deref().map_err(|()| &()),
                "{env:?}"
            );
        }
    }

    #[test]
    fn format_versions() {
        let cases: &[(&str, Option<(u32, u32)>)] = &[
            ("1.0", Some((1, 0))),
            ("1.12", Some((1, 12))),
            ("2.0", Some((2, 0))),
            ("1", None),
            ("01.0", None),
            ("1.0.0", None),
            ("1.-1", None),
            ("v1.0", None),
            ("", None),
        ];
        for (text, expected) in cases {
            let parsed = text
                .parse::<FormatVersion>()
                .ok()
                .map(|v| (v.major, v.minor));
            assert_eq!(parsed, *expected, "{text}");
        }
    }
}

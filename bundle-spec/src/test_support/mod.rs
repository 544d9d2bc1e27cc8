//! Helpers for tests of this crate and of the crates that read and write bundles (feature
//! `test-support`, enabled only as a dev-dependency): one owner for the minimal bundle
//! description tests build bundles around, and for bundles crafted member by member (lying
//! headers, wrong digests) that the reader's tests, the fuzz targets and the crafted-bundle
//! benchmark feed to the reader.

// Helpers for tests: they panic on what no test gives them (invalid member paths, times).
#![allow(clippy::missing_panics_doc)]

mod bytes;
mod crafted;
mod images;
mod layout;
mod members;

pub use bytes::incompressible;
pub use crafted::{
    RawMember, blob_path, checksum_list, craft_bundle, description_json, frame_tar, minimal_members,
};
pub use images::{TestImage, WrittenImages, write_delta_images, write_images};
pub use layout::{HandLayout, descriptor, manifest_bytes, named};
pub use members::verified_members;

use crate::description::{
    Artifact, ArtifactKind, BuilderInfo, Description, FORMAT_VERSION, SourceManifest,
};
use crate::digest::Sha256Digest;
use crate::lock::{Lock, LockedFile};

/// A bundle description of `artifacts`, made at `created` by a builder named `test`.
pub fn description(created: jiff::Timestamp, artifacts: Vec<Artifact>) -> Description {
    Description {
        format_version: FORMAT_VERSION,
        builder: BuilderInfo {
            name: "test".into(),
            version: "0".into(),
        },
        created,
        manifest: SourceManifest {
            name: "m.yaml".into(),
            text: String::new(),
        },
        lock: Lock::new(created),
        artifacts,
        base: None,
        packages: Vec::new(),
    }
}

/// An artifact of `kind` named by `reference`, with a digest made from the reference and the
/// platform (distinct per entry) and a size of 1: enough for what only reads the description.
pub fn artifact(
    kind: ArtifactKind,
    name: &str,
    version: &str,
    platform: Option<&str>,
    reference: String,
) -> Artifact {
    Artifact {
        kind,
        name: name.into(),
        version: version.into(),
        platform: platform.map(Into::into),
        digest: Sha256Digest::of(format!("{reference} {platform:?}").as_bytes()),
        reference,
        size: 1,
        omitted_platforms: vec![],
    }
}

/// A lock entry for a file downloaded from `url`, with a digest made from the URL and a size of 1.
pub fn locked_file(name: &str, version: &str, platform: Option<&str>, url: &str) -> LockedFile {
    LockedFile {
        name: name.into(),
        version: version.into(),
        platform: platform.map(Into::into),
        url: url.into(),
        digest: Sha256Digest::of(url.as_bytes()),
        size: 1,
    }
}

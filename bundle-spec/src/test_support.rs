//! Helpers for tests of this crate and of the crates that read and write bundles (feature
//! `test-support`, enabled only as a dev-dependency): one owner for the minimal bundle
//! description tests build bundles around.

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

/// `tar` (any bytes) as the frames of a bundle: a frame starts wherever a tar header would
/// (at 0, then after each header's block, content and padding, as far as the header's size field
/// can be read), then the end, the integrity frame and the seek table are added as a writer adds
/// them. Mutations of `tar` thus reach the tar and checksum checks behind the frame checks; the
/// structure-aware fuzz target feeds this.
pub fn frame_tar(tar: &[u8]) -> Vec<u8> {
    use std::io::Write as _;

    use crate::member::{BLOCK, padding};
    use crate::write::frames::FrameEncoder;

    let mut encoder = FrameEncoder::new(Vec::new(), 1, 1);
    let mut at = 0usize;
    while at < tar.len() {
        let block = &tar[at..tar.len().min(at + BLOCK as usize)];
        let size = (block.len() == BLOCK as usize)
            .then(|| tar::Header::from_byte_slice(block).entry_size().ok())
            .flatten()
            .and_then(|size| size.checked_add(BLOCK + padding(size)))
            .and_then(|len| usize::try_from(len).ok())
            .unwrap_or(usize::MAX);
        let end = at.saturating_add(size).min(tar.len());
        let _ = encoder.end_frame();
        let _ = encoder.write_all(&tar[at..end]);
        at = end;
    }
    encoder.finish().unwrap_or_default()
}

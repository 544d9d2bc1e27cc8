//! Bundles crafted member by member: any header (lying or not), any data, in valid frames.

use crate::digest::Sha256Digest;
use crate::format_version::{FORMAT_VERSION, FormatVersion, IntegrityKind};
use crate::oci::{BLOBS_DIR, INDEX_PATH, OCI_LAYOUT, OCI_LAYOUT_PATH};

/// `tar` (any bytes) as the frames of a bundle: a frame starts wherever a tar header would
/// (at 0, then after each header's block, content and padding, as far as the header's size field
/// can be read), then the end, the integrity frame and the seek table are added as a writer adds
/// them. Mutations of `tar` thus reach the tar and checksum checks behind the frame checks; the
/// structure-aware fuzz target feeds this.
pub fn frame_tar(tar: &[u8]) -> Vec<u8> {
    use std::io::Write as _;

    use crate::member::{BLOCK, DESCRIPTION_PATH, padding};
    use crate::write::frames::FrameEncoder;

    let (mut members, mut at) = (Vec::new(), 0usize);
    while at < tar.len() {
        let block = &tar[at..tar.len().min(at + BLOCK as usize)];
        let header = (block.len() == BLOCK as usize).then(|| tar::Header::from_byte_slice(block));
        let size = header
            .and_then(|header| header.entry_size().ok())
            .and_then(|size| size.checked_add(BLOCK + padding(size)))
            .and_then(|len| usize::try_from(len).ok())
            .unwrap_or(usize::MAX);
        let end = at.saturating_add(size).min(tar.len());
        let is_description =
            header.is_some_and(|h| &h.path_bytes()[..] == DESCRIPTION_PATH.as_bytes());
        members.push((at..end, is_description));
        at = end;
    }
    let description = members
        .iter()
        .find(|(_, is_description)| *is_description)
        .map(|(range, _)| &tar[range.start + BLOCK as usize..range.end]);
    let kind = integrity_kind_of(description.unwrap_or_default());
    let mut encoder = FrameEncoder::new(Vec::new(), 1, 1, kind);
    for (range, _) in members {
        let _ = encoder.end_frame();
        let _ = encoder.write_all(&tar[range]);
    }
    encoder.finish().unwrap_or_default()
}

/// The integrity frame a bundle whose description holds `description` (and maybe padding)
/// carries: the one its `formatVersion` requires, or the current format's if it states none a
/// reader would take, so that a crafted bundle gets past the integrity check to what it tests.
fn integrity_kind_of(description: &[u8]) -> IntegrityKind {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct VersionOnly {
        format_version: FormatVersion,
    }
    let json = description
        .iter()
        .rposition(|b| *b != 0)
        .map_or(&description[..0], |last| &description[..=last]);
    serde_json::from_slice::<VersionOnly>(json)
        .ok()
        .map(|v| v.format_version)
        .filter(|version| version.is_known_major())
        .unwrap_or(FORMAT_VERSION)
        .integrity_kind()
}

/// One tar member as a crafted bundle holds it: any header (lying or not), any data.
#[derive(Debug)]
pub struct RawMember {
    /// The header block, written as it is.
    pub header: tar::Header,
    /// The content written after it.
    pub data: Vec<u8>,
}

impl RawMember {
    /// `data` at `path` (which must be a valid member path) under the canonical header of its
    /// true size.
    pub fn new(path: &str, data: Vec<u8>, mtime: u64) -> Self {
        let size = data.len() as u64;
        Self::claiming(path, data, size, mtime)
    }

    /// `data` at `path` under a canonical header that claims `size` bytes, true or not.
    pub fn claiming(path: &str, data: Vec<u8>, size: u64, mtime: u64) -> Self {
        let path = crate::member::MemberPath::parse(path).expect("crafted paths are valid");
        Self {
            header: crate::member::canonical_header(&path, size, mtime),
            data,
        }
    }
}

/// The description member's bytes for a bundle of no artifacts, made at `mtime` and stating
/// format `version`.
pub fn description_json(version: &str, mtime: u64) -> Vec<u8> {
    let created = jiff::Timestamp::from_second(i64::try_from(mtime).expect("a small time"))
        .expect("a valid time");
    let mut json = serde_json::to_value(super::description(created, vec![])).expect("serialisable");
    json["formatVersion"] = version.into();
    serde_json::to_vec(&json).expect("serialisable")
}

/// The member path of a blob holding `data`.
pub fn blob_path(data: &[u8]) -> String {
    format!("{BLOBS_DIR}/{}", Sha256Digest::of(data).hex())
}

/// The members of the smallest valid bundle (format 1.0, one blob `hello`), after the checksum
/// list.
pub fn minimal_members(mtime: u64) -> Vec<RawMember> {
    vec![
        RawMember::new(
            crate::member::DESCRIPTION_PATH,
            description_json("1.0", mtime),
            mtime,
        ),
        RawMember::new(OCI_LAYOUT_PATH, OCI_LAYOUT.to_vec(), mtime),
        RawMember::new(INDEX_PATH, b"{}".to_vec(), mtime),
        RawMember::new(&blob_path(b"hello"), b"hello".to_vec(), mtime),
    ]
}

/// The checksum list naming `members` by their header names and the sha256 of their data, or
/// of as much of it as a header claims when it claims less.
pub fn checksum_list(members: &[RawMember]) -> Vec<u8> {
    let mut list = crate::checksums::ChecksumList::new();
    for raw in members {
        let name = String::from_utf8_lossy(&raw.header.path_bytes()).into_owned();
        let claimed = raw.header.entry_size().unwrap_or(u64::MAX);
        let content = &raw.data[..raw
            .data
            .len()
            .min(usize::try_from(claimed).unwrap_or(usize::MAX))];
        list.insert(
            crate::member::MemberPath::parse(&name).expect("listed paths are valid"),
            Sha256Digest::of(content),
        );
    }
    list.to_bytes()
}

/// A bundle file of the checksum `list` and `members`, each starting a frame (header, data,
/// then zeros up to the block after what the header claims or the data holds, whichever is
/// more), then the end marker if `end_marker`, the integrity frame and the seek table: frames,
/// table and integrity all valid, whatever the members say.
pub fn craft_bundle(list: &[u8], members: &[RawMember], end_marker: bool) -> Vec<u8> {
    use std::io::Write as _;

    use crate::member::{BLOCK, CHECKSUMS_PATH, DESCRIPTION_PATH, padding};
    use crate::write::frames::FrameEncoder;

    let mtime = members
        .first()
        .and_then(|m| m.header.mtime().ok())
        .unwrap_or_default();
    let first = RawMember::new(CHECKSUMS_PATH, list.to_vec(), mtime);
    let description = members
        .iter()
        .find(|raw| &raw.header.path_bytes()[..] == DESCRIPTION_PATH.as_bytes());
    let kind = integrity_kind_of(description.map_or(&[][..], |raw| &raw.data));
    let mut encoder = FrameEncoder::new(Vec::new(), 1, 1, kind);
    for raw in std::iter::once(&first).chain(members) {
        encoder.end_frame().expect("frame");
        encoder.write_all(raw.header.as_bytes()).expect("header");
        encoder.write_all(&raw.data).expect("data");
        let size = raw.header.entry_size().unwrap_or_default();
        let written = raw.data.len() as u64;
        let zeros = usize::try_from(padding(written.max(size))).expect("under a block");
        encoder.write_all(&vec![0; zeros]).expect("padding");
    }
    if end_marker {
        encoder.end_frame().expect("frame");
        encoder.write_all(&[0; 2 * BLOCK as usize]).expect("end");
    }
    encoder.finish().expect("finish")
}

//! Rejection tests: bundles crafted member by member, each breaking one rule of SPEC.md, and
//! the error the reader must give for it.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use tempfile::TempDir;

use super::Bundle;
use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;
use crate::format_version::IntegrityKind;
use crate::member::{MemberPath, canonical_header, padding};
use crate::test_support::{RawMember as Raw, blob_path, checksum_list as list_of, craft_bundle};
use crate::write::frames::FrameEncoder;

const MTIME: u64 = 1_795_000_000;

fn member(path: &str, data: &[u8]) -> Raw {
    Raw::new(path, data.to_vec(), MTIME)
}

/// A canonical header for `path`, with its name bytes written as given (even `..` or `/x`).
fn named(path: &str, data: &[u8], entry: tar::EntryType) -> Raw {
    let mut raw = member("oci-layout", data);
    let name = &mut raw.header.as_old_mut().name;
    name.fill(0);
    name[..path.len()].copy_from_slice(path.as_bytes());
    raw.header.set_entry_type(entry);
    raw.header.set_cksum();
    raw
}

fn description(version: &str) -> Vec<u8> {
    crate::test_support::description_json(version, MTIME)
}

/// The members of a valid bundle, after the checksum list.
fn valid_members() -> Vec<Raw> {
    crate::test_support::minimal_members(MTIME)
}

fn craft(list: &[u8], members: &[Raw]) -> Vec<u8> {
    craft_bundle(list, members, true)
}

struct Written {
    /// Kept so the bundle lives as long as the test needs it.
    _dir: TempDir,
    path: PathBuf,
}

fn write(bytes: &[u8]) -> Written {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("b.tar.zst");
    fs::write(&path, bytes).expect("write");
    Written { _dir: dir, path }
}

fn verify(bytes: &[u8]) -> Result<(), BundleError> {
    let written = write(bytes);
    Bundle::open(&written.path)?.verify().map(|_| ())
}

fn valid() -> Vec<u8> {
    let members = valid_members();
    craft(&list_of(&members), &members)
}

#[test]
fn the_crafted_baseline_is_valid() {
    verify(&valid()).expect("the baseline bundle verifies");
}

#[test]
fn verify_with_progress_tells_every_member_byte() {
    let members = valid_members();
    let list = list_of(&members);
    let written = write(&craft(&list, &members));
    let mut told = 0;
    Bundle::open(&written.path)
        .expect("open")
        .verify_with_progress(&mut |bytes| told += bytes)
        .expect("verifies");
    // The checksum list is a member too.
    let data: usize = list.len() + members.iter().map(|m| m.data.len()).sum::<usize>();
    assert_eq!(told, data as u64);
}

#[test]
fn refuses_a_digest_mismatch() {
    let mut members = valid_members();
    let list = list_of(&members);
    members[3].data = b"hellO".to_vec();
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::DigestMismatch { member, .. } if member.as_str() == blob_path(b"hello")),
        "{err}"
    );
}

#[test]
fn refuses_a_member_not_in_the_list() {
    let mut members = valid_members();
    let list = list_of(&members);
    members.push(member(&blob_path(b"extra"), b"extra"));
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::NotListed { member } if member.as_str() == blob_path(b"extra")),
        "{err}"
    );
}

#[test]
fn refuses_a_listed_member_that_is_missing() {
    let mut members = valid_members();
    members.push(member(&blob_path(b"gone"), b"gone"));
    let list = list_of(&members);
    members.pop();
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::Missing { member } if member.as_str() == blob_path(b"gone")),
        "{err}"
    );
}

#[test]
fn refuses_a_duplicate_member() {
    let mut members = valid_members();
    let list = list_of(&members);
    members.push(member(&blob_path(b"hello"), b"hello"));
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::Duplicate { member } if member.as_str() == blob_path(b"hello")),
        "{err}"
    );
}

#[test]
fn refuses_dot_dot_paths() {
    let mut members = valid_members();
    let list = list_of(&members);
    members.push(named(
        "blobs/../../etc/passwd",
        b"x",
        tar::EntryType::Regular,
    ));
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::UnsafePath { member } if member == "blobs/../../etc/passwd"),
        "{err}"
    );
}

#[test]
fn refuses_absolute_paths() {
    let mut members = valid_members();
    let list = list_of(&members);
    members.push(named("/etc/passwd", b"x", tar::EntryType::Regular));
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::UnsafePath { member } if member == "/etc/passwd"),
        "{err}"
    );
}

#[test]
fn refuses_links() {
    for (entry, kind) in [
        (tar::EntryType::Symlink, "symbolic link"),
        (tar::EntryType::Link, "hard link"),
    ] {
        let mut members = valid_members();
        let list = list_of(&members);
        let mut link = named("index.json", b"", entry);
        link.header.set_link_name("/etc/shadow").expect("link name");
        link.header.set_cksum();
        members.insert(2, link);
        let err = verify(&craft(&list, &members)).unwrap_err();
        assert!(
            matches!(&err, BundleError::NotAFile { member, .. } if member == "index.json"),
            "{err}"
        );
        assert!(err.to_string().contains(kind), "{err}");
    }
}

#[test]
fn refuses_device_files_and_fifos() {
    for (entry, kind) in [
        (tar::EntryType::Char, "character device"),
        (tar::EntryType::Block, "block device"),
        (tar::EntryType::Fifo, "fifo"),
    ] {
        let mut members = valid_members();
        let list = list_of(&members);
        members.insert(2, named("index.json", b"", entry));
        let err = verify(&craft(&list, &members)).unwrap_err();
        assert!(
            matches!(&err, BundleError::NotAFile { member, .. } if member == "index.json"),
            "{err}"
        );
        assert!(err.to_string().contains(kind), "{err}");
    }
}

#[test]
fn refuses_directories() {
    let mut members = valid_members();
    let list = list_of(&members);
    members.insert(2, named("blobs", b"", tar::EntryType::Directory));
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::NotAFile { member, .. } if member == "blobs"),
        "{err}"
    );
}

#[test]
fn refuses_an_oversized_header_before_reading_it() {
    use crate::member::{MAX_CHECKSUMS_SIZE, MAX_HEADER_FILE_SIZE, MAX_PARSED_HEADER_SIZE};

    let table = [
        ("kk-bundle/SHA256SUMS", MAX_CHECKSUMS_SIZE),
        ("kk-bundle/bundle.json", MAX_PARSED_HEADER_SIZE),
        ("index.json", MAX_PARSED_HEADER_SIZE),
        ("kk-bundle/sbom.spdx.json", MAX_HEADER_FILE_SIZE),
    ];
    let mut listed = valid_members();
    listed.push(member("kk-bundle/sbom.spdx.json", b"{}"));
    let first = member("kk-bundle/SHA256SUMS", &list_of(&listed));
    for (path, limit) in table {
        let mut huge = member(path, b"");
        huge.header.set_size(limit + 1);
        huge.header.set_cksum();
        // The stream ends after the header: the reader must refuse on the size field alone.
        let mut encoder = FrameEncoder::new(Vec::new(), 3, 1, IntegrityKind::FrameList);
        if path != "kk-bundle/SHA256SUMS" {
            encoder.write_all(first.header.as_bytes()).expect("header");
            encoder.write_all(&first.data).expect("data");
            let pad = padding(first.data.len() as u64) as usize;
            encoder.write_all(&vec![0; pad]).expect("padding");
        }
        encoder.end_frame().expect("frame");
        encoder.write_all(huge.header.as_bytes()).expect("header");
        encoder.end_frame().expect("frame");
        encoder.write_all(&[0; 1024]).expect("end");
        let err = verify(&encoder.finish().expect("finish")).unwrap_err();
        assert!(
            matches!(&err, BundleError::TooLarge { member, limit: l, .. } if member.as_str() == path && *l == limit),
            "{path}: {err}"
        );
    }
}

#[test]
fn refuses_an_unknown_major_version() {
    let mut members = valid_members();
    members[0] = member(
        "kk-bundle/bundle.json",
        br#"{"formatVersion":"5.0","anything":"else"}"#,
    );
    let err = verify(&craft(&list_of(&members), &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::UnsupportedVersion { found, .. } if found.major == 5),
        "{err}"
    );
}

#[test]
fn a_base_goes_with_format_2_and_names_no_member() {
    let carried = Sha256Digest::of(b"hello").hex();
    let base = |version: &str, blobs: &[&str]| {
        let mut json: serde_json::Value =
            serde_json::from_slice(&description(version)).expect("json");
        if !blobs.is_empty() {
            let blobs: Vec<_> = blobs
                .iter()
                .map(|hex| serde_json::json!({"digest": format!("sha256:{hex}"), "size": 1}))
                .collect();
            json["base"] = serde_json::json!({"identity": format!("sha256:{}", "e".repeat(64)), "blobs": blobs});
        }
        serde_json::to_vec(&json).expect("json")
    };
    let (a, b) = ("a".repeat(64), "b".repeat(64));
    let cases: &[(&str, &[&str], Option<&str>)] = &[
        ("2.0", &[&a, &b], None),
        ("2.0", &[], Some("must name the bundle it builds on")),
        ("1.0", &[&a], Some("only a delta bundle")),
        ("2.0", &[&b, &a], Some("out of order or twice")),
        ("2.0", &[&a, &a], Some("out of order or twice")),
        ("2.0", &[&carried], Some("both carried and taken")),
    ];
    for (version, blobs, expected) in cases {
        let mut members = valid_members();
        members[0] = member("kk-bundle/bundle.json", &base(version, blobs));
        let result = verify(&craft(&list_of(&members), &members));
        match expected {
            None => result.unwrap_or_else(|e| panic!("{version} {blobs:?}: {e}")),
            Some(text) => {
                let err = result.expect_err("refused").to_string();
                assert!(err.contains(text), "{version} {blobs:?}: {err}");
            }
        }
    }
}

#[test]
fn reads_a_newer_minor_version_and_says_so() {
    let mut members = valid_members();
    members[0] = member("kk-bundle/bundle.json", &description("1.7"));
    members.insert(3, member("kk-bundle/signature.json", b"{}"));
    let written = write(&craft(&list_of(&members), &members));
    let mut bundle = Bundle::open(&written.path).expect("opens");
    assert!(bundle.is_newer_minor());
    bundle.verify().expect("verifies");
}

#[test]
fn refuses_a_truncated_file() {
    let bytes = valid();
    for cut in [1, 9, 40, bytes.len() / 2, bytes.len() - 1] {
        let err = verify(&bytes[..bytes.len() - cut]).unwrap_err();
        assert!(err.to_string().contains("truncated"), "cut {cut}: {err}");
    }
}

#[test]
fn refuses_a_tar_stream_without_end_marker() {
    let members = valid_members();
    let err = verify(&craft_bundle(&list_of(&members), &members, false)).unwrap_err();
    assert!(
        matches!(&err, BundleError::Truncated { after: Some(m) } if m.as_str() == blob_path(b"hello")),
        "{err}"
    );
}

#[test]
fn refuses_a_non_canonical_header() {
    let mut members = valid_members();
    let list = list_of(&members);
    members[2].header.set_mode(0o4755);
    members[2].header.set_cksum();
    let err = verify(&craft(&list, &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::NonCanonical { member, .. } if member.as_str() == "index.json"),
        "{err}"
    );
}

#[test]
fn refuses_a_member_that_does_not_start_a_frame() {
    let members = valid_members();
    let list = list_of(&members);
    // The members say format 1.0.
    let mut encoder = FrameEncoder::new(Vec::new(), 3, 1, IntegrityKind::WholeFile);
    for raw in std::iter::once(&member("kk-bundle/SHA256SUMS", &list)).chain(&members) {
        // No frame boundary before oci-layout.
        if !raw.header.path_bytes().starts_with(b"oci-layout") {
            encoder.end_frame().expect("frame");
        }
        encoder.write_all(raw.header.as_bytes()).expect("header");
        encoder.write_all(&raw.data).expect("data");
        encoder
            .write_all(&vec![0; padding(raw.data.len() as u64) as usize])
            .expect("pad");
    }
    encoder.end_frame().expect("frame");
    encoder.write_all(&[0; 1024]).expect("end");
    let err = verify(&encoder.finish().expect("finish")).unwrap_err();
    assert!(
        matches!(&err, BundleError::EndsInsideFrame { member, .. } if member.as_str() == "kk-bundle/bundle.json"),
        "{err}"
    );
}

/// A blob whose header claims less than its frames hold (and whose listed digest is that of
/// what it claims) ends inside a frame: refused there, before the rest of the frame, whatever
/// it holds, is read as a header.
#[test]
fn a_member_shorter_than_its_frames_is_refused_where_it_ends() {
    let mut members = valid_members();
    let data = b"ab\x1b[31mcd".repeat(200);
    // A whole number of blocks: no padding after it to catch the lie first.
    let claimed = 1024;
    let path = blob_path(&data[..claimed]);
    members.push(Raw::claiming(&path, data, claimed as u64, MTIME));
    let written = write(&craft(&list_of(&members), &members));
    let mut bundle = Bundle::open(&written.path).expect("the header members are intact");
    let listed = bundle.members().unwrap_err();
    let walked = bundle.verify().unwrap_err();
    for err in [listed, walked] {
        assert!(
            matches!(&err, BundleError::EndsInsideFrame { member, end } if member.as_str() == path && *end > 1024),
            "{err}"
        );
    }
}

/// A walk (verify, unpack) refuses a header that claims more than the stream holds before it
/// reads the member, not once it runs out of bytes.
#[test]
fn a_walk_refuses_a_member_larger_than_the_bundle_at_its_header() {
    let mut members = valid_members();
    let data = b"hello".to_vec();
    let path = blob_path(&data);
    members.pop();
    members.push(Raw::claiming(&path, data, 1 << 40, MTIME));
    let err = verify(&craft(&list_of(&members), &members)).unwrap_err();
    assert!(
        matches!(&err, BundleError::MemberTooLong { member, size, .. } if member.as_str() == path && *size == 1 << 40),
        "{err}"
    );
}

/// Names read from the file are shown with control characters escaped: a crafted name cannot
/// send terminal escapes to the operator's screen.
#[test]
fn names_from_the_file_are_shown_escaped() {
    let mut members = valid_members();
    let list = list_of(&members);
    members.push(named("blobs/\x1b[2J", b"", tar::EntryType::Regular));
    let err = verify(&craft(&list, &members)).unwrap_err();
    let shown = err.to_string();
    assert!(matches!(&err, BundleError::UnknownMember { .. }), "{shown}");
    assert!(
        shown.contains(r"`blobs/\u{1b}[2J`") && !shown.contains('\x1b'),
        "{shown}"
    );
}

#[test]
fn refuses_something_that_is_not_a_bundle() {
    let members = valid_members();
    let mut encoder = FrameEncoder::new(Vec::new(), 3, 1, IntegrityKind::FrameList);
    for raw in &members {
        encoder.end_frame().expect("frame");
        encoder.write_all(raw.header.as_bytes()).expect("header");
        encoder.write_all(&raw.data).expect("data");
        encoder
            .write_all(&vec![0; padding(raw.data.len() as u64) as usize])
            .expect("pad");
    }
    let err = verify(&encoder.finish().expect("finish")).unwrap_err();
    assert!(
        matches!(&err, BundleError::NotABundle { first } if first == "kk-bundle/bundle.json"),
        "{err}"
    );
    let err = verify(b"just some text that is long enough to have an end").unwrap_err();
    assert!(matches!(err, BundleError::SeekTable(_)), "{err}");
}

#[test]
fn a_bundle_of_format_1_0_has_no_sbom_and_inspecting_it_names_the_version() {
    let written = write(&valid());
    let mut bundle = Bundle::open(&written.path).expect("opens");
    assert_eq!(bundle.sbom().expect("reads"), None);
    let err = crate::inspect::inspect_sbom(&written.path).unwrap_err();
    assert!(
        matches!(&err, BundleError::NoSbom { version } if version.to_string() == "1.0"),
        "{err}"
    );
    assert!(err.to_string().contains("format version `1.0`"), "{err}");
}

#[test]
fn the_sbom_is_verified_and_a_listed_but_absent_one_is_named() {
    let sbom = || member("kk-bundle/sbom.spdx.json", b"{}");
    let mut members = valid_members();
    members.insert(3, sbom());
    let list = list_of(&members);
    let written = write(&craft(&list, &members));
    let read = |written: &Written| Bundle::open(&written.path).expect("opens").sbom();
    assert_eq!(read(&written).expect("reads"), Some(b"{}".to_vec()));

    members[3].data = b"[]".to_vec();
    let err = read(&write(&craft(&list, &members))).unwrap_err();
    assert!(
        matches!(&err, BundleError::DigestMismatch { member, .. } if member.as_str() == "kk-bundle/sbom.spdx.json"),
        "{err}"
    );

    members.remove(3);
    let err = read(&write(&craft(&list, &members))).unwrap_err();
    assert!(
        matches!(&err, BundleError::Missing { member } if member.as_str() == "kk-bundle/sbom.spdx.json"),
        "{err}"
    );
}

/// Regression (fuzzing, issue 14): a header whose size nears 2^64 is canonical (GNU base-256),
/// and listing the members then overflowed the next member's offset: a panic in debug builds,
/// an endless loop in release, through `members` and `copy_member`.
#[test]
fn a_member_larger_than_the_bundle_is_refused_when_listing() {
    let mut members = valid_members();
    let path = MemberPath::parse(&blob_path(b"hello")).expect("blob path");
    let last = members.len() - 1;
    members[last].header = canonical_header(&path, u64::MAX - 1000, MTIME);
    let written = write(&craft(&list_of(&members), &members));
    let mut bundle = Bundle::open(&written.path).expect("the header members are intact");
    let err = bundle.members().expect_err("refused");
    assert!(
        matches!(&err, BundleError::MemberTooLong { member, size, .. } if *member == path && *size == u64::MAX - 1000),
        "{err}"
    );
    let mut out = Vec::new();
    assert!(matches!(
        bundle.copy_member(path.as_str(), &mut out),
        Err(BundleError::MemberTooLong { .. })
    ));
    // What acts on the header alone (inspect, the install's plan) refuses it too.
    assert!(matches!(
        Bundle::open_listed(&written.path),
        Err(BundleError::MemberTooLong { .. })
    ));
    assert!(matches!(
        crate::inspect::inspect_text(&written.path),
        Err(BundleError::MemberTooLong { .. })
    ));
}

/// Regression (fuzzing, issue 14): a seek table that fills the file and lists far more frames
/// than a bundle of that size can have was parsed whole, allocating about nine times the file's
/// size, before its entries were found wrong. It is now refused from the footer alone.
#[test]
fn a_frame_count_the_file_cannot_hold_is_refused_from_the_footer() {
    let count: u32 = 1_000_000;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&0x184D_2A5Eu32.to_le_bytes());
    bytes.extend_from_slice(&(count * 8 + 9).to_le_bytes());
    bytes.resize(bytes.len() + count as usize * 8, 0);
    bytes.extend_from_slice(&count.to_le_bytes());
    bytes.push(0);
    bytes.extend_from_slice(&0x8F92_EAB1u32.to_le_bytes());
    assert!(u64::from(count) > super::frames::max_frames(bytes.len() as u64));
    let err = verify(&bytes).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("it lists {count} frames, more than a bundle of")),
        "{err}"
    );
}

//! Integration tests of the bundle format: the writer and reader together, and real `zstd`
//! and `tar` reading what the writer made.

// Test helpers outside `#[test]` functions fail loudly on purpose.
#![allow(clippy::unwrap_used)]

mod fixture;

use std::fs;
use std::path::Path;
use std::process::Command;

use bundle_spec::write::WriteOptions;
use bundle_spec::{Bundle, BundleError, Sha256Digest, write_bundle};
use fixture::Fixture;
use proptest::prelude::*;

fn options() -> WriteOptions {
    WriteOptions {
        level: 3,
        workers: 2,
        split_size: None,
        verify_blobs: true,
    }
}

#[test]
fn round_trip_gives_identical_blobs() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("b.tar.zst");
    let written = write_bundle(&fx.contents, &target, &options()).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    assert_eq!(bundle.identity(), written.identity);
    assert_eq!(bundle.description(), &fx.contents.description);
    let out = fx.dir.path().join("unpacked");
    let verified = bundle.unpack(&out).unwrap();
    assert_eq!(verified.members, written.members);
    for blob in &fx.contents.blobs {
        let unpacked = out.join("blobs/sha256").join(blob.digest.hex());
        assert_eq!(fs::read(unpacked).unwrap(), fs::read(&blob.path).unwrap());
    }
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("index.json")).unwrap()).unwrap();
    assert_eq!(index, serde_json::to_value(&fx.contents.index).unwrap());
    assert_eq!(
        fs::read(out.join("oci-layout")).unwrap(),
        br#"{"imageLayoutVersion":"1.0.0"}"#
    );
}

#[test]
fn same_contents_give_the_same_bytes() {
    let fx = Fixture::new();
    let (a, b) = (
        fx.dir.path().join("a.tar.zst"),
        fx.dir.path().join("b.tar.zst"),
    );
    write_bundle(&fx.contents, &a, &options()).unwrap();
    // A different worker count must not change the bytes.
    write_bundle(
        &fx.contents,
        &b,
        &WriteOptions {
            workers: 1,
            ..options()
        },
    )
    .unwrap();
    assert_eq!(fs::read(a).unwrap(), fs::read(b).unwrap());
}

#[test]
fn members_are_listed_through_the_seek_table_and_read_singly() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("b.tar.zst");
    write_bundle(&fx.contents, &target, &options()).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    let names: Vec<_> = bundle
        .members()
        .unwrap()
        .into_iter()
        .map(|m| m.path.to_string())
        .collect();
    let mut expected = vec![
        "kk-bundle/SHA256SUMS",
        "kk-bundle/bundle.json",
        "oci-layout",
        "index.json",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    let mut blobs: Vec<_> = fx
        .contents
        .blobs
        .iter()
        .map(|b| format!("blobs/sha256/{}", b.digest.hex()))
        .collect();
    blobs.sort();
    expected.extend(blobs);
    assert_eq!(names, expected);
    let layer = &fx.contents.blobs[0];
    let mut out = Vec::new();
    bundle
        .copy_member(&format!("blobs/sha256/{}", layer.digest.hex()), &mut out)
        .unwrap();
    assert_eq!(out, fs::read(&layer.path).unwrap());
    assert!(matches!(
        bundle.copy_member("index.jsonx", &mut Vec::new()),
        Err(BundleError::NoSuchMember(_))
    ));
}

#[test]
fn real_zstd_and_tar_read_the_bundle() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("b.tar.zst");
    write_bundle(&fx.contents, &target, &options()).unwrap();
    let listing = shell(
        &format!("zstd -dc {} | tar -t", target.display()),
        fx.dir.path(),
    );
    let members: Vec<_> = listing.lines().collect();
    assert_eq!(
        &members[..4],
        [
            "kk-bundle/SHA256SUMS",
            "kk-bundle/bundle.json",
            "oci-layout",
            "index.json"
        ]
    );
    assert_eq!(members.len(), 4 + fx.contents.blobs.len());
    let verbose = shell(
        &format!("zstd -dc {} | tar -tv", target.display()),
        fx.dir.path(),
    );
    assert!(
        verbose.lines().all(|l| l.starts_with("-rw-r--r-- 0/0")),
        "{verbose}"
    );
    fs::create_dir(fx.dir.path().join("x")).unwrap();
    shell(
        &format!("zstd -dc {} | tar -x -C x", target.display()),
        fx.dir.path(),
    );
    let check = shell(
        "sha256sum -c kk-bundle/SHA256SUMS",
        &fx.dir.path().join("x"),
    );
    assert_eq!(
        check.lines().filter(|l| l.ends_with(": OK")).count(),
        members.len() - 1,
        "{check}"
    );
}

#[test]
fn split_parts_concatenate_to_the_single_file() {
    let fx = Fixture::new();
    let single = fx.dir.path().join("one.tar.zst");
    let split = fx.dir.path().join("split.tar.zst");
    let one = write_bundle(&fx.contents, &single, &options()).unwrap();
    let parts = write_bundle(
        &fx.contents,
        &split,
        &WriteOptions {
            split_size: Some(10_000),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(parts.identity, one.identity);
    assert_eq!(parts.output.sha256, one.output.sha256);
    let files = &parts.output.paths;
    assert!(files[0].ends_with("split.tar.zst.split.json"));
    assert!(files[1].ends_with("split.tar.zst.part001"));
    assert!(files.len() > 3, "expected several parts, got {files:?}");
    let mut joined = Vec::new();
    for part in &files[1..] {
        let bytes = fs::read(part).unwrap();
        assert!(bytes.len() <= 10_000);
        joined.extend(bytes);
    }
    assert_eq!(joined, fs::read(&single).unwrap());
    assert!(!split.exists());
    for name in [&files[0], &files[1], &split] {
        let mut bundle = Bundle::open(name).unwrap();
        assert_eq!(bundle.identity(), one.identity);
        bundle.verify().unwrap();
    }
}

fn split_bundle(fx: &Fixture) -> Vec<std::path::PathBuf> {
    let target = fx.dir.path().join("split.tar.zst");
    let written = write_bundle(
        &fx.contents,
        &target,
        &WriteOptions {
            split_size: Some(20_000),
            ..options()
        },
    )
    .unwrap();
    written.output.paths
}

#[test]
fn refuses_a_missing_part() {
    let fx = Fixture::new();
    let files = split_bundle(&fx);
    fs::remove_file(&files[2]).unwrap();
    let err = Bundle::open(&files[0]).unwrap_err();
    assert!(
        matches!(&err, BundleError::PartMissing { path } if path == &files[2]),
        "{err}"
    );
}

#[test]
fn refuses_a_truncated_part() {
    let fx = Fixture::new();
    let files = split_bundle(&fx);
    let part = fs::read(&files[2]).unwrap();
    fs::write(&files[2], &part[..part.len() - 1]).unwrap();
    let err = Bundle::open(&files[1]).unwrap_err();
    assert!(
        matches!(&err, BundleError::PartSize { path, .. } if path == &files[2]),
        "{err}"
    );
}

#[test]
fn refuses_a_part_whose_digest_differs_from_the_index() {
    let fx = Fixture::new();
    let files = split_bundle(&fx);
    let index = fs::read_to_string(&files[0]).unwrap();
    let part2 = Sha256Digest::of(&fs::read(&files[2]).unwrap()).to_string();
    let other = Sha256Digest::of(b"other").to_string();
    fs::write(&files[0], index.replace(&part2, &other)).unwrap();
    let err = Bundle::open(&files[0]).unwrap().verify().unwrap_err();
    assert!(
        matches!(&err, BundleError::PartDigest { path, .. } if path == &files[2]),
        "{err}"
    );
}

#[test]
fn real_cat_zstd_and_tar_read_split_parts() {
    let fx = Fixture::new();
    let files = split_bundle(&fx);
    let listing = shell("cat split.tar.zst.part* | zstd -dc | tar -t", fx.dir.path());
    assert_eq!(listing.lines().count(), 4 + fx.contents.blobs.len());
    assert!(files.len() > 2);
}

#[test]
fn a_failed_write_leaves_nothing() {
    let mut fx = Fixture::new();
    fs::write(&fx.contents.blobs[1].path, b"not what the digest says").unwrap();
    fx.contents.blobs[1].size = 24;
    let target = fx.dir.path().join("out").join("b.tar.zst");
    fs::create_dir(target.parent().unwrap()).unwrap();
    let err = write_bundle(
        &fx.contents,
        &target,
        &WriteOptions {
            split_size: Some(4096),
            ..options()
        },
    )
    .unwrap_err();
    assert!(matches!(err, BundleError::BlobMismatch { .. }), "{err}");
    assert_eq!(fs::read_dir(target.parent().unwrap()).unwrap().count(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any byte, changed in any way, anywhere in the file (seek table included) is refused.
    #[test]
    fn every_byte_flip_is_detected(position in any::<prop::sample::Index>(), mask in 1u8..=255) {
        let (bytes, fx) = small_bundle();
        let mut tampered = bytes.clone();
        let at = position.index(tampered.len());
        tampered[at] ^= mask;
        prop_assert!(verify_bytes(&tampered, &fx.dir.path().join("t.tar.zst")).is_err(), "flip of byte {} by {:#04x} went unnoticed", at, mask);
    }
}

/// The exhaustive version for the masks that most often slip through checks: lowest bit,
/// highest bit, all bits.
#[test]
fn every_byte_flip_is_detected_exhaustively() {
    let (bytes, fx) = small_bundle();
    let path = fx.dir.path().join("t.tar.zst");
    let mut missed = Vec::new();
    for at in 0..bytes.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut tampered = bytes.clone();
            tampered[at] ^= mask;
            if verify_bytes(&tampered, &path).is_ok() {
                missed.push((at, mask));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "undetected flips (offset, mask) in {} bytes: {missed:?}",
        bytes.len()
    );
}

fn small_bundle() -> (Vec<u8>, Fixture) {
    let fx = Fixture::small();
    let target = fx.dir.path().join("s.tar.zst");
    write_bundle(&fx.contents, &target, &options()).unwrap();
    (fs::read(&target).unwrap(), fx)
}

fn verify_bytes(bytes: &[u8], path: &Path) -> Result<(), BundleError> {
    fs::write(path, bytes).unwrap();
    Bundle::open(path)?.verify().map(|_| ())
}

fn shell(script: &str, dir: &Path) -> String {
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{script}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn identity_is_the_digest_of_the_checksum_list() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("b.tar.zst");
    write_bundle(&fx.contents, &target, &options()).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    let mut list = Vec::new();
    bundle
        .copy_member("kk-bundle/SHA256SUMS", &mut list)
        .unwrap();
    assert_eq!(Sha256Digest::of(&list), bundle.identity());
    assert_eq!(list, bundle.checksums().to_bytes());
}

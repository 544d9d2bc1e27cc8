//! Integration tests of the bundle format: the writer and reader together, and real `zstd`
//! and `tar` reading what the writer made.

// Test helpers outside `#[test]` functions fail loudly on purpose.
#![allow(clippy::unwrap_used)]

mod fixture;

use std::fs;
use std::path::Path;
use std::process::Command;

use bundle_spec::member::MemberPath;
use bundle_spec::test_support::verified_members;
use bundle_spec::write::{FrameCache, MAX_FRAME_SIZE, WriteOptions};
use bundle_spec::{
    BaseBlob, Bundle, BundleContents, BundleError, DELTA_FORMAT_VERSION, DeltaBase, FORMAT_VERSION,
    Sha256Digest, write_bundle,
};
use fixture::Fixture;
use proptest::prelude::*;

fn options() -> WriteOptions {
    WriteOptions {
        level: 3,
        workers: 2,
        split_size: None,
        verify_blobs: true,
        frame_cache: None,
        signing_key: None,
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
    let (members, verified) = verified_members(&mut bundle).unwrap();
    assert_eq!(verified.members, written.members);
    for blob in &fx.contents.blobs {
        let path = format!("blobs/sha256/{}", blob.digest.hex());
        assert_eq!(members[&path], fs::read(&blob.path).unwrap());
    }
    let index: serde_json::Value = serde_json::from_slice(&members["index.json"]).unwrap();
    assert_eq!(index, serde_json::to_value(&fx.contents.index).unwrap());
    assert_eq!(members["oci-layout"], br#"{"imageLayoutVersion":"1.0.0"}"#);
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
        "kk-bundle/sbom.spdx.json",
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
        &members[..5],
        [
            "kk-bundle/SHA256SUMS",
            "kk-bundle/bundle.json",
            "oci-layout",
            "index.json",
            "kk-bundle/sbom.spdx.json"
        ]
    );
    assert_eq!(members.len(), 5 + fx.contents.blobs.len());
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
    let whole = Sha256Digest::of(&fs::read(&single).unwrap());
    assert_eq!(
        parts.output.sha256,
        Some(whole),
        "the parts index's hash of the whole"
    );
    assert_eq!(
        one.output.sha256, None,
        "a single file is not hashed as a whole"
    );
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
    assert_eq!(listing.lines().count(), 5 + fx.contents.blobs.len());
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

/// A blob file longer or shorter than its blob is refused even when blobs are not re-hashed,
/// with the file's actual size, and nothing is left behind.
#[test]
fn a_blob_file_of_another_size_is_refused_without_rehashing() {
    for (what, change) in [
        (
            "longer",
            (|bytes: &mut Vec<u8>| bytes.extend_from_slice(b"more")) as fn(&mut Vec<u8>),
        ),
        ("shorter", |bytes: &mut Vec<u8>| {
            bytes.pop();
        }),
    ] {
        let fx = Fixture::new();
        let blob = fx.contents.blobs[1].clone();
        let mut bytes = fs::read(&blob.path).unwrap();
        change(&mut bytes);
        fs::write(&blob.path, &bytes).unwrap();
        let target = fx.dir.path().join("out").join("b.tar.zst");
        fs::create_dir(target.parent().unwrap()).unwrap();
        let options = WriteOptions {
            verify_blobs: false,
            ..options()
        };
        let err = write_bundle(&fx.contents, &target, &options).unwrap_err();
        assert!(
            matches!(err, BundleError::BlobMismatch { expected_size, actual_size, .. }
                if expected_size == blob.size && actual_size == bytes.len() as u64),
            "{what}: {err}"
        );
        assert_eq!(
            fs::read_dir(target.parent().unwrap()).unwrap().count(),
            0,
            "{what}"
        );
    }
}

/// A description over the limit a reader accepts (its manifest text is embedded) is refused
/// before anything is written, naming the member and the limit.
#[test]
fn a_description_a_reader_would_refuse_is_not_written() {
    let mut fx = Fixture::new();
    let limit = bundle_spec::member::MAX_PARSED_HEADER_SIZE;
    fx.contents.description.manifest.text = "#".repeat(limit as usize);
    let target = fx.dir.path().join("out").join("b.tar.zst");
    fs::create_dir(target.parent().unwrap()).unwrap();
    let err = write_bundle(&fx.contents, &target, &options()).unwrap_err();
    assert!(
        matches!(&err, BundleError::TooLarge { member, limit: l, .. } if member.as_str() == "kk-bundle/bundle.json" && *l == limit),
        "{err}"
    );
    assert_eq!(fs::read_dir(target.parent().unwrap()).unwrap().count(), 0);
    // A major version no reader knows.
    let mut fx = Fixture::new();
    fx.contents.description.format_version = "5.0".parse().unwrap();
    let err = write_bundle(&fx.contents, &target, &options()).unwrap_err();
    assert!(
        matches!(&err, BundleError::UnknownWriteVersion { found, .. } if found.major == 5),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("hint: a new bundle says `3.0` (`4.0` for a delta)")
    );
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

/// The fixture as a delta on a base that carries its layer (the largest blob).
fn delta_of(fx: &Fixture, base: Sha256Digest) -> (BundleContents, BaseBlob) {
    let mut contents = fx.contents.clone();
    let layer = contents
        .blobs
        .iter()
        .max_by_key(|b| b.size)
        .unwrap()
        .clone();
    contents.blobs.retain(|b| b.digest != layer.digest);
    let taken = BaseBlob {
        digest: layer.digest,
        size: layer.size,
    };
    contents.description.format_version = DELTA_FORMAT_VERSION;
    contents.description.base = Some(DeltaBase {
        identity: base,
        blobs: vec![taken],
    });
    (contents, taken)
}

#[test]
fn a_delta_carries_only_what_its_base_lacks_and_names_the_base() {
    let fx = Fixture::new();
    let full = write_bundle(&fx.contents, &fx.dir.path().join("a.tar.zst"), &options()).unwrap();
    let (delta, taken) = delta_of(&fx, full.identity);
    let path = fx.dir.path().join("b.tar.zst");
    let written = write_bundle(&delta, &path, &options()).unwrap();
    assert_eq!(written.members, full.members - 1);
    let mut bundle = Bundle::open(&path).unwrap();
    let base = bundle.base().expect("a delta names its base").clone();
    assert_eq!(base.identity, full.identity);
    assert_eq!(base.blobs, [taken]);
    assert!(
        bundle
            .checksums()
            .get(&MemberPath::blob(&taken.digest))
            .is_none()
    );
    // The delta verifies on its own: what it carries is complete and checked.
    bundle.verify().unwrap();
    assert!(written.output.size < full.output.size / 2);
}

#[test]
fn a_delta_must_say_format_2_and_a_full_bundle_format_1() {
    let fx = Fixture::small();
    let (mut delta, taken) = delta_of(&fx, Sha256Digest::of(b"base"));
    let path = fx.dir.path().join("d.tar.zst");
    delta.description.format_version = FORMAT_VERSION;
    let err = write_bundle(&delta, &path, &options()).unwrap_err();
    assert!(matches!(err, BundleError::DeltaBase { .. }), "{err}");
    let mut full = fx.contents.clone();
    full.description.format_version = DELTA_FORMAT_VERSION;
    let err = write_bundle(&full, &path, &options()).unwrap_err();
    assert!(err.to_string().contains("must name the bundle"), "{err}");
    // A blob cannot be both carried and taken from the base.
    let (mut both, _) = delta_of(&fx, Sha256Digest::of(b"base"));
    both.blobs = fx.contents.blobs.clone();
    let err = write_bundle(&both, &path, &options()).unwrap_err();
    assert!(err.to_string().contains(&taken.digest.to_string()), "{err}");
    assert!(!path.exists());
}

/// Adds to the fixture's description an artifact of every other kind and origin, with the lock
/// entries of those that were downloaded; the SBOM is made from the description alone, so they
/// need no blobs.
fn with_every_kind(fx: &mut Fixture) {
    use bundle_spec::ArtifactKind;
    use bundle_spec::lock::LockedImage;
    let d = &mut fx.contents.description;
    let mut add = |kind, name: &str, version: &str, platform: Option<&str>, reference: String| {
        d.artifacts.push(bundle_spec::test_support::artifact(
            kind, name, version, platform, reference,
        ));
    };
    let index = Sha256Digest::of(b"index");
    let app = format!("quay.io/example/app@{index}");
    add(
        ArtifactKind::Image,
        "quay.io/example/app",
        &index.to_string(),
        Some("linux/arm/v7"),
        app,
    );
    let etcd = "kk.internal/binaries/etcd:v3.5.16".to_owned();
    add(
        ArtifactKind::Binary,
        "etcd",
        "v3.5.16",
        Some("linux/amd64"),
        etcd.clone(),
    );
    add(
        ArtifactKind::Binary,
        "etcd",
        "v3.5.16",
        Some("linux/arm64"),
        etcd,
    );
    let chart = "kk.internal/charts/podinfo:6.7.0_1".to_owned();
    add(ArtifactKind::Chart, "podinfo", "6.7.0+1", None, chart);
    let oci_chart = "ghcr.io/stefanprodan/charts/podinfo";
    add(
        ArtifactKind::Chart,
        oci_chart,
        "6.7.0",
        None,
        format!("{oci_chart}:6.7.0"),
    );
    let file = bundle_spec::test_support::locked_file;
    d.lock.binaries = vec![
        file(
            "etcd",
            "v3.5.16",
            Some("linux/amd64"),
            "https://github.com/etcd-io/etcd/releases/download/v3.5.16/etcd-v3.5.16-linux-amd64.tar.gz",
        ),
        // A lab's file server: SPDX tools refuse an IP address as download location.
        file(
            "etcd",
            "v3.5.16",
            Some("linux/arm64"),
            "http://127.0.0.1:8080/etcd/v3.5.16/etcd-v3.5.16-linux-arm64.tar.gz",
        ),
    ];
    d.lock.charts = vec![file(
        "podinfo",
        "6.7.0+1",
        None,
        "https://stefanprodan.github.io/podinfo/podinfo-6.7.0+1.tgz",
    )];
    d.lock.images = vec![LockedImage {
        reference: format!("{oci_chart}:6.7.0"),
        digest: Sha256Digest::of(b"chart"),
        media_type: "application/vnd.oci.image.manifest.v1+json".into(),
    }];
}

/// Runs the SPDX project's validator on `path`; the test fails when it is not installed.
fn pyspdxtools(path: &Path) -> std::process::Output {
    Command::new("pyspdxtools")
        .arg("-i")
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `pyspdxtools` ({e}); scripts/test.sh installs it \
                 (`python3 -m pip install spdx-tools`)"
            )
        })
}

#[test]
fn the_sbom_lists_every_artifact_and_pyspdxtools_validates_it() {
    let mut fx = Fixture::small();
    with_every_kind(&mut fx);
    let target = fx.dir.path().join("b.tar.zst");
    write_bundle(&fx.contents, &target, &options()).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    let sbom = bundle
        .sbom()
        .unwrap()
        .expect("a bundle of format 1.1 has an SBOM");
    let path = fx.dir.path().join("sbom.spdx.json");
    fs::write(&path, &sbom).unwrap();
    let out = pyspdxtools(&path);
    assert!(
        out.status.success(),
        "pyspdxtools refuses the SBOM:\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&sbom)
    );

    let doc: serde_json::Value = serde_json::from_slice(&sbom).unwrap();
    let packages = doc["packages"].as_array().unwrap();
    let description = &fx.contents.description;
    assert_eq!(packages.len(), 1 + description.artifacts.len());
    let lock = &description.lock;
    for artifact in &description.artifacts {
        // A downloaded artifact is listed with its file's sha256 and URL, any other with its
        // manifest's digest and its reference.
        let downloaded = lock.binaries.iter().chain(&lock.charts).find(|f| {
            f.name == artifact.name
                && f.version == artifact.version
                && f.platform == artifact.platform
        });
        let (digest, origin) = downloaded.map_or((artifact.digest, &artifact.reference), |f| {
            (f.digest, &f.url)
        });
        let listed = packages.iter().any(|p| {
            let purl = p["externalRefs"][0]["referenceLocator"]
                .as_str()
                .unwrap_or_default();
            p["name"] == artifact.name.as_str()
                && p["versionInfo"] == artifact.version.as_str()
                && p["checksums"][0]["checksumValue"] == digest.hex().as_str()
                && p["sourceInfo"] == origin.as_str()
                && artifact.platform.as_deref().is_none_or(|platform| {
                    let arch = platform.split('/').nth(1).unwrap();
                    purl.contains(&format!("arch={arch}&"))
                })
        });
        assert!(listed, "{artifact:?} is not in the SBOM:\n{doc:#}");
    }
}

#[test]
fn the_sbom_is_read_singly_and_verified() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("b.tar.zst");
    let written = write_bundle(&fx.contents, &target, &options()).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    let sbom = bundle.sbom().unwrap().unwrap();
    assert_eq!(
        sbom,
        bundle_spec::sbom::spdx_document(&fx.contents.description).unwrap()
    );
    let listed = bundle
        .checksums()
        .get(&MemberPath::parse(bundle_spec::sbom::SBOM_PATH).unwrap())
        .copied();
    assert_eq!(listed, Some(Sha256Digest::of(&sbom)));
    assert_eq!(written.members, 5 + fx.contents.blobs.len());
}

/// Text that compresses: words drawn at random from a few.
fn compressible(len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 4] = [b"kubelet ", b"etcd ", b"containerd ", b"pause "];
    fixture::pseudo_random(len / 4)
        .iter()
        .flat_map(|b| WORDS[usize::from(b % 4)])
        .copied()
        .take(len)
        .collect()
}

/// The largest blob of `fx`, its layer.
fn layer_of(fx: &Fixture) -> bundle_spec::BlobFile {
    fx.contents
        .blobs
        .iter()
        .max_by_key(|b| b.size)
        .unwrap()
        .clone()
}

#[test]
fn frames_from_the_frame_cache_give_the_same_bytes_and_a_damaged_entry_is_refused() {
    // A 3 MiB layer that compresses: large enough for the frame cache, and its frames are in
    // the entry.
    let fx = Fixture::with_layer(&compressible(3 << 20));
    let plain = fx.dir.path().join("plain.tar.zst");
    write_bundle(&fx.contents, &plain, &options()).unwrap();
    let cache_dir = fx.dir.path().join("frames");
    let cached = WriteOptions {
        frame_cache: Some(FrameCache::new(&cache_dir)),
        ..options()
    };
    let layer = layer_of(&fx);
    let entry = cache_dir.join("zstd-3").join(layer.digest.hex());
    let (first, second) = (
        fx.dir.path().join("1.tar.zst"),
        fx.dir.path().join("2.tar.zst"),
    );
    write_bundle(&fx.contents, &first, &cached).unwrap();
    assert!(entry.is_file(), "the first write stores the layer's frames");
    // The second write copies them: the blob file is not read at all.
    let mut no_file = fx.contents.clone();
    no_file
        .blobs
        .iter_mut()
        .find(|b| b.digest == layer.digest)
        .unwrap()
        .path = fx.dir.path().join("gone");
    write_bundle(&no_file, &second, &cached).unwrap();
    let bytes = fs::read(&plain).unwrap();
    assert_eq!(fs::read(&first).unwrap(), bytes);
    assert_eq!(fs::read(&second).unwrap(), bytes);
    Bundle::open(&second).unwrap().verify().unwrap();

    // A flipped bit inside a cached frame: the write fails naming the blob, the entry goes,
    // and the next write compresses the blob again, to the same bytes.
    let mut damaged = fs::read(&entry).unwrap();
    damaged[1000] ^= 0x10;
    fs::write(&entry, damaged).unwrap();
    let third = fx.dir.path().join("3.tar.zst");
    let err = write_bundle(&fx.contents, &third, &cached).unwrap_err();
    assert!(
        matches!(&err, BundleError::FrameCacheDamaged { digest, .. } if *digest == layer.digest),
        "{err}"
    );
    assert!(!third.exists() && !entry.exists());
    write_bundle(&fx.contents, &third, &cached).unwrap();
    assert_eq!(fs::read(&third).unwrap(), bytes);

    // The same for the last frame, which the verifier thread checks after the writer copied
    // every frame before it.
    let mut damaged = fs::read(&entry).unwrap();
    let frames_end = damaged.len() - ENTRY_TAIL - ENTRY_ROW * frame_count(&damaged);
    damaged[frames_end - 100] ^= 0x10;
    fs::write(&entry, damaged).unwrap();
    let fourth = fx.dir.path().join("4.tar.zst");
    let err = write_bundle(&fx.contents, &fourth, &cached).unwrap_err();
    assert!(
        matches!(&err, BundleError::FrameCacheDamaged { digest, .. } if *digest == layer.digest),
        "{err}"
    );
    assert!(!fourth.exists() && !entry.exists());
    write_bundle(&fx.contents, &fourth, &cached).unwrap();
    assert_eq!(fs::read(&fourth).unwrap(), bytes);

    // An entry whose recorded sha256 of a compressed frame is not that of its bytes, its table
    // otherwise whole (as bits a decoder ignores would leave it): the write fails rather than
    // give the bundle an integrity frame that does not match it.
    let mut damaged = fs::read(&entry).unwrap();
    let sha256_of_first = damaged.len() - ENTRY_TAIL - ENTRY_ROW * frame_count(&damaged) + 16;
    damaged[sha256_of_first] ^= 1;
    reseal_table(&mut damaged);
    fs::write(&entry, damaged).unwrap();
    assert_eq!(
        FrameCache::new(&cache_dir).blob_size(&layer.digest, 3),
        Some(layer.size)
    );
    let fifth = fx.dir.path().join("5.tar.zst");
    let err = write_bundle(&fx.contents, &fifth, &cached).unwrap_err();
    assert!(
        matches!(&err, BundleError::FrameCacheDamaged { digest, .. } if *digest == layer.digest),
        "{err}"
    );
    assert!(!fifth.exists() && !entry.exists());
}

/// Writes the checksum of a frame-cache entry's table again, after a test changed the table: the
/// first eight bytes of the sha256 of the table, the frame count and the blob size.
fn reseal_table(entry: &mut [u8]) {
    let table_start = entry.len() - ENTRY_TAIL - ENTRY_ROW * frame_count(entry);
    let counts_end = entry.len() - ENTRY_TAIL + 12;
    let check = Sha256Digest::of(&entry[table_start..counts_end]);
    entry[counts_end..counts_end + 8].copy_from_slice(&check.as_bytes()[..8]);
}

/// Large blobs written to files in `dir`: two that do not compress (stored frames) and one that
/// does, 2 MiB each.
fn large_blobs(dir: &Path) -> Vec<bundle_spec::BlobFile> {
    let contents = [
        bundle_spec::test_support::incompressible(2 << 20, 11),
        bundle_spec::test_support::incompressible(2 << 20, 12),
        compressible(2 << 20),
    ];
    contents
        .iter()
        .map(|bytes| {
            let digest = Sha256Digest::of(bytes);
            let path = dir.join(digest.hex());
            fs::write(&path, bytes).unwrap();
            bundle_spec::BlobFile {
                digest,
                size: bytes.len() as u64,
                path,
            }
        })
        .collect()
}

#[test]
fn cached_and_uncached_large_blobs_are_written_in_order_as_without_a_cache() {
    let fx = Fixture::with_layer(&compressible(3 << 20));
    let extra = large_blobs(fx.dir.path());
    let mut all = fx.contents.clone();
    all.blobs.extend(extra.iter().cloned());
    let plain = fx.dir.path().join("plain.tar.zst");
    write_bundle(&all, &plain, &options()).unwrap();
    let bytes = fs::read(&plain).unwrap();
    let cached = WriteOptions {
        frame_cache: Some(FrameCache::new(fx.dir.path().join("frames"))),
        verify_blobs: false,
        ..options()
    };
    // The first write caches two of the four large blobs, so the second finds entries for some
    // and none for the others, wherever their digests put them; the third finds all four.
    let mut some = fx.contents.clone();
    some.blobs.extend([extra[0].clone(), extra[2].clone()]);
    write_bundle(&some, &fx.dir.path().join("1.tar.zst"), &cached).unwrap();
    for name in ["2.tar.zst", "3.tar.zst"] {
        let target = fx.dir.path().join(name);
        write_bundle(&all, &target, &cached).unwrap();
        assert_eq!(fs::read(&target).unwrap(), bytes, "{name}");
    }
    // A damaged stored frame of one blob fails the write at that blob, whichever blobs come
    // before it (read ahead or compressed anew), and leaves nothing.
    let mut damaged = fs::read(&extra[1].path).unwrap();
    damaged[100] ^= 1;
    fs::write(&extra[1].path, damaged).unwrap();
    let fourth = fx.dir.path().join("4.tar.zst");
    let err = write_bundle(&all, &fourth, &cached).unwrap_err();
    assert!(
        matches!(&err, BundleError::FrameCacheDamaged { digest, .. } if *digest == extra[1].digest),
        "{err}"
    );
    assert!(!fourth.exists());
}

#[test]
fn stored_frames_are_rebuilt_from_the_blob_file_and_a_damaged_blob_is_refused() {
    // Data that does not compress, over two frames: stored, so the entry holds no frame.
    let noise = bundle_spec::test_support::incompressible(MAX_FRAME_SIZE + (1 << 20) + 5, 7);
    let fx = Fixture::with_layer(&noise);
    let plain = fx.dir.path().join("plain.tar.zst");
    write_bundle(&fx.contents, &plain, &options()).unwrap();
    let cache_dir = fx.dir.path().join("frames");
    let cached = WriteOptions {
        frame_cache: Some(FrameCache::new(&cache_dir)),
        verify_blobs: false,
        ..options()
    };
    let layer = layer_of(&fx);
    let entry = cache_dir.join("zstd-3").join(layer.digest.hex());
    write_bundle(&fx.contents, &fx.dir.path().join("1.tar.zst"), &cached).unwrap();
    let bytes = fs::read(&plain).unwrap();
    let table = fs::read(&entry).unwrap();
    assert_eq!(frame_count(&table), 2);
    assert_eq!(
        table.len(),
        ENTRY_TAIL + 2 * ENTRY_ROW,
        "no frame's bytes are in the entry"
    );
    let second = fx.dir.path().join("2.tar.zst");
    write_bundle(&fx.contents, &second, &cached).unwrap();
    assert_eq!(fs::read(&second).unwrap(), bytes);
    Bundle::open(&second).unwrap().verify().unwrap();

    // One flipped bit of the blob file, in either frame, or the file cut short or gone: the
    // write fails naming the blob, the entry goes, nothing is written.
    let original = fs::read(&layer.path).unwrap();
    let cases: [(&str, Damage); 5] = [
        ("first frame", |b| b[10] ^= 1),
        // Past the first piece the frame goes to the writer in: pieces before it are written.
        ("first frame, a later piece", |b| b[5 << 20] ^= 1),
        ("last frame", |b| {
            let at = b.len() - 3;
            b[at] ^= 1;
        }),
        ("cut short", |b| b.truncate(b.len() - 1)),
        ("gone", |b| b.clear()),
    ];
    for (what, damage) in cases {
        write_bundle(&fx.contents, &fx.dir.path().join("1.tar.zst"), &cached).unwrap();
        let mut damaged = original.clone();
        damage(&mut damaged);
        if damaged.is_empty() {
            fs::remove_file(&layer.path).unwrap();
        } else {
            fs::write(&layer.path, &damaged).unwrap();
        }
        let third = fx.dir.path().join("3.tar.zst");
        let err = write_bundle(&fx.contents, &third, &cached).unwrap_err();
        assert!(
            matches!(&err, BundleError::FrameCacheDamaged { digest, .. } if *digest == layer.digest),
            "{what}: {err}"
        );
        assert!(!third.exists() && !entry.exists(), "{what}");
        fs::write(&layer.path, &original).unwrap();
    }
}

#[test]
fn an_entry_with_a_damaged_table_is_refused_unless_blobs_are_re_hashed() {
    let fx = Fixture::with_layer(&compressible(3 << 20));
    let plain = fx.dir.path().join("plain.tar.zst");
    write_bundle(&fx.contents, &plain, &options()).unwrap();
    let cache_dir = fx.dir.path().join("frames");
    let trusting = WriteOptions {
        frame_cache: Some(FrameCache::new(&cache_dir)),
        verify_blobs: false,
        ..options()
    };
    let layer = fx.contents.blobs.iter().max_by_key(|b| b.size).unwrap();
    let entry = cache_dir.join("zstd-3").join(layer.digest.hex());
    let cut = |path: &Path| {
        let bytes = fs::read(path).unwrap();
        fs::write(path, &bytes[..bytes.len() - 1]).unwrap();
    };
    write_bundle(&fx.contents, &fx.dir.path().join("1.tar.zst"), &trusting).unwrap();
    // A power cut's short entry, with a caller that counted on it instead of re-reading the
    // blob: refused, named, removed, and nothing written.
    cut(&entry);
    let second = fx.dir.path().join("2.tar.zst");
    let err = write_bundle(&fx.contents, &second, &trusting).unwrap_err();
    assert!(
        matches!(&err, BundleError::FrameCacheDamaged { digest, .. } if *digest == layer.digest),
        "{err}"
    );
    assert!(!second.exists() && !entry.exists());
    // A write that re-hashes blobs compresses the blob again, to the same bytes.
    write_bundle(&fx.contents, &fx.dir.path().join("1.tar.zst"), &trusting).unwrap();
    cut(&entry);
    let verifying = WriteOptions {
        verify_blobs: true,
        ..trusting
    };
    write_bundle(&fx.contents, &second, &verifying).unwrap();
    assert_eq!(fs::read(&second).unwrap(), fs::read(&plain).unwrap());
    assert!(entry.is_file(), "the entry is stored again");
}

/// A change to a file's bytes.
type Damage = fn(&mut Vec<u8>);

/// The bytes after a frame-cache entry's table: frame count, blob size, checksum, magic.
const ENTRY_TAIL: usize = 4 + 8 + 8 + 8;
/// The size of a row of that table: compressed and decompressed size, stored frame's checksum,
/// the frame's sha256.
const ENTRY_ROW: usize = 4 + 4 + 8 + 32;

/// The number of frames a frame-cache entry lists (the `u32` that starts its tail).
fn frame_count(entry: &[u8]) -> usize {
    let at = entry.len() - ENTRY_TAIL;
    u32::from_le_bytes(entry[at..at + 4].try_into().unwrap()) as usize
}

/// Bundles the writer of formats 1.2 and 2.1 wrote (main at `762c08b`, the fixture's image with
/// a 1.4 MB layer, so the layer's header has a frame of its own), kept byte for byte in
/// `tests/data/`: whatever the writer writes later, a reader must still verify these (SPEC §4.4).
#[test]
fn bundles_of_formats_1_2_and_2_1_still_verify() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut full = Bundle::open(&data.join("format-1.2.tar.zst")).unwrap();
    assert_eq!(full.description().format_version.to_string(), "1.2");
    assert!(full.base().is_none());
    full.verify().unwrap();
    let mut delta = Bundle::open(&data.join("format-2.1-delta.tar.zst")).unwrap();
    assert_eq!(delta.description().format_version.to_string(), "2.1");
    assert_eq!(delta.base().expect("a delta").identity, full.identity());
    delta.verify().unwrap();
}

#[test]
fn a_changed_byte_in_a_bundle_of_format_1_2_is_refused() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut bytes = fs::read(data.join("format-1.2.tar.zst")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.tar.zst");
    // A byte inside the layer's stored frame, far from any header.
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let refused = Bundle::open(&path).and_then(|mut bundle| bundle.verify().map(drop));
    assert!(
        refused.is_err(),
        "a flipped byte at {middle} was not noticed"
    );
}

/// The integrity frame's magic, little-endian (SPEC §2.2).
const INTEGRITY_MAGIC: [u8; 4] = [0x5b, 0x2a, 0x4d, 0x18];

/// Where the integrity frame of `bundle` starts and each data frame's sha256, found by walking
/// the frames from the start as SPEC §2 lays them out, not through the reader.
fn frames_and_integrity(bundle: &[u8]) -> (usize, Vec<Sha256Digest>) {
    let (mut at, mut digests) = (0, Vec::new());
    while bundle[at..at + 4] != INTEGRITY_MAGIC {
        let size = zstd::zstd_safe::find_frame_compressed_size(&bundle[at..]).unwrap();
        digests.push(Sha256Digest::of(&bundle[at..at + size]));
        at += size;
    }
    (at, digests)
}

/// The sha256 of the frame list (SPEC §2.2, tag `KKFL`).
fn list_digest(digests: &[Sha256Digest]) -> Sha256Digest {
    let list: Vec<u8> = digests.iter().flat_map(|d| *d.as_bytes()).collect();
    Sha256Digest::of(&list)
}

/// `bundle` with its integrity frame replaced by one tagged `tag` over `digest`.
fn with_integrity(bundle: &[u8], tag: [u8; 4], digest: &Sha256Digest) -> Vec<u8> {
    let (at, _) = frames_and_integrity(bundle);
    let mut bytes = bundle.to_vec();
    bytes[at + 8..at + 12].copy_from_slice(&tag);
    bytes[at + 12..at + 44].copy_from_slice(digest.as_bytes());
    bytes
}

#[test]
fn a_bundle_is_written_as_format_3_with_the_list_of_its_frames_sha256s() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("b.tar.zst");
    write_bundle(&fx.contents, &path, &options()).unwrap();
    let bytes = fs::read(&path).unwrap();
    let (at, digests) = frames_and_integrity(&bytes);
    assert!(digests.len() > 5, "one frame per member at least");
    assert_eq!(&bytes[at + 4..at + 12], b"\x24\0\0\0KKFL");
    assert_eq!(&bytes[at + 12..at + 44], list_digest(&digests).as_bytes());
    let bundle = Bundle::open(&path).unwrap();
    assert_eq!(bundle.description().format_version, FORMAT_VERSION);
    assert_eq!(FORMAT_VERSION.to_string(), "3.0");
    assert_eq!(DELTA_FORMAT_VERSION.to_string(), "4.0");
}

/// An integrity frame that is right for its tag but not for the bundle's version is refused,
/// both ways: a 1.2 bundle with a valid frame list, a 3.0 bundle with a valid whole-file hash.
/// A tag of neither kind is refused by name.
#[test]
fn an_integrity_frame_of_another_kind_than_the_version_says_is_refused() {
    let fx = Fixture::new();
    let current = fx.dir.path().join("b.tar.zst");
    write_bundle(&fx.contents, &current, &options()).unwrap();
    let current = fs::read(current).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let old = fs::read(data.join("format-1.2.tar.zst")).unwrap();
    let whole = |bytes: &[u8]| Sha256Digest::of(&bytes[..frames_and_integrity(bytes).0]);
    let list = |bytes: &[u8]| list_digest(&frames_and_integrity(bytes).1);
    let cases = [
        (
            "1.2 with a frame list",
            with_integrity(&old, *b"KKFL", &list(&old)),
            "1.2",
            "KKFD",
        ),
        (
            "3.0 hashed whole",
            with_integrity(&current, *b"KKFD", &whole(&current)),
            "3.0",
            "KKFL",
        ),
    ];
    for (what, bytes, version, expected) in cases {
        let err = verify_bytes(&bytes, &fx.dir.path().join("x.tar.zst")).unwrap_err();
        assert!(
            matches!(&err, BundleError::IntegrityKindMismatch { version: v, expected: e, .. }
                if v.to_string() == version && e == expected),
            "{what}: {err}"
        );
    }
    let unknown = with_integrity(&current, *b"KKFX", &list(&current));
    let err = verify_bytes(&unknown, &fx.dir.path().join("y.tar.zst")).unwrap_err();
    assert!(
        matches!(&err, BundleError::IntegrityTag { tag, .. } if tag == "KKFX"),
        "{err}"
    );
    // The same frames with the right frame for their version verify: only the kind was wrong.
    verify_bytes(
        &with_integrity(&old, *b"KKFD", &whole(&old)),
        &fx.dir.path().join("z"),
    )
    .unwrap();
}

/// A flipped byte in any data frame of a 3.0 bundle changes that frame's sha256 and so the
/// list's: every frame is covered, the last and the cached ones alike.
#[test]
fn a_changed_byte_in_any_frame_of_a_format_3_bundle_is_refused() {
    let fx = Fixture::new();
    let path = fx.dir.path().join("b.tar.zst");
    let cached = WriteOptions {
        frame_cache: Some(FrameCache::new(fx.dir.path().join("frames"))),
        ..options()
    };
    write_bundle(&fx.contents, &fx.dir.path().join("cold.tar.zst"), &cached).unwrap();
    write_bundle(&fx.contents, &path, &cached).unwrap();
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes, fs::read(fx.dir.path().join("cold.tar.zst")).unwrap());
    let (_, digests) = frames_and_integrity(&bytes);
    let mut start = 0;
    for (index, _) in digests.iter().enumerate() {
        let size = zstd::zstd_safe::find_frame_compressed_size(&bytes[start..]).unwrap();
        // The frame's last byte: inside the zstd checksum or the last block's data.
        let mut damaged = bytes.clone();
        damaged[start + size - 1] ^= 0x10;
        let checked = fx.dir.path().join(format!("d{index}.tar.zst"));
        assert!(
            verify_bytes(&damaged, &checked).is_err(),
            "a flipped byte in frame {index} went unnoticed"
        );
        start += size;
    }
}

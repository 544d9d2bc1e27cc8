//! Signed bundles: the signature member written by `build --sign` and by signing an existing
//! bundle, read without reading content, checked against trusted keys with the sidecar beside
//! the bundle, and extracted by plain `zstd -d | tar x`.

// Test helpers outside `#[test]` functions fail loudly on purpose.
#![allow(clippy::unwrap_used)]

mod fixture;

use std::fs;
use std::process::Command;

use bundle_spec::member::SIGNATURE_PATH;
use bundle_spec::sign::keys::fingerprint;
use bundle_spec::sign::verify::{Origin, check_bundle, sidecar_path, verify};
use bundle_spec::test_support::{RawMember, checksum_list, craft_bundle, minimal_members};
use bundle_spec::write::{WriteOptions, sign_bundle};
use bundle_spec::{Bundle, BundleError, write_bundle};
use fixture::Fixture;
use p256::ecdsa::SigningKey;

fn key(seed: u8) -> SigningKey {
    SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn options(signing_key: Option<SigningKey>) -> WriteOptions {
    WriteOptions {
        workers: 2,
        signing_key,
        ..WriteOptions::default()
    }
}

#[test]
fn build_sign_and_sign_later_write_the_same_bytes() {
    let fx = Fixture::new();
    let (signed, later) = (fx.dir.path().join("s.kkb"), fx.dir.path().join("l.kkb"));
    let written = write_bundle(&fx.contents, &signed, &options(Some(key(1)))).unwrap();
    write_bundle(&fx.contents, &later, &options(None)).unwrap();
    let unsigned = fs::read(&later).unwrap();
    let result = sign_bundle(&later, &key(1)).unwrap();
    assert!(result.embedded);
    assert_eq!(Some(&result.signature), written.signature.as_ref());
    assert_eq!(fs::read(&signed).unwrap(), fs::read(&later).unwrap());
    assert_ne!(fs::read(&later).unwrap(), unsigned);

    let mut bundle = Bundle::open(&signed).unwrap();
    let verified = bundle.verify().unwrap();
    assert_eq!(
        verified.members + 1,
        written.members,
        "the signature is not a listed member"
    );
    let json = bundle.signature().unwrap().unwrap();
    assert_eq!(json, result.signature);
    let list = bundle.checksums().to_bytes();
    assert_eq!(
        verify(&json, &list, &[*key(1).verifying_key()]).unwrap(),
        fingerprint(key(1).verifying_key())
    );

    // Signing again with another key replaces the signature.
    sign_bundle(&signed, &key(2)).unwrap();
    let mut bundle = Bundle::open(&signed).unwrap();
    bundle.verify().unwrap();
    let json = bundle.signature().unwrap().unwrap();
    assert!(verify(&json, &list, &[*key(2).verifying_key()]).is_ok());
    assert!(verify(&json, &list, &[*key(1).verifying_key()]).is_err());
}

#[test]
fn unsigned_bundle_has_no_signature() {
    let fx = Fixture::small();
    let target = fx.dir.path().join("u.kkb");
    write_bundle(&fx.contents, &target, &options(None)).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    assert_eq!(bundle.signature().unwrap(), None);
    assert_eq!(check_bundle(&mut bundle, &[]).unwrap(), vec![]);
    let refused = check_bundle(&mut bundle, &[*key(1).verifying_key()]).unwrap_err();
    assert!(refused.to_string().contains("is not signed"), "{refused}");
}

#[test]
fn zstd_and_tar_extract_the_signature_cosign_checks() {
    let fx = Fixture::small();
    let target = fx.dir.path().join("s.kkb");
    let written = write_bundle(&fx.contents, &target, &options(Some(key(1)))).unwrap();
    let out = Command::new("bash")
        .args([
            "-euo",
            "pipefail",
            "-c",
            "mkdir x && zstd -dc s.kkb | tar -x -C x",
        ])
        .current_dir(fx.dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let x = fx.dir.path().join("x");
    let signature = fs::read(x.join(SIGNATURE_PATH)).unwrap();
    assert_eq!(Some(signature.clone()), written.signature);
    let list = fs::read(x.join("kk-bundle/SHA256SUMS")).unwrap();
    assert!(verify(&signature, &list, &[*key(1).verifying_key()]).is_ok());
}

/// With trusted keys, every signature present must verify: the sidecar can vouch for an
/// unsigned bundle but not outvote a bad embedded signature; without, the key is reported.
#[test]
fn trusted_keys_and_the_sidecar() {
    let fx = Fixture::small();
    let target = fx.dir.path().join("b.kkb");
    write_bundle(&fx.contents, &target, &options(None)).unwrap();
    let (one, two) = (*key(1).verifying_key(), *key(2).verifying_key());
    let list = Bundle::open(&target).unwrap().checksums().to_bytes();
    fs::write(
        sidecar_path(&target),
        bundle_spec::sign::sigstore::sign(&key(1), &list),
    )
    .unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    let found = check_bundle(&mut bundle, &[one]).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].origin, Origin::Sidecar(sidecar_path(&target)));
    assert_eq!(
        found[0].fingerprint.as_deref(),
        Some(fingerprint(&one).as_str())
    );
    assert!(found[0].trusted);
    let untrusted = check_bundle(&mut bundle, &[two]).unwrap_err().to_string();
    assert!(untrusted.contains("b.kkb.sigstore.json"), "{untrusted}");

    sign_bundle(&target, &key(2)).unwrap();
    let mut bundle = Bundle::open(&target).unwrap();
    let refused = check_bundle(&mut bundle, &[one]).unwrap_err().to_string();
    assert!(refused.contains("embedded signature"), "{refused}");
    assert_eq!(check_bundle(&mut bundle, &[one, two]).unwrap().len(), 2);
    let reported = check_bundle(&mut bundle, &[]).unwrap();
    assert_eq!(reported[0].origin, Origin::Embedded);
    assert_eq!(reported[0].fingerprint, Some(fingerprint(&two)));
    assert!(!reported[0].trusted);

    fs::write(sidecar_path(&target), b"{").unwrap();
    let broken = check_bundle(&mut bundle, &[one, two]).unwrap_err();
    assert!(matches!(
        broken,
        bundle_spec::sign::SignatureError::In { .. }
    ));
}

/// A split bundle signed later keeps its parts and gets only the sidecar; one written signed
/// carries the signature in its last part.
#[test]
fn split_bundle_is_signed_beside_its_parts() {
    let fx = Fixture::new();
    let target = fx.dir.path().join("p.kkb");
    let options = WriteOptions {
        split_size: Some(100 << 10),
        ..options(None)
    };
    let written = write_bundle(&fx.contents, &target, &options).unwrap();
    let before: Vec<Vec<u8>> = written
        .output
        .paths
        .iter()
        .map(|p| fs::read(p).unwrap())
        .collect();
    let result = sign_bundle(&written.output.paths[0], &key(1)).unwrap();
    assert!(!result.embedded);
    let after: Vec<Vec<u8>> = written
        .output
        .paths
        .iter()
        .map(|p| fs::read(p).unwrap())
        .collect();
    assert_eq!(before, after, "a split bundle's parts stay as they are");
    // A signed split bundle written by `build --sign` embeds it in its last part.
    let signed = fx.dir.path().join("q.kkb");
    let options = WriteOptions {
        signing_key: Some(key(1)),
        ..options
    };
    write_bundle(&fx.contents, &signed, &options).unwrap();
    let mut bundle = Bundle::open(&signed).unwrap();
    bundle.verify().unwrap();
    assert!(bundle.signature().unwrap().is_some());
    assert!(matches!(
        Bundle::open(&target).unwrap().signature(),
        Ok(None)
    ));
}

/// The signature member is only valid last and unlisted: anywhere else, or named by the
/// checksum list (which would make it a digest-checked member), the reader refuses the bundle.
#[test]
fn misplaced_signature_member_is_refused() {
    let mtime = 1_700_000_000;
    let json = bundle_spec::sign::sigstore::sign(&key(1), b"x");
    let signature = RawMember::new(SIGNATURE_PATH, json.clone(), mtime);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.kkb");

    let mut members = minimal_members(mtime);
    let list = checksum_list(&members);
    let blob = members.pop().unwrap();
    members.extend([RawMember::new(SIGNATURE_PATH, json.clone(), mtime), blob]);
    fs::write(&path, craft_bundle(&list, &members, true)).unwrap();
    let error = Bundle::open(&path).unwrap().verify().unwrap_err();
    assert!(
        matches!(error, BundleError::SignatureMember { .. }),
        "{error}"
    );

    let mut members = minimal_members(mtime);
    members.push(signature);
    fs::write(
        &path,
        craft_bundle(&checksum_list(&members), &members, true),
    )
    .unwrap();
    let error = Bundle::open(&path).unwrap_err();
    assert!(
        error.to_string().contains("is named by the checksum list"),
        "{error}"
    );

    // Last and unlisted, it is read and the bundle verifies.
    let mut members = minimal_members(mtime);
    let list = checksum_list(&members);
    members.push(RawMember::new(SIGNATURE_PATH, json.clone(), mtime));
    fs::write(&path, craft_bundle(&list, &members, true)).unwrap();
    let mut bundle = Bundle::open(&path).unwrap();
    bundle.verify().unwrap();
    assert_eq!(bundle.signature().unwrap(), Some(json));
}

/// Signing a bundle of an earlier format keeps its format, and so the integrity frame that
/// format requires: a 1.2 bundle stays a 1.2 bundle that every reader of 1.2 still reads.
#[test]
fn a_bundle_of_format_1_2_signed_later_stays_one() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.tar.zst");
    fs::copy(data.join("format-1.2.tar.zst"), &path).unwrap();
    let result = sign_bundle(&path, &key(1)).unwrap();
    assert!(result.embedded);
    let mut bundle = Bundle::open(&path).unwrap();
    assert_eq!(bundle.description().format_version.to_string(), "1.2");
    bundle.verify().unwrap();
    assert_eq!(bundle.signature().unwrap(), Some(result.signature));
    let bytes = fs::read(&path).unwrap();
    let tags = bytes.windows(4).filter(|w| w == b"KKFD" || w == b"KKFL");
    assert_eq!(
        tags.collect::<Vec<_>>(),
        [b"KKFD"],
        "one integrity frame, of 1.2's kind"
    );
}

//! `kk-install verify`, `inspect` and `unpack` on bundles written by the bundle writer: real
//! skopeo reads the store, tampered bundles are refused with the member named, nothing
//! unverified is left behind.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use bundle_spec::Sha256Digest;

use bundle_spec::test_support::{TestImage, write_images};

// `kk_install` is used by the CLI and registry tests through this module.
pub(crate) use crate::support::kk_install;
use crate::support::{KillOnDrop, binary, retry, run_failing, run_ok, skopeo_raw};

/// A bundle holding one single-layer image named `reference`, whose layer is `layer`.
fn write_bundle(dir: &Path, name: &str, reference: &str, layer: &[u8]) -> PathBuf {
    write_bundle_split(dir, name, reference, layer, None)
}

/// Like [`write_bundle`], split into parts of `split` bytes when given; returns the first file
/// written (the parts index for a split bundle).
fn write_bundle_split(
    dir: &Path,
    name: &str,
    reference: &str,
    layer: &[u8],
    split: Option<u64>,
) -> PathBuf {
    let image = TestImage {
        reference,
        layers: &[layer],
    };
    write_images(dir, name, &[image], split).path
}

/// Changes one byte of the compressed bundle inside the frames of the largest member.
pub(crate) fn tamper(bundle: &Path, out: &Path) {
    let mut bytes = fs::read(bundle).expect("bundle");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    fs::write(out, bytes).expect("tampered");
}

/// Incompressible bytes (like a gzip layer), different per `seed`.
pub(crate) fn layer(len: usize, seed: u8) -> Vec<u8> {
    bundle_spec::test_support::incompressible(len, seed)
}

#[test]
fn verify_accepts_a_good_bundle_and_names_the_damaged_member_of_a_bad_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = write_bundle(
        tmp.path(),
        "a",
        "docker.io/library/app:1",
        &layer(400_000, 1),
    );
    let (out, _) = run_ok(&mut kk_install(&["verify"], &good));
    assert!(
        out.starts_with("ok: 8 members") && out.contains("identity sha256:"),
        "{out}"
    );
    let bad = tmp.path().join("bad.tar.zst");
    tamper(&good, &bad);
    let err = run_failing(&mut kk_install(&["verify"], &bad));
    assert!(
        err.contains("member `blobs/sha256/"),
        "the damaged member is not named: {err}"
    );
}

#[test]
fn inspect_reads_the_header() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = write_bundle(tmp.path(), "a", "docker.io/library/app:1", &layer(1000, 2));
    let (out, _) = run_ok(&mut kk_install(&["inspect", "--output", "json"], &bundle));
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(json["artifacts"][0]["reference"], "docker.io/library/app:1");
    assert_eq!(json["members"], 8);
}

#[test]
fn unpack_builds_a_store_that_skopeo_reads_and_adds_bundles_to_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let first = write_bundle(
        tmp.path(),
        "a",
        "docker.io/library/app:1",
        &layer(300_000, 3),
    );
    let (out, _) = run_ok(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &first,
    ));
    assert!(out.contains("3 blobs written, 0 already present"), "{out}");
    let mut skopeo = Command::new("skopeo");
    skopeo
        .arg("inspect")
        .arg(format!("oci:{}:docker.io/library/app:1", store.display()));
    let (inspected, _) = run_ok(&mut skopeo);
    assert!(
        inspected.contains("\"Architecture\": \"amd64\""),
        "{inspected}"
    );

    // Again: everything is present and verified, nothing is rewritten.
    let (out, _) = run_ok(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &first,
    ));
    assert!(out.contains("0 blobs written, 3 already present"), "{out}");

    // A second bundle adds its image; the first stays listed.
    let second = write_bundle(tmp.path(), "b", "quay.io/x/other:2", &layer(1000, 4));
    run_ok(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &second,
    ));
    let index = fs::read_to_string(store.join("index.json")).expect("index");
    assert!(
        index.contains("docker.io/library/app:1") && index.contains("quay.io/x/other:2"),
        "{index}"
    );
    assert_eq!(
        fs::read_dir(store.join("kk-bundle"))
            .expect("headers")
            .count(),
        2,
        "one header directory per bundle"
    );
}

#[test]
fn a_failed_unpack_leaves_nothing_unverified_and_never_writes_beside_the_bundle() {
    let tmp = tempfile::tempdir().expect("tmp");
    let media = tmp.path().join("usb");
    fs::create_dir(&media).expect("dir");
    let good = write_bundle(&media, "a", "docker.io/library/app:1", &layer(400_000, 5));
    let bad = media.join("bad.tar.zst");
    tamper(&good, &bad);
    let before: Vec<_> = fs::read_dir(&media)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    // A store the failed unpack created is removed whole.
    let fresh = tmp.path().join("fresh-store");
    let err = run_failing(&mut kk_install(
        &["unpack", "--store", fresh.to_str().expect("utf-8")],
        &bad,
    ));
    assert!(err.contains("member `blobs/sha256/"), "{err}");
    assert!(
        !fresh.exists(),
        "the failed unpack left the store it created"
    );
    // One that was there keeps the blobs that verified, for a resumed unpack.
    let store = tmp.path().join("store");
    fs::create_dir(&store).expect("store");
    let err = run_failing(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &bad,
    ));
    assert!(err.contains("member `blobs/sha256/"), "{err}");
    let after: Vec<_> = fs::read_dir(&media)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(before, after, "unpack wrote next to the bundle");
    assert!(
        !store.join("index.json").exists(),
        "an index was published for a bundle that failed"
    );
    for entry in fs::read_dir(store.join("blobs/sha256")).expect("blobs") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(!name.starts_with('.'), "temporary file left: {name}");
        let (digest, _) =
            Sha256Digest::of_reader(fs::File::open(&path).expect("blob")).expect("hash");
        assert_eq!(digest.hex(), name, "unverified blob {name} in the store");
    }
}

#[test]
fn a_split_bundle_unpacks_from_its_parts_and_a_missing_part_is_named() {
    let tmp = tempfile::tempdir().expect("tmp");
    let index = write_bundle_split(
        tmp.path(),
        "s",
        "docker.io/library/app:1",
        &layer(300_000, 6),
        Some(64 << 10),
    );
    assert!(
        index.to_string_lossy().ends_with(".split.json"),
        "{}",
        index.display()
    );
    let store = tmp.path().join("store");
    let first_part = tmp.path().join("s.tar.zst.part001");
    let (out, _) = run_ok(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &first_part,
    ));
    assert!(out.contains("3 blobs written"), "{out}");
    fs::remove_file(tmp.path().join("s.tar.zst.part002")).expect("remove a part");
    let err = run_failing(&mut kk_install(&["verify"], &index));
    assert!(
        err.contains("s.tar.zst.part002") && err.contains("missing"),
        "{err}"
    );
}

/// A store holding one unpacked bundle with the image `docker.io/library/app:1`.
fn unpacked_store(layer_len: usize, seed: u8) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let bundle = write_bundle(
        tmp.path(),
        "a",
        "docker.io/library/app:1",
        &layer(layer_len, seed),
    );
    run_ok(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &bundle,
    ));
    (tmp, store)
}

/// Debian's `docker-registry` on a free loopback port, its data in `dir`; TLS with the
/// `registry.crt`/`registry.key` of `pki` when given.
pub(crate) fn docker_registry(dir: &Path, pki: Option<&Path>) -> (u16, KillOnDrop) {
    let data = dir.join("registry");
    fs::create_dir_all(&data).expect("dir");
    let port = crate::labkit::free_port();
    let tls = pki.map_or_else(String::new, |pki| {
        format!(
            "  tls: {{certificate: {}, key: {}}}\n",
            pki.join("registry.crt").display(),
            pki.join("registry.key").display()
        )
    });
    let config = dir.join("registry.yml");
    fs::write(
        &config,
        format!(
            "version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\nhttp:\n  addr: 127.0.0.1:{port}\n{tls}",
            data.display()
        ),
    )
    .expect("config");
    let registry = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("docker-registry");
    (port, KillOnDrop(registry))
}

/// `kk-install registry serve ARGS` on a free loopback port.
pub(crate) fn serve(args: &[&std::ffi::OsStr]) -> (u16, KillOnDrop) {
    let port = crate::labkit::free_port();
    let registry = Command::new(binary("kk-install"))
        .args(["registry", "serve"])
        .args(args)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kk-install registry serve");
    (port, KillOnDrop(registry))
}

/// The manifest of `docker.io/library/app:1` as skopeo gets it from our registry on `port`,
/// retried while the server starts listening.
fn app_manifest(port: u16) -> Vec<u8> {
    retry(&mut skopeo_raw(
        &format!("127.0.0.1:{port}"),
        "docker.io/library/app:1",
    ))
    .stdout
}

#[test]
fn the_registry_serves_an_unpacked_store_to_skopeo() {
    let (_tmp, store) = unpacked_store(200_000, 7);
    let (port, _stop) = serve(&["--store".as_ref(), store.as_os_str()]);
    let manifest_bytes = app_manifest(port);
    let digest = first_manifest_digest(&store);
    let stored = fs::read(
        store
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:")),
    )
    .expect("manifest blob");
    assert_eq!(
        manifest_bytes, stored,
        "the registry changed the manifest's bytes"
    );
}

#[test]
fn registry_push_copies_the_store_into_a_real_registry_digests_unchanged() {
    let (tmp, store) = unpacked_store(100_000, 8);
    let (port, _registry) = docker_registry(tmp.path(), None);
    let mut push = Command::new(binary("kk-install"));
    push.args(["registry", "push", "--store"])
        .arg(&store)
        .args(["--to", &format!("127.0.0.1:{port}"), "--plain-http"]);
    retry(&mut push);
    let mut skopeo = Command::new("skopeo");
    skopeo
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://127.0.0.1:{port}/docker.io/library/app:1"));
    let (pulled, _) = run_ok(&mut skopeo);
    assert_eq!(
        Sha256Digest::of(pulled.as_bytes()).to_string(),
        first_manifest_digest(&store)
    );
}

/// The compressed `(offset, size)` of every zstd frame, from the seek table at the end of the
/// file (SPEC.md §2.3); the last entry is the integrity frame.
fn frames(bundle: &[u8]) -> Vec<(usize, usize)> {
    let le32 =
        |at: usize| u32::from_le_bytes(bundle[at..at + 4].try_into().expect("4 bytes")) as usize;
    let count = le32(bundle.len() - 9);
    let entries = bundle.len() - 9 - 8 * count;
    let mut offset = 0;
    (0..count)
        .map(|i| {
            let size = le32(entries + 8 * i);
            let frame = (offset, size);
            offset += size;
            frame
        })
        .collect()
}

#[test]
fn tampered_bundles_are_refused_naming_the_member_and_leave_the_store_clean() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = write_bundle(
        tmp.path(),
        "a",
        "docker.io/library/app:1",
        &layer(200_000, 9),
    );
    let bytes = fs::read(&good).expect("bundle");
    let frames = frames(&bytes);
    // Members in order: SHA256SUMS, bundle.json, oci-layout, index.json, sbom.spdx.json, then
    // blobs; each small member is one frame.
    let flip_in_frame = |frame: usize| {
        let (offset, size) = frames[frame];
        let mut tampered = bytes.clone();
        tampered[offset + size / 2] ^= 0x40;
        tampered
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("checksum list", flip_in_frame(0), "kk-bundle/SHA256SUMS"),
        ("description", flip_in_frame(1), "kk-bundle/bundle.json"),
        ("index.json", flip_in_frame(3), "index.json"),
        ("SBOM", flip_in_frame(4), "kk-bundle/sbom.spdx.json"),
        (
            "truncated",
            bytes[..bytes.len() - 100].to_vec(),
            "truncated",
        ),
    ];
    for (what, tampered, expected) in cases {
        let path = tmp.path().join("t.tar.zst");
        fs::write(&path, &tampered).expect("write");
        let err = run_failing(&mut kk_install(&["verify"], &path));
        assert!(err.contains(expected), "{what}: {err}");
        let store = tmp.path().join(format!("store-{}", what.replace(' ', "-")));
        let err = run_failing(&mut kk_install(
            &["unpack", "--store", store.to_str().expect("utf-8")],
            &path,
        ));
        assert!(err.contains(expected), "{what}: {err}");
        assert!(
            !store.join("index.json").exists(),
            "{what}: an index was published"
        );
        let leftovers: Vec<_> = fs::read_dir(store.join("blobs/sha256"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name())
                    .filter(|n| n.to_string_lossy().starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            leftovers.is_empty(),
            "{what}: temporary files left: {leftovers:?}"
        );
    }
}

/// Unmounts a file system the test mounted.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn unpack_refuses_before_writing_when_the_store_has_no_room() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = write_bundle(
        tmp.path(),
        "big",
        "docker.io/library/big:1",
        &layer(3 << 20, 10),
    );
    // A 1 MiB file system of our own for the store.
    let small = tmp.path().join("small");
    fs::create_dir(&small).expect("dir");
    let mut mount = Command::new("mount");
    mount
        .args(["-t", "tmpfs", "-o", "size=1m", "kk-e2e-small"])
        .arg(&small);
    run_ok(&mut mount);
    let _unmount = Unmount(small.clone());
    let store = small.join("store");
    let err = run_failing(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &bundle,
    ));
    assert!(err.contains("free") && err.contains("store"), "{err}");
    let blobs = fs::read_dir(store.join("blobs/sha256")).map_or(0, Iterator::count);
    assert_eq!(blobs, 0, "unpack wrote before refusing");
}

/// The digest `index.json` of `store` gives its first artifact.
fn first_manifest_digest(store: &Path) -> String {
    let index: serde_json::Value =
        serde_json::from_slice(&fs::read(store.join("index.json")).expect("index")).expect("json");
    index["manifests"][0]["digest"]
        .as_str()
        .expect("digest")
        .to_owned()
}

#[test]
fn registry_serve_with_a_bundle_unpacks_it_first_and_refuses_a_tampered_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = write_bundle(
        tmp.path(),
        "a",
        "docker.io/library/app:1",
        &layer(300_000, 11),
    );
    let bad = tmp.path().join("bad.tar.zst");
    tamper(&bundle, &bad);
    let bad_store = tmp.path().join("bad-store");
    let err = run_failing(
        Command::new(binary("kk-install"))
            .args(["registry", "serve", "--bundle"])
            .arg(&bad)
            .arg("--store")
            .arg(&bad_store)
            .args([
                "--listen",
                &format!("127.0.0.1:{}", crate::labkit::free_port()),
            ]),
    );
    assert!(err.contains("blobs/sha256/"), "{err}");
    assert!(
        !bad_store.join("index.json").exists(),
        "a refused bundle published an index"
    );

    let store = tmp.path().join("store");
    let (port, _stop) = serve(&[
        "--bundle".as_ref(),
        bundle.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
    ]);
    let served = app_manifest(port);
    assert_eq!(
        Sha256Digest::of(&served).to_string(),
        first_manifest_digest(&store),
        "the registry did not serve the bundle's manifest byte for byte"
    );
}

#[test]
fn registry_push_from_a_bundle_over_tls_trusts_only_the_given_ca() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pki = tmp.path().join("pki");
    run_ok(
        Command::new(binary("kk-install"))
            .args(["registry", "cert", "--ca-out"])
            .arg(&pki)
            .args(["--names", "127.0.0.1,localhost"]),
    );
    let (port, _registry) = docker_registry(tmp.path(), Some(&pki));
    let bundle = write_bundle(
        tmp.path(),
        "a",
        "docker.io/library/app:1",
        &layer(150_000, 12),
    );
    let store = tmp.path().join("store");
    let push = |ca: Option<&Path>| {
        let mut cmd = Command::new(binary("kk-install"));
        cmd.args(["registry", "push", "--bundle"])
            .arg(&bundle)
            .arg("--store")
            .arg(&store)
            .args(["--to", &format!("127.0.0.1:{port}")]);
        if let Some(ca) = ca {
            cmd.arg("--ca").arg(ca);
        }
        cmd
    };
    // Wait for the registry with a trusted push, after checking an untrusted one fails: the
    // registry may not listen yet, so the refusal must be about the certificate.
    let mut trusted = push(Some(&pki.join("ca.crt")));
    retry(&mut trusted);
    let err = run_failing(&mut push(None));
    assert!(
        err.to_lowercase().contains("certificate") || err.contains("UnknownIssuer"),
        "a push to a registry with an unknown CA must fail on the certificate: {err}"
    );
    let certs = tmp.path().join("certs");
    fs::create_dir_all(&certs).expect("dir");
    fs::copy(pki.join("ca.crt"), certs.join("ca.crt")).expect("ca");
    let (pulled, _) = run_ok(
        Command::new("skopeo")
            .args(["inspect", "--raw", "--cert-dir"])
            .arg(&certs)
            .arg(format!("docker://127.0.0.1:{port}/docker.io/library/app:1")),
    );
    assert_eq!(
        Sha256Digest::of(pulled.as_bytes()).to_string(),
        first_manifest_digest(&store)
    );
}

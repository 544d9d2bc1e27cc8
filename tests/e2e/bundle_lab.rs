//! `kk-bundle build` against the upstream lab: real registry, real file server, real skopeo,
//! zstd and tar reading what it wrote. (The module name ends in `lab`, so nextest runs these
//! one at a time with the other lab tests.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::labkit::Lab;
use crate::support::{KillOnDrop, binary, retry, run_failing, run_ok, skopeo_raw};

/// A lab, a scratch directory, and the lab manifest rendered for this lab.
pub(crate) struct Bench {
    pub(crate) lab: Lab,
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) manifest: PathBuf,
}

impl Bench {
    pub(crate) fn new() -> Self {
        let lab = Lab::up(&Lab::default_dir());
        let tmp = tempfile::tempdir().expect("tempdir");
        let manifest = tmp.path().join("lab.yaml");
        render(&lab, Path::new("manifests/lab.yaml"), &manifest);
        Self { lab, tmp, manifest }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// `kk-bundle build` of `manifest` into `out` with its own cache, plus `args`.
    pub(crate) fn build(&self, manifest: &Path, out: &str, cache: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary("kk-bundle"));
        cmd.arg("build")
            .arg(manifest)
            .arg("-o")
            .arg(self.path(out))
            .arg("--cache")
            .arg(self.path(cache))
            .args(["--level", "3"])
            .args(args)
            .env_remove("SOURCE_DATE_EPOCH");
        cmd
    }
}

fn render(lab: &Lab, template: &Path, out: &Path) {
    let mut cmd = lab.command("bash");
    cmd.current_dir(crate::support::workspace_root())
        .arg("scripts/lab/render.sh")
        .arg(template)
        .arg(out);
    run_ok(&mut cmd);
}

/// Unpacks a bundle with nothing but the real `zstd` and `tar`.
fn unpack(bundle: &Path, dir: &Path) {
    fs::create_dir_all(dir).expect("dir");
    let mut cmd = Command::new("bash");
    cmd.args([
        "-euo",
        "pipefail",
        "-c",
        "zstd -dc \"$1\" | tar -x -C \"$2\"",
        "unpack",
    ])
    .arg(bundle)
    .arg(dir);
    run_ok(&mut cmd);
}

fn index(dir: &Path) -> Value {
    serde_json::from_slice(&fs::read(dir.join("index.json")).expect("index.json")).expect("json")
}

/// The descriptor `index.json` lists under `reference`.
fn entry(index: &Value, reference: &str) -> Value {
    index["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == reference)
        .unwrap_or_else(|| panic!("index.json has no `{reference}`: {index:#}"))
        .clone()
}

fn blob(dir: &Path, digest: &str) -> Vec<u8> {
    let hex = digest.strip_prefix("sha256:").expect("sha256 digest");
    fs::read(dir.join("blobs/sha256").join(hex)).unwrap_or_else(|e| panic!("blob {digest}: {e}"))
}

fn has_blob(dir: &Path, digest: &str) -> bool {
    dir.join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
        .is_file()
}

fn json_blob(dir: &Path, digest: &str) -> Value {
    serde_json::from_slice(&blob(dir, digest)).expect("json blob")
}

/// The raw manifest of `image` on `registry`, as its bytes.
fn raw_manifest(registry: &str, image: &str) -> Vec<u8> {
    run_ok(&mut skopeo_raw(registry, image)).1.stdout
}

fn sha256_of(bytes: &[u8]) -> String {
    bundle_spec::Sha256Digest::of(bytes).to_string()
}

#[test]
fn the_lab_manifest_becomes_a_bundle_that_standard_tools_read() {
    let b = Bench::new();
    run_ok(&mut b.build(
        &b.manifest,
        "b.tar.zst",
        "cache",
        &["--allow-missing-platforms"],
    ));
    let dir = b.path("unpacked");
    unpack(&b.path("b.tar.zst"), &dir);
    let index = index(&dir);
    let registry = b.lab.registry();

    // OCI images: skopeo reads them from the layout by their original names.
    for reference in [
        "docker.io/library/busybox:1.36",
        "lab.local/lab/app-a:1.0",
        &format!("{registry}/lab/oci-media:1.0"),
    ] {
        let mut cmd = Command::new("skopeo");
        cmd.arg("inspect")
            .arg(format!("oci:{}:{reference}", dir.display()));
        let (out, _) = run_ok(&mut cmd);
        assert!(
            out.contains("\"Architecture\": \"amd64\""),
            "{reference}: {out}"
        );
    }

    check_upstream_bytes(&dir, &index, registry);
    check_artifacts(&b, &dir, &index);
}

/// Multi-arch indexes and Docker manifests are upstream's bytes; shared layers are stored once.
fn check_upstream_bytes(dir: &Path, index: &Value, registry: &str) {
    // Multi-arch: the index is upstream's, byte for byte, and both platforms are present.
    let upstream_index = raw_manifest(registry, "library/busybox:1.36");
    let busybox = entry(index, "docker.io/library/busybox:1.36");
    assert_eq!(busybox["digest"], sha256_of(&upstream_index));
    assert_eq!(
        blob(dir, busybox["digest"].as_str().expect("digest")),
        upstream_index
    );
    for platform in json_blob(dir, busybox["digest"].as_str().expect("digest"))["manifests"]
        .as_array()
        .expect("entries")
    {
        assert!(
            has_blob(dir, platform["digest"].as_str().expect("digest")),
            "{platform}"
        );
    }

    // Docker media types are stored byte for byte under their own media type.
    let docker = entry(index, "lab.local/lab/docker-media:1.0");
    assert_eq!(
        docker["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );
    assert_eq!(
        blob(dir, docker["digest"].as_str().expect("digest")),
        raw_manifest(registry, "lab/docker-media:1.0")
    );

    // Shared layers are stored once: app-a and app-b share their base layer.
    let layers = |name: &str| {
        let top = json_blob(dir, entry(index, name)["digest"].as_str().expect("digest"));
        let amd64 = &top["manifests"][0]["digest"];
        json_blob(dir, amd64.as_str().expect("digest"))["layers"]
            .as_array()
            .expect("layers")
            .clone()
    };
    assert_eq!(
        layers("lab.local/lab/app-a:1.0")[0],
        layers("lab.local/lab/app-b:1.0")[0]
    );
}

/// Charts with Helm's media types, binaries as ORAS-style artifacts, the lock beside the manifest.
fn check_artifacts(b: &Bench, dir: &Path, index: &Value) {
    let registry = b.lab.registry();

    // Charts, from the HTTP repository and from the registry, with Helm's media types.
    for reference in [
        "kk.internal/charts/kk-web:1.2.0",
        &format!("{registry}/charts/kk-demo:0.1.0"),
    ] {
        let manifest = json_blob(
            dir,
            entry(index, reference)["digest"].as_str().expect("digest"),
        );
        assert_eq!(
            manifest["config"]["mediaType"], "application/vnd.cncf.helm.config.v1+json",
            "{reference}"
        );
        assert_eq!(
            manifest["layers"][0]["mediaType"],
            "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
            "{reference}"
        );
    }

    // Binaries: ORAS-style artifacts per platform, holding exactly the upstream files.
    let etcd = json_blob(
        dir,
        entry(index, "kk.internal/binaries/etcd:v3.5.16")["digest"]
            .as_str()
            .expect("digest"),
    );
    let platforms: Vec<_> = etcd["manifests"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|m| m["platform"]["architecture"].clone())
        .collect();
    assert_eq!(platforms, ["amd64", "arm64"]);
    let amd64 = json_blob(
        dir,
        etcd["manifests"][0]["digest"].as_str().expect("digest"),
    );
    let layer = &amd64["layers"][0];
    assert_eq!(
        layer["annotations"]["org.opencontainers.image.title"],
        "etcd-v3.5.16-linux-amd64.tar.gz"
    );
    let served = fs::read(
        b.lab
            .dir()
            .join("http/etcd/v3.5.16/etcd-v3.5.16-linux-amd64.tar.gz"),
    )
    .expect("lab file");
    assert_eq!(blob(dir, layer["digest"].as_str().expect("digest")), served);

    // The lock sits beside the manifest and names every image digest.
    let lock = fs::read_to_string(b.path("lab.lock.yaml")).expect("lock beside the manifest");
    let busybox = entry(index, "docker.io/library/busybox:1.36");
    assert!(
        lock.contains(busybox["digest"].as_str().expect("digest")),
        "{lock}"
    );
}

#[test]
fn only_the_requested_platform_is_bundled_and_the_rest_is_recorded() {
    let b = Bench::new();
    run_ok(&mut b.build(
        &b.manifest,
        "arm.tar.zst",
        "cache",
        &["--platform", "linux/arm64", "--allow-missing-platforms"],
    ));
    let dir = b.path("arm");
    unpack(&b.path("arm.tar.zst"), &dir);
    let index = index(&dir);
    let top = json_blob(
        &dir,
        entry(&index, "docker.io/library/busybox:1.36")["digest"]
            .as_str()
            .expect("digest"),
    );
    for platform in top["manifests"].as_array().expect("entries") {
        let present = has_blob(&dir, platform["digest"].as_str().expect("digest"));
        assert_eq!(
            present,
            platform["platform"]["architecture"] == "arm64",
            "{platform}"
        );
    }
    let description: Value =
        serde_json::from_slice(&fs::read(dir.join("kk-bundle/bundle.json")).expect("description"))
            .expect("json");
    let busybox = description["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .find(|a| a["reference"] == "docker.io/library/busybox:1.36")
        .expect("busybox artifact")
        .clone();
    assert_eq!(busybox["platform"], "linux/arm64");
    assert_eq!(
        busybox["omittedPlatforms"],
        serde_json::json!(["linux/amd64"])
    );
}

#[test]
fn a_missing_platform_fails_naming_the_image() {
    let b = Bench::new();
    let err = run_failing(&mut b.build(&b.manifest, "x.tar.zst", "cache", &[]));
    assert!(
        err.contains("lab.local/lab/docker-media:1.0")
            && err.contains("linux/arm64")
            && err.contains("--allow-missing-platforms"),
        "{err}"
    );
    assert!(!b.path("x.tar.zst").exists());
}

#[test]
fn same_lock_same_bytes_and_source_date_epoch_makes_unlocked_builds_identical() {
    let b = Bench::new();
    let args = ["--allow-missing-platforms"];
    let mut first = b.build(&b.manifest, "a.tar.zst", "cache-a", &args);
    run_ok(first.env("SOURCE_DATE_EPOCH", "1795000000"));
    let mut second = b.build(&b.manifest, "b.tar.zst", "cache-b", &args);
    run_ok(second.env("SOURCE_DATE_EPOCH", "1795000000"));
    let a = fs::read(b.path("a.tar.zst")).expect("a");
    assert_eq!(
        a,
        fs::read(b.path("b.tar.zst")).expect("b"),
        "unlocked builds with SOURCE_DATE_EPOCH differ"
    );

    run_ok(&mut b.build(
        &b.manifest,
        "c.tar.zst",
        "cache-a",
        &["--allow-missing-platforms", "--locked"],
    ));
    run_ok(&mut b.build(
        &b.manifest,
        "d.tar.zst",
        "cache-c",
        &["--allow-missing-platforms", "--locked"],
    ));
    assert_eq!(
        fs::read(b.path("c.tar.zst")).expect("c"),
        fs::read(b.path("d.tar.zst")).expect("d"),
        "locked builds differ"
    );
    // The lock was written with SOURCE_DATE_EPOCH, so its time dates the locked builds too.
    assert_eq!(fs::read(b.path("c.tar.zst")).expect("c"), a);
}

#[test]
fn a_locked_build_fails_when_a_tag_moved() {
    let b = Bench::new();
    let registry = b.lab.registry();
    let copy = |from: &str, to: &str| {
        let mut cmd = Command::new("skopeo");
        cmd.args([
            "copy",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            "--all",
        ])
        .arg(format!("docker://{registry}/{from}"))
        .arg(format!("docker://{registry}/{to}"));
        run_ok(&mut cmd);
    };
    copy("lab/app-a:1.0", "lab/moving:1");
    let manifest = b.path("moving.yaml");
    fs::write(
        &manifest,
        format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: moving}}\nspec:\n  images: [\"{registry}/lab/moving:1\"]\n  registries: {{\"{registry}\": {{plainHTTP: true}}}}\n"
        ),
    )
    .expect("manifest");
    run_ok(&mut b.build(&manifest, "m.tar.zst", "cache", &[]));
    copy("lab/app-b:1.0", "lab/moving:1");
    let err = run_failing(&mut b.build(&manifest, "n.tar.zst", "cache", &["--locked"]));
    assert!(
        err.contains("drifted") && err.contains("lab/moving:1"),
        "{err}"
    );
}

#[test]
fn cut_downloads_resume_and_server_errors_are_retried() {
    let b = Bench::new();
    b.lab.set_faults(
        r#"{"/etcd/v3.5.16/etcd-v3.5.16-linux-amd64.tar.gz": {"mode": "cut", "after": 1000000, "times": 1},
            "/containerd/v1.7.24/containerd-1.7.24-linux-amd64.tar.gz": {"mode": "status", "status": 500, "times": 2},
            "/runc/v1.1.5/runc.amd64": {"mode": "status", "status": 429, "times": 1}}"#,
    );
    let before = b.lab.access_log().len();
    let out = b
        .build(
            &b.manifest,
            "f.tar.zst",
            "cache",
            &["--allow-missing-platforms"],
        )
        .output()
        .expect("run");
    b.lab.set_faults("{}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = b.lab.access_log().split_off(before);
    let etcd: Vec<_> = log
        .iter()
        .filter(|e| e.path.ends_with("etcd-v3.5.16-linux-amd64.tar.gz") && e.method == "GET")
        .collect();
    assert!(
        etcd.iter().any(|e| e.fault.as_deref() == Some("cut")),
        "{etcd:?}"
    );
    assert!(
        etcd.iter()
            .any(|e| e.range.as_deref() == Some("bytes=1000000-") && e.status == 206),
        "the cut download was not resumed with Range: {etcd:?}"
    );
    let retried = |suffix: &str, status: u16| {
        log.iter()
            .filter(|e| e.path.ends_with(suffix) && e.status == status)
            .count()
    };
    assert_eq!(retried("containerd-1.7.24-linux-amd64.tar.gz", 500), 2);
    assert_eq!(retried("runc.amd64", 429), 1);
    assert!(retried("runc.amd64", 200) >= 1);
}

#[test]
fn wrong_bytes_for_a_digest_fail_the_build_naming_the_blob() {
    let b = Bench::new();
    // The registry's own storage of oci-media's config blob is damaged, then restored.
    let registry = b.lab.registry();
    let manifest: Value =
        serde_json::from_slice(&raw_manifest(registry, "lab/oci-media:1.0")).expect("manifest");
    let config = manifest["config"]["digest"]
        .as_str()
        .expect("config digest")
        .to_owned();
    let hex = config.trim_start_matches("sha256:");
    let data = b
        .lab
        .dir()
        .join("registry/data/docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let original = fs::read(&data).expect("registry blob");
    let restore = Restore {
        path: data.clone(),
        bytes: original.clone(),
    };
    let mut damaged = original.clone();
    damaged[0] ^= 0xff;
    fs::write(&data, damaged).expect("damage");
    let err = run_failing(&mut b.build(
        &b.manifest,
        "w.tar.zst",
        "cache",
        &["--allow-missing-platforms"],
    ));
    assert!(
        err.contains(hex),
        "the error does not name blob {config}:\n{err}"
    );
    assert!(!b.path("w.tar.zst").exists());
    assert!(
        fs::read_dir(b.path("cache/blobs/sha256")).map_or(true, |mut d| d.all(|e| !e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .contains(hex)))
    );

    drop(restore);

    // A file server sending damaged bytes for a binary: the checksum file catches it.
    b.lab
        .set_faults(r#"{"/runc/v1.1.5/runc.amd64": {"mode": "corrupt"}}"#);
    let err = run_failing(&mut b.build(
        &b.manifest,
        "v.tar.zst",
        "cache2",
        &["--allow-missing-platforms"],
    ));
    b.lab.set_faults("{}");
    assert!(err.contains("runc.amd64"), "{err}");
}

/// Puts a file's bytes back, even when the test fails.
struct Restore {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = fs::write(&self.path, &self.bytes);
    }
}

#[test]
fn a_build_killed_mid_download_reruns_to_the_same_bundle() {
    let b = Bench::new();
    let args = ["--allow-missing-platforms"];
    let mut reference = b.build(&b.manifest, "ref.tar.zst", "cache-ref", &args);
    run_ok(reference.env("SOURCE_DATE_EPOCH", "1795000000"));
    // Hold one download for long enough that the build is surely still fetching when killed.
    b.lab.set_faults(r#"{"/containerd/v1.7.24/containerd-1.7.24-linux-amd64.tar.gz": {"mode": "delay", "seconds": 20}}"#);
    let served_before = b.lab.access_log().len();
    let mut cmd = b.build(&b.manifest, "k.tar.zst", "cache-k", &args);
    let mut child = cmd
        .env("SOURCE_DATE_EPOCH", "1795000000")
        .spawn()
        .expect("spawn");
    // Wait until the build has fetched a few files (the held one is still pending).
    for _ in 0..400 {
        if b.lab.access_log().len() >= served_before + 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    b.lab.set_faults("{}");
    assert!(
        b.lab.access_log().len() >= served_before + 3,
        "the build fetched nothing before the kill"
    );
    assert!(
        !b.path("k.tar.zst").exists(),
        "a killed build left a bundle"
    );
    let mut rerun = b.build(&b.manifest, "k.tar.zst", "cache-k", &args);
    run_ok(rerun.env("SOURCE_DATE_EPOCH", "1795000000"));
    assert_eq!(
        fs::read(b.path("k.tar.zst")).expect("k"),
        fs::read(b.path("ref.tar.zst")).expect("ref")
    );
}

/// Seeds the lab with stand-ins for everything `kk-bundle catalog VERSION` names and writes a
/// manifest `k8s.yaml` in `dir` for that version whose download hosts and registries all point at
/// the lab (`scripts/lab/catalog-manifest.py`). Returns the manifest and the catalog's JSON.
pub(crate) fn catalog_manifest(lab: &Lab, dir: &Path, version: &str) -> (PathBuf, String) {
    catalog_manifest_with(lab, dir, version, &[])
}

/// [`catalog_manifest`] with more options of `scripts/lab/catalog-manifest.py` (`--packages URL
/// SUITE KEYRING`, `--kube-proxy-mode ipvs`, `--storage nfs`, `--cni hybridnet`,
/// `--component containerd=2.1.9`, `--multi-cni multus`).
pub(crate) fn catalog_manifest_with(
    lab: &Lab,
    dir: &Path,
    version: &str,
    options: &[&str],
) -> (PathBuf, String) {
    let catalog = dir.join("catalog.json");
    let mut cmd = Command::new(binary("kk-bundle"));
    cmd.args(["catalog", version, "--output", "json"]);
    // The features the catalog expands with (their charts and images are seeded too).
    for pair in options.windows(2) {
        if matches!(
            pair[0],
            "--kube-proxy-mode" | "--storage" | "--cni" | "--component" | "--multi-cni"
        ) {
            cmd.args(pair);
        }
    }
    let (json, _) = run_ok(&mut cmd);
    fs::write(&catalog, &json).expect("catalog");
    let mut seed = lab.command("bash");
    seed.current_dir(crate::support::workspace_root())
        .env("LAB_DIR", lab.dir())
        .arg("scripts/lab/seed-catalog.sh")
        .arg(&catalog);
    run_ok(&mut seed);

    // Every download host and registry of the catalog points at the lab, and every binary the
    // catalog pins (multus's manifest with `--multi-cni multus`) is pinned to the lab's file.
    let manifest = dir.join("k8s.yaml");
    let mut render = Command::new("python3");
    render
        .current_dir(crate::support::workspace_root())
        .arg("scripts/lab/catalog-manifest.py")
        .arg(&catalog)
        .args(["k8s", lab.http(), lab.registry()])
        .args(options)
        .arg("--pin-seeded")
        .arg(lab.dir().join("seeded").join("catalog.json"));
    let (text, _) = run_ok(&mut render);
    fs::write(&manifest, text).expect("manifest");
    (manifest, json)
}

#[test]
fn a_kubernetes_version_expands_through_the_catalog_into_a_bundle_from_the_lab() {
    let b = Bench::new();
    let (manifest, json) = catalog_manifest(&b.lab, b.tmp.path(), "v1.31.4");
    let expansion: Value = serde_json::from_str(&json).expect("json");
    run_ok(&mut b.build(&manifest, "k8s.tar.zst", "cache", &[]));

    let mut inspect = Command::new(binary("kk-bundle"));
    inspect
        .arg("inspect")
        .arg(b.path("k8s.tar.zst"))
        .args(["--output", "json"]);
    let (out, _) = run_ok(&mut inspect);
    let inspected: Value = serde_json::from_str(&out).expect("inspect json");
    let references: Vec<&str> = inspected["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter_map(|a| a["reference"].as_str())
        .collect();
    for expected in [
        "registry.k8s.io/kube-apiserver:v1.31.4",
        "registry.k8s.io/pause:3.10",
        "registry.k8s.io/coredns/coredns:v1.11.3",
        "kk.internal/binaries/kubeadm:v1.31.4",
        "kk.internal/binaries/etcd:v3.5.15",
        "kk.internal/charts/tigera-operator:v3.30.5",
    ] {
        assert!(
            references.contains(&expected),
            "{expected} missing from {references:?}"
        );
    }
    // Every image and binary of the catalog is in the bundle.
    let images = expansion["images"].as_array().expect("images").len();
    let binaries = expansion["binaries"].as_array().expect("binaries").len();
    let count = |kind: &str| {
        inspected["artifacts"]
            .as_array()
            .expect("artifacts")
            .iter()
            .filter(|a| a["kind"] == kind)
            .count()
    };
    assert_eq!(count("image"), images);
    assert_eq!(count("binary"), binaries);
}

#[test]
fn bad_manifests_fail_with_a_message_naming_the_problem() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let head =
        "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {name: bad}\nspec:\n";
    for (body, expected) in [
        ("  imagez: [docker.io/library/busybox:1.36]\n", "`images`"),
        (
            "  images: [\"docker.io/library/Busy Box:1.36\"]\n",
            "Busy Box",
        ),
        ("  kubernetes: {version: v1.99.0}\n", "v1.29"),
    ] {
        let manifest = tmp.path().join("bad.yaml");
        fs::write(&manifest, format!("{head}{body}")).expect("manifest");
        let mut cmd = Command::new(binary("kk-bundle"));
        cmd.arg("build")
            .arg(&manifest)
            .arg("-o")
            .arg(tmp.path().join("x.tar.zst"))
            .arg("--cache")
            .arg(tmp.path().join("cache"));
        let err = run_failing(&mut cmd);
        assert!(
            err.contains(expected) && err.contains("bad.yaml"),
            "for {body:?}: {err}"
        );
        assert!(!tmp.path().join("x.tar.zst").exists());
    }
}

#[test]
fn registry_credentials_come_from_the_variable_the_manifest_names() {
    let b = Bench::new();
    // A second real registry, with basic auth, on a port of our own.
    let dir = b.path("auth-registry");
    fs::create_dir_all(dir.join("data")).expect("dir");
    let mut htpasswd = Command::new("htpasswd");
    htpasswd
        .args(["-Bbc"])
        .arg(dir.join("htpasswd"))
        .args(["kk", "s3cret"]);
    run_ok(&mut htpasswd);
    let (auth_registry, _stop) = extra_registry(
        &dir,
        &format!(
            "auth:\n  htpasswd: {{realm: kk-test, path: {}}}\n",
            dir.join("htpasswd").display()
        ),
    );
    let mut copy = Command::new("skopeo");
    copy.args([
        "copy",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        "--dest-creds",
        "kk:s3cret",
    ])
    .arg(format!("docker://{}/lab/oci-media:1.0", b.lab.registry()))
    .arg(format!("docker://{auth_registry}/private/app:1"));
    retry(&mut copy);
    let manifest = b.path("private.yaml");
    fs::write(
        &manifest,
        format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: private}}\nspec:\n  images: [\"{auth_registry}/private/app:1\"]\n  registries:\n    \"{auth_registry}\": {{plainHTTP: true, username: kk, passwordEnv: KK_TEST_REGISTRY_PASSWORD}}\n"
        ),
    )
    .expect("manifest");
    let mut wrong = b.build(&manifest, "w.tar.zst", "cache-w", &[]);
    let err = run_failing(wrong.env("KK_TEST_REGISTRY_PASSWORD", "wrong"));
    assert!(
        err.contains("private/app:1") && !err.contains("wrong"),
        "{err}"
    );
    let mut unset = b.build(&manifest, "u.tar.zst", "cache-u", &[]);
    let err = run_failing(unset.env_remove("KK_TEST_REGISTRY_PASSWORD"));
    assert!(err.contains("KK_TEST_REGISTRY_PASSWORD"), "{err}");
    let mut right = b.build(&manifest, "r.tar.zst", "cache-r", &[]);
    run_ok(right.env("KK_TEST_REGISTRY_PASSWORD", "s3cret"));
    assert!(b.path("r.tar.zst").is_file());
}

/// Starts another real docker-registry in `dir` on a port of our own, with `extra` config (auth,
/// TLS, ...) merged in; stopped when the returned guard drops.
fn extra_registry(dir: &Path, extra: &str) -> (String, KillOnDrop) {
    fs::create_dir_all(dir.join("data")).expect("dir");
    let port = crate::labkit::free_port();
    let tls = extra.contains("tls:");
    let http = if tls {
        String::new()
    } else {
        format!("http:\n  addr: 127.0.0.1:{port}\n")
    };
    let extra = extra.replace("{PORT}", &port.to_string());
    fs::write(
        dir.join("config.yml"),
        format!(
            "version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem: {{rootdirectory: {}}}\n{http}{extra}",
            dir.join("data").display()
        ),
    )
    .expect("config");
    let server = Command::new("docker-registry")
        .arg("serve")
        .arg(dir.join("config.yml"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("docker-registry");
    (format!("127.0.0.1:{port}"), KillOnDrop(server))
}

#[test]
fn a_registry_with_its_own_ca_is_trusted_through_ca_file_only() {
    let b = Bench::new();
    let dir = b.path("tls-registry");
    let pki = dir.join("pki");
    fs::create_dir_all(&pki).expect("dir");
    let script = "set -e; cd \"$1\"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kk-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out server.crt 2>/dev/null";
    let mut openssl = Command::new("bash");
    openssl.args(["-c", script, "pki"]).arg(&pki);
    run_ok(&mut openssl);
    let (registry, _stop) = extra_registry(
        &dir,
        &format!(
            "http:\n  addr: 127.0.0.1:{{PORT}}\n  tls: {{certificate: {}, key: {}}}\n",
            pki.join("server.crt").display(),
            pki.join("server.key").display()
        ),
    );
    let certs = dir.join("certs");
    fs::create_dir_all(&certs).expect("dir");
    fs::copy(pki.join("ca.crt"), certs.join("ca.crt")).expect("ca");
    let mut copy = Command::new("skopeo");
    copy.args(["copy", "--src-tls-verify=false", "--dest-cert-dir"])
        .arg(&certs)
        .arg(format!("docker://{}/lab/oci-media:1.0", b.lab.registry()))
        .arg(format!("docker://{registry}/secure/app:1"));
    retry(&mut copy);
    let manifest = |name: &str, settings: &str| {
        let path = b.path(name);
        fs::write(
            &path,
            format!("apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: tls}}\nspec:\n  images: [\"{registry}/secure/app:1\"]\n  registries: {{\"{registry}\": {settings}}}\n"),
        )
        .expect("manifest");
        path
    };
    let without = manifest("without.yaml", "{}");
    let err = run_failing(&mut b.build(&without, "u.tar.zst", "cache-u", &[]));
    assert!(err.contains("secure/app:1"), "{err}");
    let with = manifest(
        "with.yaml",
        &format!("{{caFile: \"{}\"}}", pki.join("ca.crt").display()),
    );
    run_ok(&mut b.build(&with, "t.tar.zst", "cache-t", &[]));
    assert!(b.path("t.tar.zst").is_file());
}

#[test]
fn split_size_writes_parts_that_inspect_and_plain_tools_read() {
    let b = Bench::new();
    run_ok(&mut b.build(
        &b.manifest,
        "s.tar.zst",
        "cache",
        &["--allow-missing-platforms", "--split-size", "20MiB"],
    ));
    assert!(!b.path("s.tar.zst").exists());
    let parts: Vec<_> = (1..=9)
        .map(|n| b.path(&format!("s.tar.zst.part{n:03}")))
        .filter(|p| p.exists())
        .collect();
    assert!(parts.len() >= 3, "{parts:?}");
    for part in &parts {
        assert!(fs::metadata(part).expect("part").len() <= 20 << 20);
    }
    let mut inspect = Command::new(binary("kk-bundle"));
    inspect.arg("inspect").arg(b.path("s.tar.zst.part001"));
    let (out, _) = run_ok(&mut inspect);
    assert!(out.contains("docker.io/library/busybox:1.36"), "{out}");
    let mut list = Command::new("bash");
    list.current_dir(b.tmp.path()).args([
        "-euo",
        "pipefail",
        "-c",
        "cat s.tar.zst.part* | zstd -dc | tar -t | awk 'NR <= 2'",
    ]);
    let (names, _) = run_ok(&mut list);
    assert_eq!(names, "kk-bundle/SHA256SUMS\nkk-bundle/bundle.json\n");
}

#[test]
fn real_clients_pull_from_the_bundle_registry_over_tls() {
    let b = Bench::new();
    run_ok(&mut b.build(
        &b.manifest,
        "c.tar.zst",
        "cache",
        &["--platform", "linux/amd64", "--allow-missing-platforms"],
    ));
    let store = b.path("store");
    let mut unpack = Command::new(binary("kk-install"));
    unpack
        .args(["unpack", "--bundle"])
        .arg(b.path("c.tar.zst"))
        .arg("--store")
        .arg(&store);
    run_ok(&mut unpack);
    let pki = b.path("pki");
    let mut cert = Command::new(binary("kk-install"));
    cert.args(["registry", "cert", "--ca-out"])
        .arg(&pki)
        .args(["--names", "127.0.0.1,localhost"]);
    run_ok(&mut cert);
    let port = crate::labkit::free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Command::new(binary("kk-install"))
        .args(["registry", "serve", "--store"])
        .arg(&store)
        .args(["--listen", &addr, "--tls-cert"])
        .arg(pki.join("registry.crt"))
        .arg("--tls-key")
        .arg(pki.join("registry.key"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("registry serve");
    let _server = KillOnDrop(server);

    // skopeo, trusting only our CA.
    let certs = b.path("skopeo-certs");
    fs::create_dir_all(&certs).expect("dir");
    fs::copy(pki.join("ca.crt"), certs.join("ca.crt")).expect("ca");
    let mut inspect = Command::new("skopeo");
    inspect
        .args(["inspect", "--raw", "--cert-dir"])
        .arg(&certs)
        .arg(format!("docker://{addr}/docker.io/library/busybox:1.36"));
    let manifest_bytes = retry(&mut inspect).stdout;
    assert_eq!(
        sha256_of(&manifest_bytes),
        sha256_of(&raw_manifest(b.lab.registry(), "library/busybox:1.36"))
    );

    // helm pulls the OCI chart from the bundle. (helm talks plain HTTP to loopback addresses
    // whatever it is told, so this registry instance serves without TLS.)
    let plain_port = crate::labkit::free_port();
    let plain = format!("127.0.0.1:{plain_port}");
    let plain_server = Command::new(binary("kk-install"))
        .args(["registry", "serve", "--store"])
        .arg(&store)
        .args(["--listen", &plain])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("registry serve");
    let _plain_server = KillOnDrop(plain_server);
    let lab_registry = b.lab.registry().replace(':', "_");
    let mut helm = b.lab.helm();
    helm.current_dir(b.tmp.path()).args([
        "pull",
        &format!("oci://{plain}/{lab_registry}/charts/kk-demo"),
        "--version",
        "0.1.0",
        "--plain-http",
    ]);
    retry(&mut helm);
    assert!(b.path("kk-demo-0.1.0.tgz").is_file());

    containerd_pulls_and_runs(&b, &addr, &pki.join("ca.crt"));
}

/// A real containerd with a `hosts.toml` mirror for docker.io pointing at our registry pulls
/// `docker.io/library/busybox:1.36` by its original name and runs it. Its upstream `server` is a
/// closed loopback port, so nothing can fall back to the internet (LAB-NOTES P1).
fn containerd_pulls_and_runs(b: &Bench, registry: &str, ca: &Path) {
    let c = b.path("containerd");
    let hosts = c.join("certs.d/docker.io");
    fs::create_dir_all(&hosts).expect("dir");
    let closed = crate::labkit::free_port();
    fs::write(
        hosts.join("hosts.toml"),
        format!("server = \"https://127.0.0.1:{closed}\"\n[host.\"https://{registry}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"{}\"\n", ca.display()),
    )
    .expect("hosts.toml");
    let socket = c.join("containerd.sock");
    fs::write(
        c.join("config.toml"),
        format!(
            "version = 2\nroot = \"{root}/root\"\nstate = \"{root}/state\"\n[grpc]\n  address = \"{sock}\"\n[ttrpc]\n  address = \"{sock}.ttrpc\"\n[plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{root}/opt\"\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"{root}/certs.d\"\n",
            root = c.display(),
            sock = socket.display()
        ),
    )
    .expect("config");
    let daemon = Command::new("containerd")
        .arg("--config")
        .arg(c.join("config.toml"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("containerd");
    let _daemon = KillOnDrop(daemon);
    let ctr = |args: &[&str]| {
        let mut cmd = Command::new("ctr");
        cmd.arg("-a").arg(&socket).args(args);
        cmd
    };
    retry(&mut ctr(&["version"]));
    let hosts_dir = c.join("certs.d");
    let mut pull = ctr(&[
        "images",
        "pull",
        "--hosts-dir",
        hosts_dir.to_str().expect("utf-8"),
        "docker.io/library/busybox:1.36",
    ]);
    run_ok(&mut pull);
    let id = format!("kk-e2e-{}", std::process::id());
    let fifo = c.join("fifo");
    let mut container = ctr(&[
        "run",
        "--rm",
        "--fifo-dir",
        fifo.to_str().expect("utf-8"),
        "docker.io/library/busybox:1.36",
        &id,
        "/bin/echo",
        "hello from the bundle",
    ]);
    let (out, _) = run_ok(&mut container);
    assert!(out.contains("hello from the bundle"), "{out}");
    // runc leaves its cgroups in the shared v1 tree (LAB-NOTES P5).
    for controller in fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = fs::remove_dir(controller.path().join("default").join(&id));
    }
}

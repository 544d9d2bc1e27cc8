//! Push mode against Debian's real `docker-registry` (distribution 2.8), checked with skopeo.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bundle_spec::Sha256Digest;
use bundle_spec::oci::{
    DOCKER_MANIFEST_MEDIA_TYPE as DOCKER_MANIFEST, INDEX_MEDIA_TYPE as OCI_INDEX,
    MANIFEST_MEDIA_TYPE as OCI_MANIFEST, TITLE_ANNOTATION,
};
use bundle_spec::test_support::{HandLayout, descriptor, manifest_bytes, named};
use kk_install::error::PushError;
use kk_install::push::{Credentials, PushTarget, push};
use kk_install::registry::Store;
use serde_json::{Value, json};

/// A `docker-registry` process, killed by its PID when dropped.
struct Registry {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Registry {
    /// Starts a registry on a free port of 127.0.0.1; with `htpasswd`, basic auth is required.
    fn start(htpasswd: Option<&Path>) -> Self {
        Self::start_with(htpasswd, None)
    }

    /// [`Self::start`], with TLS when given a certificate and key.
    fn start_with(htpasswd: Option<&Path>, tls: Option<(&Path, &Path)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let auth = htpasswd.map_or_else(String::new, |path| {
            format!(
                "auth:\n  htpasswd:\n    realm: x\n    path: {}\n",
                path.display()
            )
        });
        let tls = tls.map_or_else(String::new, |(cert, key)| {
            format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                cert.display(),
                key.display()
            )
        });
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n{tls}{auth}",
            dir.path().join("data").display()
        );
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let registry = Self {
            child,
            port,
            _dir: dir,
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "docker-registry did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The registry as a target over plain HTTP; a password is sent (the test registry
    /// listens on 127.0.0.1 only).
    fn target(&self, credentials: Option<Credentials>) -> PushTarget {
        PushTarget {
            host: self.host(),
            plain_http: true,
            allow_plain_http_password: true,
            ca_file: None,
            credentials,
            platforms: Vec::new(),
        }
    }

    /// `skopeo inspect --raw` of `reference` (`repo:tag` or `repo@digest`).
    fn raw(&self, reference: &str, creds: Option<&str>) -> Vec<u8> {
        let mut command = Command::new("skopeo");
        command.args(["inspect", "--raw", "--tls-verify=false"]);
        if let Some(creds) = creds {
            command.args(["--creds", creds]);
        }
        let output = command
            .arg(format!("docker://{}/{reference}", self.host()))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "skopeo inspect {reference}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }
}

/// The hand-built store and the manifests to compare.
struct Layout {
    dir: tempfile::TempDir,
    /// (target reference, stored bytes)
    expected: Vec<(String, Vec<u8>)>,
    /// Distinct blobs per repository, summed: what a first push must transfer or mount.
    blob_count: usize,
}

/// A platform image manifest with its own config and layer, plus `shared` as a second layer.
fn image(dir: &HandLayout, arch: &str, shared: &Value) -> (Vec<u8>, Value) {
    let config = json!({ "architecture": arch, "os": "linux", "rootfs": { "type": "layers", "diff_ids": [] } });
    let config = dir.blob_descriptor(
        "application/vnd.oci.image.config.v1+json",
        &serde_json::to_vec(&config).unwrap(),
    );
    let layer = dir.blob_descriptor(
        "application/vnd.oci.image.layer.v1.tar+gzip",
        format!("layer for {arch}").repeat(1000).as_bytes(),
    );
    let bytes = manifest_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": config,
        "layers": [layer, shared],
    }));
    let digest = dir.put_blob(&bytes);
    let mut entry = descriptor(OCI_MANIFEST, digest, bytes.len());
    entry["platform"] = json!({ "os": "linux", "architecture": arch });
    (bytes, entry)
}

/// A store with: a two-platform OCI index (both present), a Docker v2 manifest sharing a
/// layer with it, the same Docker manifest under a digest-only reference, and a file
/// artifact. With `omit_arm64`, the index also lists an `arm64` manifest the store lacks.
fn pushed_layout(omit_arm64: bool) -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let root = &HandLayout::new(dir.path());
    let mut expected = Vec::new();

    let shared = root.blob_descriptor(
        "application/vnd.oci.image.layer.v1.tar+gzip",
        &b"shared layer ".repeat(5000),
    );
    let (amd64_bytes, amd64) = image(root, "amd64", &shared);
    let (s390x_bytes, s390x) = image(root, "s390x", &shared);
    let mut entries = vec![amd64.clone(), s390x.clone()];
    let amd64_subject = descriptor(
        OCI_MANIFEST,
        amd64["digest"].as_str().unwrap().parse().unwrap(),
        amd64_bytes.len(),
    );
    if omit_arm64 {
        let mut arm64 = descriptor(OCI_MANIFEST, Sha256Digest::of(b"not in the store"), 16);
        arm64["platform"] = json!({ "os": "linux", "architecture": "arm64", "variant": "v8" });
        entries.push(arm64);
    }
    let index_bytes = manifest_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": entries,
    }));
    let index = root.put_blob(&index_bytes);
    expected.push((
        "docker.io/library/busybox:1.36".to_owned(),
        index_bytes.clone(),
    ));
    for (entry, bytes) in [(&amd64, amd64_bytes), (&s390x, s390x_bytes)] {
        expected.push((
            format!(
                "docker.io/library/busybox@{}",
                entry["digest"].as_str().unwrap()
            ),
            bytes,
        ));
    }

    let docker_config = root.blob_descriptor(
        "application/vnd.docker.container.image.v1+json",
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#,
    );
    let mut docker_shared = shared.clone();
    docker_shared["mediaType"] = json!("application/vnd.docker.image.rootfs.diff.tar.gzip");
    let docker_bytes = manifest_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": docker_config,
        "layers": [docker_shared],
    }));
    let docker = root.put_blob(&docker_bytes);
    expected.push(("registry.local_5000/app:1".to_owned(), docker_bytes.clone()));
    expected.push((format!("quay.io/x/app@{docker}"), docker_bytes.clone()));

    let empty = root.blob_descriptor("application/vnd.oci.empty.v1+json", b"{}");
    let mut file_layer =
        root.blob_descriptor("application/octet-stream", b"#!/bin/sh\necho hello\n");
    file_layer["annotations"] = json!({ TITLE_ANNOTATION: "hello.sh" });
    let file_bytes = manifest_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/vnd.kk.file.v1",
        "config": empty.clone(),
        "layers": [file_layer],
    }));
    let file = root.put_blob(&file_bytes);
    expected.push(("kk.internal/files/hello:v1".to_owned(), file_bytes.clone()));

    // A referrer of the amd64 manifest, listed in `index.json` without a name: pushed to
    // `docker.io/library/busybox` by digest, after its subject.
    let sbom_bytes = manifest_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": "application/vnd.example.sbom",
        "config": empty,
        "layers": [root.blob_descriptor("application/json", br#"{"sbom":true}"#)],
        "subject": amd64_subject,
    }));
    let sbom = root.put_blob(&sbom_bytes);
    expected.push((
        format!("docker.io/library/busybox@{sbom}"),
        sbom_bytes.clone(),
    ));

    root.write_index(&[
        named(
            descriptor(OCI_INDEX, index, index_bytes.len()),
            "docker.io/library/busybox:1.36",
        ),
        named(
            descriptor(DOCKER_MANIFEST, docker, docker_bytes.len()),
            "registry.local:5000/app:1",
        ),
        named(
            descriptor(DOCKER_MANIFEST, docker, docker_bytes.len()),
            &format!("quay.io/x/app@{docker}"),
        ),
        named(
            descriptor(OCI_MANIFEST, file, file_bytes.len()),
            "kk.internal/files/hello:v1",
        ),
        descriptor(OCI_MANIFEST, sbom, sbom_bytes.len()),
    ]);
    // busybox: 2 configs, 2 own layers, shared, the empty config and the SBOM; app and
    // quay.io/x/app: config, shared each; hello: empty config, file.
    let blob_count = 7 + 2 + 2 + 2;
    Layout {
        dir,
        expected,
        blob_count,
    }
}

fn check_bytes(registry: &Registry, layout: &Layout, creds: Option<&str>) {
    for (reference, bytes) in &layout.expected {
        assert_eq!(
            &registry.raw(reference, creds),
            bytes,
            "{reference} is not byte for byte the stored manifest"
        );
    }
}

#[tokio::test]
async fn pushes_every_repository_byte_for_byte_and_skips_present_blobs() {
    let registry = Registry::start(None);
    let layout = pushed_layout(false);
    let store = Store::open(layout.dir.path()).unwrap();
    let target = registry.target(None);

    let first = push(&store, &target, 4).await.unwrap();
    assert_eq!(first.repositories, 4);
    // busybox: index + 2 platform manifests + SBOM; app:1; quay.io/x/app by digest; hello:v1.
    assert_eq!(first.manifests, 7);
    assert_eq!(first.blobs_present, 0);
    assert_eq!(
        first.blobs_uploaded + first.blobs_mounted,
        layout.blob_count
    );
    // The shared layer is mounted into the later repositories, not uploaded again; so is
    // the Docker config from `quay.io/x/app` into `registry.local_5000/app`.
    assert!(first.blobs_mounted >= 2, "{first:?}");
    assert!(first.incomplete_indexes.is_empty());
    check_bytes(&registry, &layout, None);

    let second = push(&store, &target, 4).await.unwrap();
    assert_eq!(second.blobs_uploaded, 0, "{second:?}");
    assert_eq!(second.blobs_mounted, 0, "{second:?}");
    assert_eq!(second.bytes_uploaded, 0);
    assert_eq!(second.blobs_present, layout.blob_count);
    assert_eq!(second.manifests, first.manifests);
    check_bytes(&registry, &layout, None);
}

#[tokio::test]
async fn basic_auth_is_required_and_the_password_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let htpasswd: PathBuf = dir.path().join("htpasswd");
    let status = Command::new("htpasswd")
        .args(["-Bbc"])
        .arg(&htpasswd)
        .args(["pusher", "right-horse-battery"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let registry = Registry::start(Some(&htpasswd));
    let layout = pushed_layout(false);
    let store = Store::open(layout.dir.path()).unwrap();

    let wrong = registry.target(Some(Credentials {
        username: "pusher".into(),
        password: "wrong-staple-xyzzy".into(),
    }));
    assert!(!format!("{wrong:?}").contains("wrong-staple-xyzzy"));
    let error = push(&store, &wrong, 2).await.unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(matches!(error, PushError::Unauthorized { .. }), "{shown}");
    assert!(shown.contains(&registry.host()), "{shown}");
    assert!(shown.contains("`pusher`"), "{shown}");
    assert!(!shown.contains("wrong-staple-xyzzy"), "{shown}");

    let anonymous = push(&store, &registry.target(None), 2).await.unwrap_err();
    assert!(
        matches!(anonymous, PushError::Unauthorized { username: None, .. }),
        "{anonymous}"
    );

    let right = registry.target(Some(Credentials {
        username: "pusher".into(),
        password: "right-horse-battery".into(),
    }));
    // Over plain HTTP, the password goes only when the caller says so.
    let careful = PushTarget {
        allow_plain_http_password: false,
        ..right.clone()
    };
    let refused = push(&store, &careful, 2).await.unwrap_err();
    let shown = format!("{refused} {refused:?}");
    assert!(
        matches!(refused, PushError::PasswordOverPlainHttp { .. }),
        "{shown}"
    );
    assert!(shown.contains("--allow-plain-http-password"), "{shown}");
    assert!(!shown.contains("right-horse-battery"), "{shown}");
    let report = push(&store, &right, 2).await.unwrap();
    assert_eq!(report.manifests, 7);
    check_bytes(&registry, &layout, Some("pusher:right-horse-battery"));
}

/// Distribution 2.8 (Debian's `docker-registry`) refuses an index whose platform manifests it
/// does not have (`400 MANIFEST_BLOB_UNKNOWN`). The push says so before it starts, pushes
/// every platform manifest the store has, points the tag at the preferred platform's manifest
/// and names the index digest that cannot resolve there; everything after it is pushed too.
#[tokio::test]
async fn an_index_with_omitted_platforms_is_refused_so_its_tag_names_the_nodes_platform() {
    let registry = Registry::start(None);
    let layout = pushed_layout(true);
    let store = Store::open(layout.dir.path()).unwrap();
    let target = PushTarget {
        platforms: vec!["linux/s390x".to_owned()],
        ..registry.target(None)
    };
    let preview = kk_install::push::preview(&store, &target.platforms).unwrap();
    let [partial] = preview.as_slice() else {
        panic!("{preview:?}")
    };
    assert_eq!(partial.repository, "docker.io/library/busybox");
    assert_eq!(partial.missing, ["linux/arm64/v8"]);
    let summary = kk_install::push::summary(&preview);
    assert!(
        summary.contains("busybox:1.36: lacks linux/arm64/v8; else linux/s390x"),
        "{summary}"
    );

    let report = push(&store, &target, 2).await.unwrap();
    let (index_bytes, s390x_bytes) = (&layout.expected[0].1, &layout.expected[2].1);
    let index = Sha256Digest::of(index_bytes);
    assert_eq!(
        report.unresolvable,
        [format!(
            "{}/docker.io/library/busybox@{index}",
            registry.host()
        )]
    );
    let [retargeted] = report.retargeted.as_slice() else {
        panic!("{report:?}")
    };
    assert_eq!(retargeted.platform, "linux/s390x");
    assert_eq!(retargeted.manifest, Sha256Digest::of(s390x_bytes));
    // The tag names the s390x manifest, byte for byte; every platform manifest and every
    // later repository went up.
    assert_eq!(
        &registry.raw("docker.io/library/busybox:1.36", None),
        s390x_bytes
    );
    for (reference, bytes) in &layout.expected[1..] {
        assert_eq!(&registry.raw(reference, None), bytes, "{reference}");
    }
    let outcome = kk_install::push::outcome(&report);
    assert!(
        outcome.contains("does not resolve in this registry"),
        "{outcome}"
    );

    // A rerun sends nothing new and decides the same.
    let again = push(&store, &target, 2).await.unwrap();
    assert_eq!(again.blobs_uploaded + again.blobs_mounted, 0, "{again:?}");
    assert_eq!(again.retargeted, report.retargeted);
}

/// The login check: `/v2/` with the credentials, a refusal naming the registry and the user.
#[tokio::test]
async fn the_login_check_names_a_refused_user_and_accepts_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let htpasswd: PathBuf = dir.path().join("htpasswd");
    let status = Command::new("htpasswd")
        .args(["-Bbc"])
        .arg(&htpasswd)
        .args(["pusher", "right-horse-battery"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let registry = Registry::start(Some(&htpasswd));
    let with = |password: Option<&str>| {
        registry.target(password.map(|password| Credentials {
            username: "pusher".into(),
            password: password.into(),
        }))
    };
    let wrong = with(Some("wrong-staple-xyzzy"));
    let error = kk_install::push::Registry::new(&wrong)
        .unwrap()
        .login()
        .await
        .unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(matches!(error, PushError::Unauthorized { .. }), "{shown}");
    assert!(
        shown.contains(&registry.host()) && shown.contains("`pusher`"),
        "{shown}"
    );
    assert!(!shown.contains("wrong-staple-xyzzy"), "{shown}");
    let none = with(None);
    let error = kk_install::push::Registry::new(&none)
        .unwrap()
        .login()
        .await
        .unwrap_err();
    assert!(
        matches!(error, PushError::Unauthorized { username: None, .. }),
        "{error}"
    );
    let right = with(Some("right-horse-battery"));
    kk_install::push::Registry::new(&right)
        .unwrap()
        .login()
        .await
        .unwrap();
}

/// Debian's `docker-registry` with TLS and basic auth behind the lab's Harbor stand-in
/// (`scripts/lab/harbor-api.py`), both on 127.0.0.1; killed when dropped.
struct Harbor {
    host: String,
    ca: PathBuf,
    _registry: Registry,
    stand_in: Child,
}

impl Drop for Harbor {
    fn drop(&mut self) {
        let _ = self.stand_in.kill();
        let _ = self.stand_in.wait();
    }
}

impl Harbor {
    fn start(dir: &Path) -> Self {
        let pki = dir.join("pki");
        let status = Command::new(env!("CARGO_BIN_EXE_kk-install"))
            .args(["registry", "cert", "--ca-out"])
            .arg(&pki)
            .args(["--names", "127.0.0.1"])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let htpasswd = dir.join("htpasswd");
        let status = Command::new("htpasswd")
            .arg("-Bbc")
            .arg(&htpasswd)
            .args(["pusher", "right-horse-battery"])
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let registry = Registry::start_with(
            Some(&htpasswd),
            Some((&pki.join("registry.crt"), &pki.join("registry.key"))),
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/lab/harbor-api.py");
        let stand_in = Command::new("python3")
            .arg(script)
            .args(["127.0.0.1", &port.to_string()])
            .arg(pki.join("registry.crt"))
            .arg(pki.join("registry.key"))
            .arg(format!("https://{}", registry.host()))
            .arg(pki.join("ca.crt"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the stand-in did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            host: format!("127.0.0.1:{port}"),
            ca: pki.join("ca.crt"),
            _registry: registry,
            stand_in,
        }
    }

    fn target(&self, password: &str) -> PushTarget {
        PushTarget {
            host: self.host.clone(),
            plain_http: false,
            allow_plain_http_password: false,
            ca_file: Some(self.ca.clone()),
            credentials: Some(Credentials {
                username: "pusher".into(),
                password: password.into(),
            }),
            platforms: Vec::new(),
        }
    }
}

/// Harbor's projects: a push into a missing one is refused naming it; kk creates the missing
/// ones (and finds them there on a rerun), and reports what Harbor refuses (a bad name, a
/// user who may not manage projects) instead of ignoring it as KubeKey does.
#[tokio::test]
async fn harbor_projects_are_created_first_and_refusals_reported() {
    let dir = tempfile::tempdir().unwrap();
    let harbor = Harbor::start(dir.path());
    let layout = pushed_layout(false);
    let store = Store::open(layout.dir.path()).unwrap();
    let target = harbor.target("right-horse-battery");
    let api = kk_install::push::Registry::new(&target).unwrap();
    api.login().await.unwrap();

    let missing = push(&store, &target, 2).await.unwrap_err();
    assert!(
        matches!(&missing, PushError::ProjectMissing { project, .. } if project == "docker.io"),
        "{missing}"
    );

    let projects: Vec<String> = ["docker.io", "kk.internal", "quay.io", "registry.local_5000"]
        .map(String::from)
        .to_vec();
    let first = api.ensure_projects(&projects).await.unwrap();
    assert_eq!(first.created, projects);
    assert!(first.present.is_empty());
    let again = api.ensure_projects(&projects).await.unwrap();
    assert_eq!(again.present, projects);
    assert!(again.created.is_empty());
    let report = push(&store, &target, 2).await.unwrap();
    assert_eq!(report.manifests, 7);

    let bad = api
        .ensure_projects(&["Bad_Name".to_owned()])
        .await
        .unwrap_err();
    let shown = bad.to_string();
    assert!(
        matches!(bad, PushError::HarborProject { status: 400, .. }),
        "{shown}"
    );
    assert!(
        shown.contains("`Bad_Name`") && shown.contains("BAD_REQUEST"),
        "{shown}"
    );

    let wrong = harbor.target("wrong-staple-xyzzy");
    let refused = kk_install::push::Registry::new(&wrong)
        .unwrap()
        .ensure_projects(&projects)
        .await
        .unwrap_err();
    let shown = refused.to_string();
    assert!(
        matches!(refused, PushError::HarborProject { status: 401, .. }),
        "{shown}"
    );
    assert!(!shown.contains("wrong-staple-xyzzy"), "{shown}");
}

//! The upstream lab (`scripts/lab/`) that `kk-bundle build` is tested against: a real registry and a
//! file server on loopback, checked here with real clients (skopeo, helm, curl, sha256sum).

use std::fs;
use std::path::Path;
use std::process::Command;

use bundle_spec::manifest::{BinaryChecksum, ChartSource, Manifest};

use crate::labkit::{Lab, process_gone};
use crate::support::{describe, run, run_ok, skopeo_raw, workspace_root};

#[test]
fn manifest_template_renders_to_a_valid_manifest() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("lab.yaml");
    let mut cmd = render(&out);
    cmd.env("KK_LAB_REGISTRY", "127.0.0.1:5000")
        .env("KK_LAB_HTTP", "http://127.0.0.1:8080")
        .env("LAB_DIR", tmp.path().join("no-lab"));
    run_ok(&mut cmd);

    let manifest = Manifest::from_path(&out)
        .unwrap_or_else(|err| panic!("the rendered manifests/lab.yaml is invalid: {err}"));
    let spec = manifest.spec();
    let platforms: Vec<String> = spec.platforms.iter().map(ToString::to_string).collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);
    let images: Vec<&str> = spec.images.iter().map(|i| i.original.as_str()).collect();
    assert_eq!(
        images,
        [
            "docker.io/library/busybox:1.36",
            "lab.local/lab/app-a:1.0",
            "lab.local/lab/app-b:1.0",
            "lab.local/lab/docker-media:1.0",
            "127.0.0.1:5000/lab/oci-media:1.0",
        ]
    );
    let binaries: Vec<&str> = spec.binaries.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(binaries, ["etcd", "containerd", "runc"]);
    assert_eq!(
        spec.binaries[0].url_for(&spec.platforms[1]),
        "http://127.0.0.1:8080/etcd/v3.5.16/etcd-v3.5.16-linux-arm64.tar.gz"
    );
    let charts: Vec<(&str, &str, &ChartSource)> = spec
        .charts
        .iter()
        .map(|c| (c.name.as_str(), c.version.as_str(), &c.source))
        .collect();
    assert_eq!(
        charts,
        [
            (
                "kk-web",
                "1.2.0",
                &ChartSource::Repository("http://127.0.0.1:8080/charts".into())
            ),
            (
                "kk-demo",
                "0.1.0",
                &ChartSource::Oci("oci://127.0.0.1:5000/charts/kk-demo".into())
            ),
        ]
    );
    for host in ["docker.io", "lab.local"] {
        assert_eq!(
            spec.registries[host].mirror.as_deref(),
            Some("127.0.0.1:5000")
        );
    }
    assert!(spec.registries["127.0.0.1:5000"].plain_http);

    // Only the two lab variables are template placeholders; a typo is an error, not an empty string.
    let bad = tmp.path().join("bad.yaml");
    fs::write(&bad, "url: ${KK_LAB_HTTPS}/x\n").expect("write template");
    let mut cmd = Command::new("bash");
    cmd.arg(workspace_root().join("scripts/lab/render.sh"))
        .arg(&bad)
        .arg(tmp.path().join("bad-out.yaml"))
        .env("KK_LAB_REGISTRY", "127.0.0.1:5000")
        .env("KK_LAB_HTTP", "http://127.0.0.1:8080");
    let out = run(&mut cmd);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("KK_LAB_HTTPS"),
        "render.sh must refuse an unknown placeholder:\n{}",
        describe(&cmd, &out)
    );
}

#[test]
fn upstream_lab_serves_real_content_to_real_clients() {
    let lab = Lab::up(&Lab::default_dir());
    let registry = lab.registry().to_owned();
    let http = lab.http().to_owned();
    let tmp = tempfile::tempdir().expect("temp dir");

    // `up` again on the same ports keeps the running servers.
    let pids = lab.pids();
    let env_pids: Vec<u32> = ["KK_LAB_REGISTRY_PID", "KK_LAB_HTTP_PID"]
        .iter()
        .map(|key| lab.var(key).parse().expect("a pid"))
        .collect();
    assert_eq!(env_pids, pids, "the env file names the servers' pids");
    let mut again = Command::new("bash");
    again
        .current_dir("/")
        .arg(workspace_root().join("scripts/lab/upstream.sh"))
        .arg("up")
        .env("LAB_DIR", lab.dir())
        .env("REGISTRY_PORT", registry.rsplit(':').next().expect("port"))
        .env("HTTP_PORT", http.rsplit(':').next().expect("port"));
    run_ok(&mut again);
    assert_eq!(lab.pids(), pids, "a second `up` restarted a server");
    let (status, _) = run_ok(
        Command::new("bash")
            .arg(workspace_root().join("scripts/lab/upstream.sh"))
            .arg("status")
            .env("LAB_DIR", lab.dir()),
    );
    assert!(
        status.contains("registry: running") && status.contains("file server: running"),
        "{status}"
    );

    check_images(&registry);
    check_charts(&lab, tmp.path());
    check_ranges_and_faults(&lab, tmp.path());
    // manifests/lab.yaml names exactly what the lab serves: every binary verifies against its
    // checksum file with sha256sum, every image resolves.
    check_lab_manifest(&lab, tmp.path());

    // Down: the recorded processes are gone.
    let pids = lab.pids();
    let dir = lab.dir().to_path_buf();
    lab.down();
    for pid in pids {
        assert!(process_gone(pid), "pid {pid} still runs after `down`");
    }
    assert!(!dir.join("registry/pid").exists() && !dir.join("fileserver/pid").exists());
    let (code, exit) = curl(&["-o", "/dev/null", &format!("http://{registry}/v2/")]);
    assert_eq!(
        (code.as_str(), exit),
        ("000", 7),
        "the registry still answers"
    );
}

/// Images, through skopeo.
fn check_images(registry: &str) {
    let registry = registry.to_owned();
    let busybox = raw_manifest(&registry, "library/busybox:1.36");
    for needle in [
        "application/vnd.oci.image.index.v1+json",
        r#""architecture":"amd64""#,
        r#""architecture":"arm64""#,
    ] {
        assert!(
            busybox.contains(needle),
            "busybox:1.36 lacks {needle}: {busybox}"
        );
    }
    for arch in ["amd64", "arm64"] {
        let (resolved, _) = run_ok(
            skopeo()
                .args(["inspect", "--tls-verify=false", "--override-arch", arch])
                .args(["--format", "{{.Architecture}}"])
                .arg(format!("docker://{registry}/library/busybox:1.36")),
        );
        assert_eq!(resolved.trim(), arch);
    }
    let (config, _) = run_ok(
        skopeo()
            .args(["inspect", "--config", "--tls-verify=false"])
            .arg(format!("docker://{registry}/library/busybox:1.36")),
    );
    assert!(
        config.contains("echo hello from the kk lab busybox"),
        "{config}"
    );
    let docker = raw_manifest(&registry, "lab/docker-media:1.0");
    assert!(
        docker.contains(r#""mediaType":"application/vnd.docker.distribution.manifest.v2+json""#),
        "{docker}"
    );
    let list = raw_manifest(&registry, "lab/docker-list:1.0");
    assert!(
        list.contains("application/vnd.docker.distribution.manifest.list.v2+json"),
        "{list}"
    );
    // umoci writes OCI manifests without the optional `mediaType` field: the registry's
    // Content-Type says what they are.
    let oci = raw_manifest(&registry, "lab/oci-media:1.0");
    assert!(
        oci.contains("application/vnd.oci.image.config.v1+json")
            && oci.contains("application/vnd.oci.image.layer.v1.tar+gzip"),
        "{oci}"
    );
    let (headers, _) = run_ok(Command::new("curl").args([
        "-sI",
        "-H",
        "Accept: application/vnd.oci.image.manifest.v1+json",
        &format!("http://{registry}/v2/lab/oci-media/manifests/1.0"),
    ]));
    assert!(
        headers.contains("Content-Type: application/vnd.oci.image.manifest.v1+json"),
        "{headers}"
    );
    let app_a = layers(&registry, "lab/app-a:1.0");
    let app_b = layers(&registry, "lab/app-b:1.0");
    assert_eq!(app_a.len(), 2, "{app_a:?}");
    assert_eq!(app_b.len(), 2, "{app_b:?}");
    assert_eq!(app_a[0], app_b[0], "app-a and app-b share their base layer");
    assert_ne!(app_a[1], app_b[1], "each app has a layer of its own");
}

/// Charts, through helm: the OCI artifact and the HTTP repository.
fn check_charts(lab: &Lab, tmp: &Path) {
    let (registry, http) = (lab.registry(), lab.http());
    run_ok(
        lab.helm()
            .args(["pull", &format!("oci://{registry}/charts/kk-demo")])
            .args(["--version", "0.1.0", "--plain-http", "--destination"])
            .arg(tmp),
    );
    assert!(tmp.join("kk-demo-0.1.0.tgz").is_file());
    let index = curl_text(&format!("{http}/charts/index.yaml"));
    for needle in [
        "kk-demo:",
        "kk-web:",
        "version: 0.1.0",
        "version: 1.2.0",
        &format!("{http}/charts/kk-web-1.2.0.tgz"),
    ] {
        assert!(
            index.contains(needle),
            "index.yaml lacks {needle}:\n{index}"
        );
    }
    run_ok(
        lab.helm()
            .args(["pull", "kk-web", "--repo", &format!("{http}/charts")])
            .args(["--version", "1.2.0", "--destination"])
            .arg(tmp),
    );
    assert!(tmp.join("kk-web-1.2.0.tgz").is_file());
}

/// Ranges, then each kind of fault.
fn check_ranges_and_faults(lab: &Lab, tmp: &Path) {
    let http = lab.http();
    let runc_path = "/runc/v1.1.5/runc.amd64";
    let runc = fs::read(lab.dir().join(format!("http{runc_path}"))).expect("seeded runc.amd64");
    let part = tmp.join("part");
    let (code, exit) = curl(&[
        "-H",
        "Range: bytes=10-19",
        "-o",
        path_str(&part),
        &format!("{http}{runc_path}"),
    ]);
    assert_eq!((code.as_str(), exit), ("206", 0));
    assert_eq!(fs::read(&part).expect("range body"), &runc[10..20]);
    let (code, _) = curl(&[
        "-H",
        "Range: bytes=999999999-",
        "-o",
        "/dev/null",
        &format!("{http}{runc_path}"),
    ]);
    assert_eq!(code, "416");

    // Faults: a cut download is short, the rule is consumed, and resuming it uses Range.
    lab.set_faults(&format!(
        r#"{{"{runc_path}": {{"mode": "cut", "after": 1000, "times": 1}}}}"#
    ));
    let download = tmp.join("runc.amd64");
    let (code, exit) = curl(&["-o", path_str(&download), &format!("{http}{runc_path}")]);
    assert_eq!(code, "200");
    assert_eq!(exit, 18, "curl reports a transfer closed with data missing");
    assert_eq!(fs::metadata(&download).expect("partial file").len(), 1000);
    assert!(
        !lab.faults().contains(runc_path),
        "the rule was not consumed: {}",
        lab.faults()
    );
    let (code, exit) = curl(&[
        "-C",
        "-",
        "-o",
        path_str(&download),
        &format!("{http}{runc_path}"),
    ]);
    assert_eq!((code.as_str(), exit), ("206", 0));
    assert!(
        fs::read(&download).expect("resumed file") == runc,
        "the resumed download differs"
    );
    let log = lab.access_log();
    let runc_gets: Vec<_> = log.iter().filter(|e| e.path == runc_path).collect();
    let cut = runc_gets
        .iter()
        .rposition(|e| e.fault.as_deref() == Some("cut"))
        .unwrap_or_else(|| panic!("no cut request logged: {runc_gets:#?}"));
    let resumed = runc_gets[cut + 1];
    assert_eq!(resumed.method, "GET");
    assert_eq!(resumed.range.as_deref(), Some("bytes=1000-"));
    assert_eq!(resumed.status, 206);
    assert_eq!(resumed.body_bytes, runc.len() as u64 - 1000);

    // Faults: an injected status (with Retry-After for 429), then a corrupted body.
    lab.set_faults(
        r#"{"/charts/index.yaml": {"mode": "status", "status": 429, "times": 1},
            "/runc/v1.1.5/runc.amd64": {"mode": "corrupt", "times": 1}}"#,
    );
    let (headers, _) = run_ok(Command::new("curl").args([
        "-s",
        "-D",
        "-",
        "-o",
        "/dev/null",
        &format!("{http}/charts/index.yaml"),
    ]));
    assert!(
        headers.starts_with("HTTP/1.1 429") && headers.contains("Retry-After: 0"),
        "{headers}"
    );
    assert_eq!(
        curl(&["-o", "/dev/null", &format!("{http}/charts/index.yaml")]).0,
        "200"
    );
    let corrupt = tmp.join("corrupt");
    curl(&["-o", path_str(&corrupt), &format!("{http}{runc_path}")]);
    let corrupt = fs::read(&corrupt).expect("corrupt download");
    assert_eq!(corrupt.len(), runc.len());
    assert_eq!(
        corrupt.iter().zip(&runc).filter(|(a, b)| a != b).count(),
        1,
        "exactly one byte is flipped"
    );
    assert_eq!(lab.faults().trim(), "{}", "every rule was consumed");
}

#[test]
fn seed_catalog_makes_stand_ins_for_every_catalog_entry() {
    let lab = Lab::up(&Lab::default_dir());
    let registry = lab.registry().to_owned();
    let http = lab.http().to_owned();
    let tmp = tempfile::tempdir().expect("temp dir");
    let catalog = workspace_root().join("scripts/lab/testdata/catalog-sample.json");
    let seed = || {
        let mut cmd = Command::new("bash");
        cmd.current_dir("/")
            .arg(workspace_root().join("scripts/lab/seed-catalog.sh"))
            .arg(&catalog)
            .env("LAB_DIR", lab.dir());
        let (_, out) = run_ok(&mut cmd);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let log = seed();
    assert!(
        log.contains("kube-apiserver@sha256:") && log.contains("pinned by digest"),
        "{log}"
    );

    let digest = check_catalog_binaries(lab.http(), tmp.path());

    // Images at their path without the registry host; charts in a repo and in the registry.
    for image in [
        "coredns/coredns:v1.11.3",
        "calico/node:v3.28.0",
        "pause:3.10",
    ] {
        let raw = raw_manifest(&registry, image);
        assert!(raw.contains(r#""architecture":"arm64""#), "{image}: {raw}");
    }
    run_ok(
        lab.helm()
            .args(["pull", "tigera-operator", "--version", "v3.28.0", "--repo"])
            .arg(format!("{http}/docs.tigera.io/calico/charts"))
            .arg("--destination")
            .arg(tmp.path()),
    );
    let (chart, _) = run_ok(
        lab.helm()
            .args(["show", "chart", "--version", "6.7.0", "--plain-http"])
            .arg(format!("oci://{registry}/stefanprodan/charts/podinfo")),
    );
    assert!(chart.contains("name: podinfo"), "{chart}");

    // Seeding again changes nothing.
    let log = seed();
    assert!(log.contains("0 images pushed (9 were there)"), "{log}");
    assert_eq!(
        sha256(
            &lab.dir()
                .join("http/dl.k8s.io/release/v1.31.4/bin/linux/arm64/kubeadm")
        ),
        digest
    );
    lab.down();
}

/// The catalog's release files: stand-ins dl.k8s.io style, real etcd shaped like its release
/// archive and checked the way an operator would. Returns the sha256 of the arm64 kubeadm.
fn check_catalog_binaries(http: &str, tmp: &Path) -> String {
    // dl.k8s.io style: the bare binary (a stand-in) and a .sha256 with only the digest.
    let kubeadm_url = format!("{http}/dl.k8s.io/release/v1.31.4/bin/linux/arm64/kubeadm");
    let kubeadm = tmp.join("kubeadm");
    assert_eq!(curl(&["-o", path_str(&kubeadm), &kubeadm_url]).0, "200");
    let digest = sha256(&kubeadm);
    assert_eq!(
        curl_text(&format!("{kubeadm_url}.sha256")),
        format!("{digest}\n")
    );
    let standin_log = tmp.join("standin.log");
    let (version, _) = run_ok(
        Command::new("sh")
            .arg(&kubeadm)
            .arg("version")
            .env("KK_STANDIN_LOG", &standin_log),
    );
    assert_eq!(version, "kubeadm version v1.31.4 (stand-in)\n");
    assert_eq!(
        fs::read_to_string(&standin_log).expect("stand-in log"),
        "kubeadm version\n"
    );

    // Real etcd shaped like its release archive, checked the way an operator would.
    let etcd_dir = tmp.join("etcd");
    fs::create_dir(&etcd_dir).expect("mkdir");
    let base = format!("{http}/github.com/etcd-io/etcd/releases/download/v3.5.16");
    for file in ["etcd-v3.5.16-linux-amd64.tar.gz", "SHA256SUMS"] {
        let dest = etcd_dir.join(file);
        assert_eq!(
            curl(&["-o", path_str(&dest), &format!("{base}/{file}")]).0,
            "200"
        );
    }
    let (checked, _) = run_ok(Command::new("sha256sum").current_dir(&etcd_dir).args([
        "-c",
        "--ignore-missing",
        "SHA256SUMS",
    ]));
    assert_eq!(checked, "etcd-v3.5.16-linux-amd64.tar.gz: OK\n");
    let (members, _) = run_ok(
        Command::new("tar")
            .arg("-tzf")
            .arg(etcd_dir.join("etcd-v3.5.16-linux-amd64.tar.gz")),
    );
    assert!(
        members.contains("etcd-v3.5.16-linux-amd64/etcdctl\n"),
        "{members}"
    );
    let runc_sums = curl_text(&format!(
        "{http}/github.com/opencontainers/runc/releases/download/v1.2.3/runc.sha256sum"
    ));
    assert!(
        runc_sums.contains("  runc.amd64\n") && runc_sums.contains("  runc.arm64\n"),
        "{runc_sums}"
    );
    digest
}

/// Renders manifests/lab.yaml for the running lab (render.sh reads `$LAB_DIR/env`), then fetches
/// what it names.
fn check_lab_manifest(lab: &Lab, tmp: &Path) {
    let out = tmp.join("lab.yaml");
    let mut cmd = render(&out);
    cmd.env("LAB_DIR", lab.dir());
    run_ok(&mut cmd);
    let manifest = Manifest::from_path(&out)
        .unwrap_or_else(|err| panic!("rendered manifests/lab.yaml: {err}"));
    let spec = manifest.spec();
    for binary in &spec.binaries {
        let BinaryChecksum::ChecksumUrl(checksum) = &binary.checksum else {
            panic!("{}: the lab's binaries use checksumUrl", binary.name);
        };
        for platform in &spec.platforms {
            let dir = tmp.join(format!("{}-{}", binary.name, platform.architecture()));
            fs::create_dir_all(&dir).expect("mkdir");
            let url = binary.url_for(platform);
            let sums = checksum.expand(&binary.version, platform);
            let file = url.rsplit('/').next().expect("file name");
            let sums_file = sums.rsplit('/').next().expect("file name");
            assert_eq!(
                curl(&["-o", path_str(&dir.join(file)), &url]).0,
                "200",
                "{url}"
            );
            assert_eq!(
                curl(&["-o", path_str(&dir.join(sums_file)), &sums]).0,
                "200",
                "{sums}"
            );
            let (checked, _) = run_ok(Command::new("sha256sum").current_dir(&dir).args([
                "-c",
                "--ignore-missing",
                sums_file,
            ]));
            assert_eq!(checked, format!("{file}: OK\n"), "{url} against {sums}");
        }
    }
    for image in &spec.images {
        // Every registry the manifest names is the lab's, directly or as the mirror.
        let (_, path) = image
            .original
            .split_once('/')
            .expect("images name a registry");
        raw_manifest(lab.registry(), path);
    }
}

fn render(out: &Path) -> Command {
    let mut cmd = Command::new("bash");
    cmd.current_dir("/")
        .arg(workspace_root().join("scripts/lab/render.sh"))
        .arg(workspace_root().join("manifests/lab.yaml"))
        .arg(out)
        .env_remove("KK_LAB_REGISTRY")
        .env_remove("KK_LAB_HTTP");
    cmd
}

fn skopeo() -> Command {
    Command::new("skopeo")
}

/// The raw manifest of `image` on `registry`, as text.
fn raw_manifest(registry: &str, image: &str) -> String {
    run_ok(&mut skopeo_raw(registry, image)).0
}

fn layers(registry: &str, image: &str) -> Vec<String> {
    let (out, _) = run_ok(
        skopeo()
            .args(["inspect", "--tls-verify=false", "--format"])
            .arg("{{range .Layers}}{{.}} {{end}}")
            .arg(format!("docker://{registry}/{image}")),
    );
    out.split_whitespace().map(str::to_owned).collect()
}

/// curl -s with `args`: the HTTP status it printed and its exit code.
fn curl(args: &[&str]) -> (String, i32) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-w", "%{http_code}"]).args(args);
    let out = run(&mut cmd);
    let code = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (code, out.status.code().unwrap_or(-1))
}

fn curl_text(url: &str) -> String {
    run_ok(Command::new("curl").args(["-sf", url])).0
}

fn sha256(path: &Path) -> String {
    let (out, _) = run_ok(Command::new("sha256sum").arg(path));
    out.split_whitespace().next().expect("digest").to_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

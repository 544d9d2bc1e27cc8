//! `kk-bundle build`'s chart image check against the upstream lab with the real helm: a chart
//! whose template names an image the manifest lacks fails the build, naming the chart and the
//! image, before any bundle is written. (The module name ends in `lab`, so nextest runs these
//! one at a time with the other lab tests.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bundle_lab::catalog_manifest;
use crate::labkit::Lab;
use crate::support::{binary, run_failing, run_ok};

/// The image the test chart names that no manifest of this test lists.
const MISSING: &str = "docker.io/library/nginx:1.27";

/// `kk-bundle build MANIFEST -o DIR/OUT` with a cache in `dir`, `PATH` set to `path` only.
fn build(dir: &Path, manifest: &Path, out: &str, path: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(binary("kk-bundle"));
    cmd.arg("build")
        .arg(manifest)
        .arg("-o")
        .arg(dir.join(out))
        .arg("--cache")
        .arg(dir.join("cache"))
        .args(["--level", "3"])
        .args(args)
        .env("PATH", path)
        .env("KK_LOG", "warn");
    cmd
}

/// A directory holding only `helm`, a link to the lab's real helm: the `PATH` of a build
/// machine with helm installed.
fn path_with_helm(lab: &Lab, dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(lab.var("KK_LAB_HELM"), bin.join("helm")).expect("link helm");
    bin
}

/// Packages `kk-guard` 0.1.0 with the real helm into a Helm repository the lab's file server
/// serves, and returns the repository's URL. Its Deployment runs the lab's `app-a` image and
/// [`MISSING`].
fn guard_chart(lab: &Lab, dir: &Path) -> String {
    let src = dir.join("kk-guard");
    fs::create_dir_all(src.join("templates")).expect("chart dir");
    fs::write(
        src.join("Chart.yaml"),
        "apiVersion: v2\nname: kk-guard\nversion: 0.1.0\nappVersion: \"1.0\"\n",
    )
    .expect("Chart.yaml");
    fs::write(
        src.join("values.yaml"),
        format!("app: lab.local/lab/app-a:1.0\nproxy: {MISSING}\n"),
    )
    .expect("values.yaml");
    fs::write(
        src.join("templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector:\n    matchLabels: {app: guard}\n  template:\n    metadata:\n      labels: {app: guard}\n    spec:\n      containers:\n        - name: app\n          image: {{ .Values.app | quote }}\n        - name: proxy\n          image: {{ .Values.proxy | quote }}\n",
    )
    .expect("deployment.yaml");
    let repo = lab.dir().join("http/chart-images-lab");
    let mut package = lab.helm();
    package
        .arg("package")
        .arg(&src)
        .arg("--destination")
        .arg(&repo);
    run_ok(&mut package);
    let url = format!("{}/chart-images-lab", lab.http());
    let mut index = lab.helm();
    index.args(["repo", "index", "--url", &url]).arg(&repo);
    run_ok(&mut index);
    url
}

#[test]
fn a_chart_naming_an_image_the_manifest_lacks_fails_the_build() {
    let lab = Lab::up(&Lab::default_dir());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let repo = guard_chart(&lab, dir);
    let registry = lab.registry();
    let manifest = dir.join("guard.yaml");
    fs::write(
        &manifest,
        format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: guard}}\nspec:\n  platforms: [linux/amd64]\n  images: [lab.local/lab/app-a:1.0]\n  charts:\n    - {{name: kk-guard, version: 0.1.0, repo: \"{repo}\"}}\n  registries:\n    lab.local: {{mirror: \"{registry}\"}}\n    \"{registry}\": {{plainHTTP: true}}\n"
        ),
    )
    .expect("manifest");
    let helm_path = path_with_helm(&lab, dir);

    // The build fails naming the chart and the image (and not the image it has), and writes
    // no bundle.
    let err = run_failing(&mut build(dir, &manifest, "guard.tar.zst", &helm_path, &[]));
    assert!(
        err.contains(&format!(
            "chart `kk-guard` `0.1.0` names images the bundle lacks: `{MISSING}`"
        )) && err.contains("--allow-missing-chart-images"),
        "{err}"
    );
    assert!(!err.contains("app-a"), "{err}");
    assert!(!dir.join("guard.tar.zst").exists());

    // Allowed, the same build succeeds with a warning naming them.
    let (_, out) = run_ok(&mut build(
        dir,
        &manifest,
        "guard.tar.zst",
        &helm_path,
        &["--allow-missing-chart-images"],
    ));
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        warnings.contains("chart `kk-guard` `0.1.0` names images the bundle lacks")
            && warnings.contains(MISSING),
        "{warnings}"
    );
    assert!(dir.join("guard.tar.zst").is_file());

    // With no helm at all the charts are not checked, and the build says so.
    let no_helm = dir.join("empty");
    fs::create_dir_all(&no_helm).expect("empty dir");
    let (_, out) = run_ok(&mut build(
        dir,
        &manifest,
        "unchecked.tar.zst",
        &no_helm,
        &[],
    ));
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        warnings.contains("charts were not checked for missing images: no helm for this machine in the bundle and none on PATH"),
        "{warnings}"
    );
}

#[test]
fn catalog_bundles_pass_the_check_with_their_own_helm() {
    let lab = Lab::up(&Lab::default_dir());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let (manifest, _) = catalog_manifest(&lab, dir, "v1.31.4");
    // No helm on PATH: the bundle's own (the lab's real helm in its release tarball) renders
    // the CNI chart with the install's values, and the stand-in chart names exactly the
    // catalog's images.
    let no_helm = dir.join("empty");
    fs::create_dir_all(&no_helm).expect("empty dir");
    let (_, out) = run_ok(&mut build(dir, &manifest, "k8s.tar.zst", &no_helm, &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("not checked") && !stderr.contains("lacks"),
        "{stderr}"
    );

    // The lab manifest's charts (real `helm create` charts) name only images it bundles.
    let lab_manifest = dir.join("lab.yaml");
    let mut render = lab.command("bash");
    render
        .current_dir(crate::support::workspace_root())
        .arg("scripts/lab/render.sh")
        .arg("manifests/lab.yaml")
        .arg(&lab_manifest);
    run_ok(&mut render);
    let (_, out) = run_ok(&mut build(
        dir,
        &lab_manifest,
        "lab.tar.zst",
        &path_with_helm(&lab, dir),
        &["--allow-missing-platforms"],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("not checked") && !stderr.contains("lacks"),
        "{stderr}"
    );
}

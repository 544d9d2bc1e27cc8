//! `kk-bundle convert` and `kk-bundle build` of KubeKey v3 manifests, built from the upstream
//! lab. (The module name ends in `lab`, so nextest runs these one at a time with the other lab
//! tests.)

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::bundle_lab::{Bench, catalog_manifest_with};
use crate::support::{binary, run_ok};

/// The components a KubeKey manifest names, as `kk-bundle catalog --component` takes them.
const COMPONENTS: [&str; 5] = [
    "containerd=1.7.13",
    "helm=v3.14.3",
    "cni-plugins=v1.2.0",
    "etcd=v3.5.13",
    "crictl=v1.29.0",
];

/// A KubeKey manifest as `kk create manifest` writes it, for a v1.30 containerd cluster with
/// KubeKey's registry components; `registry` is written last, after `images`.
fn kubekey_manifest(images: &[&str], registry: &str) -> String {
    let mut list = String::new();
    for image in images {
        list.push_str("  - ");
        list.push_str(image);
        list.push('\n');
    }
    format!(
        "apiVersion: kubekey.kubesphere.io/v1alpha2
kind: Manifest
metadata:
  name: sample
spec:
  arches:
  - amd64
  operatingSystems:
  - arch: amd64
    type: linux
    id: centos
    version: \"7\"
    osImage: CentOS Linux 7 (Core)
    repository:
      iso:
        localPath:
        url:
  kubernetesDistributions:
  - type: kubernetes
    version: v1.30.6
  components:
    helm:
      version: v3.14.3
    cni:
      version: v1.2.0
    etcd:
      version: v3.5.13
    containerRuntimes:
    - type: docker
      version: 24.0.9
    - type: containerd
      version: 1.7.13
    calicoctl:
      version: v3.27.3
    crictl:
      version: v1.29.0
    docker-registry:
      version: \"2\"
    harbor:
      version: v2.10.1
    docker-compose:
      version: v2.26.1
  images:
{list}{registry}"
    )
}

/// The artifacts of `bundle` by reference, from `kk-bundle inspect --output json`.
fn references(bundle: &Path) -> Vec<String> {
    let mut inspect = Command::new(binary("kk-bundle"));
    inspect
        .arg("inspect")
        .arg(bundle)
        .args(["--output", "json"]);
    let (out, _) = run_ok(&mut inspect);
    let inspected: Value = serde_json::from_str(&out).expect("inspect json");
    inspected["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter_map(|artifact| artifact["reference"].as_str().map(str::to_owned))
        .collect()
}

fn assert_contains_all(references: &[String], expected: &[&str]) {
    for wanted in expected {
        assert!(
            references.iter().any(|reference| reference == wanted),
            "{wanted} missing from {references:?}"
        );
    }
}

/// A KubeKey manifest converted, pointed at the lab as an operator points a manifest at an
/// internal mirror (`spec.fileMirrors`, `spec.registries`), and built: the bundle holds the
/// Kubernetes version's binaries and images, the runtime and component versions KubeKey named,
/// and its images; what kk does not carry is warned about with its line.
#[test]
fn a_kubekey_manifest_converts_into_a_bundle_of_what_its_components_name() {
    let b = Bench::new();
    let mut options = Vec::new();
    for component in COMPONENTS {
        options.extend(["--component", component]);
    }
    // Seeds the lab with the catalog's content for these versions; its manifest's mirrors are
    // what the converted manifest gets.
    let (lab_manifest, _) = catalog_manifest_with(&b.lab, b.tmp.path(), "v1.30.6", &options);
    let lab_text = fs::read_to_string(&lab_manifest).expect("lab manifest");
    let mirrors = lab_text
        .split_once("  fileMirrors:")
        .map(|(_, rest)| format!("  fileMirrors:{rest}"))
        .expect("fileMirrors");

    let kubekey = b.path("kubekey.yaml");
    fs::write(
        &kubekey,
        kubekey_manifest(
            &[
                "docker.io/calico/node:v3.29.4",
                "docker.io/library/busybox:1.36",
            ],
            "  registry:\n    auths: {}\n",
        ),
    )
    .expect("kubekey manifest");
    let converted = b.path("converted.yaml");
    let mut convert = Command::new(binary("kk-bundle"));
    convert
        .arg("convert")
        .arg(&kubekey)
        .arg("-o")
        .arg(&converted);
    let (stdout, out) = run_ok(&mut convert);
    assert!(stdout.is_empty(), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = |line: u32| format!("warning: {}:{line}: ", kubekey.display());
    for (line, wanted) in [
        (9, "operating system `centos-7`"),
        (29, "docker 24.0.9 is not bundled"),
        (34, "`spec.components.calicoctl` v3.27.3"),
        (40, "`spec.components.harbor` v2.10.1"),
        (42, "`spec.components.docker-compose` v2.26.1"),
    ] {
        assert!(
            stderr.contains(&format!("{}{wanted}", at(line))),
            "no warning {wanted:?} at line {line}:\n{stderr}"
        );
    }

    let mut text = fs::read_to_string(&converted).expect("converted");
    text.push_str(&mirrors);
    fs::write(&converted, text).expect("mirrored");
    run_ok(&mut b.build(&converted, "kubekey.tar.zst", "cache", &[]));
    assert_contains_all(
        &references(&b.path("kubekey.tar.zst")),
        &[
            "registry.k8s.io/kube-apiserver:v1.30.6",
            "kk.internal/binaries/kubeadm:v1.30.6",
            "kk.internal/binaries/kubelet:v1.30.6",
            "kk.internal/binaries/containerd:1.7.13",
            "kk.internal/binaries/runc:v1.3.3",
            "kk.internal/binaries/helm:v3.14.3",
            "kk.internal/binaries/cni-plugins:v1.2.0",
            "kk.internal/binaries/etcd:v3.5.13",
            "kk.internal/binaries/crictl:v1.29.0",
            "docker.io/calico/node:v3.29.4",
            "docker.io/library/busybox:1.36",
        ],
    );
}

/// `kk-bundle build` takes a KubeKey manifest itself: converted in memory, its warnings on
/// stderr, its registry auths honoured (here the lab's registry over plain HTTP).
#[test]
fn kk_bundle_build_reads_a_kubekey_manifest() {
    let b = Bench::new();
    let registry = b.lab.registry();
    let image = format!("{registry}/library/busybox:1.36");
    let kubekey = b.path("images.yaml");
    let text = kubekey_manifest(
        &[&image],
        &format!("  registry:\n    auths:\n      \"{registry}\": {{plainHTTP: true}}\n"),
    )
    // No cluster: images alone build from the lab without mirrors.
    .replace(
        "  kubernetesDistributions:\n  - type: kubernetes\n    version: v1.30.6\n",
        "",
    );
    fs::write(&kubekey, text).expect("kubekey manifest");
    let (_, out) = run_ok(&mut b.build(&kubekey, "images.tar.zst", "cache", &[]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}:37: `spec.components.harbor` v2.10.1 is not bundled",
            kubekey.display()
        )),
        "{stderr}"
    );
    assert_eq!(references(&b.path("images.tar.zst")), [image]);
}

//! Manifest parsing tests: the examples, the documented shape, defaults and normalisation.
//! Rejections are tested in `error_table`.

use std::path::Path;

use super::*;

/// sha256("") and sha256("a"): real digests, so fixtures look like real manifests.
pub(super) const SHA_EMPTY: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
pub(super) const SHA_A: &str = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";

/// Five lines; a body passed to [`doc`] starts on line 6.
pub(super) const HEADER: &str =
    "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata:\n  name: demo\nspec:\n";

pub(super) fn doc(spec_body: &str) -> String {
    format!("{HEADER}{spec_body}")
}

fn parse(text: &str) -> Manifest {
    Manifest::from_str_named(text, "demo.yaml").unwrap_or_else(|error| panic!("{error}"))
}

fn the_documented_shape() -> String {
    format!(
        r#"apiVersion: bundle.kk.io/v1alpha1
kind: BundleManifest
metadata:
  name: demo
spec:
  platforms: [linux/amd64, linux/arm64]
  kubernetes:
    version: v1.31.4
    containerRuntime: containerd
    cni: calico
  images:
    - docker.io/library/busybox:1.36
    - quay.io/example/app@sha256:{SHA_EMPTY}
  binaries:
    - name: etcd
      version: v3.5.16
      url: https://example.org/etcd-{{version}}-{{os}}-{{arch}}.tar.gz
      sha256: {{amd64: {SHA_EMPTY}, arm64: {SHA_A}}}
    - name: crictl
      version: v1.31.1
      url: https://example.org/crictl-{{version}}-{{os}}-{{arch}}.tar.gz
      checksumUrl: https://example.org/SHA256SUMS
  charts:
    - name: tigera-operator
      version: v3.28.0
      repo: https://example.org/charts
    - name: podinfo
      version: 6.7.0
      oci: oci://ghcr.io/stefanprodan/charts/podinfo
  registries:
    docker.io: {{mirror: "127.0.0.1:5000"}}
    "127.0.0.1:5000": {{plainHTTP: true}}
"#
    )
}

#[test]
fn parses_the_documented_shape() {
    let manifest = parse(&the_documented_shape());
    let spec = manifest.spec();
    assert_eq!(manifest.metadata().name, "demo");
    let platforms: Vec<String> = spec.platforms.iter().map(ToString::to_string).collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);

    let kubernetes = spec.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(kubernetes.version.to_string(), "v1.31.4");
    assert_eq!(kubernetes.container_runtime, ContainerRuntime::Containerd);
    assert_eq!(kubernetes.cni, Cni::Calico);

    assert_eq!(
        spec.images[1].normalized,
        format!("quay.io/example/app@sha256:{SHA_EMPTY}")
    );
    assert_eq!(spec.images[1].location.to_string(), "demo.yaml:13:7");

    let etcd = &spec.binaries[0];
    assert_eq!(
        etcd.url_for(&spec.platforms[1]),
        "https://example.org/etcd-v3.5.16-linux-arm64.tar.gz"
    );
    assert_eq!(etcd.checksum.sha256_for("arm64"), Some(SHA_A));
    assert!(matches!(
        spec.binaries[1].checksum,
        BinaryChecksum::ChecksumUrl(_)
    ));

    assert_eq!(
        spec.charts[0].source,
        ChartSource::Repository("https://example.org/charts".into())
    );
    assert_eq!(
        spec.charts[1].source,
        ChartSource::Oci("oci://ghcr.io/stefanprodan/charts/podinfo".into())
    );

    assert_eq!(
        spec.registries["docker.io"].mirror.as_deref(),
        Some("127.0.0.1:5000")
    );
    assert!(spec.registries["127.0.0.1:5000"].plain_http);
}

#[test]
fn parses_the_minimal_example() {
    let text = include_str!("../../../manifests/minimal.yaml");
    let manifest = parse(text);
    assert_eq!(manifest.source(), text, "the source is kept verbatim");
    let images: Vec<&str> = manifest
        .spec()
        .images
        .iter()
        .map(|i| i.normalized.as_str())
        .collect();
    assert_eq!(
        images,
        [
            "docker.io/library/busybox:1.36",
            "registry.k8s.io/pause:3.10"
        ]
    );
}

#[test]
fn reads_the_kubernetes_example_from_its_path() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/kubernetes.yaml");
    let manifest = Manifest::from_path(&path).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(manifest.source_name(), path.display().to_string());
    let spec = manifest.spec();
    assert_eq!(
        spec.kubernetes
            .as_ref()
            .map(|k| k.version.to_string())
            .as_deref(),
        Some("v1.31.4")
    );
    assert_eq!(spec.platforms.len(), 2);
    assert!(!spec.binaries.is_empty() && !spec.charts.is_empty() && !spec.images.is_empty());
}

#[test]
fn unreadable_path_is_a_read_error() {
    let error = Manifest::from_path(Path::new("/nonexistent/kk.yaml")).expect_err("missing file");
    assert!(matches!(error, ManifestError::Read { .. }));
    assert_eq!(
        error.to_string(),
        "cannot read manifest `/nonexistent/kk.yaml`"
    );
}

#[test]
fn applies_defaults() {
    let manifest = parse(&doc("  kubernetes: {version: v1.30.0}\n"));
    let spec = manifest.spec();
    assert_eq!(spec.platforms, [Platform::linux_amd64()]);
    let kubernetes = spec.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(kubernetes.container_runtime, ContainerRuntime::Containerd);
    assert_eq!(kubernetes.cni, Cni::Calico);
}

#[test]
fn normalizes_image_references() {
    let manifest = parse(&doc(&format!(
        "  images:\n    - busybox:1.36\n    - index.docker.io/foo/bar:1@sha256:{SHA_A}\n"
    )));
    let images = &manifest.spec().images;
    assert_eq!(images[0].original, "busybox:1.36");
    assert_eq!(images[0].normalized, "docker.io/library/busybox:1.36");
    assert_eq!(
        images[1].normalized,
        format!("docker.io/foo/bar:1@sha256:{SHA_A}")
    );
}

#[test]
fn images_take_referrers_and_verify_options() {
    let manifest = parse(&doc(
        "  verify: {key: keys/all.pub}\n  images:\n    - busybox:1.36\n    - ref: quay.io/a/b:1\n      referrers: none\n      verify: {key: b.pub}\n",
    ));
    let spec = manifest.spec();
    let (plain, detailed) = (&spec.images[0], &spec.images[1]);
    assert_eq!(plain.referrers, Referrers::All);
    assert_eq!(plain.verify(spec).unwrap().key, Path::new("keys/all.pub"));
    assert_eq!(detailed.normalized, "quay.io/a/b:1");
    assert_eq!(detailed.referrers, Referrers::None);
    assert_eq!(detailed.verify(spec).unwrap().key, Path::new("b.pub"));
    assert_eq!(detailed.location.to_string(), "demo.yaml:9:12");
}

#[test]
fn image_options_are_checked() {
    for (images, expected) in [
        ("[{referrers: none}]", "`ref`"),
        ("[{ref: a:1, referrers: some}]", "some"),
        ("[{ref: a:1, verify: {}}]", "`key`"),
        ("[{ref: a:1, sign: x}]", "sign"),
        ("[{ref: a}]", "neither a tag nor a digest"),
    ] {
        let text = doc(&format!("  images: {images}\n"));
        let error = Manifest::from_str_named(&text, "demo.yaml")
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{images}: {error}");
    }
}

#[test]
fn single_sha256_covers_every_platform_of_one_file() {
    let manifest = parse(&doc(&format!(
        "  platforms: [linux/amd64, linux/arm64]\n  binaries:\n    - name: script\n      version: v1\n      url: https://example.org/{{version}}/install.sh\n      sha256: {SHA_A}\n"
    )));
    let checksum = &manifest.spec().binaries[0].checksum;
    assert_eq!(checksum, &BinaryChecksum::Sha256(SHA_A.to_owned()));
    assert_eq!(checksum.sha256_for("arm64"), Some(SHA_A));
}

#[test]
fn sha256_keys_accept_architecture_aliases() {
    let manifest = parse(&doc(&format!(
        "  binaries:\n    - name: tool\n      version: v1\n      url: https://example.org/{{arch}}\n      sha256: {{x86_64: {SHA_A}}}\n"
    )));
    assert_eq!(
        manifest.spec().binaries[0].checksum.sha256_for("amd64"),
        Some(SHA_A)
    );
}

#[test]
fn reads_file_mirrors() {
    let manifest = parse(&doc(
        "  images: [busybox:1]\n  fileMirrors:\n    dl.k8s.io: http://127.0.0.1:8080/dl.k8s.io\n    \"github.com:443\": https://mirror.example.org/gh/\n",
    ));
    let mirrors = &manifest.spec().file_mirrors;
    assert_eq!(mirrors.len(), 2);
    assert_eq!(mirrors["dl.k8s.io"], "http://127.0.0.1:8080/dl.k8s.io");
    assert_eq!(mirrors["github.com:443"], "https://mirror.example.org/gh/");
    assert!(
        parse(&doc("  images: [busybox:1]\n"))
            .spec()
            .file_mirrors
            .is_empty()
    );
}

#[test]
fn long_values_are_cut_in_errors() {
    // A value of megabytes used to be echoed whole into the message; 100 kB shows it as well and
    // keeps the test quick.
    let long = "x".repeat(100_000);
    let cut = format!("{}… (100000 bytes)", "x".repeat(80));
    let cases = [
        (
            format!(
                "apiVersion: {long}\nkind: BundleManifest\nmetadata:\n  name: demo\nspec: {{}}\n"
            ),
            "unsupported apiVersion",
        ),
        (doc(&format!("  images:\n    - {long}\n")), "image"),
        (doc(&format!("  platforms: [\"{long}\"]\n")), "platform"),
        (
            doc(&format!(
                "  kubernetes:\n    version: v1.31.4\n    cni: {long}\n"
            )),
            "unknown value",
        ),
    ];
    for (text, what) in cases {
        let message = Manifest::from_str_named(&text, "demo.yaml")
            .expect_err(what)
            .to_string();
        assert!(
            message.contains(&cut),
            "{what}: {}",
            &message[..message.len().min(300)]
        );
        assert!(message.len() < 1000, "{what}: {} bytes", message.len());
    }
}

#[test]
fn os_packages_alone_are_something_to_bundle_with_defaults() {
    let manifest = parse(&doc(
        "  platforms: [linux/amd64, linux/arm/v7]\n  osPackages:\n    - distro: debian-12\n      repository: {url: \"http://example.org/debian/\", suite: bookworm, keyring: keys/debian.gpg}\n      packages: [socat, nfs-common]\n    - distro: ubuntu-24.04\n      arch: armhf\n      repository: {url: \"http://example.org/ubuntu\", suite: noble, components: [main, universe], keyring: /k.gpg}\n",
    ));
    let [debian, ubuntu] = manifest.spec.os_packages.as_slice() else {
        panic!("two entries: {:?}", manifest.spec.os_packages);
    };
    assert_eq!(debian.distro.to_string(), "debian-12");
    assert_eq!(debian.arches, ["amd64", "armhf"]);
    assert_eq!(debian.repository.url, "http://example.org/debian");
    assert_eq!(debian.repository.components, ["main"]);
    assert_eq!(debian.repository.keyring, Path::new("keys/debian.gpg"));
    assert_eq!(debian.packages, ["socat", "nfs-common"]);
    assert_eq!(debian.at.to_string(), "demo.yaml:8:7");
    assert_eq!(ubuntu.arches, ["armhf"]);
    assert_eq!(ubuntu.repository.components, ["main", "universe"]);
    assert!(ubuntu.packages.is_empty());
}

#[test]
fn kubernetes_package_choices_parse_with_defaults() {
    let defaults = parse(&doc("  kubernetes: {version: v1.32.0}\n"));
    let kubernetes = defaults.spec.kubernetes.expect("kubernetes");
    assert_eq!(kubernetes.kube_proxy_mode, KubeProxyMode::Iptables);
    assert!(kubernetes.storage.is_empty());
    assert!(kubernetes.addons.is_empty());
    assert!(kubernetes.node_packages);
    let chosen = parse(&doc(
        "  kubernetes: {version: v1.32.0, kubeProxyMode: ipvs, storage: [nfs, nfs], addons: [spegel, spegel], nodePackages: false}\n",
    ));
    let kubernetes = chosen.spec.kubernetes.expect("kubernetes");
    assert_eq!(kubernetes.kube_proxy_mode, KubeProxyMode::Ipvs);
    assert_eq!(kubernetes.storage, [Storage::Nfs]);
    assert_eq!(kubernetes.addons, [Addon::Spegel]);
    assert!(!kubernetes.node_packages);
}

#[test]
fn the_packages_example_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/packages.yaml");
    let manifest = Manifest::from_path(&path).unwrap_or_else(|error| panic!("{error}"));
    let kubernetes = manifest.spec.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(kubernetes.kube_proxy_mode, KubeProxyMode::Ipvs);
    assert_eq!(kubernetes.storage, [Storage::Nfs]);
    let [debian] = manifest.spec.os_packages.as_slice() else {
        panic!("one set");
    };
    assert_eq!(debian.distro.to_string(), "debian-12");
    assert_eq!(debian.arches, ["amd64"]);
    assert_eq!(debian.repository.suite, "bookworm");
    assert_eq!(debian.packages, ["curl"]);
}

#[test]
fn every_network_plugin_is_spelled_as_the_catalog_and_kubekey_spell_it() {
    for (written, cni) in [
        ("calico", Cni::Calico),
        ("cilium", Cni::Cilium),
        ("flannel", Cni::Flannel),
        ("hybridnet", Cni::Hybridnet),
        ("kube-ovn", Cni::KubeOvn),
        ("kubeovn", Cni::KubeOvn),
        ("none", Cni::None),
    ] {
        let manifest = parse(&doc(&format!(
            "  kubernetes: {{version: v1.31.4, cni: {written}}}\n"
        )));
        let kubernetes = manifest.spec.kubernetes.expect("kubernetes");
        assert_eq!(kubernetes.cni, cni, "{written}");
        assert_ne!(cni.as_str(), "kubeovn", "one name per plugin when printed");
    }
}

#[test]
fn multi_cni_is_multus_or_none() {
    for (written, multi) in [
        ("", MultiCni::None),
        (", multiCni: none", MultiCni::None),
        (", multiCni: multus", MultiCni::Multus),
    ] {
        let manifest = parse(&doc(&format!(
            "  kubernetes: {{version: v1.31.4{written}}}\n"
        )));
        let kubernetes = manifest.spec.kubernetes.expect("kubernetes");
        assert_eq!(kubernetes.multi_cni, multi, "{written:?}");
    }
}

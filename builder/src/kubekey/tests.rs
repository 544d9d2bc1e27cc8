use super::*;

/// A KubeKey manifest with `spec` (indented by two) after the header, as `kk create manifest`
/// writes it: line 5 is `spec:`, the first line of `spec` is line 6.
fn kubekey(spec: &str) -> String {
    format!("apiVersion: {API_VERSION}\nkind: {KIND}\nmetadata:\n  name: sample\nspec:\n{spec}")
}

/// [`convert`] of [`kubekey`]`(spec)`, with an image at the end unless `spec` lists some: kk
/// refuses a manifest that bundles nothing.
fn converted(spec: &str) -> Conversion {
    let spec = if spec.contains("  images:") {
        spec.to_owned()
    } else {
        format!("{spec}  images: [registry.k8s.io/pause:3.10]\n")
    };
    convert(&kubekey(&spec), "kk3.yaml", &Options::default())
        .unwrap_or_else(|error| panic!("{spec}: {error:#?}"))
}

/// What a part of the schema does: appears in the kk manifest, or in a warning at a line.
enum Expect {
    /// The converted manifest contains this text.
    Maps(&'static str),
    /// A warning at this line of the KubeKey file contains this text.
    Warns(u32, &'static str),
}

/// Every field of KubeKey's `ManifestSpec` (`manifest_types.go`), each alone in a manifest:
/// none is dropped silently.
#[test]
fn every_field_of_the_kubekey_schema_maps_or_warns() {
    let k8s = "  kubernetesDistributions:\n  - {type: kubernetes, version: v1.31.4}\n";
    let table: Vec<(&str, String, Expect)> = vec![
        ("metadata.name", String::new(), Expect::Maps("name: \"sample\"")),
        ("arches", "  arches: [amd64, arm64]\n".into(), Expect::Maps("platforms: [\"linux/amd64\", \"linux/arm64\"]")),
        ("kubernetesDistributions[].version", k8s.into(), Expect::Maps("version: \"v1.31.4\"")),
        ("kubernetesDistributions[].type", "  kubernetesDistributions:\n  - {type: k3s, version: v1.31.4+k3s1}\n".into(), Expect::Warns(7, "distribution `k3s`")),
        ("kubernetesDistributions, a second one", format!("{k8s}  - {{type: kubernetes, version: v1.32.4}}\n"), Expect::Warns(8, "kubernetes v1.32.4 is not bundled")),
        ("components.helm", format!("{k8s}  components:\n    helm: {{version: v3.14.3}}\n"), Expect::Maps("helm: \"v3.14.3\"")),
        ("components.cni", format!("{k8s}  components:\n    cni: {{version: v1.2.0}}\n"), Expect::Maps("cni-plugins: \"v1.2.0\"")),
        ("components.etcd", format!("{k8s}  components:\n    etcd: {{version: v3.5.13}}\n"), Expect::Maps("etcd: \"v3.5.13\"")),
        ("components.crictl", format!("{k8s}  components:\n    crictl: {{version: v1.29.0}}\n"), Expect::Maps("crictl: \"v1.29.0\"")),
        ("components.containerRuntimes containerd", format!("{k8s}  components:\n    containerRuntimes:\n    - {{type: containerd, version: 1.7.13}}\n"), Expect::Maps("containerd: \"1.7.13\"")),
        ("components.containerRuntimes docker", format!("{k8s}  components:\n    containerRuntimes:\n    - {{type: docker, version: 24.0.9}}\n"), Expect::Maps("containerRuntime: docker\n    cni: calico\n    components:\n      docker: \"24.0.9\"")),
        ("components.containerRuntimes docker beside containerd", format!("{k8s}  components:\n    containerRuntimes:\n    - {{type: docker, version: 24.0.9}}\n    - {{type: containerd, version: 1.7.13}}\n"), Expect::Warns(10, "docker 24.0.9 is not bundled")),
        ("components.containerRuntimes other", format!("{k8s}  components:\n    containerRuntimes:\n    - {{type: crio, version: 1.29.1}}\n"), Expect::Warns(10, "container runtime `crio`")),
        ("components without a cluster", "  components:\n    helm: {version: v3.14.3}\n".into(), Expect::Warns(7, "component `helm` v3.14.3 is not bundled")),
        ("components.docker-registry", "  components:\n    docker-registry: {version: \"2\"}\n".into(), Expect::Warns(7, "`spec.components.docker-registry` 2")),
        ("components.harbor", "  components:\n    harbor: {version: v2.10.1}\n".into(), Expect::Warns(7, "`spec.components.harbor` v2.10.1")),
        ("components.docker-compose", "  components:\n    docker-compose: {version: v2.26.1}\n".into(), Expect::Warns(7, "`spec.components.docker-compose` v2.26.1")),
        ("components.calicoctl", "  components:\n    calicoctl: {version: v3.27.3}\n".into(), Expect::Warns(7, "`spec.components.calicoctl` v3.27.3")),
        ("a component's version that is not a release", format!("{k8s}  components:\n    helm: {{version: v3.14}}\n"), Expect::Warns(9, "`v3.14` is not a release version")),
        ("images", "  images:\n  - docker.io/library/busybox:1.36\n".into(), Expect::Maps("    - \"docker.io/library/busybox:1.36\"")),
        ("images, twice", "  images:\n  - busybox:1.36\n  - busybox:1.36\n".into(), Expect::Warns(8, "listed twice")),
        ("images name the network plugin", format!("{k8s}  images:\n  - quay.io/cilium/cilium:v1.15.3\n"), Expect::Maps("cni: cilium")),
        ("no network plugin image", k8s.into(), Expect::Warns(8, "kk installs calico, its default")),
        ("operatingSystems[] Ubuntu", "  arches: [amd64]\n  operatingSystems:\n  - {arch: amd64, type: linux, id: ubuntu, version: \"22.04\", osImage: Ubuntu 22.04.4 LTS}\n".into(), Expect::Maps("#   - distro: ubuntu-22.04\n  #     arch: amd64\n  #     repository:\n  #       url: \"http://…\"\n  #       suite: jammy")),
        ("operatingSystems[] Ubuntu warns too", "  arches: [amd64]\n  operatingSystems:\n  - {arch: amd64, type: linux, id: ubuntu, version: \"22.04\", osImage: Ubuntu 22.04.4 LTS}\n".into(), Expect::Warns(8, "`ubuntu-22.04` (Ubuntu 22.04.4 LTS, amd64)")),
        ("operatingSystems[].id other", "  operatingSystems:\n  - {arch: amd64, type: linux, id: centos, version: \"7\", osImage: CentOS Linux 7 (Core)}\n".into(), Expect::Warns(7, "`centos-7` (CentOS Linux 7 (Core)) is not bundled")),
        ("operatingSystems[].arch not in arches", "  arches: [amd64]\n  operatingSystems:\n  - {arch: arm64, type: linux, id: debian, version: \"12\"}\n".into(), Expect::Warns(8, "`arm64`, which is not in `spec.arches`")),
        ("operatingSystems[].type", "  operatingSystems:\n  - {arch: amd64, type: windows, id: ubuntu, version: \"22.04\"}\n".into(), Expect::Warns(7, "Linux nodes only")),
        ("operatingSystems[].repository.iso.url", "  operatingSystems:\n  - arch: amd64\n    id: centos\n    version: \"7\"\n    repository: {iso: {url: \"https://example.org/c7.iso\", checksum: abc}}\n".into(), Expect::Warns(7, "ISO `https://example.org/c7.iso` not used")),
        ("operatingSystems[].repository.iso.localPath", "  operatingSystems:\n  - arch: amd64\n    id: centos\n    version: \"7\"\n    repository: {iso: {localPath: ./c7.iso}}\n".into(), Expect::Warns(7, "ISO `./c7.iso` not used")),
        ("registry.auths plainHTTP", "  registry:\n    auths:\n      \"r.local:5000\": {plainHTTP: true, skipTLSVerify: true}\n".into(), Expect::Maps("    \"r.local:5000\":\n      plainHTTP: true\n      insecureSkipVerify: false\n")),
        ("registry.auths skipTLSVerify", "  registry:\n    auths:\n      r.local: {skipTLSVerify: true}\n".into(), Expect::Maps("      plainHTTP: false\n      insecureSkipVerify: true\n")),
        ("registry.auths username", "  registry:\n    auths:\n      r.local: {username: admin, password: s3cret}\n".into(), Expect::Maps("      username: \"admin\"\n      passwordEnv: KK_REGISTRY_PASSWORD_R_LOCAL\n")),
        ("registry.auths password", "  registry:\n    auths:\n      r.local:\n        username: admin\n        password: s3cret\n".into(), Expect::Warns(10, "kk reads it from `KK_REGISTRY_PASSWORD_R_LOCAL`")),
        ("registry.auths password alone", "  registry:\n    auths:\n      r.local:\n        password: s3cret\n".into(), Expect::Warns(9, "has no username")),
        ("registry.auths username alone", "  registry:\n    auths:\n      r.local:\n        username: admin\n".into(), Expect::Warns(9, "has no password")),
        ("registry.auths certsPath", "  registry:\n    auths:\n      r.local:\n        certsPath: /etc/docker/certs.d/r.local\n".into(), Expect::Warns(9, "`/etc/docker/certs.d/r.local` is not carried")),
        ("a field KubeKey's schema lacks", "  addons: []\n".into(), Expect::Warns(6, "`spec.addons` is not a field")),
        ("a top-level unknown field", "  images: [registry.k8s.io/pause:3.10]\nstatus: {}\n".into(), Expect::Warns(7, "`status` is not a field")),
        ("a nested unknown field", "  registry:\n    mirrors: [m.local]\n".into(), Expect::Warns(7, "`spec.registry.mirrors` is not a field")),
    ];
    for (field, spec, expect) in table {
        let conversion = converted(&spec);
        let text = conversion.manifest.source();
        match expect {
            Expect::Maps(wanted) => {
                assert!(text.contains(wanted), "{field}: {wanted:?} not in\n{text}");
            }
            Expect::Warns(line, wanted) => assert!(
                conversion
                    .warnings
                    .iter()
                    .any(|w| w.at.line() == line && w.message.contains(wanted)),
                "{field}: no warning at line {line} with {wanted:?} in {:#?}",
                conversion.warnings
            ),
        }
    }
}

#[test]
fn a_password_is_never_in_the_converted_manifest() {
    let conversion = converted(
        "  registry:\n    auths:\n      r.local: {username: admin, password: Harbor12345}\n",
    );
    assert!(!conversion.manifest.source().contains("Harbor12345"));
    assert!(
        conversion
            .warnings
            .iter()
            .all(|w| !w.message.contains("Harbor12345"))
    );
    let registry = &conversion.manifest.spec().registries["r.local"];
    let credentials = registry.credentials.as_ref().expect("credentials");
    assert_eq!(credentials.password_env, "KK_REGISTRY_PASSWORD_R_LOCAL");
}

#[test]
fn the_converted_manifest_is_what_kk_reads() {
    let conversion = converted(
        "  arches: [amd64]\n  kubernetesDistributions:\n  - {type: kubernetes, version: v1.31.4}\n  components:\n    containerRuntimes: [{type: containerd, version: 2.1.9}]\n  images: [quay.io/calico/node:v3.30.5]\n",
    );
    let spec = conversion.manifest.spec();
    let kubernetes = spec.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(kubernetes.version.to_string(), "v1.31.4");
    assert_eq!(kubernetes.components["containerd"], "2.1.9");
    assert_eq!(spec.platforms.len(), 1);
    assert_eq!(spec.images.len(), 1);
    assert_eq!(conversion.manifest.source_name(), "kk3.yaml (converted)");
    assert!(
        conversion.manifest.source().starts_with(
            "# Converted by `kk-bundle convert` from the KubeKey v3 Manifest `kk3.yaml`"
        ),
        "{}",
        conversion.manifest.source()
    );
}

#[test]
fn a_version_the_catalog_lacks_is_warned_at_its_line() {
    let conversion = converted(
        "  kubernetesDistributions:\n  - {type: kubernetes, version: v1.28.8}\n  images: [docker.io/calico/node:v3.27.3]\n",
    );
    let [warning] = conversion.warnings.as_slice() else {
        panic!("{:#?}", conversion.warnings);
    };
    assert_eq!(warning.at.line(), 7);
    assert!(
        warning
            .message
            .contains("`v1.28.8` is not in the version catalog"),
        "{warning}"
    );
    assert_eq!(
        warning.to_string(),
        format!("kk3.yaml:7: {}", warning.message)
    );
}

#[test]
fn a_kk_manifest_or_a_wrong_shape_is_an_error() {
    let kk = "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {name: m}\n";
    let error = convert(kk, "m.yaml", &Options::default())
        .expect_err("not KubeKey")
        .to_string();
    assert!(
        error
            .contains("m.yaml:1:1: not a KubeKey v3 manifest (`apiVersion: bundle.kk.io/v1alpha1`"),
        "{error}"
    );
    for (spec, wanted) in [
        (
            "  arches: amd64\n",
            "kk3.yaml:6:11: `spec.arches` is a scalar, but KubeKey's Manifest has a list there",
        ),
        (
            "  components: [helm]\n",
            "`spec.components` is a list, but KubeKey's Manifest has a mapping there",
        ),
        ("  images: [{name: x}]\n", "`spec.images[]` is a mapping"),
    ] {
        let error = convert(&kubekey(spec), "kk3.yaml", &Options::default())
            .expect_err(spec)
            .to_string();
        assert!(error.contains(wanted), "{spec}: {error}");
    }
    let untagged = convert(
        &kubekey("  images: [busybox]\n"),
        "kk3.yaml",
        &Options::default(),
    )
    .expect_err("untagged");
    let source = std::error::Error::source(&untagged).map(ToString::to_string);
    assert!(
        source
            .as_deref()
            .is_some_and(|s| s.starts_with("kk3.yaml (converted):")),
        "{source:?}"
    );
    assert!(
        untagged
            .to_string()
            .contains("the kk manifest converted from `kk3.yaml` is invalid"),
        "{untagged}"
    );
}

#[test]
fn only_a_kubekey_v3_manifest_is_detected() {
    for (text, expected) in [
        (
            "apiVersion: kubekey.kubesphere.io/v1alpha2\nkind: Manifest\n",
            true,
        ),
        (
            "apiVersion: kubekey.kubesphere.io/v1alpha2\nkind: Cluster\n",
            false,
        ),
        ("apiVersion: bundle.kk.io/v1alpha1\nkind: Manifest\n", false),
        (
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nspec: {images: []}\n",
            false,
        ),
        ("not: [yaml", false),
    ] {
        assert_eq!(is_kubekey(text), expected, "{text}");
    }
}

/// The example manifests of `manifests/kubekey-v3/`, shaped as `kk create manifest` writes
/// them, and their conversions with the warnings.
#[test]
fn example_manifests_convert() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/kubekey-v3");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("manifests/kubekey-v3")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| {
            std::path::Path::new(name)
                .extension()
                .is_some_and(|ext| ext == "yaml")
        })
        .collect();
    names.sort();
    assert!(names.len() >= 2, "{names:?}");
    for name in names {
        let text = std::fs::read_to_string(dir.join(&name)).expect("read");
        let conversion = convert(
            &text,
            &format!("manifests/kubekey-v3/{name}"),
            &Options::default(),
        )
        .unwrap_or_else(|error| panic!("{name}: {error:#}"));
        insta::assert_snapshot!(name.trim_end_matches(".yaml"), conversion.manifest.source());
    }
}

/// With a repository URL per release (and per architecture, which wins), the Debian and Ubuntu
/// systems become real `spec.osPackages` entries; one without a URL stays commented out.
#[test]
fn os_repositories_make_os_packages_entries() {
    let spec = "  arches: [amd64, arm64]\n  operatingSystems:\n  - {arch: amd64, id: ubuntu, version: \"22.04\"}\n  - {arch: arm64, id: ubuntu, version: \"22.04\"}\n  - {arch: amd64, id: debian, version: \"12\"}\n  images: [registry.k8s.io/pause:3.10]\n";
    let options = Options {
        os_repositories: [
            ("ubuntu-22.04", "http://r.example/ubuntu"),
            ("ubuntu-22.04/arm64", "http://r.example/ubuntu-ports"),
        ]
        .into_iter()
        .map(|(key, url)| (key.to_owned(), url.to_owned()))
        .collect(),
    };
    let conversion = convert(&kubekey(spec), "kk3.yaml", &options).expect("converts");
    let packages = &conversion.manifest.spec().os_packages;
    let urls: Vec<(&str, &str)> = packages
        .iter()
        .map(|p| (p.arches[0].as_str(), p.repository.url.as_str()))
        .collect();
    assert_eq!(
        urls,
        [
            ("amd64", "http://r.example/ubuntu"),
            ("arm64", "http://r.example/ubuntu-ports")
        ]
    );
    assert_eq!(packages[0].repository.suite, "jammy");
    let text = conversion.manifest.source();
    assert!(text.contains("  #   - distro: debian-12\n"), "{text}");
    let [warning] = conversion.warnings.as_slice() else {
        panic!("{:#?}", conversion.warnings);
    };
    assert!(
        warning.message.contains("`--os-repository debian-12=URL`"),
        "{warning}"
    );
}

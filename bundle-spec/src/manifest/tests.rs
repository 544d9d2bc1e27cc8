//! Manifest parsing and validation tests: the examples, the documented shape, and one table
//! row per validation error.

use std::path::Path;

use super::*;

/// sha256("") and sha256("a"): real digests, so fixtures look like real manifests.
const SHA_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const SHA_A: &str = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";

/// Five lines; a body passed to [`doc`] starts on line 6.
const HEADER: &str = "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata:\n  name: demo\nspec:\n";

fn doc(spec_body: &str) -> String {
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

    assert_eq!(spec.images[1].normalized, format!("quay.io/example/app@sha256:{SHA_EMPTY}"));
    assert_eq!(spec.images[1].location.to_string(), "demo.yaml:13:7");

    let etcd = &spec.binaries[0];
    assert_eq!(
        etcd.url_for(&spec.platforms[1]),
        "https://example.org/etcd-v3.5.16-linux-arm64.tar.gz"
    );
    assert_eq!(etcd.checksum.sha256_for("arm64"), Some(SHA_A));
    assert!(matches!(spec.binaries[1].checksum, BinaryChecksum::ChecksumUrl(_)));

    assert_eq!(spec.charts[0].source, ChartSource::Repository("https://example.org/charts".into()));
    assert_eq!(
        spec.charts[1].source,
        ChartSource::Oci("oci://ghcr.io/stefanprodan/charts/podinfo".into())
    );

    assert_eq!(spec.registries["docker.io"].mirror.as_deref(), Some("127.0.0.1:5000"));
    assert!(spec.registries["127.0.0.1:5000"].plain_http);
}

#[test]
fn parses_the_minimal_example() {
    let text = include_str!("../../../manifests/minimal.yaml");
    let manifest = parse(text);
    assert_eq!(manifest.source(), text, "the source is kept verbatim");
    let images: Vec<&str> = manifest.spec().images.iter().map(|i| i.normalized.as_str()).collect();
    assert_eq!(
        images,
        ["docker.io/library/busybox:1.36", "registry.k8s.io/pause:3.10"]
    );
}

#[test]
fn reads_the_kubernetes_example_from_its_path() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/kubernetes.yaml");
    let manifest = Manifest::from_path(&path).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(manifest.source_name(), path.display().to_string());
    let spec = manifest.spec();
    assert_eq!(spec.kubernetes.as_ref().map(|k| k.version.to_string()).as_deref(), Some("v1.31.4"));
    assert_eq!(spec.platforms.len(), 2);
    assert!(!spec.binaries.is_empty() && !spec.charts.is_empty() && !spec.images.is_empty());
}

#[test]
fn unreadable_path_is_a_read_error() {
    let error = Manifest::from_path(Path::new("/nonexistent/kk.yaml")).expect_err("missing file");
    assert!(matches!(error, ManifestError::Read { .. }));
    assert_eq!(error.to_string(), "cannot read manifest `/nonexistent/kk.yaml`");
}

#[test]
fn applies_defaults() {
    let manifest = parse(&doc("  kubernetes: {version: v1.30.0}\n"));
    let spec = manifest.spec();
    assert_eq!(spec.platforms, [crate::platform::Platform::linux_amd64()]);
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
    assert_eq!(images[1].normalized, format!("docker.io/foo/bar:1@sha256:{SHA_A}"));
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
    assert_eq!(manifest.spec().binaries[0].checksum.sha256_for("amd64"), Some(SHA_A));
}

/// A binary with everything but what the row varies.
fn binary(extra: &str) -> String {
    doc(&format!(
        "  binaries:\n    - name: etcd\n      version: v1\n      url: https://example.org/{{arch}}\n{extra}"
    ))
}

fn chart(extra: &str) -> String {
    doc(&format!("  charts:\n    - name: app\n      version: 1.0.0\n{extra}"))
}

fn registry(settings: &str) -> String {
    doc(&format!("  images: [busybox:1]\n  registries:\n    docker.io: {settings}\n"))
}

type IsVariant = fn(&ManifestError) -> bool;

/// A rejected manifest: the variant, a fragment of the message (or of its source's), and the
/// reported `line:column`.
struct Case {
    yaml: String,
    variant: IsVariant,
    fragment: &'static str,
    at: &'static str,
}

macro_rules! case {
    ($variant:ident, $yaml:expr, $fragment:expr, $at:expr) => {
        Case {
            yaml: $yaml,
            variant: |error| matches!(error, ManifestError::$variant { .. }),
            fragment: $fragment,
            at: $at,
        }
    };
}

#[expect(clippy::too_many_lines, reason = "one row per validation error")]
fn cases() -> Vec<Case> {
    let sha = format!("      sha256: {SHA_A}\n");
    let image = |reference: &str| doc(&format!("  images:\n    - {reference}\n"));
    vec![
        // YAML shape.
        case!(Yaml, doc("  images: [busybox:1\n"), "unclosed bracket", "6:11"),
        case!(Yaml, registry("{plainHTTP: yes}"), "invalid boolean", "8:29"),
        case!(UnknownField, doc("  imagez: []\n"), "unknown field `imagez`; did you mean `images`?", "6:3"),
        case!(UnknownField, doc("  frobnicate: 1\n"), "hint: expected one of `platforms`, `kubernetes`", "6:3"),
        case!(UnknownField, registry("{plainHttp: true}"), "did you mean `plainHTTP`?", "8:17"),
        case!(UnknownField, binary(&format!("      checksum: {SHA_A}\n")), "unknown field `checksum`", "10:7"),
        case!(MissingField, "kind: BundleManifest\nmetadata: {name: demo}\nspec: {images: [busybox:1]}\n".to_owned(), "missing required field `apiVersion`", "1:1"),
        case!(MissingField, doc("  binaries:\n    - name: etcd\n      version: v1\n      checksumUrl: https://example.org/sums\n"), "missing required field `url`", "7:7"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, cni: cilum}\n"), "unknown value `cilum`; did you mean `cilium`?", "6:40"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, containerRuntime: crio}\n"), "expected one of `containerd`, `docker`", "6:53"),
        case!(DuplicateKey, doc("  images: [busybox:1]\n  images: [busybox:2]\n"), "duplicate key `images`", "7:3"),
        case!(DuplicateKey, binary(&format!("      sha256: {{x86_64: {SHA_A}, amd64: {SHA_A}}}\n")), "duplicate key `amd64`", "10:89"),
        // Header and metadata.
        case!(UnsupportedApiVersion, HEADER.replace("v1alpha1", "v2") + "  imagez: []\n", "unsupported apiVersion `bundle.kk.io/v2`; hint: use `bundle.kk.io/v1alpha1`", "1:13"),
        case!(UnsupportedKind, HEADER.replace("BundleManifest", "Bundle"), "unsupported kind `Bundle`", "2:7"),
        case!(InvalidName, HEADER.replace("demo", "Demo_1") + "  images: [busybox:1]\n", "invalid manifest name `Demo_1`", "4:9"),
        case!(InvalidName, binary(&sha).replace("name: etcd", "name: -etcd"), "invalid binary name `-etcd`", "7:13"),
        case!(InvalidName, chart("      repo: https://example.org\n").replace("name: app", "name: App"), "invalid chart name `App`", "7:13"),
        case!(InvalidVersion, binary(&sha).replace("version: v1", "version: v 1"), "invalid binary version `v 1`", "8:16"),
        case!(InvalidVersion, chart("      repo: https://example.org\n").replace("1.0.0", "\"\""), "invalid chart version ``", "8:16"),
        // Platforms.
        case!(InvalidPlatform, doc("  platforms: [linux/amd46]\n  images: [busybox:1]\n"), "did you mean `amd64`?", "6:15"),
        case!(InvalidPlatform, doc("  platforms: [amd64]\n  images: [busybox:1]\n"), "is not `os/arch[/variant]`", "6:15"),
        case!(EmptyPlatforms, doc("  platforms: []\n  images: [busybox:1]\n"), "`platforms` is empty", "6:14"),
        case!(DuplicatePlatform, doc("  platforms: [linux/arm64, linux/aarch64]\n  images: [busybox:1]\n"), "platform `linux/aarch64` repeats `linux/arm64`, listed at demo.yaml:6:15", "6:28"),
        // Kubernetes.
        case!(InvalidKubernetesVersion, doc("  kubernetes: {version: \"1.31\"}\n"), "invalid kubernetes version `1.31`; hint: write `vMAJOR.MINOR.PATCH`", "6:26"),
        // Images.
        case!(InvalidImageReference, image("Busybox:1"), "invalid reference format", "7:7"),
        case!(InvalidImageReference, image("busybox@sha256:abc"), "invalid checksum digest", "7:7"),
        case!(ImageNotPinned, image("quay.io/app"), "image `quay.io/app` has neither a tag nor a digest", "7:7"),
        case!(UppercaseImageDigest, image(&format!("app@sha256:{}", SHA_A.to_uppercase())), "uppercase digest", "7:7"),
        case!(DuplicateImage, doc("  images:\n    - busybox:1.36\n    - docker.io/library/busybox:1.36\n"), "repeats `docker.io/library/busybox:1.36`, listed at demo.yaml:7:7", "8:7"),
        // URLs and templates.
        case!(InvalidUrl, binary(&sha).replace("https://example.org/{arch}", "ftp://example.org/{arch}"), "does not start with `https://`", "9:12"),
        case!(InvalidUrl, binary("      checksumUrl: https://exa mple.org/sums\n"), "contains a space", "10:20"),
        case!(InvalidUrl, chart("      repo: example.org/charts\n"), "invalid url `example.org/charts`", "9:13"),
        case!(UnknownPlaceholder, binary(&sha).replace("{arch}", "{ver}"), "unknown placeholder `{ver}` in `https://example.org/{ver}`; did you mean `version`?", "9:12"),
        case!(UnbalancedBrace, binary(&sha).replace("{arch}", "{arch"), "unbalanced `{` at character 21", "9:12"),
        case!(UnbalancedBrace, binary("      checksumUrl: https://example.org/}\n"), "unbalanced `}` at character 21", "10:20"),
        // Binaries.
        case!(ConflictingChecksums, binary(&format!("{sha}      checksumUrl: https://example.org/sums\n")), "binary `etcd` sets both `sha256` and `checksumUrl`", "7:7"),
        case!(MissingChecksum, binary(""), "binary `etcd` has no checksum", "7:7"),
        case!(InvalidSha256, binary("      sha256: \"abc\"\n"), "invalid sha256 `abc`", "10:15"),
        case!(InvalidSha256, binary(&format!("      sha256: {{amd64: {}}}\n", SHA_A.to_uppercase())), "hint: write 64 lowercase hex digits", "10:23"),
        case!(InvalidSha256Architecture, binary(&format!("      sha256: {{amd46: {SHA_A}}}\n")), "invalid architecture `amd46` in `sha256`", "10:16"),
        case!(MissingSha256Architecture, binary(&format!("      sha256: {{arm64: {SHA_A}}}\n")), "has no entry for `amd64`", "10:15"),
        case!(SharedSha256ForDistinctFiles, binary(&sha).replace("spec:\n", "spec:\n  platforms: [linux/amd64, linux/arm64]\n"), "binary `etcd` has one `sha256` but a different url per platform", "11:15"),
        case!(DuplicateBinary, doc(&format!("  binaries:\n    - {{name: a, version: v1, url: \"https://example.org\", sha256: {SHA_A}}}\n    - {{name: a, version: v2, url: \"https://example.org\", sha256: {SHA_A}}}\n")), "binary `a` is already listed at demo.yaml:7:7", "8:7"),
        // Charts.
        case!(ConflictingChartSources, chart("      repo: https://example.org\n      oci: oci://ghcr.io/x/app\n"), "chart `app` sets both `repo` and `oci`", "7:7"),
        case!(MissingChartSource, chart(""), "chart `app` has no source", "7:7"),
        case!(InvalidOciChart, chart("      oci: ghcr.io/x/app\n"), "does not start with `oci://`", "9:12"),
        case!(InvalidOciChart, chart("      oci: oci://ghcr.io/x/app:1.0.0\n"), "the chart version goes in `version`", "9:12"),
        case!(InvalidOciChart, chart("      oci: oci://app\n"), "names no repository", "9:12"),
        case!(DuplicateChart, doc("  charts:\n    - {name: a, version: \"1\", repo: \"https://example.org\"}\n    - {name: a, version: \"2\", repo: \"https://example.org\"}\n"), "chart `a` is already listed at demo.yaml:7:7", "8:7"),
        // Registries.
        case!(InvalidRegistryHost, doc("  images: [busybox:1]\n  registries:\n    Docker.io: {}\n"), "invalid registry host `Docker.io`", "8:5"),
        case!(InvalidRegistryHost, registry("{mirror: \"http://mirror:5000\"}"), "invalid registry host `http://mirror:5000`", "8:25"),
        case!(IncompleteCredentials, registry("{username: me}"), "registry `docker.io` sets only one of `username` and `passwordEnv`", "8:16"),
        case!(InvalidEnvName, registry("{username: me, passwordEnv: 1TOKEN}"), "invalid environment variable name `1TOKEN`", "8:45"),
        case!(TlsWithPlainHttp, registry("{plainHTTP: true, caFile: /ca.pem}"), "registry `docker.io` sets `plainHTTP` together with", "8:16"),
        // The whole spec.
        case!(NothingToBundle, doc("  platforms: [linux/amd64]\n"), "the manifest lists nothing to bundle", "6:3"),
    ]
}

/// The message and its sources, joined as a report would show them.
fn full_message(error: &ManifestError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

#[test]
fn every_validation_error_is_reported_with_its_location() {
    let mut failures = Vec::new();
    for (row, case) in cases().into_iter().enumerate() {
        let outcome = Manifest::from_str_named(&case.yaml, "demo.yaml");
        let Err(error) = outcome else {
            failures.push(format!("row {row}: accepted\n{}", case.yaml));
            continue;
        };
        let message = full_message(&error);
        let expected_prefix = format!("demo.yaml:{}: ", case.at);
        let ok = (case.variant)(&error)
            && message.contains(case.fragment)
            && message.starts_with(&expected_prefix);
        if !ok {
            failures.push(format!(
                "row {row}: expected `{}` at {}, got {error:?}\n  {message}",
                case.fragment, case.at
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn table_covers_every_located_variant() {
    // Guards the table against a new variant added without a row.
    let rows = cases();
    let covered = |probe: IsVariant| rows.iter().any(|case| probe(&case_error(case)));
    let probes: &[(&str, IsVariant)] = &variant_probes();
    let missing: Vec<&str> = probes
        .iter()
        .filter(|(_, probe)| !covered(*probe))
        .map(|(name, _)| *name)
        .collect();
    assert!(missing.is_empty(), "no table row for {missing:?}");
}

fn case_error(case: &Case) -> ManifestError {
    Manifest::from_str_named(&case.yaml, "demo.yaml").expect_err("rejected")
}

macro_rules! probes {
    ($($variant:ident),* $(,)?) => {
        vec![$((stringify!($variant), (|error| matches!(error, ManifestError::$variant { .. })) as IsVariant)),*]
    };
}

fn variant_probes() -> Vec<(&'static str, IsVariant)> {
    probes![
        Yaml, UnknownField, MissingField, UnknownValue, DuplicateKey, UnsupportedApiVersion,
        UnsupportedKind, InvalidName, InvalidVersion, InvalidPlatform, EmptyPlatforms,
        DuplicatePlatform, InvalidKubernetesVersion, InvalidImageReference, ImageNotPinned,
        UppercaseImageDigest, DuplicateImage, InvalidUrl, UnknownPlaceholder, UnbalancedBrace,
        ConflictingChecksums, MissingChecksum, InvalidSha256, InvalidSha256Architecture,
        MissingSha256Architecture, SharedSha256ForDistinctFiles, DuplicateBinary,
        ConflictingChartSources, MissingChartSource, InvalidOciChart, DuplicateChart,
        InvalidRegistryHost, IncompleteCredentials, InvalidEnvName, TlsWithPlainHttp,
        NothingToBundle,
    ]
}

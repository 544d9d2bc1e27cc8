//! One table row per rejected manifest: the [`ManifestError`] variant expected, a fragment of
//! its message (sources included), and the `line:column` it must report. Removing a check
//! makes its row fail, since the manifest is then accepted or rejected differently.

use super::tests::{HEADER, SHA_A, doc};
use super::*;

/// A rejected manifest and what the rejection must look like.
struct Case {
    yaml: String,
    variant: &'static str,
    fragment: &'static str,
    at: &'static str,
}

macro_rules! case {
    ($variant:ident, $yaml:expr, $fragment:expr, $at:expr) => {
        Case {
            yaml: $yaml,
            variant: stringify!($variant),
            fragment: $fragment,
            at: $at,
        }
    };
}

/// Declares `VARIANTS` and an exhaustive `variant_name` from one list, so a new variant does
/// not compile until it is listed, and then fails `table_covers_every_variant` until it has a
/// row.
macro_rules! variants {
    ($($variant:ident),* $(,)?) => {
        const VARIANTS: &[&str] = &[$(stringify!($variant)),*];

        fn variant_name(error: &ManifestError) -> &'static str {
            match error {
                $(ManifestError::$variant { .. } => stringify!($variant),)*
            }
        }
    };
}

variants![
    Read,
    Yaml,
    UnknownField,
    MissingField,
    UnknownValue,
    DuplicateKey,
    UnsupportedApiVersion,
    UnsupportedKind,
    InvalidName,
    InvalidVersion,
    InvalidPlatform,
    EmptyPlatforms,
    DuplicatePlatform,
    InvalidKubernetesVersion,
    UnknownComponent,
    InvalidComponentVersion,
    InvalidImageReference,
    ImageNotPinned,
    UppercaseImageDigest,
    DuplicateImage,
    InvalidUrl,
    UnknownPlaceholder,
    UnbalancedBrace,
    ConflictingChecksums,
    MissingChecksum,
    InvalidSha256,
    InvalidSha256Architecture,
    MissingSha256Architecture,
    SharedSha256ForDistinctFiles,
    DuplicateBinary,
    ConflictingChartSources,
    MissingChartSource,
    InvalidOciChart,
    DuplicateChart,
    InvalidRegistryHost,
    IncompleteCredentials,
    InvalidEnvName,
    TlsWithPlainHttp,
    InvalidFileMirrorHost,
    InvalidArchName,
    InvalidDistro,
    InvalidPackageArch,
    EmptyValue,
    InvalidPackageName,
    DuplicatePackageSet,
    NothingToBundle,
];

/// A binary with everything but what the row adds (its lines start on line 7; `extra` on 10).
fn binary(extra: &str) -> String {
    doc(&format!(
        "  binaries:\n    - name: etcd\n      version: v1\n      url: https://example.org/{{arch}}\n{extra}"
    ))
}

/// A chart with a name and version (lines 7 and 8); `extra` starts on line 9.
fn chart(extra: &str) -> String {
    doc(&format!(
        "  charts:\n    - name: app\n      version: 1.0.0\n{extra}"
    ))
}

/// An image plus `docker.io` registry `settings` (a flow mapping starting at 8:16).
fn registry(settings: &str) -> String {
    doc(&format!(
        "  images: [busybox:1]\n  registries:\n    docker.io: {settings}\n"
    ))
}

/// An image plus one file mirror: `host` at 8:5, `base` after it.
fn file_mirror(host: &str, base: &str) -> String {
    doc(&format!(
        "  images: [busybox:1]\n  fileMirrors:\n    {host}: {base}\n"
    ))
}

/// One `osPackages` entry (starting at 7:7) with `distro` and then `rest`, on line 8 on.
fn os_packages(distro: &str, rest: &str) -> String {
    doc(&format!("  osPackages:\n    - distro: {distro}\n{rest}"))
}

/// A good `repository` line (line 8), then `extra`.
fn repository(extra: &str) -> String {
    format!(
        "      repository: {{url: \"http://example.org/debian\", suite: bookworm, keyring: k.gpg}}\n{extra}"
    )
}

/// An image list with `reference` on line 7, column 7.
fn image(reference: &str) -> String {
    doc(&format!("  images:\n    - {reference}\n"))
}

// One row per line reads as a table; rustfmt would spread each over six lines.
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let sha = format!("      sha256: {SHA_A}\n");
    let upper = SHA_A.to_uppercase();
    vec![
        // YAML shape.
        case!(Yaml, doc("  images: [busybox:1\n"), "unclosed bracket", "6:11"),
        case!(Yaml, registry("{plainHTTP: yes}"), "invalid boolean", "8:28"),
        case!(UnknownField, doc("  imagez: []\n"), "unknown field `imagez`; did you mean `images`?", "6:3"),
        case!(UnknownField, doc("  frobnicate: 1\n"), "hint: expected one of `platforms`, `kubernetes`", "6:3"),
        case!(UnknownField, registry("{plainHttp: true}"), "did you mean `plainHTTP`?", "8:17"),
        case!(UnknownField, binary(&format!("      checksum: {SHA_A}\n")), "did you mean `checksumUrl`?", "10:7"),
        case!(UnknownField, HEADER.replace("  name: demo\n", "  labels: {}\n"), "unknown field `labels`", "4:3"),
        case!(MissingField, "kind: BundleManifest\nmetadata: {name: demo}\n".to_owned(), "missing required field `apiVersion`", "1:1"),
        case!(MissingField, "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {name: demo}\n".to_owned(), "missing required field `spec`", "1:1"),
        case!(MissingField, HEADER.replace("  name: demo\n", "  {}\n"), "missing required field `name`", "4:3"),
        case!(MissingField, doc("  kubernetes: {cni: none}\n"), "missing required field `version`", "6:15"),
        case!(MissingField, doc("  binaries:\n    - name: etcd\n      version: v1\n      checksumUrl: https://example.org/sums\n"), "missing required field `url`", "7:7"),
        case!(MissingField, chart("      repo: https://example.org\n").replace("- name: app\n      ", "- "), "missing required field `name`", "7:7"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, cni: cilum}\n"), "unknown value `cilum`; did you mean `cilium`?", "6:39"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, containerRuntime: crio}\n"), "expected one of `containerd`, `docker`", "6:52"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, multiCni: multsu}\n"), "unknown value `multsu`; did you mean `multus`?", "6:44"),
        case!(DuplicateKey, doc("  images: [busybox:1]\n  images: [busybox:2]\n"), "duplicate key `images`", "7:3"),
        case!(DuplicateKey, binary(&format!("      sha256: {{x86_64: {SHA_A}, amd64: {SHA_A}}}\n")), "duplicate key `amd64`", "10:90"),
        // Header and metadata.
        case!(UnsupportedApiVersion, HEADER.replace("v1alpha1", "v2") + "  imagez: []\n", "unsupported apiVersion `bundle.kk.io/v2`; hint: use `bundle.kk.io/v1alpha1`", "1:13"),
        case!(UnsupportedKind, HEADER.replace("BundleManifest", "Bundle"), "unsupported kind `Bundle`; hint: use `BundleManifest`", "2:7"),
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
        case!(InvalidKubernetesVersion, doc("  kubernetes: {version: \"1.31\"}\n"), "invalid kubernetes version `1.31`; hint: write `vMAJOR.MINOR.PATCH`", "6:25"),
        case!(UnknownComponent, doc("  kubernetes:\n    version: v1.31.4\n    components: {kubeadm: v1.31.5}\n"), "unknown component `kubeadm`; hint: choose the version of one of containerd, runc", "8:18"),
        case!(InvalidComponentVersion, doc("  kubernetes:\n    version: v1.31.4\n    components:\n      containerd: \"2.1\"\n"), "invalid version `2.1` of component `containerd`; hint: write `MAJOR.MINOR.PATCH`", "9:19"),
        // Images.
        case!(InvalidImageReference, image("Busybox:1"), "invalid reference format", "7:7"),
        case!(InvalidImageReference, image(&format!("busybox@sha256:{}", &SHA_A[..40])), "invalid checksum digest length", "7:7"),
        case!(ImageNotPinned, image("quay.io/app"), "image `quay.io/app` has neither a tag nor a digest", "7:7"),
        case!(UppercaseImageDigest, image(&format!("app@sha256:{upper}")), "uppercase digest", "7:7"),
        case!(DuplicateImage, doc("  images:\n    - docker.io/library/busybox:1.36\n    - busybox:1.36\n"), "image `busybox:1.36` repeats `docker.io/library/busybox:1.36`, listed at demo.yaml:7:7", "8:7"),
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
        case!(InvalidSha256, binary(&format!("      sha256: {{amd64: {upper}}}\n")), "hint: write 64 lowercase hex digits", "10:23"),
        case!(InvalidSha256Architecture, binary(&format!("      sha256: {{amd46: {SHA_A}}}\n")), "invalid architecture `amd46` in `sha256`: unknown architecture", "10:16"),
        case!(MissingSha256Architecture, binary(&format!("      sha256: {{arm64: {SHA_A}}}\n")), "has no entry for `amd64`", "10:15"),
        case!(SharedSha256ForDistinctFiles, binary(&sha).replace("spec:\n", "spec:\n  platforms: [linux/amd64, linux/arm64]\n"), "binary `etcd` has one `sha256` but a different url per platform", "11:15"),
        case!(DuplicateBinary, doc(&format!("  binaries:\n    - {{name: a, version: v1, url: \"https://example.org\", sha256: {SHA_A}}}\n    - {{name: a, version: v2, url: \"https://example.org\", sha256: {SHA_A}}}\n")), "binary `a` is already listed at demo.yaml:7:7", "8:7"),
        // Charts.
        case!(ConflictingChartSources, chart("      repo: https://example.org\n      oci: oci://ghcr.io/x/app\n"), "chart `app` sets both `repo` and `oci`", "7:7"),
        case!(MissingChartSource, chart(""), "chart `app` has no source", "7:7"),
        case!(InvalidOciChart, chart("      oci: ghcr.io/x/app\n"), "does not start with `oci://`", "9:12"),
        case!(InvalidOciChart, chart("      oci: oci://ghcr.io/x/app:1.0.0\n"), "the chart version goes in `version`", "9:12"),
        case!(InvalidOciChart, chart("      oci: oci://app\n"), "names no repository", "9:12"),
        case!(InvalidOciChart, chart("      oci: oci://Ghcr.io/x/app\n"), "its registry is not `host[:port]`", "9:12"),
        case!(DuplicateChart, doc("  charts:\n    - {name: a, version: \"1\", repo: \"https://example.org\"}\n    - {name: a, version: \"2\", repo: \"https://example.org\"}\n"), "chart `a` is already listed at demo.yaml:7:7", "8:7"),
        // Registries.
        case!(InvalidRegistryHost, doc("  images: [busybox:1]\n  registries:\n    Docker.io: {}\n"), "invalid registry host `Docker.io`", "8:5"),
        case!(InvalidRegistryHost, registry("{mirror: \"http://mirror:5000\"}"), "invalid registry host `http://mirror:5000`", "8:25"),
        case!(IncompleteCredentials, registry("{username: me}"), "registry `docker.io` sets only one of `username` and `passwordEnv`", "8:16"),
        case!(IncompleteCredentials, registry("{passwordEnv: TOKEN}"), "set both, or neither", "8:16"),
        case!(InvalidEnvName, registry("{username: me, passwordEnv: 1TOKEN}"), "invalid environment variable name `1TOKEN`", "8:44"),
        case!(TlsWithPlainHttp, registry("{plainHTTP: true, caFile: /ca.pem}"), "registry `docker.io` sets `plainHTTP` together with", "8:16"),
        case!(TlsWithPlainHttp, registry("{plainHTTP: true, insecureSkipVerify: true}"), "plain HTTP has no TLS", "8:16"),
        // File mirrors.
        case!(InvalidArchName, binary("      checksumUrl: https://example.org/SUMS\n      archNames: {amd46: x86_64}\n"), "invalid `archNames` entry `amd46`", "11:19"),
        case!(InvalidArchName, binary("      checksumUrl: https://example.org/SUMS\n      archNames: {amd64: \"x/y\"}\n"), "invalid `archNames` entry `x/y`", "11:26"),
        case!(InvalidFileMirrorHost, file_mirror("DL.k8s.io", "http://127.0.0.1:8080"), "invalid file mirror host `DL.k8s.io`", "8:5"),
        case!(InvalidFileMirrorHost, file_mirror("https://dl.k8s.io", "http://127.0.0.1:8080"), "write the `host[:port]` of the download urls", "8:5"),
        case!(InvalidUrl, file_mirror("dl.k8s.io", "127.0.0.1:8080/dl"), "invalid url `127.0.0.1:8080/dl`: it does not start with `https://`", "8:16"),
        case!(InvalidUrl, file_mirror("dl.k8s.io", "http://127.0.0.1:8080/?x=1"), "a mirror base url cannot have a query or fragment", "8:16"),
        // OS packages.
        case!(MissingField, os_packages("debian-12", "      packages: [socat]\n"), "missing required field `repository`", "7:7"),
        case!(MissingField, os_packages("debian-12", "      repository: {url: \"http://example.org\", suite: bookworm}\n"), "missing required field `keyring`", "8:19"),
        case!(UnknownField, os_packages("debian-12", &repository("      package: [socat]\n")), "did you mean `packages`?", "9:7"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, kubeProxyMode: ipsv}\n"), "did you mean `ipvs`?", "6:49"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, storage: [nsf]}\n"), "expected one of `nfs`", "6:44"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, addons: [harbor]}\n"), "unknown value `harbor`; hint: expected one of `spegel`", "6:43"),
        case!(UnknownValue, doc("  kubernetes: {version: v1.31.4, addons: [spegle]}\n"), "unknown value `spegle`; did you mean `spegel`?", "6:43"),
        case!(InvalidDistro, os_packages("debian", &repository("")), "invalid distribution `debian`: it is not `ID-VERSION_ID`", "7:15"),
        case!(InvalidDistro, os_packages("rocky-9", &repository("")), "only for Debian and Ubuntu", "7:15"),
        case!(InvalidPackageArch, os_packages("debian-12", &repository("      arch: arm64\n")), "architecture `arm64` is not the Debian architecture of any of `platforms`; hint: use one of `amd64`", "9:13"),
        case!(InvalidPackageArch, os_packages("debian-12", &repository("      arch: [amd64, x86_64]\n")), "architecture `x86_64`", "9:21"),
        case!(EmptyValue, os_packages("debian-12", &repository("      arch: []\n")), "`arch` is empty", "9:13"),
        case!(EmptyValue, os_packages("debian-12", "      repository: {url: \"http://example.org\", suite: \"\", keyring: k.gpg}\n"), "`suite` is empty", "8:54"),
        case!(EmptyValue, os_packages("debian-12", "      repository: {url: \"http://example.org\", suite: a, components: [], keyring: k.gpg}\n"), "`components` is empty; hint: list at least one, or omit it for `[main]`", "8:69"),
        case!(InvalidUrl, os_packages("debian-12", "      repository: {url: \"ftp://example.org\", suite: a, keyring: k.gpg}\n"), "invalid url `ftp://example.org`", "8:25"),
        case!(InvalidPackageName, os_packages("debian-12", &repository("      packages: [socat, Nfs_common]\n")), "invalid package name `Nfs_common`", "9:25"),
        case!(DuplicatePackageSet, doc("  osPackages:\n    - {distro: debian-12, repository: {url: \"http://a.org\", suite: a, keyring: k}}\n    - {distro: debian-12, arch: amd64, repository: {url: \"http://a.org\", suite: a, keyring: k}}\n"), "`debian-12` on `amd64` is already listed at demo.yaml:7:7", "8:7"),
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
        let Err(error) = Manifest::from_str_named(&case.yaml, "demo.yaml") else {
            failures.push(format!("row {row}: accepted\n{}", case.yaml));
            continue;
        };
        let message = full_message(&error);
        let expected_prefix = format!("demo.yaml:{}: ", case.at);
        let ok = variant_name(&error) == case.variant
            && message.contains(case.fragment)
            && message.starts_with(&expected_prefix);
        if !ok {
            failures.push(format!(
                "row {row}: expected {} `{}` at {}, got {error:?}\n  {message}",
                case.variant, case.fragment, case.at
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn table_covers_every_variant() {
    let rows = cases();
    let missing: Vec<&str> = VARIANTS
        .iter()
        .copied()
        // `Read` has no location; `tests::unreadable_path_is_a_read_error` covers it.
        .filter(|name| *name != "Read" && !rows.iter().any(|case| case.variant == *name))
        .collect();
    assert!(missing.is_empty(), "no table row for {missing:?}");
}

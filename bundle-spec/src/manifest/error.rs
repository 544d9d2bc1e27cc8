//! The errors of reading a manifest.
//!
//! Messages are lowercase, name the value at fault in backticks (cut when long), and end with a
//! hint where one helps. Causes are chained through `#[source]`, never flattened into the message.

use std::io;
use std::path::PathBuf;

use crate::diagnostics::suggest::Hint;
use crate::diagnostics::{SourceLocation, YamlError, YamlProblem, cut};
use crate::platform::PlatformError;

/// A manifest that cannot be read, parsed or validated.
///
/// Every variant but [`ManifestError::Read`] starts its message with the `file:line:column` of
/// the offending YAML node (see [`SourceLocation`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The manifest file could not be read.
    #[error("cannot read manifest `{}`", path.display())]
    Read {
        /// The path given.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },
    /// The text is not YAML of the expected shape (syntax error, wrong type, …).
    #[error("{at}: {message}")]
    Yaml {
        /// Where the parser stopped.
        at: SourceLocation,
        /// The parser's description.
        message: String,
    },
    /// A mapping has a key the schema does not know.
    #[error("{at}: unknown field `{field}`{}", Hint::new(*.suggestion, .expected), field = cut(.field))]
    UnknownField {
        /// Where the key is.
        at: SourceLocation,
        /// The key as written.
        field: String,
        /// The known field closest to it, if one is close.
        suggestion: Option<&'static str>,
        /// Every field allowed there.
        expected: Vec<&'static str>,
    },
    /// A required field is absent.
    #[error("{at}: missing required field `{field}`")]
    MissingField {
        /// The mapping that lacks it.
        at: SourceLocation,
        /// The field's name.
        field: &'static str,
    },
    /// A value outside a closed set (`containerRuntime`, `cni`).
    #[error("{at}: unknown value `{value}`{}", Hint::new(*.suggestion, .expected), value = cut(.value))]
    UnknownValue {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        value: String,
        /// The allowed value closest to it, if one is close.
        suggestion: Option<&'static str>,
        /// Every allowed value.
        expected: Vec<&'static str>,
    },
    /// A mapping repeats a key.
    #[error("{at}: duplicate key `{key}`; hint: each key may appear once per mapping", key = cut(.key))]
    DuplicateKey {
        /// Where the repetition is.
        at: SourceLocation,
        /// The repeated key.
        key: String,
    },
    /// `apiVersion` is not one this crate understands.
    #[error(
        "{at}: unsupported apiVersion `{found}`; hint: use `{}`",
        crate::manifest::API_VERSION, found = cut(.found))]
    UnsupportedApiVersion {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        found: String,
    },
    /// `kind` is not `BundleManifest`.
    #[error(
        "{at}: unsupported kind `{found}`; hint: use `{}`",
        crate::manifest::KIND, found = cut(.found))]
    UnsupportedKind {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        found: String,
    },
    /// A name (manifest, binary, chart) is not DNS-1123-like.
    #[error(
        "{at}: invalid {what} `{name}`; hint: use lowercase letters, digits, `-` and `.`, \
         starting and ending with a letter or digit, at most 253 characters", name = cut(.name))]
    InvalidName {
        /// Where the name is.
        at: SourceLocation,
        /// What is named, e.g. `binary name`.
        what: &'static str,
        /// The name as written.
        name: String,
    },
    /// A binary or chart version is empty or has characters unsafe in URLs and file names.
    #[error(
        "{at}: invalid {what} version `{version}`; hint: use letters, digits, `.`, `-`, `+` and `_`", version = cut(.version))]
    InvalidVersion {
        /// Where the version is.
        at: SourceLocation,
        /// Whose version, e.g. `binary`.
        what: &'static str,
        /// The version as written.
        version: String,
    },
    /// An entry of `spec.platforms` does not parse.
    #[error("{at}: invalid platform `{value}`", value = cut(.value))]
    InvalidPlatform {
        /// Where the entry is.
        at: SourceLocation,
        /// The entry as written.
        value: String,
        /// What is wrong with it.
        #[source]
        source: PlatformError,
    },
    /// `spec.platforms` is present but empty.
    #[error("{at}: `platforms` is empty; hint: list at least one, or omit it for `linux/amd64`")]
    EmptyPlatforms {
        /// Where the list is.
        at: SourceLocation,
    },
    /// Two entries of `spec.platforms` are the same platform after normalisation.
    #[error("{at}: platform `{value}` repeats `{platform}`, listed at {first}", value = cut(.value), platform = cut(.platform))]
    DuplicatePlatform {
        /// Where the repetition is.
        at: SourceLocation,
        /// The repetition as written.
        value: String,
        /// The normalised platform both entries denote, as text.
        platform: String,
        /// Where the first entry is.
        first: SourceLocation,
    },
    /// `spec.kubernetes.version` is not `vMAJOR.MINOR.PATCH`.
    #[error(
        "{at}: invalid kubernetes version `{version}`; hint: write `vMAJOR.MINOR.PATCH`, e.g. `v1.31.4`", version = cut(.version))]
    InvalidKubernetesVersion {
        /// Where the version is.
        at: SourceLocation,
        /// The version as written.
        version: String,
    },
    /// `spec.kubernetes.components` names a component whose version a manifest cannot choose.
    #[error(
        "{at}: unknown component `{name}`; hint: choose the version of one of {known}", name = cut(.name))]
    UnknownComponent {
        /// Where the name is.
        at: SourceLocation,
        /// The name as written.
        name: String,
        /// The components a manifest may choose, comma-separated.
        known: String,
    },
    /// A `spec.kubernetes.components` version is not a release version.
    #[error(
        "{at}: invalid version `{version}` of component `{name}`; hint: write `MAJOR.MINOR.PATCH` (a leading `v` is kept as the catalog spells it), e.g. `2.1.9`", version = cut(.version))]
    InvalidComponentVersion {
        /// Where the version is.
        at: SourceLocation,
        /// The component.
        name: String,
        /// The version as written.
        version: String,
    },
    /// An image reference does not parse.
    #[error("{at}: invalid image reference `{reference}`", reference = cut(.reference))]
    InvalidImageReference {
        /// Where the reference is.
        at: SourceLocation,
        /// The reference as written.
        reference: String,
        /// What the parser rejected.
        #[source]
        source: oci_spec::distribution::ParseError,
    },
    /// An image reference has neither a tag nor a digest.
    #[error(
        "{at}: image `{reference}` has neither a tag nor a digest; hint: pin it, e.g. \
         `{reference}:<tag>` or `{reference}@sha256:<digest>` (`latest` is never assumed)", reference = cut(.reference))]
    ImageNotPinned {
        /// Where the reference is.
        at: SourceLocation,
        /// The reference as written.
        reference: String,
    },
    /// An image digest has uppercase hex digits, which registries do not accept.
    #[error(
        "{at}: image `{reference}` has an uppercase digest; hint: write the digest in lowercase", reference = cut(.reference))]
    UppercaseImageDigest {
        /// Where the reference is.
        at: SourceLocation,
        /// The reference as written.
        reference: String,
    },
    /// Two images are the same reference once normalised.
    #[error("{at}: image `{reference}` repeats `{normalized}`, listed at {first}", reference = cut(.reference), normalized = cut(.normalized))]
    DuplicateImage {
        /// Where the repetition is.
        at: SourceLocation,
        /// The repetition as written.
        reference: String,
        /// The fully qualified reference both entries denote.
        normalized: String,
        /// Where the first entry is.
        first: SourceLocation,
    },
    /// A `url`, `checksumUrl` or chart `repo` is not an absolute http(s) URL.
    #[error(
        "{at}: invalid url `{url}`: {problem}; hint: write an absolute `https://` or `http://` url", url = cut(.url))]
    InvalidUrl {
        /// Where the URL is.
        at: SourceLocation,
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A URL template uses a placeholder other than `{version}`, `{os}` and `{arch}`.
    #[error(
        "{at}: unknown placeholder `{{{placeholder}}}` in `{template}`{}",
        Hint::new(*.suggestion, crate::manifest::PLACEHOLDERS), template = cut(.template), placeholder = cut(.placeholder))]
    UnknownPlaceholder {
        /// Where the template is.
        at: SourceLocation,
        /// The template as written.
        template: String,
        /// The placeholder's name, without braces.
        placeholder: String,
        /// The supported placeholder closest to it, if one is close.
        suggestion: Option<&'static str>,
    },
    /// A URL template has a `{` without `}` or the reverse.
    #[error(
        "{at}: unbalanced `{brace}` at character {position} of `{template}`; hint: braces only \
         enclose `{{version}}`, `{{os}}` and `{{arch}}`", template = cut(.template))]
    UnbalancedBrace {
        /// Where the template is.
        at: SourceLocation,
        /// The template as written.
        template: String,
        /// The stray brace.
        brace: char,
        /// Its 1-based character position in the template.
        position: usize,
    },
    /// A binary sets both `sha256` and `checksumUrl`.
    #[error("{at}: binary `{binary}` sets both `sha256` and `checksumUrl`; hint: keep exactly one", binary = cut(.binary))]
    ConflictingChecksums {
        /// Where the binary is.
        at: SourceLocation,
        /// The binary's name.
        binary: String,
    },
    /// A binary sets neither `sha256` nor `checksumUrl`.
    #[error(
        "{at}: binary `{binary}` has no checksum; hint: add `sha256` (64 hex digits, or a map \
         of arch to them) or `checksumUrl`", binary = cut(.binary))]
    MissingChecksum {
        /// Where the binary is.
        at: SourceLocation,
        /// The binary's name.
        binary: String,
    },
    /// A `sha256` value is not 64 lowercase hex digits.
    #[error("{at}: invalid sha256 `{value}`; hint: write 64 lowercase hex digits", value = cut(.value))]
    InvalidSha256 {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        value: String,
    },
    /// A key of a `sha256` map is not an architecture.
    #[error("{at}: invalid architecture `{architecture}` in `sha256`", architecture = cut(.architecture))]
    InvalidSha256Architecture {
        /// Where the key is.
        at: SourceLocation,
        /// The key as written.
        architecture: String,
        /// What is wrong with it.
        #[source]
        source: PlatformError,
    },
    /// A `sha256` map lacks an architecture that `spec.platforms` needs.
    #[error(
        "{at}: `sha256` of binary `{binary}` has no entry for `{architecture}`, which \
         `platforms` lists; hint: add `{architecture}: <64 hex digits>`", binary = cut(.binary), architecture = cut(.architecture))]
    MissingSha256Architecture {
        /// Where the map is.
        at: SourceLocation,
        /// The binary's name.
        binary: String,
        /// The architecture missing.
        architecture: String,
    },
    /// A single `sha256` is given for a binary whose URL differs between platforms.
    #[error(
        "{at}: binary `{binary}` has one `sha256` but a different url per platform; hint: give \
         a map of arch to sha256, or `checksumUrl`", binary = cut(.binary))]
    SharedSha256ForDistinctFiles {
        /// Where the checksum is.
        at: SourceLocation,
        /// The binary's name.
        binary: String,
    },
    /// Two binaries share a name.
    #[error("{at}: binary `{name}` is already listed at {first}", name = cut(.name))]
    DuplicateBinary {
        /// Where the repetition is.
        at: SourceLocation,
        /// The name.
        name: String,
        /// Where the first one is.
        first: SourceLocation,
    },
    /// A chart sets both `repo` and `oci`.
    #[error("{at}: chart `{chart}` sets both `repo` and `oci`; hint: keep exactly one", chart = cut(.chart))]
    ConflictingChartSources {
        /// Where the chart is.
        at: SourceLocation,
        /// The chart's name.
        chart: String,
    },
    /// A chart sets neither `repo` nor `oci`.
    #[error(
        "{at}: chart `{chart}` has no source; hint: add `repo` (a Helm HTTP repository) or \
         `oci` (an `oci://` reference)", chart = cut(.chart))]
    MissingChartSource {
        /// Where the chart is.
        at: SourceLocation,
        /// The chart's name.
        chart: String,
    },
    /// A chart's `oci` is not `oci://registry/repository`.
    #[error(
        "{at}: invalid oci chart reference `{value}`: {problem}; hint: e.g. `oci://ghcr.io/org/charts/name`", value = cut(.value))]
    InvalidOciChart {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Two charts share a name.
    #[error("{at}: chart `{name}` is already listed at {first}", name = cut(.name))]
    DuplicateChart {
        /// Where the repetition is.
        at: SourceLocation,
        /// The name.
        name: String,
        /// Where the first one is.
        first: SourceLocation,
    },
    /// A registry key or `mirror` is not `host[:port]`.
    #[error(
        "{at}: invalid registry host `{host}`; hint: write `host[:port]` in lowercase, e.g. `registry.example.com:5000`", host = cut(.host))]
    InvalidRegistryHost {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        host: String,
    },
    /// A registry sets only one of `username` and `passwordEnv`.
    #[error(
        "{at}: registry `{registry}` sets only one of `username` and `passwordEnv`; hint: set both, or neither", registry = cut(.registry))]
    IncompleteCredentials {
        /// Where the registry's settings are.
        at: SourceLocation,
        /// The registry host.
        registry: String,
    },
    /// `passwordEnv` is not a usable environment variable name.
    #[error(
        "{at}: invalid environment variable name `{name}`; hint: use letters, digits and `_`, not starting with a digit", name = cut(.name))]
    InvalidEnvName {
        /// Where the name is.
        at: SourceLocation,
        /// The name as written.
        name: String,
    },
    /// A registry combines `plainHTTP` with TLS settings, which plain HTTP never uses.
    #[error(
        "{at}: registry `{registry}` sets `plainHTTP` together with `insecureSkipVerify` or \
         `caFile`; hint: plain HTTP has no TLS, drop one side", registry = cut(.registry))]
    TlsWithPlainHttp {
        /// Where the registry's settings are.
        at: SourceLocation,
        /// The registry host.
        registry: String,
    },
    /// An `archNames` entry is not an architecture and a plain name.
    #[error(
        "{at}: invalid `archNames` entry `{name}`; hint: map an architecture such as `amd64` to a name of letters, digits, `_`, `-` or `.`, e.g. `amd64: x86_64`", name = cut(.name))]
    InvalidArchName {
        /// Where the entry is.
        at: SourceLocation,
        /// The key or value as written.
        name: String,
    },
    /// A `fileMirrors` key is not the `host[:port]` of download URLs.
    #[error(
        "{at}: invalid file mirror host `{host}`; hint: write the `host[:port]` of the download urls in lowercase, e.g. `dl.k8s.io`", host = cut(.host))]
    InvalidFileMirrorHost {
        /// Where the key is.
        at: SourceLocation,
        /// The key as written.
        host: String,
    },
    /// An `osPackages` entry's `distro` is not `ID-VERSION_ID` of a Debian-format distribution.
    #[error(
        "{at}: invalid distribution `{distro}`: {problem}; hint: write `ID-VERSION_ID` as \
         /etc/os-release names it, e.g. `debian-12` or `ubuntu-24.04`", distro = cut(.distro))]
    InvalidDistro {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        distro: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// An `osPackages` architecture is not the Debian architecture of a platform of the manifest.
    #[error(
        "{at}: architecture `{arch}` is not the Debian architecture of any of `platforms`; \
         hint: use one of {expected}, or add its platform", arch = cut(.arch))]
    InvalidPackageArch {
        /// Where the value is.
        at: SourceLocation,
        /// The value as written.
        arch: String,
        /// The Debian architectures of `platforms`, in backticks.
        expected: String,
    },
    /// A value that must not be empty is (`suite`, `components`, `arch`, `keyring`).
    #[error("{at}: `{field}` is empty; hint: {hint}")]
    EmptyValue {
        /// Where the value is.
        at: SourceLocation,
        /// The field.
        field: &'static str,
        /// What to write instead.
        hint: &'static str,
    },
    /// A package name is not a valid Debian package name.
    #[error(
        "{at}: invalid package name `{name}`; hint: Debian names are lowercase letters, digits, \
         `+`, `-` and `.`, at least two, starting with a letter or digit", name = cut(.name))]
    InvalidPackageName {
        /// Where the name is.
        at: SourceLocation,
        /// The name as written.
        name: String,
    },
    /// Two `osPackages` entries are for the same distribution and architecture.
    #[error(
        "{at}: `{distro}` on `{arch}` is already listed at {first}; hint: merge the two entries' \
         packages"
    )]
    DuplicatePackageSet {
        /// Where the repetition is.
        at: SourceLocation,
        /// The distribution.
        distro: String,
        /// The architecture.
        arch: String,
        /// Where the first entry is.
        first: SourceLocation,
    },
    /// The manifest asks for nothing.
    #[error(
        "{at}: the manifest lists nothing to bundle; hint: add `kubernetes`, `images`, `binaries`, `charts` or `osPackages`"
    )]
    NothingToBundle {
        /// Where `spec` is.
        at: SourceLocation,
    },
}

impl From<YamlError> for ManifestError {
    fn from(error: YamlError) -> Self {
        let at = error.at;
        match error.problem {
            YamlProblem::UnknownField {
                field,
                suggestion,
                expected,
            } => Self::UnknownField {
                at,
                field,
                suggestion,
                expected,
            },
            YamlProblem::UnknownValue {
                value,
                suggestion,
                expected,
            } => Self::UnknownValue {
                at,
                value,
                suggestion,
                expected,
            },
            YamlProblem::MissingField { field } => Self::MissingField { at, field },
            YamlProblem::DuplicateKey { key } => Self::DuplicateKey { at, key },
            YamlProblem::Other { message } => Self::Yaml { at, message },
        }
    }
}

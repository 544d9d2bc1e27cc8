//! Every error `bundle-spec` returns.
//!
//! Messages are lowercase, name the value at fault in backticks, and end with a hint where one
//! helps. Causes are chained through `#[source]`, never flattened into the message.

use std::io;
use std::path::PathBuf;

use crate::description::FormatVersion;
use crate::digest::Sha256Digest;
use crate::member::MemberPath;

// ---- manifest errors (owned by the manifest module) ----

/// A manifest that cannot be read, parsed or validated.
///
/// Every variant but [`ManifestError::Read`] starts its message with the `file:line:column` of
/// the offending YAML node (see [`crate::manifest::SourceLocation`]).
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
        at: crate::manifest::SourceLocation,
        /// The parser's description.
        message: String,
    },
    /// A mapping has a key the schema does not know.
    #[error("{at}: unknown field `{field}`{}", crate::manifest::suggest::Hint::new(*.suggestion, .expected))]
    UnknownField {
        /// Where the key is.
        at: crate::manifest::SourceLocation,
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
        at: crate::manifest::SourceLocation,
        /// The field's name.
        field: &'static str,
    },
    /// A value outside a closed set (`containerRuntime`, `cni`).
    #[error("{at}: unknown value `{value}`{}", crate::manifest::suggest::Hint::new(*.suggestion, .expected))]
    UnknownValue {
        /// Where the value is.
        at: crate::manifest::SourceLocation,
        /// The value as written.
        value: String,
        /// The allowed value closest to it, if one is close.
        suggestion: Option<&'static str>,
        /// Every allowed value.
        expected: Vec<&'static str>,
    },
    /// A mapping repeats a key.
    #[error("{at}: duplicate key `{key}`; hint: each key may appear once per mapping")]
    DuplicateKey {
        /// Where the repetition is.
        at: crate::manifest::SourceLocation,
        /// The repeated key.
        key: String,
    },
    /// `apiVersion` is not one this crate understands.
    #[error(
        "{at}: unsupported apiVersion `{found}`; hint: use `{}`",
        crate::manifest::API_VERSION
    )]
    UnsupportedApiVersion {
        /// Where the value is.
        at: crate::manifest::SourceLocation,
        /// The value as written.
        found: String,
    },
    /// `kind` is not `BundleManifest`.
    #[error(
        "{at}: unsupported kind `{found}`; hint: use `{}`",
        crate::manifest::KIND
    )]
    UnsupportedKind {
        /// Where the value is.
        at: crate::manifest::SourceLocation,
        /// The value as written.
        found: String,
    },
    /// A name (manifest, binary, chart) is not DNS-1123-like.
    #[error(
        "{at}: invalid {what} `{name}`; hint: use lowercase letters, digits, `-` and `.`, \
         starting and ending with a letter or digit, at most 253 characters"
    )]
    InvalidName {
        /// Where the name is.
        at: crate::manifest::SourceLocation,
        /// What is named, e.g. `binary name`.
        what: &'static str,
        /// The name as written.
        name: String,
    },
    /// A binary or chart version is empty or has characters unsafe in URLs and file names.
    #[error(
        "{at}: invalid {what} version `{version}`; hint: use letters, digits, `.`, `-`, `+` and `_`"
    )]
    InvalidVersion {
        /// Where the version is.
        at: crate::manifest::SourceLocation,
        /// Whose version, e.g. `binary`.
        what: &'static str,
        /// The version as written.
        version: String,
    },
    /// An entry of `spec.platforms` does not parse.
    #[error("{at}: invalid platform `{value}`")]
    InvalidPlatform {
        /// Where the entry is.
        at: crate::manifest::SourceLocation,
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
        at: crate::manifest::SourceLocation,
    },
    /// Two entries of `spec.platforms` are the same platform after normalisation.
    #[error("{at}: platform `{value}` repeats `{platform}`, listed at {first}")]
    DuplicatePlatform {
        /// Where the repetition is.
        at: crate::manifest::SourceLocation,
        /// The repetition as written.
        value: String,
        /// The normalised platform both entries denote, as text.
        platform: String,
        /// Where the first entry is.
        first: crate::manifest::SourceLocation,
    },
    /// `spec.kubernetes.version` is not `vMAJOR.MINOR.PATCH`.
    #[error(
        "{at}: invalid kubernetes version `{version}`; hint: write `vMAJOR.MINOR.PATCH`, e.g. `v1.31.4`"
    )]
    InvalidKubernetesVersion {
        /// Where the version is.
        at: crate::manifest::SourceLocation,
        /// The version as written.
        version: String,
    },
    /// An image reference does not parse.
    #[error("{at}: invalid image reference `{reference}`")]
    InvalidImageReference {
        /// Where the reference is.
        at: crate::manifest::SourceLocation,
        /// The reference as written.
        reference: String,
        /// What the parser rejected.
        #[source]
        source: oci_spec::distribution::ParseError,
    },
    /// An image reference has neither a tag nor a digest.
    #[error(
        "{at}: image `{reference}` has neither a tag nor a digest; hint: pin it, e.g. \
         `{reference}:<tag>` or `{reference}@sha256:<digest>` (`latest` is never assumed)"
    )]
    ImageNotPinned {
        /// Where the reference is.
        at: crate::manifest::SourceLocation,
        /// The reference as written.
        reference: String,
    },
    /// An image digest has uppercase hex digits, which registries do not accept.
    #[error(
        "{at}: image `{reference}` has an uppercase digest; hint: write the digest in lowercase"
    )]
    UppercaseImageDigest {
        /// Where the reference is.
        at: crate::manifest::SourceLocation,
        /// The reference as written.
        reference: String,
    },
    /// Two images are the same reference once normalised.
    #[error("{at}: image `{reference}` repeats `{normalized}`, listed at {first}")]
    DuplicateImage {
        /// Where the repetition is.
        at: crate::manifest::SourceLocation,
        /// The repetition as written.
        reference: String,
        /// The fully qualified reference both entries denote.
        normalized: String,
        /// Where the first entry is.
        first: crate::manifest::SourceLocation,
    },
    /// A `url`, `checksumUrl` or chart `repo` is not an absolute http(s) URL.
    #[error(
        "{at}: invalid url `{url}`: {problem}; hint: write an absolute `https://` or `http://` url"
    )]
    InvalidUrl {
        /// Where the URL is.
        at: crate::manifest::SourceLocation,
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A URL template uses a placeholder other than `{version}`, `{os}` and `{arch}`.
    #[error(
        "{at}: unknown placeholder `{{{placeholder}}}` in `{template}`{}",
        crate::manifest::suggest::Hint::new(*.suggestion, crate::manifest::PLACEHOLDERS)
    )]
    UnknownPlaceholder {
        /// Where the template is.
        at: crate::manifest::SourceLocation,
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
         enclose `{{version}}`, `{{os}}` and `{{arch}}`"
    )]
    UnbalancedBrace {
        /// Where the template is.
        at: crate::manifest::SourceLocation,
        /// The template as written.
        template: String,
        /// The stray brace.
        brace: char,
        /// Its 1-based character position in the template.
        position: usize,
    },
    /// A binary sets both `sha256` and `checksumUrl`.
    #[error("{at}: binary `{binary}` sets both `sha256` and `checksumUrl`; hint: keep exactly one")]
    ConflictingChecksums {
        /// Where the binary is.
        at: crate::manifest::SourceLocation,
        /// The binary's name.
        binary: String,
    },
    /// A binary sets neither `sha256` nor `checksumUrl`.
    #[error(
        "{at}: binary `{binary}` has no checksum; hint: add `sha256` (64 hex digits, or a map \
         of arch to them) or `checksumUrl`"
    )]
    MissingChecksum {
        /// Where the binary is.
        at: crate::manifest::SourceLocation,
        /// The binary's name.
        binary: String,
    },
    /// A `sha256` value is not 64 lowercase hex digits.
    #[error("{at}: invalid sha256 `{value}`; hint: write 64 lowercase hex digits")]
    InvalidSha256 {
        /// Where the value is.
        at: crate::manifest::SourceLocation,
        /// The value as written.
        value: String,
    },
    /// A key of a `sha256` map is not an architecture.
    #[error("{at}: invalid architecture `{architecture}` in `sha256`")]
    InvalidSha256Architecture {
        /// Where the key is.
        at: crate::manifest::SourceLocation,
        /// The key as written.
        architecture: String,
        /// What is wrong with it.
        #[source]
        source: PlatformError,
    },
    /// A `sha256` map lacks an architecture that `spec.platforms` needs.
    #[error(
        "{at}: `sha256` of binary `{binary}` has no entry for `{architecture}`, which \
         `platforms` lists; hint: add `{architecture}: <64 hex digits>`"
    )]
    MissingSha256Architecture {
        /// Where the map is.
        at: crate::manifest::SourceLocation,
        /// The binary's name.
        binary: String,
        /// The architecture missing.
        architecture: String,
    },
    /// A single `sha256` is given for a binary whose URL differs between platforms.
    #[error(
        "{at}: binary `{binary}` has one `sha256` but a different url per platform; hint: give \
         a map of arch to sha256, or `checksumUrl`"
    )]
    SharedSha256ForDistinctFiles {
        /// Where the checksum is.
        at: crate::manifest::SourceLocation,
        /// The binary's name.
        binary: String,
    },
    /// Two binaries share a name.
    #[error("{at}: binary `{name}` is already listed at {first}")]
    DuplicateBinary {
        /// Where the repetition is.
        at: crate::manifest::SourceLocation,
        /// The name.
        name: String,
        /// Where the first one is.
        first: crate::manifest::SourceLocation,
    },
    /// A chart sets both `repo` and `oci`.
    #[error("{at}: chart `{chart}` sets both `repo` and `oci`; hint: keep exactly one")]
    ConflictingChartSources {
        /// Where the chart is.
        at: crate::manifest::SourceLocation,
        /// The chart's name.
        chart: String,
    },
    /// A chart sets neither `repo` nor `oci`.
    #[error(
        "{at}: chart `{chart}` has no source; hint: add `repo` (a Helm HTTP repository) or \
         `oci` (an `oci://` reference)"
    )]
    MissingChartSource {
        /// Where the chart is.
        at: crate::manifest::SourceLocation,
        /// The chart's name.
        chart: String,
    },
    /// A chart's `oci` is not `oci://registry/repository`.
    #[error(
        "{at}: invalid oci chart reference `{value}`: {problem}; hint: e.g. `oci://ghcr.io/org/charts/name`"
    )]
    InvalidOciChart {
        /// Where the value is.
        at: crate::manifest::SourceLocation,
        /// The value as written.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Two charts share a name.
    #[error("{at}: chart `{name}` is already listed at {first}")]
    DuplicateChart {
        /// Where the repetition is.
        at: crate::manifest::SourceLocation,
        /// The name.
        name: String,
        /// Where the first one is.
        first: crate::manifest::SourceLocation,
    },
    /// A registry key or `mirror` is not `host[:port]`.
    #[error(
        "{at}: invalid registry host `{host}`; hint: write `host[:port]` in lowercase, e.g. `registry.example.com:5000`"
    )]
    InvalidRegistryHost {
        /// Where the value is.
        at: crate::manifest::SourceLocation,
        /// The value as written.
        host: String,
    },
    /// A registry sets only one of `username` and `passwordEnv`.
    #[error(
        "{at}: registry `{registry}` sets only one of `username` and `passwordEnv`; hint: set both, or neither"
    )]
    IncompleteCredentials {
        /// Where the registry's settings are.
        at: crate::manifest::SourceLocation,
        /// The registry host.
        registry: String,
    },
    /// `passwordEnv` is not a usable environment variable name.
    #[error(
        "{at}: invalid environment variable name `{name}`; hint: use letters, digits and `_`, not starting with a digit"
    )]
    InvalidEnvName {
        /// Where the name is.
        at: crate::manifest::SourceLocation,
        /// The name as written.
        name: String,
    },
    /// A registry combines `plainHTTP` with TLS settings, which plain HTTP never uses.
    #[error(
        "{at}: registry `{registry}` sets `plainHTTP` together with `insecureSkipVerify` or \
         `caFile`; hint: plain HTTP has no TLS, drop one side"
    )]
    TlsWithPlainHttp {
        /// Where the registry's settings are.
        at: crate::manifest::SourceLocation,
        /// The registry host.
        registry: String,
    },
    /// An `archNames` entry is not an architecture and a plain name.
    #[error(
        "{at}: invalid `archNames` entry `{name}`; hint: map an architecture such as `amd64` to a name of letters, digits, `_`, `-` or `.`, e.g. `amd64: x86_64`"
    )]
    InvalidArchName {
        /// Where the entry is.
        at: crate::manifest::SourceLocation,
        /// The key or value as written.
        name: String,
    },
    /// A `fileMirrors` key is not the `host[:port]` of download URLs.
    #[error(
        "{at}: invalid file mirror host `{host}`; hint: write the `host[:port]` of the download urls in lowercase, e.g. `dl.k8s.io`"
    )]
    InvalidFileMirrorHost {
        /// Where the key is.
        at: crate::manifest::SourceLocation,
        /// The key as written.
        host: String,
    },
    /// The manifest asks for nothing.
    #[error(
        "{at}: the manifest lists nothing to bundle; hint: add `kubernetes`, `images`, `binaries` or `charts`"
    )]
    NothingToBundle {
        /// Where `spec` is.
        at: crate::manifest::SourceLocation,
    },
}

/// A platform string that is not `os/arch[/variant]` with Go's names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlatformError {
    /// Not two or three `/`-separated, non-empty parts.
    #[error(
        "platform `{value}` is not `os/arch[/variant]`; hint: e.g. `linux/amd64`, `linux/arm/v7`"
    )]
    Malformed {
        /// The text given.
        value: String,
    },
    /// The operating system is not one of Go's `GOOS` names.
    #[error(
        "unknown operating system `{os}`{}",
        crate::manifest::suggest::Hint::or_example(*.suggestion, "linux")
    )]
    UnknownOs {
        /// The operating system, normalised.
        os: String,
        /// The known name closest to it, if one is close.
        suggestion: Option<&'static str>,
    },
    /// The architecture is not one of Go's `GOARCH` names or a known alias.
    #[error(
        "unknown architecture `{architecture}`{}",
        crate::manifest::suggest::Hint::or_example(*.suggestion, "amd64")
    )]
    UnknownArchitecture {
        /// The architecture, normalised.
        architecture: String,
        /// The known name closest to it, if one is close.
        suggestion: Option<&'static str>,
    },
    /// The variant has characters other than letters, digits and `.`.
    #[error("invalid cpu variant `{variant}`; hint: e.g. `v7`, `v8`")]
    InvalidVariant {
        /// The variant, normalised.
        variant: String,
    },
}

// ---- bundle format errors ----

/// Why a bundle could not be written, opened, verified or unpacked.
///
/// Every error about a bundle's content names the member (or part, or frame) at fault; the
/// bundle's own path is added by the caller, which knows how the user named it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// A file could not be opened.
    #[error("cannot open `{}`", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Reading the bundle failed.
    #[error("cannot read the bundle")]
    Read(#[source] io::Error),
    /// Writing a file failed.
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Writing the bundle stream failed.
    #[error("cannot write the bundle")]
    Output(#[source] io::Error),
    /// zstd refused to compress.
    #[error("cannot compress the bundle")]
    Compress(#[source] io::Error),
    /// A JSON document could not be serialised.
    #[error("cannot serialise a header file")]
    Json(#[source] serde_json::Error),
    /// The description's time cannot be a tar mtime.
    #[error(
        "the bundle's creation time `{0}` is before 1970; set SOURCE_DATE_EPOCH or fix the lock"
    )]
    CreatedBeforeEpoch(jiff::Timestamp),
    /// `SOURCE_DATE_EPOCH` is not a number of seconds.
    #[error(
        "SOURCE_DATE_EPOCH=`{0}` is not a whole number of seconds since 1970; unset it or fix it"
    )]
    SourceDateEpoch(String),
    /// A blob file given to the writer could not be read.
    #[error("cannot read blob file `{}`", path.display())]
    BlobRead {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A blob file given to the writer is not what it claims to be.
    #[error(
        "blob file `{}` holds {actual_size} bytes with digest `{actual}`, expected {expected_size} bytes with `{expected}`; hint: the cache entry is corrupt, delete it and rebuild",
        path.display()
    )]
    BlobMismatch {
        /// The file.
        path: PathBuf,
        /// The digest it should have.
        expected: Sha256Digest,
        /// The size it should have.
        expected_size: u64,
        /// The digest it has.
        actual: Sha256Digest,
        /// The size it has.
        actual_size: u64,
    },
    /// A name or version cannot name an artifact in `index.json`.
    #[error("`{value}` cannot name an artifact: expected {reason}")]
    ArtifactName {
        /// The name or version.
        value: String,
        /// What is expected.
        reason: String,
    },
    /// The split size is out of range.
    #[error("split size {size} is out of range; parts hold 1 to {max} bytes (FAT32's limit)")]
    PartSizeInvalid {
        /// The requested size.
        size: u64,
        /// The largest part.
        max: u64,
    },
    /// The parts index is malformed.
    #[error("parts index `{}` is invalid: {reason}", path.display())]
    PartsIndex {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A part listed in the parts index does not exist.
    #[error("part `{}` is missing; hint: copy every part next to the parts index", path.display())]
    PartMissing {
        /// The part.
        path: PathBuf,
    },
    /// A part has the wrong size.
    #[error("part `{}` is {actual} bytes, the parts index says {expected}; it is truncated or was copied incompletely", path.display())]
    PartSize {
        /// The part.
        path: PathBuf,
        /// The size the index gives.
        expected: u64,
        /// The size found.
        actual: u64,
    },
    /// A part has the wrong content.
    #[error("part `{}` has digest `{actual}`, the parts index says `{expected}`", path.display())]
    PartDigest {
        /// The part.
        path: PathBuf,
        /// The digest the index gives.
        expected: Sha256Digest,
        /// The digest found.
        actual: Sha256Digest,
    },
    /// The seek table at the end of the bundle is missing or wrong.
    #[error("the bundle is truncated or not a kk bundle: {0}")]
    SeekTable(String),
    /// A zstd frame breaks the format's rules or does not decode.
    #[error("zstd frame {index} at byte {offset} is corrupt: {reason}")]
    Frame {
        /// The frame's number, from 0.
        index: usize,
        /// Its offset in the bundle.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The file's bytes differ from those the integrity frame vouches for.
    #[error(
        "the integrity frame at byte {offset} does not match the bundle's bytes: the file was changed or damaged after it was written"
    )]
    Integrity {
        /// The integrity frame's offset.
        offset: u64,
    },
    /// The checksum list is not in its one valid spelling.
    #[error("checksum list `kk-bundle/SHA256SUMS` is malformed{}: {reason}", if *line > 0 { format!(" at line {line}") } else { String::new() })]
    ChecksumList {
        /// The line at fault, from 1; 0 for the list as a whole.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The tar stream ends early.
    #[error("the bundle is truncated{}", after.as_ref().map(|m| format!(" after member `{m}`")).unwrap_or_default())]
    Truncated {
        /// The last complete member.
        after: Option<MemberPath>,
    },
    /// The end-of-archive marker is wrong, or something follows it.
    #[error(
        "the end of the tar stream is malformed: expected two zero blocks forming the last zstd frame"
    )]
    EndMarker,
    /// The first member is not the checksum list.
    #[error(
        "the first member is `{first}`, not `kk-bundle/SHA256SUMS`: this is not a kk bundle of format 1"
    )]
    NotABundle {
        /// The first member's name.
        first: String,
    },
    /// The second member is not the description.
    #[error("the second member is `{found}`, not `kk-bundle/bundle.json`")]
    HeaderOrder {
        /// The second member's name.
        found: MemberPath,
    },
    /// A member's path is not one format v1 allows.
    #[error("member `{member}` has a path format v1 does not allow")]
    UnknownMember {
        /// The member's name.
        member: String,
    },
    /// A member is not in the checksum list.
    #[error("member `{member}` is not in the checksum list")]
    NotListed {
        /// The member.
        member: MemberPath,
    },
    /// A member in the checksum list is not in the bundle.
    #[error("member `{member}` is in the checksum list but not in the bundle")]
    Missing {
        /// The member.
        member: MemberPath,
    },
    /// A member occurs twice.
    #[error("member `{member}` occurs twice")]
    Duplicate {
        /// The member.
        member: MemberPath,
    },
    /// A zstd frame holding part of a member is damaged.
    #[error("member `{member}` is damaged")]
    Damaged {
        /// The member.
        member: MemberPath,
        /// The frame's error.
        #[source]
        source: Box<BundleError>,
    },
    /// A member's content does not match the checksum list.
    #[error("member `{member}` has digest `{actual}`, the checksum list says `{expected}`")]
    DigestMismatch {
        /// The member.
        member: MemberPath,
        /// The listed digest.
        expected: Sha256Digest,
        /// The digest of the content.
        actual: Sha256Digest,
    },
    /// A member's path is absolute or climbs out with `..`.
    #[error("member `{member}` has an absolute path or one containing `..`")]
    UnsafePath {
        /// The member's name.
        member: String,
    },
    /// A member is a link, device, directory or other non-file.
    #[error("member `{member}` is {kind}; bundles hold regular files only")]
    NotAFile {
        /// The member's name.
        member: String,
        /// What it is.
        kind: String,
    },
    /// A header member is larger than a reader accepts.
    #[error("member `{member}` is {size} bytes, more than the {limit} bytes allowed")]
    TooLarge {
        /// The member.
        member: MemberPath,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A member's tar header or padding differs from the canonical one.
    #[error("member `{member}` is not in canonical form: {what}")]
    NonCanonical {
        /// The member.
        member: MemberPath,
        /// Which part differs.
        what: String,
    },
    /// The description is not valid JSON of the expected shape.
    #[error("the description `kk-bundle/bundle.json` is invalid")]
    Description(#[source] serde_json::Error),
    /// The format's major version is not one this reader knows.
    #[error(
        "the bundle has format version `{found}`; this reader reads formats {supported}; hint: use a kk-install at least as new as the kk-bundle that built it"
    )]
    UnsupportedVersion {
        /// The bundle's version.
        found: FormatVersion,
        /// The major versions this reader reads, for the message (`1.x and 2.x`).
        supported: &'static str,
    },
    /// A delta bundle's `base` (or its absence) does not fit the format version or the
    /// checksum list.
    #[error("the description's `base` is invalid: {reason}")]
    DeltaBase {
        /// What is wrong.
        reason: String,
    },
    /// A blob a delta bundle takes from its base is not in the store it is unpacked into.
    #[error(
        "blob `{digest}` is not in the store `{}`: this delta bundle builds on bundle `{base}`, which carries it; hint: unpack that bundle into the store first (and the bundles it builds on, if it is a delta itself)",
        store.display()
    )]
    BaseBlobMissing {
        /// The missing blob.
        digest: Sha256Digest,
        /// The identity of the bundle the delta builds on.
        base: Sha256Digest,
        /// The store.
        store: PathBuf,
    },
    /// The description's creation time is not the members' mtime.
    #[error(
        "the description says the bundle was created at `{created}`, but its members are dated {mtime}"
    )]
    CreatedMismatch {
        /// The description's time.
        created: jiff::Timestamp,
        /// The members' mtime.
        mtime: u64,
    },
    /// Unpacking would go through something that is not a plain directory.
    #[error("`{}` is not a plain directory (a symbolic link or a file is in the way); unpacking never writes through links", path.display())]
    UnsafeDestination {
        /// The path in the way.
        path: PathBuf,
    },
    /// A frame-cache entry did not decode to what its table says; it was removed.
    #[error(
        "the frame cache entry `{}` for blob `{digest}` is damaged and was removed; hint: run the build again, which compresses the blob anew",
        path.display()
    )]
    FrameCacheDamaged {
        /// The blob.
        digest: Sha256Digest,
        /// The entry.
        path: PathBuf,
    },
    /// The caller could not provide a blob the writer was about to read.
    #[error("blob `{digest}` could not be provided: {reason}")]
    BlobNotReady {
        /// The blob.
        digest: Sha256Digest,
        /// Why.
        reason: String,
    },
    /// A member's header claims more bytes than the tar stream holds after it.
    #[error(
        "member `{member}` claims {size} bytes, more than the {available} the bundle holds after its header; the bundle is damaged or was crafted"
    )]
    MemberTooLong {
        /// The member.
        member: MemberPath,
        /// The size its header gives.
        size: u64,
        /// The bytes of tar stream after its header.
        available: u64,
    },
    /// A member ends inside a frame, where no member can start: its size is wrong.
    #[error(
        "member `{member}` ends at byte {end} of the tar stream, inside a zstd frame, where no member can start; its size is wrong: the bundle is damaged or was crafted"
    )]
    EndsInsideFrame {
        /// The member.
        member: MemberPath,
        /// The tar offset where it ends.
        end: u64,
    },
    /// A member the caller asked for is not in the bundle.
    #[error("the bundle has no member `{0}`")]
    NoSuchMember(String),
    /// The bundle carries no SBOM: it predates format 1.1.
    #[error(
        "the bundle has format version `{version}` and no SBOM `kk-bundle/sbom.spdx.json`; hint: bundles of format 1.1 and later carry one, rebuild it with a current kk-bundle"
    )]
    NoSbom {
        /// The bundle's format version.
        version: FormatVersion,
    },
}

impl BundleError {
    /// The error behind a failed read of a member's data during [`crate::Bundle::walk`]: the
    /// bundle's own error (a corrupt frame, a truncated part) when it carried one, else an I/O error.
    pub fn from_read_error(error: io::Error) -> Self {
        from_io(error, Self::Read)
    }
}

/// Takes a [`BundleError`] back out of an `io::Error` that carried it through a `Read` or
/// `Write` implementation, or wraps a plain I/O error with `wrap`.
pub(crate) fn from_io(
    error: io::Error,
    wrap: impl FnOnce(io::Error) -> BundleError,
) -> BundleError {
    let carries_ours = error
        .get_ref()
        .is_some_and(<dyn std::error::Error + Send + Sync>::is::<BundleError>);
    if !carries_ours {
        return wrap(error);
    }
    let kind = error.kind();
    match error
        .into_inner()
        .map(<dyn std::error::Error + Send + Sync>::downcast::<BundleError>)
    {
        Some(Ok(inner)) => *inner,
        Some(Err(other)) => wrap(io::Error::new(kind, other)),
        None => wrap(io::Error::from(kind)),
    }
}

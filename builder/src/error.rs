//! Every error `kk-bundle`'s library returns.
//!
//! Messages are lowercase, name the artifact, URL, reference or file at fault in backticks, and
//! end with a hint where one helps; causes are chained through `#[source]`.
//!
//! Errors live beside the module that owns them and are re-exported here, so `crate::error::X`
//! names every error. Modules import an error from its owner, never from here: this module
//! imports them all.

use std::fmt;
use std::path::PathBuf;

pub use crate::cache::CacheError;
pub use crate::catalog::{CatalogError, ExpandError};
pub use crate::fetch::{FetchError, FetchUrl};
pub use crate::lockfile::LockFileError;

/// Why a build step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A manifest could not be read or is invalid.
    #[error(transparent)]
    Manifest(#[from] bundle_spec::ManifestError),
    /// The bundle could not be written or read.
    #[error(transparent)]
    Bundle(#[from] bundle_spec::BundleError),
    /// A local file could not be read or written.
    #[error("cannot access `{}`", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },

    /// The blob cache failed.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A fetch failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// A checksum file has no entry for the file.
    #[error(
        "checksum file {checksum_url} has no sha256 for `{file}`; hint: check `checksumUrl`, or pin `sha256` instead"
    )]
    ChecksumNotListed {
        /// The checksum file's URL.
        checksum_url: FetchUrl,
        /// The file name looked for.
        file: String,
    },
    /// A binary has no checksum for a platform.
    #[error("{what} has no sha256; hint: add its architecture to `sha256`, or use `checksumUrl`")]
    NoChecksum {
        /// The binary, its version and platform.
        what: String,
    },
    /// A sha256 from a lock, manifest or index is not 64 lowercase hex digits.
    #[error("{what} has invalid sha256 `{value}`; hint: a sha256 is 64 hex digits")]
    InvalidSha256 {
        /// Where it comes from.
        what: String,
        /// The value.
        value: String,
    },
    /// `--locked`, but the lock and the manifest pin different digests.
    #[error(
        "{what} is locked at `{locked}` but the manifest pins `{pinned}`; hint: build without `--locked` to update the lock"
    )]
    LockConflict {
        /// The binary, its version and platform.
        what: String,
        /// The digest in the lock.
        locked: bundle_spec::Sha256Digest,
        /// The digest in the manifest.
        pinned: bundle_spec::Sha256Digest,
    },
    /// A Helm repository index cannot be parsed.
    #[error("cannot parse helm repository index {url}")]
    ChartIndex {
        /// The index URL.
        url: FetchUrl,
        /// The cause (boxed: the parser's error is large).
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// A Helm repository does not list the chart.
    #[error(
        "helm repository `{repo}` has no chart `{chart}`; hint: check the chart name and `repo`"
    )]
    ChartNotInIndex {
        /// The chart name.
        chart: String,
        /// The repository URL.
        repo: String,
    },
    /// A Helm repository lists the chart, but not the version.
    #[error(
        "helm repository `{repo}` has no version `{version}` of chart `{chart}`; available: {available}"
    )]
    ChartVersionMissing {
        /// The chart name.
        chart: String,
        /// The version asked for.
        version: String,
        /// The repository URL.
        repo: String,
        /// The versions listed, newest first as the index orders them, in backticks.
        available: String,
    },
    /// A Helm repository's entry for the chart version is unusable.
    #[error("helm repository `{repo}` lists chart `{chart}` `{version}` with {problem}")]
    ChartIndexEntry {
        /// The chart name.
        chart: String,
        /// The version.
        version: String,
        /// The repository URL.
        repo: String,
        /// What is wrong with the entry.
        problem: String,
    },
    /// A chart archive has no usable `Chart.yaml`.
    #[error("cannot read `Chart.yaml` from chart archive `{}`: {problem}", path.display())]
    ChartArchive {
        /// The archive.
        path: PathBuf,
        /// What is wrong.
        problem: String,
        /// The cause, if any.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// `spec.kubernetes` cannot be expanded through the version catalog.
    #[error(transparent)]
    Expand(#[from] ExpandError),

    // ---- chart image check (owned by check/) ----
    /// Bundled charts, rendered as the install renders them, name images the bundle lacks.
    #[error(
        "{}; hint: add them to the manifest's `images:` list and build again, or pass `--allow-missing-chart-images` to build anyway",
        describe(.misses)
    )]
    ChartImagesMissing {
        /// Each chart with the images it lacks.
        misses: Vec<ChartMiss>,
    },
    /// The network plugin's chart does not render with the values the install gives it.
    #[error(
        "`helm template` of chart `{chart}` `{version}` with the install's values failed: {problem}; hint: the install would fail the same way; check the chart's version in the manifest"
    )]
    ChartRender {
        /// The chart.
        chart: String,
        /// Its version.
        version: String,
        /// What went wrong.
        problem: RenderProblem,
    },
    /// helm cannot be started.
    #[error("cannot run helm `{}` to check the charts' images; hint: check that it runs on this machine, or remove it from PATH to skip the check", helm.display())]
    HelmRun {
        /// The helm executable.
        helm: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The bundle's helm file holds no `helm` executable.
    #[error(
        "the bundle's helm `{file}` holds no `helm` executable; hint: check the `helm` entry of the manifest's binaries"
    )]
    HelmArchive {
        /// The file's name.
        file: String,
    },

    // ---- image and assembly errors ----
    /// A bug: an internal invariant broke.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
    /// A registry password variable is not set.
    #[error(
        "registry `{registry}` needs the password in environment variable `{variable}`, which is not set; hint: export it before running kk-bundle"
    )]
    PasswordEnv {
        /// The registry.
        registry: String,
        /// The variable the manifest names.
        variable: String,
    },
    /// The Docker client config cannot be read.
    #[error("docker config `{}` is invalid: {reason}", path.display())]
    DockerConfig {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An image reference does not parse.
    #[error("image reference `{reference}` is invalid: {reason}")]
    ImageReference {
        /// The reference.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// A registry request failed.
    #[error("cannot fetch `{reference}` (from `{fetched}`)")]
    Registry {
        /// The image as written.
        reference: String,
        /// What was requested.
        fetched: String,
        /// The cause.
        #[source]
        source: Box<oci_client::errors::OciDistributionError>,
    },
    /// A manifest is not what its digest pin says.
    #[error(
        "`{reference}` was pinned to `{expected}`, but the registry served a document with digest `{actual}`"
    )]
    ManifestDigest {
        /// The image.
        reference: String,
        /// The pinned digest.
        expected: String,
        /// The digest served.
        actual: bundle_spec::Sha256Digest,
    },
    /// A tag moved since the lock was written.
    #[error(
        "`{reference}` drifted: the lock says `{locked}`, the registry now serves `{current}`; hint: rebuild without `--locked` to update the lock, or pin the digest"
    )]
    Drift {
        /// The image.
        reference: String,
        /// The locked digest.
        locked: bundle_spec::Sha256Digest,
        /// The current digest.
        current: bundle_spec::Sha256Digest,
    },
    /// A requested platform is not in the image.
    #[error(
        "image `{reference}` has no `{platform}` variant (it offers: {available}); hint: drop the platform, or pass `--allow-missing-platforms`"
    )]
    PlatformMissing {
        /// The image.
        reference: String,
        /// The missing platform.
        platform: String,
        /// The platforms it has.
        available: String,
    },
    /// A manifest or index cannot be understood.
    #[error("`{reference}` does not serve a usable manifest: {reason}")]
    InvalidManifest {
        /// The image.
        reference: String,
        /// What is wrong.
        reason: DocumentError,
    },
    /// The lock file cannot be read or written.
    #[error(transparent)]
    LockFile(#[from] LockFileError),
    /// `--locked` was given but the lock does not cover something the manifest asks for.
    #[error(
        "the lock has no entry for {what}; hint: rebuild without `--locked` to update the lock"
    )]
    NotLocked {
        /// The artifact.
        what: String,
    },
    /// The bundle a delta builds on cannot be read.
    #[error("cannot read the previous bundle `{}` given with `--since`; hint: pass the bundle file (or its `.split.json`) the delta builds on", path.display())]
    Since {
        /// The bundle.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<bundle_spec::BundleError>,
    },
    /// A transfer broke off.
    #[error("transfer of {what} failed")]
    Transfer {
        /// What was being transferred.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A chart that names images the bundle lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartMiss {
    /// The chart's name.
    pub chart: String,
    /// Its version.
    pub version: String,
    /// The images it names that the bundle lacks, as the chart names them.
    pub images: Vec<String>,
}

impl fmt::Display for ChartMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let images: Vec<String> = self.images.iter().map(|i| format!("`{i}`")).collect();
        write!(
            f,
            "chart `{}` `{}` names images the bundle lacks: {}",
            self.chart,
            self.version,
            images.join(", ")
        )
    }
}

/// The misses of several charts, for one message.
fn describe(misses: &[ChartMiss]) -> String {
    let described: Vec<String> = misses.iter().map(ToString::to_string).collect();
    described.join("; ")
}

/// Why a registry's manifest or index cannot be understood (the reason of
/// [`BuildError::InvalidManifest`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// The bytes are not JSON of a manifest's or an index's shape.
    #[error("not a manifest or index: {0}")]
    Json(serde_json::Error),
    /// A Docker schema 1 manifest, or another version.
    #[error("only schemaVersion 2 manifests are supported (Docker schema 1 is not)")]
    SchemaVersion,
    /// A descriptor's digest is not a sha256 digest.
    #[error("`{digest}` is not a sha256 digest")]
    Digest {
        /// The digest as written.
        digest: String,
    },
    /// A descriptor without a media type.
    #[error("the descriptor of `{digest}` has no mediaType")]
    NoMediaType {
        /// The descriptor's digest.
        digest: String,
    },
}

/// Why `helm template` of a chart gave no manifest to check (the problem of
/// [`BuildError::ChartRender`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderProblem {
    /// helm exited with an error.
    #[error("{} ({status})", stderr.trim())]
    Failed {
        /// What helm wrote to stderr.
        stderr: String,
        /// How it exited.
        status: std::process::ExitStatus,
    },
    /// helm's output is not UTF-8.
    #[error("its output is not UTF-8: {0}")]
    NotUtf8(std::string::FromUtf8Error),
    /// helm's output is not YAML.
    #[error("its output is not YAML: {0}")]
    NotYaml(Box<serde_saphyr::Error>),
}

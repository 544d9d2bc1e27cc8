//! The error of resolving manifest entries to exact, verifiable sources.

use std::path::PathBuf;

use crate::cache::CacheError;
use crate::fetch::{FetchError, FetchUrl};
use crate::resolve::image::DocumentError;

/// A binary, chart or image cannot be resolved to exact sources, or fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
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
    /// With `--locked`, a binary's download differs from the digest the lock pins.
    #[error(
        "{what} from `{url}` has digest `{actual}` but the lock pins `{locked}`; hint: upstream replaced the file since the lock was written: verify the new file out of band, then build without `--locked` to update the lock"
    )]
    LockedDigestMismatch {
        /// The binary, its version and platform.
        what: String,
        /// The URL as the manifest expands it.
        url: String,
        /// The digest in the lock.
        locked: bundle_spec::Sha256Digest,
        /// The digest of the download.
        actual: bundle_spec::Sha256Digest,
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
    /// `--locked` was given but the lock does not cover something the manifest asks for.
    #[error(
        "the lock has no entry for {what}; hint: rebuild without `--locked` to update the lock"
    )]
    NotLocked {
        /// The artifact.
        what: String,
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
    /// A local file could not be read or written.
    #[error("cannot access `{}`", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `verify`: the image carries no signature made with the key.
    #[error(
        "image `{reference}` is not signed by the key `{}`: {reason}; hint: sign it with `cosign sign --key` for that key, or check `verify.key`", key.display()
    )]
    NotSigned {
        /// The image.
        reference: String,
        /// The key file.
        key: PathBuf,
        /// What was wrong: no signature, or each signature's fault.
        reason: String,
    },
    /// `verify.key` is not a cosign public key.
    #[error("`verify.key` `{}` cannot be used", path.display())]
    VerifyKey {
        /// The key file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: bundle_spec::sign::keys::KeyError,
    },
    /// A bug: an internal invariant broke.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
    /// The blob cache failed.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A fetch failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
}

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
pub use crate::resolve::ResolveError;
pub use crate::resolve::image::DocumentError;

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
    /// An artifact could not be resolved to exact sources.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A fetch failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// `spec.kubernetes` cannot be expanded through the version catalog.
    #[error(transparent)]
    Expand(#[from] ExpandError),

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

    /// A bug: an internal invariant broke.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
    /// The lock file cannot be read or written.
    #[error(transparent)]
    LockFile(#[from] LockFileError),
    /// The bundle a delta builds on cannot be read.
    #[error("cannot read the previous bundle `{}` given with `--since`; hint: pass the bundle file (or its `.split.json`) the delta builds on", path.display())]
    Since {
        /// The bundle.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<bundle_spec::BundleError>,
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

//! The errors of checking what was fetched.

use std::fmt;
use std::path::PathBuf;

use crate::cache::CacheError;
use crate::fetch::FetchError;

/// A check of the fetched artifacts failed, or could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
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

    /// A local file could not be read or written.
    #[error("cannot access `{}`", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The bundle's helm in the cache proved damaged before it was run.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A bug: an internal invariant broke.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
    /// A blocking task of the check was cancelled.
    #[error(transparent)]
    Fetch(#[from] FetchError),
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
/// [`CheckError::ChartRender`]).
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

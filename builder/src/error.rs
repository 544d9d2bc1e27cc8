//! Every error `kk-bundle`'s library returns.
//!
//! Messages are lowercase, name the artifact, URL, reference or file at fault in backticks, and
//! end with a hint where one helps; causes are chained through `#[source]`.
//!
//! Errors live beside the module that owns them and are re-exported here, so `crate::error::X`
//! names every error. Modules import an error from its owner, never from here: this module
//! imports them all.

use std::path::PathBuf;

pub use crate::cache::CacheError;
pub use crate::catalog::{CatalogError, ExpandError};
pub use crate::check::{ChartMiss, CheckError, RenderProblem};
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
    /// A check of what was fetched failed.
    #[error(transparent)]
    Check(#[from] CheckError),
    /// A fetch failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// `spec.kubernetes` cannot be expanded through the version catalog.
    #[error(transparent)]
    Expand(#[from] ExpandError),

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

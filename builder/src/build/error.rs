//! The error of a build: the error of the step that failed.

use crate::assemble::AssembleError;
use crate::cache::CacheError;
use crate::catalog::ExpandError;
use crate::check::CheckError;
use crate::delta::SinceError;
use crate::fetch::FetchError;
use crate::lockfile::LockFileError;
use crate::resolve::ResolveError;
use crate::sources::SourcesError;

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
    #[error(transparent)]
    Since(#[from] SinceError),
    /// The manifest's and the catalog's entries cannot be collected.
    #[error(transparent)]
    Sources(#[from] SourcesError),
    /// The fetched blobs cannot be laid out.
    #[error(transparent)]
    Assemble(#[from] AssembleError),
}

//! The error of a build: the error of the step that failed.

use crate::assemble::AssembleError;
use crate::cache::CacheError;
use crate::catalog::ExpandError;
use crate::check::CheckError;
use crate::delta::SinceError;
use crate::fetch::FetchError;
use crate::lockfile::LockFileError;
use crate::resolve::ResolveError;
use crate::resolve::packages::PackagesError;
use crate::sources::SourcesError;

/// Why a build step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A manifest could not be read or is invalid.
    #[error(transparent)]
    Manifest(#[from] bundle_spec::ManifestError),
    /// A KubeKey v3 manifest could not be converted into a kk manifest (boxed: it can carry a
    /// whole manifest error).
    #[error(transparent)]
    KubeKey(Box<crate::kubekey::KubeKeyError>),
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
    /// A set of OS packages cannot be resolved or fetched (boxed: its messages carry much).
    #[error(transparent)]
    Packages(Box<PackagesError>),
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
    /// The signature beside the bundle cannot be written.
    #[error(transparent)]
    Sign(#[from] crate::sign::SignError),
    /// The fetched blobs cannot be laid out.
    #[error(transparent)]
    Assemble(#[from] AssembleError),
    /// A blob in the cache proved damaged while the bundle was written from it (a stored
    /// frame's bytes did not match its frame-cache entry) and was removed; [`super::build`]
    /// builds once more, which fetches it again.
    #[error(
        "cached blob `{digest}` was damaged and is removed from the cache; hint: build again to fetch it anew, and check the cache directory's disk if this recurs"
    )]
    CachedBlobDamaged {
        /// The blob.
        digest: bundle_spec::Sha256Digest,
    },
}

impl From<crate::kubekey::KubeKeyError> for BuildError {
    fn from(error: crate::kubekey::KubeKeyError) -> Self {
        Self::KubeKey(Box::new(error))
    }
}

impl From<PackagesError> for BuildError {
    fn from(error: PackagesError) -> Self {
        Self::Packages(Box::new(error))
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::PathBuf;

    use super::*;

    /// The message and the `#[source]` chain, as `{error:#}` prints them.
    fn chain(error: &(dyn std::error::Error + 'static)) -> Vec<String> {
        std::iter::successors(Some(error), |&e| e.source())
            .map(ToString::to_string)
            .collect()
    }

    fn io_error() -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, "denied")
    }

    /// Wrapping a step's error in `BuildError` changes neither its message nor its causes, so
    /// moving the errors beside their modules left the CLI's output as it was.
    #[test]
    fn a_build_error_shows_the_step_error_it_wraps_unchanged() {
        let cases: Vec<(Box<dyn std::error::Error + 'static>, BuildError)> = vec![
            (
                Box::new(ExpandError::KubernetesNotInCatalog {
                    version: "v1.20.0".into(),
                    supported: "`v1.31`".into(),
                }),
                ExpandError::KubernetesNotInCatalog {
                    version: "v1.20.0".into(),
                    supported: "`v1.31`".into(),
                }
                .into(),
            ),
            (
                Box::new(LockFileError::File {
                    path: PathBuf::from("cluster.lock.yaml"),
                    source: io_error(),
                }),
                LockFileError::File {
                    path: PathBuf::from("cluster.lock.yaml"),
                    source: io_error(),
                }
                .into(),
            ),
            (
                Box::new(CacheError::Dir {
                    path: PathBuf::from("/cache"),
                    source: io_error(),
                }),
                FetchError::from(CacheError::Dir {
                    path: PathBuf::from("/cache"),
                    source: io_error(),
                })
                .into(),
            ),
            (
                Box::new(SourcesError::Internal("a bug".into())),
                SourcesError::Internal("a bug".into()).into(),
            ),
        ];
        for (step, wrapped) in cases {
            assert_eq!(chain(&wrapped), chain(step.as_ref()));
        }
    }
}

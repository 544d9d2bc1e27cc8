//! Every error `kk-bundle`'s library returns.
//!
//! Messages are lowercase, name the artifact, URL, reference or file at fault in backticks, and
//! end with a hint where one helps; causes are chained through `#[source]`.

use std::path::PathBuf;

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

    // ---- cache and HTTP fetch errors (owned by cache.rs and fetch/) ----

    // ---- catalog errors (owned by catalog/) ----

    // ---- image and assembly errors ----
}

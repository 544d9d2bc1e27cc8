//! The errors of the blob cache.

use std::path::PathBuf;

/// The cache cannot be used, or bytes written to it are not the blob they must be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The cache directory cannot be created or used.
    #[error("cannot use cache directory `{}`; hint: pass another with `--cache DIR`", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file of the cache could not be read or written.
    #[error("cannot access `{}`", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Downloaded or stored bytes do not have the digest they must have.
    #[error(
        "{what} has digest `{actual}` but `{expected}` was expected; hint: upstream changed the file or the pinned sha256 is wrong"
    )]
    DigestMismatch {
        /// What was checked: the URL (in backticks) or a description.
        what: String,
        /// The digest it must have.
        expected: bundle_spec::Sha256Digest,
        /// The digest it has.
        actual: bundle_spec::Sha256Digest,
    },
    /// A cached file that was not re-hashed when the build found it proved damaged when it was
    /// about to be used; it is removed.
    #[error(
        "cached file `{}` has digest `{actual}` but `{expected}` was expected: it was damaged on disk and is removed; hint: run the build again to fetch it anew",
        path.display()
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The digest it must have.
        expected: bundle_spec::Sha256Digest,
        /// The digest it has.
        actual: bundle_spec::Sha256Digest,
    },
    /// A download is not of the size announced for it (by the server, or by an image blob's
    /// descriptor): it ended short, or went past the size and was cut off there.
    #[error(
        "{what} should have {expected} bytes, but {actual} arrived; hint: the transfer was cut, or the server or the image manifest is inconsistent; retry"
    )]
    SizeMismatch {
        /// What was downloaded: the URL in backticks, or a description.
        what: String,
        /// The announced size.
        expected: u64,
        /// The bytes received: all of them, or up to the cut-off.
        actual: u64,
    },
}

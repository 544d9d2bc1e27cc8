//! The errors of fetching over HTTP.

use std::fmt;
use std::path::PathBuf;

use crate::cache::CacheError;

/// A fetch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The HTTP client could not be set up.
    #[error("cannot set up the http client")]
    HttpClient {
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// A CA file given for a host cannot be read or holds no PEM certificate.
    #[error("cannot load ca file `{}` for host `{host}`; hint: it must hold PEM certificates", path.display())]
    CaFile {
        /// The host it is for.
        host: String,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A URL to fetch cannot be parsed.
    #[error("invalid url {url}")]
    InvalidUrl {
        /// The URL.
        url: FetchUrl,
        /// The cause.
        #[source]
        source: url::ParseError,
    },
    /// Connection failures, cuts or timeouts persisted through every retry.
    #[error(
        "cannot fetch {url} ({}); hint: check the network, proxy and tls settings, or set a file mirror in `spec.fileMirrors`",
        count_attempts(*.attempts)
    )]
    Transport {
        /// The URL.
        url: FetchUrl,
        /// How many requests were made.
        attempts: u32,
        /// The last failure.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error(
        "fetching {url} failed with http status `{status}` ({}); hint: {hint}",
        count_attempts(*.attempts)
    )]
    HttpStatus {
        /// The URL.
        url: FetchUrl,
        /// The status code.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// What to check.
        hint: &'static str,
    },
    /// The server's answers broke the protocol through every retry.
    #[error("fetching {url} failed ({}): {problem}", count_attempts(*.attempts))]
    HttpProtocol {
        /// The URL.
        url: FetchUrl,
        /// How many requests were made.
        attempts: u32,
        /// What was wrong.
        problem: String,
    },
    /// A text document is larger than allowed.
    #[error(
        "{url} is larger than {limit} bytes; hint: check that the url names a checksum file or helm index"
    )]
    TooLarge {
        /// The URL.
        url: FetchUrl,
        /// The limit in bytes.
        limit: u64,
    },
    /// A text document is not UTF-8.
    #[error("{url} is not utf-8 text")]
    NotText {
        /// The URL.
        url: FetchUrl,
        /// The cause.
        #[source]
        source: std::string::FromUtf8Error,
    },
    /// A blocking background task (hashing, fsync) was cancelled.
    #[error("{what} was cancelled")]
    Cancelled {
        /// What was running.
        what: &'static str,
        /// The cause.
        #[source]
        source: tokio::task::JoinError,
    },
    /// The fetched bytes could not be stored in the cache, or are not what they must be.
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// A URL as named (by the manifest, an index) and as fetched after file mirrors; errors show
/// both when they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchUrl {
    /// The URL as named.
    pub original: String,
    /// The URL requested.
    pub fetched: String,
}

impl fmt::Display for FetchUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.original == self.fetched {
            write!(f, "`{}`", self.original)
        } else {
            write!(f, "`{}` (fetched as `{}`)", self.original, self.fetched)
        }
    }
}

/// `1 attempt`, `3 attempts`: for error messages.
fn count_attempts(count: u32) -> String {
    if count == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{count} attempts")
    }
}

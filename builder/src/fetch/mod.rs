//! Fetching over HTTP: small text documents, and files into the [`Cache`].
//!
//! [`HttpFetcher`] wraps reqwest (rustls) with what downloading for an offline bundle needs:
//!
//! - **file mirrors** ([`FetchOptions::file_mirrors`], from the manifest's `spec.fileMirrors`)
//!   rewrite `https://dl.k8s.io/x` to `<mirror base>/x`, so a build can run against a local
//!   copy of upstream; errors name both URLs ([`FetchUrl`]);
//! - **per-host TLS**: an extra CA file, or no verification, for the hosts that need it
//!   (`client`);
//! - **retries** of transient failures with backoff, jitter and `Retry-After` (`retry`);
//! - **resumption**: a download writes into the cache's partial file and, after a cut or an
//!   interrupted run, continues with `Range: bytes=N-` (`download`);
//! - **verification**: every download is hashed while it is written and checked against the
//!   expected digest before it enters the cache, and a cache hit costs no request at all;
//! - **receiving** (`receive`, for image blobs too): the writing and hashing run on a blocking
//!   thread while the next bytes arrive, never on an async worker.
//!
//! Parallelism is the caller's business (a semaphore around these calls); a fetcher is cheap to
//! clone and share between tasks.

mod client;
mod download;
mod error;
mod receive;
pub(crate) mod retry;
#[cfg(test)]
pub(crate) mod test_server;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use url::Url;

#[cfg(doc)]
use crate::cache::Cache;
use client::Clients;
pub use error::{FetchError, FetchUrl};
pub(crate) use receive::receive;
use retry::{Failure, Retry, Timing};

/// The size limit of [`HttpFetcher::text`].
pub const TEXT_LIMIT: u64 = 16 * 1024 * 1024;

/// How to reach file servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchOptions {
    /// How many times a transient failure is retried (so `retries + 1` attempts).
    pub retries: u32,
    /// Host (`host[:port]`, as in the URL) to the base URL serving its files instead.
    pub file_mirrors: BTreeMap<String, String>,
    /// Host to a PEM file of CA certificates trusted for it, besides the system's.
    pub ca_files: BTreeMap<String, PathBuf>,
    /// Hosts whose TLS certificates are not verified.
    pub insecure_hosts: BTreeSet<String>,
}

/// Downloads over HTTP(S) with mirrors, retries, resumption and verification; cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpFetcher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    clients: Clients,
    file_mirrors: BTreeMap<String, String>,
    retries: u32,
    timing: Timing,
}

/// A URL ready to fetch.
struct Target {
    shown: FetchUrl,
    url: Url,
}

impl HttpFetcher {
    /// A fetcher with `options`; fails if a CA file cannot be loaded.
    pub fn new(options: FetchOptions) -> Result<Self, FetchError> {
        Self::with_timing(options, Timing::default())
    }

    pub(crate) fn with_timing(options: FetchOptions, timing: Timing) -> Result<Self, FetchError> {
        Ok(Self {
            inner: Arc::new(Inner {
                clients: Clients::new(&options, timing)?,
                file_mirrors: options.file_mirrors,
                retries: options.retries,
                timing,
            }),
        })
    }

    /// The URL actually fetched for `url` after applying file mirrors:
    /// `https://dl.k8s.io/release/x` with mirror `dl.k8s.io -> http://127.0.0.1:8080/dl.k8s.io`
    /// becomes `http://127.0.0.1:8080/dl.k8s.io/release/x`. Path and query are kept. A mirror
    /// keyed `host:443` also serves `https://host/…` (the default port spelled out).
    pub fn mirrored(&self, url: &str) -> String {
        let Ok(parsed) = Url::parse(url) else {
            return url.to_owned();
        };
        let Some(host) = parsed.host_str() else {
            return url.to_owned();
        };
        let keys = match (parsed.port(), parsed.port_or_known_default()) {
            (Some(port), _) => vec![format!("{host}:{port}")],
            (None, Some(default)) => vec![host.to_owned(), format!("{host}:{default}")],
            (None, None) => vec![host.to_owned()],
        };
        let mirror = keys.iter().find_map(|key| self.inner.file_mirrors.get(key));
        match mirror {
            Some(base) => format!(
                "{}{}",
                base.trim_end_matches('/'),
                &parsed[url::Position::BeforePath..url::Position::AfterQuery]
            ),
            None => url.to_owned(),
        }
    }

    /// A small text document (a checksum file): at most [`TEXT_LIMIT`] bytes, retried.
    pub async fn text(&self, url: &str) -> Result<String, FetchError> {
        self.text_with_limit(url, TEXT_LIMIT).await
    }

    /// A text document of at most `limit` bytes (a Helm index can be large), retried.
    pub async fn text_with_limit(&self, url: &str, limit: u64) -> Result<String, FetchError> {
        let target = self.target(url)?;
        let mut retry = self.retry();
        let body = loop {
            retry.attempt();
            match self.text_attempt(&target, limit).await {
                Ok(body) => break body,
                Err(failure) => retry.after(failure, &target.shown).await?,
            }
        };
        String::from_utf8(body).map_err(|source| FetchError::NotText {
            url: target.shown,
            source,
        })
    }

    async fn text_attempt(&self, target: &Target, limit: u64) -> Result<Vec<u8>, Failure> {
        let client = self.inner.clients.for_url(&target.url);
        let mut response = client.get(target.url.clone()).send().await?;
        let status = response.status();
        if !status.is_success() {
            return Err(Failure::status(status, response.headers()));
        }
        let too_large = || {
            Failure::Fatal(FetchError::TooLarge {
                url: target.shown.clone(),
                limit,
            })
        };
        if response
            .content_length()
            .is_some_and(|length| length > limit)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if (body.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn target(&self, url: &str) -> Result<Target, FetchError> {
        let shown = FetchUrl {
            original: url.to_owned(),
            fetched: self.mirrored(url),
        };
        match Url::parse(&shown.fetched) {
            Ok(url) => Ok(Target { shown, url }),
            Err(source) => Err(FetchError::InvalidUrl { url: shown, source }),
        }
    }

    fn retry(&self) -> Retry {
        Retry::new(self.inner.retries, self.inner.timing)
    }
}

/// Runs blocking file work (hashing, fsync) off the async workers: the job's own result, or
/// [`FetchError::Cancelled`] if the task was cancelled (kept apart, so the job may return any
/// module's error).
pub(crate) async fn blocking<T: Send + 'static, E: Send + 'static>(
    what: &'static str,
    job: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<Result<T, E>, FetchError> {
    match tokio::task::spawn_blocking(job).await {
        Ok(result) => Ok(result),
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(source) => Err(FetchError::Cancelled { what, source }),
        },
    }
}

//! When to try a request again, and how long to wait first.
//!
//! Connection errors, cut or stalled bodies, 5xx, 408 and 429 are transient: they are retried
//! with exponential backoff and jitter, or after the server's `Retry-After` (capped), up to the
//! configured number of retries. A download that made progress since its last failure gets its
//! retries back, so a long transfer over a flaky link is not failed by cuts it recovers from.
//! Everything else (404, 403, a digest mismatch) fails at once: asking again gets the same answer.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher as _;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

use super::FetchError;
use super::FetchUrl;
use crate::cache::CacheError;

/// Timeouts and waits; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// Limit for establishing a connection (TCP and TLS).
    pub(crate) connect: Duration,
    /// Limit for a read of the response to make progress: a stalled body.
    pub(crate) stall: Duration,
    /// The first backoff; doubled per retry.
    pub(crate) backoff: Duration,
    /// The longest backoff.
    pub(crate) max_backoff: Duration,
    /// The longest `Retry-After` honoured.
    pub(crate) max_retry_after: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(30),
            stall: Duration::from_secs(60),
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

/// Why one request failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No response, or the body broke off (connection error, cut, timeout).
    Transport(reqwest::Error),
    /// An error status.
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
    },
    /// A response that does not fit the request (Content-Range, short body); retried.
    Protocol(String),
    /// Not worth retrying.
    Fatal(FetchError),
}

impl From<FetchError> for Failure {
    fn from(error: FetchError) -> Self {
        Self::Fatal(error)
    }
}

impl From<CacheError> for Failure {
    fn from(error: CacheError) -> Self {
        Self::Fatal(error.into())
    }
}

impl From<reqwest::Error> for Failure {
    fn from(error: reqwest::Error) -> Self {
        Self::Transport(error)
    }
}

impl Failure {
    /// The failure for an error `status`, with the server's `Retry-After`.
    pub(crate) fn status(status: StatusCode, headers: &HeaderMap) -> Self {
        Self::Status {
            status,
            retry_after: retry_after(headers),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Transport(error) => !(error.is_builder() || error.is_redirect()),
            Self::Status { status, .. } => {
                status.is_server_error()
                    || *status == StatusCode::TOO_MANY_REQUESTS
                    || *status == StatusCode::REQUEST_TIMEOUT
            }
            Self::Protocol(_) => true,
            Self::Fatal(_) => false,
        }
    }

    fn into_error(self, url: &FetchUrl, attempts: u32) -> FetchError {
        let url = url.clone();
        match self {
            Self::Transport(source) => FetchError::Transport {
                url,
                attempts,
                source,
            },
            Self::Status { status, .. } => FetchError::HttpStatus {
                url,
                status: status.as_u16(),
                attempts,
                hint: status_hint(status),
            },
            Self::Protocol(problem) => FetchError::HttpProtocol {
                url,
                attempts,
                problem,
            },
            Self::Fatal(error) => error,
        }
    }
}

/// What to check for an error status.
pub(crate) fn status_hint(status: StatusCode) -> &'static str {
    match status.as_u16() {
        404 | 410 => "check the version and the url template",
        401 | 403 => "the server refuses access; check the url and that the file is public",
        407 => "the proxy wants credentials; check the proxy settings",
        408 | 429 => "the server is throttling or slow; retry later or set a file mirror",
        500..=599 => "the server is failing; retry later or set a file mirror",
        _ => "check the url",
    }
}

/// Counts attempts of one fetch and waits between them.
#[derive(Debug)]
pub(crate) struct Retry {
    timing: Timing,
    retries: u32,
    /// Failed attempts since the last progress.
    failures: u32,
    /// Requests made in all.
    attempts: u32,
    /// The furthest offset a download reached: progress beyond it restores the retries.
    furthest: u64,
    jitter: RandomState,
}

impl Retry {
    pub(crate) fn new(retries: u32, timing: Timing) -> Self {
        Self {
            timing,
            retries,
            failures: 0,
            attempts: 0,
            furthest: 0,
            jitter: RandomState::new(),
        }
    }

    /// Notes that a request is being made.
    pub(crate) fn attempt(&mut self) {
        self.attempts += 1;
    }

    /// Notes that a download reached `offset`; reaching further than ever restores the retries.
    pub(crate) fn reached(&mut self, offset: u64) {
        if offset > self.furthest {
            self.furthest = offset;
            self.failures = 0;
        }
    }

    /// After a failed attempt: waits and returns `Ok` if another attempt is due, else the
    /// error to report.
    pub(crate) async fn after(
        &mut self,
        failure: Failure,
        url: &FetchUrl,
    ) -> Result<(), FetchError> {
        if !failure.is_transient() || self.failures >= self.retries {
            return Err(failure.into_error(url, self.attempts));
        }
        let wait = match &failure {
            Failure::Status {
                retry_after: Some(wait),
                ..
            } => (*wait).min(self.timing.max_retry_after),
            _ => self.backoff(),
        };
        tracing::debug!(%url, ?failure, ?wait, "retrying");
        self.failures += 1;
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Exponential backoff with "equal jitter": half fixed, half random.
    fn backoff(&self) -> Duration {
        let doubled = self
            .timing
            .backoff
            .saturating_mul(1 << self.failures.min(16));
        let ceiling = doubled.min(self.timing.max_backoff);
        let half = ceiling / 2;
        let random = self.jitter.hash_one(self.attempts);
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(random % nanos.max(1))
    }
}

/// `Retry-After` as delay-seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = jiff::fmt::rfc2822::parse(value).ok()?;
    let wait = date.timestamp().duration_since(jiff::Timestamp::now());
    Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(retry_after(&headers("7")), Some(Duration::from_secs(7)));
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers("soon")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let timing = Timing {
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(8),
            ..Timing::default()
        };
        let mut retry = Retry::new(10, timing);
        for failures in 0..10 {
            retry.failures = failures;
            let wait = retry.backoff();
            let ceiling = Duration::from_secs(1 << failures.min(3));
            assert!(
                wait >= ceiling / 2 && wait <= ceiling,
                "{failures}: {wait:?}"
            );
        }
    }

    #[test]
    fn which_statuses_are_transient() {
        let transient = |code: u16| {
            Failure::status(StatusCode::from_u16(code).unwrap(), &HeaderMap::new()).is_transient()
        };
        for code in [500, 502, 503, 504, 429, 408] {
            assert!(transient(code), "{code}");
        }
        for code in [400, 401, 403, 404, 410, 416] {
            assert!(!transient(code), "{code}");
        }
    }
}

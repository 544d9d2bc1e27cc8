//! Downloading one file into the cache, resuming and retrying.
//!
//! The bytes go into the cache's partial file for the fetched URL as they arrive. After a cut,
//! the next attempt asks for the rest with `Range: bytes=N-`; a `206` whose `Content-Range`
//! starts at `N` continues the file, a `200` (the server ignored the range) starts it over.
//! A partial file left by an interrupted run is resumed the same way. Should a resumed file fail
//! verification (upstream changed between the runs), it is fetched once more from scratch.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_RANGE, HeaderMap, RANGE};

use super::FetchError;
use super::retry::Failure;
use super::{HttpFetcher, Target, blocking, receive};
use crate::cache::{Cache, CacheError, CachedBlob, Download};
use bundle_spec::Sha256Digest;

/// Progress callback: bytes so far, total if known.
type Progress<'a> = &'a (dyn Fn(u64, Option<u64>) + Send + Sync);

/// What a response to a (range) request means for the download.
enum Accepted {
    /// The body continues (or restarts) the file, which has `total` bytes if known.
    Body { total: Option<u64> },
    /// The partial file already holds the whole file.
    Complete,
}

impl HttpFetcher {
    /// Downloads `url` into `cache`, verified against `expected` if given.
    ///
    /// A cache hit for `expected` makes no request at all. Otherwise the download resumes a
    /// partial file with `Range: bytes=N-` (a `206` with a matching `Content-Range`
    /// continues it, a `200` restarts it), retries connection errors, cuts, 5xx and 429
    /// (honouring `Retry-After` up to a cap) with exponential backoff and jitter, verifies the
    /// digest and size, and reports progress through `progress` (bytes so far, total if known).
    pub async fn download(
        &self,
        url: &str,
        expected: Option<Sha256Digest>,
        cache: &Cache,
        progress: Progress<'_>,
    ) -> Result<CachedBlob, FetchError> {
        let target = self.target(url)?;
        if let Some(expected) = expected {
            let lookup = cache.clone();
            let hit = blocking("checking the cache", move || lookup.get(&expected)).await??;
            if let Some(blob) = hit {
                tracing::debug!(url, digest = %blob.digest, "cache hit");
                progress(blob.size, Some(blob.size));
                return Ok(blob);
            }
        }
        let mut resumed = false;
        match self
            .download_once(&target, expected, cache, progress, &mut resumed)
            .await
        {
            Err(
                error @ FetchError::Cache(
                    CacheError::DigestMismatch { .. } | CacheError::SizeMismatch { .. },
                ),
            ) if resumed => {
                tracing::warn!(url = %target.shown, %error, "a resumed download failed verification; downloading it again from the start");
                self.download_once(&target, expected, cache, progress, &mut resumed)
                    .await
            }
            result => result,
        }
    }

    async fn download_once(
        &self,
        target: &Target,
        expected: Option<Sha256Digest>,
        cache: &Cache,
        progress: Progress<'_>,
        resumed: &mut bool,
    ) -> Result<CachedBlob, FetchError> {
        let (starter, key, what) = (
            cache.clone(),
            target.url.to_string(),
            target.shown.to_string(),
        );
        let download = blocking("resuming a partial download", move || {
            starter.begin(&key, &what, expected)
        })
        .await??;
        *resumed = download.offset() > 0;
        let download = self.transfer(target, download, progress).await?;
        Ok(blocking("storing a download", move || download.finish()).await??)
    }

    /// Requests until the download holds the whole file, or the retries are used up.
    async fn transfer(
        &self,
        target: &Target,
        mut download: Download,
        progress: Progress<'_>,
    ) -> Result<Download, FetchError> {
        let mut retry = self.retry();
        loop {
            retry.attempt();
            let (after, result) = self.transfer_attempt(target, download, progress).await?;
            download = after;
            retry.reached(download.offset());
            match result {
                Ok(()) => return Ok(download),
                Err(failure) => retry.after(failure, &target.shown).await?,
            }
        }
    }

    /// One request for what the download lacks: the download again, with what arrived, and
    /// how the attempt ended. An error of the cache (the download is gone then) ends the
    /// download.
    async fn transfer_attempt(
        &self,
        target: &Target,
        mut download: Download,
        progress: Progress<'_>,
    ) -> Result<(Download, Result<(), Failure>), FetchError> {
        let offset = download.offset();
        let mut request = self
            .inner
            .clients
            .for_url(&target.url)
            .get(target.url.clone());
        if offset > 0 {
            request = request.header(RANGE, format!("bytes={offset}-"));
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Ok((download, Err(error.into()))),
        };
        let total = match accept(response.status(), response.headers(), &mut download) {
            Ok(Accepted::Complete) => return Ok((download, Ok(()))),
            Ok(Accepted::Body { total }) => total,
            Err(failure) => return Ok((download, Err(failure))),
        };
        progress(download.offset(), total);
        let tell = |received: u64| progress(received, total);
        let received = receive(response.bytes_stream(), download, &tell).await??;
        let download = received.download;
        let result = match (received.failure, total) {
            (Some(error), _) => Err(error.into()),
            (None, Some(total)) if download.offset() < total => Err(Failure::Protocol(format!(
                "the body ended after {} of {total} bytes",
                download.offset()
            ))),
            (None, _) => Ok(()),
        };
        Ok((download, result))
    }
}

/// Checks a response against the download's state, restarting the download where the response
/// starts the file over.
fn accept(
    status: StatusCode,
    headers: &HeaderMap,
    download: &mut Download,
) -> Result<Accepted, Failure> {
    let offset = download.offset();
    let content_range = headers
        .get(CONTENT_RANGE)
        .and_then(|value| value.to_str().ok());
    match status {
        StatusCode::PARTIAL_CONTENT => match content_range.and_then(parse_content_range) {
            Some((start, total)) if start == offset => {
                if let Some(total) = total {
                    download.expect_size(total);
                }
                Ok(Accepted::Body { total })
            }
            _ => {
                download.restart()?;
                Err(Failure::Protocol(format!(
                    "the server answered `Range: bytes={offset}-` with `Content-Range: {}`",
                    content_range.unwrap_or("(none)")
                )))
            }
        },
        StatusCode::RANGE_NOT_SATISFIABLE if offset > 0 => {
            // `bytes */N`: the file has N bytes; if we have all of them, we are done.
            let size = content_range
                .and_then(|range| range.strip_prefix("bytes */"))
                .and_then(|size| size.trim().parse::<u64>().ok());
            if size == Some(offset) {
                download.expect_size(offset);
                return Ok(Accepted::Complete);
            }
            download.restart()?;
            Err(Failure::Protocol(format!(
                "the server cannot serve `Range: bytes={offset}-`; starting over"
            )))
        }
        status if status.is_success() => {
            if offset > 0 {
                tracing::debug!(offset, "the server ignored `Range`; starting over");
                download.restart()?;
            }
            let total = headers
                .get(reqwest::header::CONTENT_LENGTH)
                .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
            if let Some(total) = total {
                download.expect_size(total);
            }
            Ok(Accepted::Body { total })
        }
        status => Err(Failure::status(status, headers)),
    }
}

/// `bytes START-END/TOTAL` (or `/*`) as `(START, TOTAL)`.
fn parse_content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let (range, total) = value.trim().strip_prefix("bytes ")?.split_once('/')?;
    let (start, end) = range.split_once('-')?;
    let (start, end) = (start.parse::<u64>().ok()?, end.parse::<u64>().ok()?);
    if end < start {
        return None;
    }
    let total = match total {
        "*" => None,
        total => Some(total.parse::<u64>().ok().filter(|total| *total > end)?),
    };
    Some((start, total))
}

#[cfg(test)]
mod tests {
    use super::parse_content_range;

    #[test]
    fn content_range_forms() {
        assert_eq!(parse_content_range("bytes 5-9/10"), Some((5, Some(10))));
        assert_eq!(parse_content_range("bytes 5-9/*"), Some((5, None)));
        for bad in [
            "bytes 5-9/9",
            "bytes 9-5/10",
            "bytes */10",
            "items 0-1/2",
            "bytes 5-/10",
        ] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }
}

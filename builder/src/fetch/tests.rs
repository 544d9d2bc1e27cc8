//! Fetching against the in-process test server: resumption, retries, verification, mirrors.
//! Nothing here depends on timing: retries wait a few milliseconds at most.

use std::fs;
use std::sync::Mutex;

use bundle_spec::Sha256Digest;

use super::test_server::{Reply, TestServer, fetcher, retrying};
use super::*;
use crate::cache::Cache;

const BODY: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

fn no_progress(_: u64, _: Option<u64>) {}

fn cache() -> (tempfile::TempDir, Cache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    (dir, cache)
}

fn count(dir: &std::path::Path) -> usize {
    fs::read_dir(dir).unwrap().count()
}

/// A server of [`BODY`] that cuts its first answer after `bytes` and answers in full after.
async fn cut_once_after(bytes: usize) -> TestServer {
    TestServer::start(move |request, number| {
        let reply = Reply::file(BODY, request);
        if number == 0 {
            reply.cut_after(bytes)
        } else {
            reply
        }
    })
    .await
}

#[tokio::test]
async fn a_cut_body_is_resumed_with_range_off_the_async_thread() {
    let server = cut_once_after(10).await;
    let (_dir, cache) = cache();
    let digest = Sha256Digest::of(BODY);
    // A `#[tokio::test]` runtime runs every task on this thread.
    let before = crate::cache::file_calls_on_this_thread();
    let blob = retrying(3)
        .download(&server.url("/f"), Some(digest), &cache, &no_progress)
        .await
        .unwrap();
    assert_eq!(fs::read(&blob.path).unwrap(), BODY);
    assert_eq!(
        crate::cache::file_calls_on_this_thread(),
        before,
        "blocking cache file operations ran on the async thread"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("range"), None);
    assert_eq!(requests[1].header("range"), Some("bytes=10-"));
}

#[tokio::test]
async fn an_interrupted_run_is_resumed_by_the_next() {
    let server = cut_once_after(7).await;
    let (_dir, cache) = cache();
    let url = server.url("/f");
    let error = retrying(0)
        .download(&url, None, &cache, &no_progress)
        .await
        .unwrap_err();
    assert!(
        matches!(error, FetchError::Transport { attempts: 1, .. }),
        "{error:?}"
    );
    let blob = retrying(0)
        .download(&url, None, &cache, &no_progress)
        .await
        .unwrap();
    assert_eq!(blob.digest, Sha256Digest::of(BODY));
    assert_eq!(server.requests()[1].range_start(), Some(7));
}

#[tokio::test]
async fn a_server_ignoring_range_restarts_the_file() {
    let server = TestServer::start(|_, number| {
        let reply = Reply::ok(BODY);
        if number == 0 {
            reply.cut_after(7)
        } else {
            reply
        }
    })
    .await;
    let (_dir, cache) = cache();
    let blob = retrying(1)
        .download(
            &server.url("/f"),
            Some(Sha256Digest::of(BODY)),
            &cache,
            &no_progress,
        )
        .await
        .unwrap();
    assert_eq!(fs::read(&blob.path).unwrap(), BODY);
    assert_eq!(server.requests()[1].range_start(), Some(7));
}

#[tokio::test]
async fn server_errors_and_throttling_are_retried() {
    let server = TestServer::start(|request, number| match number {
        0 => Reply::status(500),
        1 => Reply::status(429).header("Retry-After", "1"),
        2 => Reply::status(503),
        _ => Reply::file(BODY, request),
    })
    .await;
    let (_dir, cache) = cache();
    let blob = retrying(3)
        .download(&server.url("/f"), None, &cache, &no_progress)
        .await
        .unwrap();
    assert_eq!(blob.digest, Sha256Digest::of(BODY));
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn retries_run_out() {
    let server = TestServer::start(|_, _| Reply::status(502)).await;
    let (_dir, cache) = cache();
    let error = retrying(2)
        .download(&server.url("/f"), None, &cache, &no_progress)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            FetchError::HttpStatus {
                status: 502,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn not_found_fails_at_once_with_a_hint() {
    let server = TestServer::start(|_, _| Reply::status(404)).await;
    let (_dir, cache) = cache();
    let url = server.url("/v9.9.9/f");
    let message = retrying(5)
        .download(&url, None, &cache, &no_progress)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(server.requests().len(), 1);
    for part in [
        url.as_str(),
        "`404`",
        "check the version and the url template",
    ] {
        assert!(message.contains(part), "{message} lacks {part}");
    }
}

#[tokio::test]
async fn a_wrong_digest_fails_and_stores_nothing() {
    let server = TestServer::start(|request, _| Reply::file(BODY, request)).await;
    let (dir, cache) = cache();
    let url = server.url("/f");
    let expected = Sha256Digest::of(b"something else");
    let error = retrying(3)
        .download(&url, Some(expected), &cache, &no_progress)
        .await
        .unwrap_err();
    let message = error.to_string();
    for part in [
        url.clone(),
        expected.to_string(),
        Sha256Digest::of(BODY).to_string(),
        "the pinned sha256 is wrong".to_owned(),
    ] {
        assert!(message.contains(&part), "{message} lacks {part}");
    }
    assert_eq!(count(&dir.path().join("blobs/sha256")), 0);
    assert_eq!(count(&dir.path().join("partial")), 0);
    assert_eq!(server.requests().len(), 1, "a mismatch is not retried");
}

#[tokio::test]
async fn a_stale_partial_is_fetched_again_from_scratch() {
    let server = TestServer::start(|request, _| Reply::file(BODY, request)).await;
    let (_dir, cache) = cache();
    let url = server.url("/f");
    // A previous run got 5 bytes of an older version of the file.
    let mut stale = cache.begin(&url, "`stale`", None).unwrap();
    stale.write(b"XXXXX").unwrap();
    drop(stale);
    let blob = retrying(0)
        .download(&url, Some(Sha256Digest::of(BODY)), &cache, &no_progress)
        .await
        .unwrap();
    assert_eq!(fs::read(&blob.path).unwrap(), BODY);
    let requests = server.requests();
    assert_eq!(requests[0].range_start(), Some(5));
    assert_eq!(requests[1].range_start(), None);
}

#[tokio::test]
async fn a_cache_hit_makes_no_request() {
    let server = TestServer::start(|request, _| Reply::file(BODY, request)).await;
    let (_dir, cache) = cache();
    let stored = cache.put_bytes(BODY, None).unwrap();
    let seen = Mutex::new(None);
    let progress = |done, total| *seen.lock().unwrap() = Some((done, total));
    let blob = retrying(0)
        .download(&server.url("/f"), Some(stored.digest), &cache, &progress)
        .await
        .unwrap();
    assert_eq!(blob, stored);
    assert!(server.requests().is_empty());
    let size = BODY.len() as u64;
    assert_eq!(*seen.lock().unwrap(), Some((size, Some(size))));
}

#[tokio::test]
async fn a_corrupt_cache_entry_is_refetched() {
    let server = TestServer::start(|request, _| Reply::file(BODY, request)).await;
    let (_dir, cache) = cache();
    let stored = cache.put_bytes(BODY, None).unwrap();
    fs::write(&stored.path, b"bit rot").unwrap();
    let blob = retrying(0)
        .download(&server.url("/f"), Some(stored.digest), &cache, &no_progress)
        .await
        .unwrap();
    assert_eq!(fs::read(&blob.path).unwrap(), BODY);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn progress_reaches_the_total() {
    let server = TestServer::start(|request, _| Reply::file(BODY, request)).await;
    let (_dir, cache) = cache();
    let seen = Mutex::new(Vec::new());
    let progress = |done, total| seen.lock().unwrap().push((done, total));
    retrying(0)
        .download(&server.url("/f"), None, &cache, &progress)
        .await
        .unwrap();
    let size = BODY.len() as u64;
    assert_eq!(seen.lock().unwrap().last(), Some(&(size, Some(size))));
}

#[tokio::test]
async fn downloads_go_through_file_mirrors() {
    let server = TestServer::start(|request, _| {
        if request.path == "/mirror/dl.example.org/release/v1/f" {
            Reply::file(BODY, request)
        } else {
            Reply::status(404)
        }
    })
    .await;
    let fetcher = fetcher(FetchOptions {
        file_mirrors: [(
            "dl.example.org".to_owned(),
            server.url("/mirror/dl.example.org/"),
        )]
        .into(),
        ..FetchOptions::default()
    });
    let (_dir, cache) = cache();
    let blob = fetcher
        .download(
            "https://dl.example.org/release/v1/f",
            None,
            &cache,
            &no_progress,
        )
        .await
        .unwrap();
    assert_eq!(blob.digest, Sha256Digest::of(BODY));

    let message = fetcher
        .download(
            "https://dl.example.org/release/v2/f",
            None,
            &cache,
            &no_progress,
        )
        .await
        .unwrap_err()
        .to_string();
    let expected = format!(
        "`https://dl.example.org/release/v2/f` (fetched as `{}`)",
        server.url("/mirror/dl.example.org/release/v2/f")
    );
    assert!(message.contains(&expected), "{message}");
}

#[test]
fn mirrored_rewrites_only_mirrored_hosts() {
    let fetcher = fetcher(FetchOptions {
        file_mirrors: [
            (
                "dl.k8s.io".to_owned(),
                "http://127.0.0.1:8080/dl.k8s.io".to_owned(),
            ),
            ("example.org:8443".to_owned(), "http://mirror/e/".to_owned()),
            ("github.com:443".to_owned(), "http://mirror/gh".to_owned()),
        ]
        .into(),
        ..FetchOptions::default()
    });
    let cases = [
        (
            "https://dl.k8s.io/release/x",
            "http://127.0.0.1:8080/dl.k8s.io/release/x",
        ),
        (
            "https://dl.k8s.io/a/b?c=d#e",
            "http://127.0.0.1:8080/dl.k8s.io/a/b?c=d",
        ),
        ("https://example.org:8443/x", "http://mirror/e/x"),
        ("https://example.org/x", "https://example.org/x"),
        ("https://github.com/a/b", "http://mirror/gh/a/b"),
        ("http://github.com/a/b", "http://github.com/a/b"),
        ("https://gitlab.com/x", "https://gitlab.com/x"),
        ("not a url", "not a url"),
    ];
    for (url, expected) in cases {
        assert_eq!(fetcher.mirrored(url), expected, "{url}");
    }
}

#[tokio::test]
async fn text_is_size_capped_and_retried() {
    let server = TestServer::start(|request, number| match (request.path.as_str(), number) {
        (_, 0) => Reply::status(503),
        ("/big", _) => Reply::ok(vec![b'a'; 100]),
        ("/binary", _) => Reply::ok(vec![0xff, 0xfe]),
        _ => Reply::ok("abc  file\n"),
    })
    .await;
    let fetcher = retrying(1);
    assert_eq!(
        fetcher.text(&server.url("/sums")).await.unwrap(),
        "abc  file\n"
    );
    let error = fetcher
        .text_with_limit(&server.url("/big"), 10)
        .await
        .unwrap_err();
    assert!(
        matches!(error, FetchError::TooLarge { limit: 10, .. }),
        "{error:?}"
    );
    let error = fetcher.text(&server.url("/binary")).await.unwrap_err();
    assert!(matches!(error, FetchError::NotText { .. }), "{error:?}");
}

#[test]
fn a_bad_ca_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    fs::write(&path, "not a certificate").unwrap();
    let options = FetchOptions {
        ca_files: [("files.example.org".to_owned(), path.clone())].into(),
        insecure_hosts: ["other.example.org".to_owned()].into(),
        ..FetchOptions::default()
    };
    let message = HttpFetcher::new(options).unwrap_err().to_string();
    assert!(message.contains("files.example.org"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
}

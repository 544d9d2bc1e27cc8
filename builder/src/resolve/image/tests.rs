//! Images against a scripted registry on the in-process test server: blob sizes held to their
//! descriptors, and the cache's file work kept off the async thread.

use std::time::Duration;

use bundle_spec::Sha256Digest;
use bundle_spec::platform::Platform;

use super::*;
use crate::cache;
use crate::fetch::test_server::{Reply, Request, TestServer};

const LAYER: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

fn no_progress(_: u64, _: Option<u64>) {}

fn cache() -> (tempfile::TempDir, Cache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    (dir, cache)
}

fn layer() -> BlobRef {
    BlobRef {
        media_type: "application/vnd.oci.image.layer.v1.tar".to_owned(),
        digest: Sha256Digest::of(LAYER),
        size: LAYER.len() as u64,
    }
}

fn blob_path(digest: &Sha256Digest) -> String {
    format!("/v2/test/app/blobs/{digest}")
}

/// A registry serving `reply(request)` for `path` (and an anonymous `/v2/`).
async fn registry(
    path: String,
    reply: impl Fn(&Request) -> Reply + Send + Sync + 'static,
) -> TestServer {
    TestServer::start(move |request, _| match request.path.as_str() {
        "/v2/" => Reply::ok(""),
        p if p == path => reply(request),
        _ => Reply::status(404),
    })
    .await
}

fn image(server: &TestServer) -> (RegistryAccess, ImageSource) {
    let source = ImageSource::parse(&format!("{}/test/app:1.0", server.host())).unwrap();
    (RegistryAccess::plain_http(&server.host()), source)
}

async fn fetch_layer(
    server: &TestServer,
    cache: &Cache,
    blob: &BlobRef,
) -> Result<CachedBlob, ResolveError> {
    let (access, source) = image(server);
    let fetch = access.fetch_reference(&source.reference);
    let fetching = fetch_blob(&access, cache, &source, &fetch, blob, &no_progress);
    tokio::time::timeout(Duration::from_secs(20), fetching)
        .await
        .expect("the fetch finished without waiting for the rest of the body")
}

/// Options resolving for `platforms`, with nothing locked and no key to check.
fn options(platforms: &[Platform]) -> ResolveOptions<'_> {
    ResolveOptions {
        platforms,
        allow_missing_platforms: false,
        locked_referrers: None,
        verify: None,
    }
}

fn blob_requests(server: &TestServer, digest: &Sha256Digest) -> Vec<Request> {
    server
        .requests()
        .into_iter()
        .filter(|request| request.path == blob_path(digest))
        .collect()
}

#[tokio::test]
async fn a_blob_longer_than_its_descriptor_is_cut_off_as_soon_as_it_is() {
    // The registry announces a long body, sends ten bytes more than the descriptor's size and
    // then nothing: only a client counting while it downloads stops before its read timeout.
    let mut long = LAYER.to_vec();
    long.extend_from_slice(&[b'!'; 1000]);
    let blob = layer();
    let server = registry(blob_path(&blob.digest), move |_| {
        Reply::ok(long.clone()).stall_after(LAYER.len() + 10)
    })
    .await;
    let (_dir, cache) = cache();
    let error = fetch_layer(&server, &cache, &blob).await.unwrap_err();
    let ResolveError::Cache(CacheError::SizeMismatch {
        what,
        expected,
        actual,
    }) = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(*expected, blob.size);
    assert!(*actual > blob.size && *actual <= blob.size + 10, "{error}");
    assert!(what.contains(&blob.digest.to_string()), "{error}");
    let message = error.to_string();
    for part in [blob.digest.to_string(), "36".to_owned(), actual.to_string()] {
        assert!(message.contains(&part), "{message} lacks {part}");
    }
    assert_eq!(cache.get(&blob.digest).unwrap(), None);
}

#[tokio::test]
async fn a_blob_shorter_than_its_descriptor_is_an_error_naming_it() {
    let blob = layer();
    let server = registry(blob_path(&blob.digest), |_| Reply::ok(&LAYER[..30])).await;
    let (_dir, cache) = cache();
    let error = fetch_layer(&server, &cache, &blob).await.unwrap_err();
    assert!(
        matches!(
            &error,
            ResolveError::Cache(CacheError::SizeMismatch { what, expected: 36, actual: 30 })
                if what.contains(&blob.digest.to_string())
        ),
        "{error:?}"
    );
    assert_eq!(cache.get(&blob.digest).unwrap(), None);
}

/// What an earlier, interrupted run left of `blob` in the cache: its first `bytes`.
fn leave_partial(cache: &Cache, blob: &BlobRef, bytes: &[u8]) {
    let mut earlier = cache
        .begin(&format!("oci/{}", blob.digest.hex()), "earlier", None)
        .unwrap();
    earlier.write(bytes).unwrap();
}

#[tokio::test]
async fn a_partial_blob_is_resumed_with_range() {
    let blob = layer();
    let server = registry(blob_path(&blob.digest), |request| {
        Reply::file(LAYER, request)
    })
    .await;
    let (_dir, cache) = cache();
    leave_partial(&cache, &blob, &LAYER[..10]);
    let stored = fetch_layer(&server, &cache, &blob).await.unwrap();
    assert_eq!(std::fs::read(&stored.path).unwrap(), LAYER);
    let requests = blob_requests(&server, &blob.digest);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].range_start(), Some(10));
}

#[tokio::test]
async fn a_partial_blob_holding_every_byte_needs_no_request() {
    // A run stopped between the last byte and storing the blob: a range from its end cannot
    // be served (`416`), so none is asked for.
    let blob = layer();
    let server = registry(blob_path(&blob.digest), |request| {
        Reply::file(LAYER, request)
    })
    .await;
    let (_dir, cache) = cache();
    leave_partial(&cache, &blob, LAYER);
    let stored = fetch_layer(&server, &cache, &blob).await.unwrap();
    assert_eq!(std::fs::read(&stored.path).unwrap(), LAYER);
    assert!(blob_requests(&server, &blob.digest).is_empty());
}

#[tokio::test]
async fn resolving_and_fetching_leave_the_cache_files_to_the_blocking_pool() {
    let config = br#"{"os":"linux","architecture":"amd64"}"#;
    let config_digest = Sha256Digest::of(config);
    let blob = layer();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{}}},"layers":[{{"mediaType":"{}","digest":"{}","size":{}}}]}}"#,
        config.len(),
        blob.media_type,
        blob.digest,
        blob.size,
    );
    let (layer_path, config_path) = (blob_path(&blob.digest), blob_path(&config_digest));
    let server = TestServer::start(move |request, _| match request.path.as_str() {
        "/v2/" => Reply::ok(""),
        "/v2/test/app/manifests/1.0" => Reply::ok(manifest.clone()),
        p if p == config_path => Reply::file(config, request),
        p if p == layer_path => Reply::file(LAYER, request),
        _ => Reply::status(404),
    })
    .await;
    let (_dir, cache) = cache();
    let (access, source) = image(&server);
    let platforms = ["linux/amd64".parse::<Platform>().unwrap()];
    let options = options(&platforms);
    // A `#[tokio::test]` runtime runs every task on this thread.
    let before = cache::file_calls_on_this_thread();
    let resolved = resolve_image(&access, &cache, &source, None, options, &|_| {})
        .await
        .unwrap();
    assert_eq!(resolved.blobs.len(), 2);
    let fetch = access.fetch_reference(&source.reference);
    for _ in 0..2 {
        // Downloaded, then a cache hit.
        let stored = fetch_blob(&access, &cache, &source, &fetch, &blob, &no_progress)
            .await
            .unwrap();
        assert_eq!(stored.digest, blob.digest);
    }
    assert_eq!(
        cache::file_calls_on_this_thread(),
        before,
        "blocking cache file operations ran on the async thread"
    );
    assert_eq!(blob_requests(&server, &blob.digest).len(), 1);
    for digest in [resolved.top.digest, config_digest, blob.digest] {
        assert!(cache.get(&digest).unwrap().is_some(), "{digest} not cached");
    }
}

/// A manifest named by digest is read from the cache when it is there: a rebuild asks the
/// registry for an index's tag, not again for its platform manifests. A damaged copy is fetched
/// anew.
#[tokio::test]
async fn a_platform_manifest_in_the_cache_is_not_asked_for_again_unless_damaged() {
    let config = br#"{"os":"linux","architecture":"amd64"}"#;
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[]}}"#,
        Sha256Digest::of(config),
        config.len(),
    );
    let manifest_digest = Sha256Digest::of(manifest.as_bytes());
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{manifest_digest}","size":{},"platform":{{"os":"linux","architecture":"amd64"}}}}]}}"#,
        manifest.len(),
    );
    let by_digest = format!("/v2/test/app/manifests/{manifest_digest}");
    let platform_path = by_digest.clone();
    let server = TestServer::start(move |request, _| match request.path.as_str() {
        "/v2/" => Reply::ok(""),
        "/v2/test/app/manifests/1.0" => Reply::ok(index.clone()),
        p if p == platform_path => Reply::ok(manifest.clone()),
        _ => Reply::status(404),
    })
    .await;
    let (_dir, cache) = cache();
    let (access, mut source) = image(&server);
    source.bundle_referrers = false;
    let platforms = ["linux/amd64".parse::<Platform>().unwrap()];
    let options = options(&platforms);
    let asked = || {
        let requests = server.requests();
        let count = |path: &str| requests.iter().filter(|r| r.path == path).count();
        (count("/v2/test/app/manifests/1.0"), count(&by_digest))
    };
    for (run, expected) in [(1, (1, 1)), (2, (2, 1))] {
        let resolved = resolve_image(&access, &cache, &source, None, options, &|_| {})
            .await
            .unwrap();
        assert_eq!(resolved.manifests[0].1.digest, manifest_digest, "run {run}");
        assert_eq!(
            asked(),
            expected,
            "run {run}: (tag, platform manifest) requests"
        );
    }
    std::fs::write(cache.blob_path(&manifest_digest), b"{}").unwrap();
    let resolved = resolve_image(&access, &cache, &source, None, options, &|_| {})
        .await
        .unwrap();
    assert_eq!(resolved.manifests[0].1.digest, manifest_digest);
    assert_eq!(asked(), (3, 2), "the damaged copy is fetched anew");
    assert_eq!(
        cache
            .read_small(&manifest_digest)
            .unwrap()
            .map(|b| Sha256Digest::of(&b)),
        Some(manifest_digest),
        "and stored again"
    );
}

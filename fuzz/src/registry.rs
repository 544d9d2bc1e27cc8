//! The registry target: requests built from the input (path, `Range`, `Accept`) sent to the
//! registry's router over a small store with one image, as containerd, skopeo or a scanner would.

use std::fs;
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{Method, Request, header};
use bundle_spec::write::WriteOptions;
use bundle_spec::{BlobFile, BundleContents, Sha256Digest, write_bundle};
use kk_install::registry::{Store, router};
use tower::ServiceExt as _;

/// The store, the runtime, and the directory that holds the store.
struct Served {
    store: Store,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

/// One image (`docker.io/library/busybox:1.36`: manifest, config, layer) in a store, made once
/// per process through a bundle, as an operator's store is.
fn served() -> &'static Served {
    static SERVED: OnceLock<Served> = OnceLock::new();
    SERVED.get_or_init(|| {
        let dir = tempfile::tempdir().expect("dir");
        let mut blobs = Vec::new();
        let mut add = |bytes: &[u8]| {
            let digest = Sha256Digest::of(bytes);
            let path = dir.path().join(digest.hex());
            fs::write(&path, bytes).expect("blob");
            blobs.push(BlobFile {
                digest,
                size: bytes.len() as u64,
                path,
            });
            (digest, bytes.len())
        };
        let layer = add(&b"layer".repeat(300));
        let config = add(br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#);
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{}","size":{}}}]}}"#,
            config.0, config.1, layer.0, layer.1
        );
        let top = add(manifest.as_bytes());
        let index = serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": top.0.to_string(),
                "size": top.1,
                "annotations": {"org.opencontainers.image.ref.name": "docker.io/library/busybox:1.36"},
            }],
        });
        let created = jiff::Timestamp::from_second(1_795_000_000).expect("time");
        let contents = BundleContents {
            description: bundle_spec::test_support::description(created, vec![]),
            index: serde_json::from_value(index).expect("index"),
            blobs,
        };
        let bundle = dir.path().join("b.tar.zst");
        write_bundle(&contents, &bundle, &WriteOptions::default()).expect("bundle");
        let store_dir = dir.path().join("store");
        let mut opened = bundle_spec::Bundle::open(&bundle).expect("bundle");
        kk_install::registry::unpack(&mut opened, &store_dir, &mut |_| {}).expect("unpack");
        Served {
            store: Store::open(&store_dir).expect("store"),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            _dir: dir,
        }
    })
}

/// The input's first line is the request target (`/v2/...?ns=...`), the second a `Range` header,
/// the third an `Accept` header; an odd first byte makes it a HEAD request.
pub fn registry_request(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let target = lines.next().unwrap_or_default();
    let method = if data.first().is_some_and(|b| b % 2 == 1) {
        Method::HEAD
    } else {
        Method::GET
    };
    let mut request = Request::builder().method(method).uri(target);
    if let Some(range) = lines.next().filter(|r| !r.is_empty()) {
        request = request.header(header::RANGE, range);
    }
    if let Some(accept) = lines.next().filter(|a| !a.is_empty()) {
        request = request.header(header::ACCEPT, accept);
    }
    let Ok(request) = request.body(Body::empty()) else {
        return;
    };
    let served = served();
    served.runtime.block_on(async {
        // The router's error type is `Infallible`: every request gets a response.
        let Ok(response) = router(served.store.clone()).oneshot(request).await;
        let _ = axum::body::to_bytes(response.into_body(), 1 << 20).await;
    });
}

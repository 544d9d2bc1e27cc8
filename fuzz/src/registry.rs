//! The registry target: requests built from the input (path, `Range`, `Accept`) sent to the
//! registry's router over a small store with one image, as containerd, skopeo or a scanner would.

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{Method, Request, header};
use bundle_spec::test_support::{TestImage, write_images};
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
        let image = TestImage {
            reference: "docker.io/library/busybox:1.36",
            layers: &[&b"layer".repeat(300)],
        };
        let bundle = write_images(dir.path(), "b", &[image], None).path;
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

//! A read-only OCI distribution registry serving an unpacked bundle store.
//!
//! The store is the directory a bundle unpacks to: an OCI image layout (`oci-layout`,
//! `index.json`, `blobs/sha256/<hex>`) plus `kk-bundle/` (each bundle's header files and
//! revision record: [`summarize`], [`prune`]). [`Store::open`] reads `index.json` once and
//! builds the repository map; [`router`] serves the pull side of the OCI distribution spec over
//! it (`/v2/`, manifests, blobs with ranges, tag lists, `_catalog`, referrers), and reopens the
//! store when `index.json` is replaced. Every push or delete request is answered
//! `405 UNSUPPORTED`.
//!
//! # Addressing
//!
//! `index.json` names every artifact by its fully qualified source reference (bundle format
//! §5), `host[:port]/path[:tag][@digest]`. A registry cannot serve that verbatim: a
//! repository name is `/`-separated components of `[a-z0-9]` separated by `.`, `_`, `__` or
//! dashes, with no `:`. So:
//!
//! 1. **Repository name.** The ref name `host/path:tag` is served as repository
//!    `H/path`, tag `tag`, where `H` is the host in lowercase with the `:` before a port
//!    replaced by `_`:
//!    `docker.io/library/busybox:1.36` → `docker.io/library/busybox` tag `1.36`;
//!    `registry.local:5000/app:1` → `registry.local_5000/app` tag `1`;
//!    `kk.internal/binaries/etcd:v3.5.16` → `kk.internal/binaries/etcd` tag `v3.5.16`.
//!    Keeping the host makes two sources with the same path (`docker.io/x/app`,
//!    `quay.io/x/app`) distinct, and lets a client pull `REGISTRY/docker.io/library/busybox:1.36`
//!    with no configuration. The mapping is **injective**: a host name never contains `_`
//!    (DNS labels are letters, digits and `-`), so the first component gives back the host and
//!    port, and the rest of the name is the path verbatim. Two ref names that still map to
//!    the same repository and tag (hosts differing only in case) with different manifests make
//!    [`Store::open`] fail rather than serve one of them.
//! 2. **Mirror form.** containerd, configured with this registry as a mirror of a host, asks
//!    for the path alone and says which host it means with the query `?ns=<host[:port]>`. A
//!    request for `NAME` with `?ns=HOST` is served from repository `H/NAME` (`H` as above):
//!    `library/busybox?ns=docker.io` is `docker.io/library/busybox`, `app?ns=registry.local:5000`
//!    is `registry.local_5000/app`. If no such repository exists, `NAME` is looked up as a
//!    repository name of rule 1 (a client pulling `REGISTRY/docker.io/library/busybox` through
//!    containerd sends `ns=REGISTRY`).
//! 3. **Digests.** A digest-form ref name (`quay.io/x/app@sha256:…`) creates the repository
//!    (`quay.io/x/app`) but no tag: it is served by digest only. A ref name with both a tag and
//!    a digest is served by both.
//! 4. **By digest.** A repository serves by digest the manifests its ref names reach: the
//!    manifest or index itself, the platform manifests of an index that the bundle carries, and
//!    manifests whose `subject` is one of those (the referrers). The referrers API lists those,
//!    and also the manifests cosign's tags name (`sha256-<hex>.sig`, `.att`, `.sbom`: no
//!    `subject`, the digest is in the tag), so both of cosign's ways find the same signatures;
//!    a bundle carries the referrers tag-schema index (`sha256-<hex>`) as a tag too. A blob is
//!    served for any repository of the map if `blobs/sha256/<hex>` exists, as registries with a
//!    shared blob store do.
//!
//! Every repository appears in `_catalog` under its rule-1 name.
//!
//! # Media types
//!
//! A manifest is served with the media type it is stored under: the `mediaType` of its
//! descriptor in `index.json`, or for a manifest reached through an index, of the index's
//! descriptor for it, or else the `mediaType` field of the document. The `Accept` header is
//! not consulted: the stored bytes are the only form there is, and their digest is what the
//! client asked for. Blobs are `application/octet-stream`.
//!
//! # Safety
//!
//! Requests only ever open `blobs/sha256/<64 lowercase hex>` below the store, and only regular
//! files (not symbolic links). Names, tags and digests are checked against their grammars
//! before use; a malformed request gets a 4xx answer with an OCI error body.

mod api;
mod error;
mod live;
mod names;
mod revisions;
mod serve;
mod store;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, Request, header};
use axum::response::Response;
use axum::routing::any;
use tower_http::trace::TraceLayer;
use tracing::Span;

pub use error::{RegistryError, RevisionError};
pub use revisions::{RevisionSummary, summarize, table};
pub use serve::{ServeError, TlsFiles, bind, serve};
pub use store::{Pruned, Revision, Store, Unpacked, check_base, list as revisions, prune, unpack};

/// The router serving `store` read-only under `/v2/`, with access logging through `tracing`
/// (target `kk_install::registry::access`, level INFO: method, path, status, bytes,
/// duration). When the store's `index.json` is replaced (an unpack, a prune), the next
/// request reopens it (see `live`).
pub fn router(store: Store) -> Router {
    Router::new()
        .route("/v2", any(api::dispatch))
        .route("/v2/", any(api::dispatch))
        .route("/v2/{*rest}", any(api::dispatch))
        .with_state(live::Live::new(store))
        .layer(axum::middleware::map_response(api_version))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| {
                    tracing::info_span!(
                        "registry",
                        method = %request.method(),
                        path = %request.uri(),
                    )
                })
                .on_request(())
                .on_response(|response: &Response, latency: Duration, _span: &Span| {
                    let bytes = response
                        .headers()
                        .get(header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok());
                    tracing::info!(
                        target: "kk_install::registry::access",
                        status = response.status().as_u16(),
                        bytes,
                        duration_ms = latency.as_secs_f64() * 1000.0,
                        "served"
                    );
                }),
        )
}

/// Adds `Docker-Distribution-API-Version: registry/2.0` to every response.
async fn api_version(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(api::API_VERSION, HeaderValue::from_static("registry/2.0"));
    response
}

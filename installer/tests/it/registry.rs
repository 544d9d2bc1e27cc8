//! The read-only registry over a hand-built OCI layout: protocol details through
//! `tower::ServiceExt::oneshot`, and one real client (skopeo) over TCP.

use std::io::Write as _;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use axum::response::Response;
use bundle_spec::Sha256Digest;
use bundle_spec::oci::{
    DOCKER_MANIFEST_MEDIA_TYPE as DOCKER_MANIFEST, INDEX_MEDIA_TYPE as OCI_INDEX,
    MANIFEST_MEDIA_TYPE as OCI_MANIFEST, REF_NAME_ANNOTATION as REF_NAME,
};
use bundle_spec::test_support::{HandLayout, descriptor, manifest_bytes, named};
use kk_install::error::RegistryError;
use kk_install::registry::{Store, router};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// The layout and the digests the tests need.
struct Layout {
    dir: tempfile::TempDir,
    index: Sha256Digest,
    amd64: Sha256Digest,
    arm64: Sha256Digest,
    docker: Sha256Digest,
    pinned: Sha256Digest,
    sbom: Sha256Digest,
    layer: Sha256Digest,
    layer_bytes: Vec<u8>,
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn served_layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let root = &HandLayout::new(dir.path());
    std::fs::create_dir_all(dir.path().join("kk-bundle")).unwrap();

    let layer_bytes = gzip(
        &(0..4000u32)
            .map(|i| (i * 7 % 251) as u8)
            .collect::<Vec<_>>(),
    );
    let layer = root.put_blob(&layer_bytes);
    let layer_desc = descriptor(
        "application/vnd.oci.image.layer.v1.tar+gzip",
        layer,
        layer_bytes.len(),
    );
    let platform_manifest = |arch: &str, with_media_type: bool| {
        let config = format!(
            r#"{{"architecture":"{arch}","os":"linux","rootfs":{{"type":"layers","diff_ids":[]}}}}"#
        );
        let config = root.blob_descriptor(
            "application/vnd.oci.image.config.v1+json",
            config.as_bytes(),
        );
        let mut value = json!({ "schemaVersion": 2, "config": config, "layers": [layer_desc] });
        if with_media_type {
            value["mediaType"] = json!(OCI_MANIFEST);
        }
        manifest_bytes(&value)
    };
    // The amd64 manifest has no `mediaType` field: its type comes from the index's descriptor.
    let amd64_bytes = platform_manifest("amd64", false);
    let arm64_bytes = platform_manifest("arm64", true);
    let mut amd64_desc = root.blob_descriptor(OCI_MANIFEST, &amd64_bytes);
    amd64_desc["platform"] = json!({ "os": "linux", "architecture": "amd64" });
    let mut arm64_desc = root.blob_descriptor(OCI_MANIFEST, &arm64_bytes);
    arm64_desc["platform"] = json!({ "os": "linux", "architecture": "arm64" });
    let (amd64, arm64) = (
        Sha256Digest::of(&amd64_bytes),
        Sha256Digest::of(&arm64_bytes),
    );
    let index_bytes = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [amd64_desc, arm64_desc]
    }));
    let index_desc = root.blob_descriptor(OCI_INDEX, &index_bytes);
    let index = Sha256Digest::of(&index_bytes);

    let docker_config = root.blob_descriptor(
        "application/vnd.docker.container.image.v1+json",
        br#"{"architecture":"amd64","os":"linux"}"#,
    );
    let docker_bytes = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": DOCKER_MANIFEST, "config": docker_config,
        "layers": [{ "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                     "digest": layer.to_string(), "size": layer_bytes.len() }]
    }));
    let docker_desc = root.blob_descriptor(DOCKER_MANIFEST, &docker_bytes);
    let docker = Sha256Digest::of(&docker_bytes);

    let pinned_bytes = platform_manifest("s390x", true);
    let pinned_desc = root.blob_descriptor(OCI_MANIFEST, &pinned_bytes);
    let pinned = Sha256Digest::of(&pinned_bytes);

    let empty = root.blob_descriptor("application/vnd.oci.empty.v1+json", b"{}");
    let etcd_bytes = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "artifactType": "application/vnd.kk.binary.v1", "config": empty,
        "layers": [root.blob_descriptor("application/octet-stream", b"etcd binary")]
    }));
    let etcd_desc = root.blob_descriptor(OCI_MANIFEST, &etcd_bytes);
    let chart_bytes = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": root.blob_descriptor("application/vnd.cncf.helm.config.v1+json", br#"{"name":"x"}"#),
        "layers": [root.blob_descriptor("application/vnd.cncf.helm.chart.content.v1.tar+gzip", &gzip(b"chart"))]
    }));
    let chart_desc = root.blob_descriptor(OCI_MANIFEST, &chart_bytes);

    // An SBOM referring to the busybox index; index.json lists it without a ref name.
    let sbom_bytes = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "artifactType": "application/vnd.example.sbom", "config": empty,
        "layers": [root.blob_descriptor("application/json", b"{\"sbom\":true}")],
        "subject": index_desc,
        "annotations": { "org.example.kind": "sbom" }
    }));
    let sbom_desc = root.blob_descriptor(OCI_MANIFEST, &sbom_bytes);
    let sbom = Sha256Digest::of(&sbom_bytes);

    root.write_index(&[
        named(index_desc.clone(), "docker.io/library/busybox:1.36"),
        named(index_desc, "docker.io/library/busybox:latest"),
        named(docker_desc, "registry.local:5000/app:1"),
        named(pinned_desc, &format!("quay.io/x/app@{pinned}")),
        named(etcd_desc, "kk.internal/binaries/etcd:v3.5.16"),
        named(chart_desc, "kk.internal/charts/x:1"),
        sbom_desc,
    ]);
    std::fs::write(dir.path().join("kk-bundle/bundle.json"), b"{}").unwrap();
    Layout {
        dir,
        index,
        amd64,
        arm64,
        docker,
        pinned,
        sbom,
        layer,
        layer_bytes,
    }
}

fn blob_bytes(layout: &Layout, digest: Sha256Digest) -> Vec<u8> {
    std::fs::read(layout.dir.path().join("blobs/sha256").join(digest.hex())).unwrap()
}

async fn send(layout: &Layout, method: Method, uri: &str, range: Option<&str>) -> Response {
    let store = Store::open(layout.dir.path()).unwrap();
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(range) = range {
        request = request.header(header::RANGE, range);
    }
    router(store)
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap()
}

async fn get(layout: &Layout, uri: &str) -> Response {
    send(layout, Method::GET, uri, None).await
}

async fn body(response: Response) -> Vec<u8> {
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec()
}

fn header_of<'a>(response: &'a Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .map_or("", |v| v.to_str().unwrap())
}

/// The status and the first error code of an error response.
async fn error_code(response: Response) -> (StatusCode, String) {
    let status = response.status();
    let value: Value = serde_json::from_slice(&body(response).await).unwrap();
    (
        status,
        value["errors"][0]["code"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn base_endpoint_answers_with_the_api_version() {
    let layout = served_layout();
    for uri in ["/v2/", "/v2"] {
        let response = get(&layout, uri).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            header_of(&response, "docker-distribution-api-version"),
            "registry/2.0"
        );
        assert_eq!(body(response).await, b"{}");
    }
}

#[tokio::test]
async fn manifests_are_served_by_tag_and_digest_with_their_stored_media_type() {
    let layout = served_layout();
    let index_bytes = blob_bytes(&layout, layout.index);
    for uri in [
        "/v2/docker.io/library/busybox/manifests/1.36".to_owned(),
        "/v2/library/busybox/manifests/1.36?ns=docker.io".to_owned(),
        format!("/v2/docker.io/library/busybox/manifests/{}", layout.index),
    ] {
        let response = get(&layout, &uri).await;
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        assert_eq!(header_of(&response, "content-type"), OCI_INDEX);
        assert_eq!(
            header_of(&response, "docker-content-digest"),
            layout.index.to_string()
        );
        assert_eq!(
            header_of(&response, "content-length"),
            index_bytes.len().to_string()
        );
        assert_eq!(body(response).await, index_bytes);
    }

    // HEAD: the same headers, no body.
    let response = send(
        &layout,
        Method::HEAD,
        "/v2/docker.io/library/busybox/manifests/latest",
        None,
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header_of(&response, "content-type"), OCI_INDEX);
    assert_eq!(
        header_of(&response, "content-length"),
        index_bytes.len().to_string()
    );
    assert!(body(response).await.is_empty());

    // A platform manifest without a `mediaType` field: the index's descriptor names the type.
    let response = get(
        &layout,
        &format!("/v2/docker.io/library/busybox/manifests/{}", layout.amd64),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header_of(&response, "content-type"), OCI_MANIFEST);
    assert_eq!(body(response).await, blob_bytes(&layout, layout.amd64));
    let response = get(
        &layout,
        &format!("/v2/docker.io/library/busybox/manifests/{}", layout.arm64),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);

    // A Docker v2 manifest from a host with a port: both names, Docker media type.
    for uri in [
        "/v2/registry.local_5000/app/manifests/1",
        "/v2/app/manifests/1?ns=registry.local:5000",
    ] {
        let response = get(&layout, uri).await;
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        assert_eq!(header_of(&response, "content-type"), DOCKER_MANIFEST);
        assert_eq!(body(response).await, blob_bytes(&layout, layout.docker));
    }

    // Binaries and charts are served like images.
    for uri in [
        "/v2/kk.internal/binaries/etcd/manifests/v3.5.16",
        "/v2/binaries/etcd/manifests/v3.5.16?ns=kk.internal",
        "/v2/kk.internal/charts/x/manifests/1",
    ] {
        let response = get(&layout, uri).await;
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
        assert_eq!(header_of(&response, "content-type"), OCI_MANIFEST);
    }
}

#[tokio::test]
async fn a_digest_ref_name_is_served_by_digest_only() {
    let layout = served_layout();
    let response = get(
        &layout,
        &format!("/v2/quay.io/x/app/manifests/{}", layout.pinned),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(body(response).await, blob_bytes(&layout, layout.pinned));
    let tags: Value =
        serde_json::from_slice(&body(get(&layout, "/v2/quay.io/x/app/tags/list").await).await)
            .unwrap();
    assert_eq!(tags, json!({ "name": "quay.io/x/app", "tags": [] }));
    let response = get(&layout, "/v2/quay.io/x/app/manifests/latest").await;
    assert_eq!(
        error_code(response).await,
        (StatusCode::NOT_FOUND, "MANIFEST_UNKNOWN".to_owned())
    );
    // Manifests are scoped to the repositories that reach them.
    let response = get(
        &layout,
        &format!("/v2/quay.io/x/app/manifests/{}", layout.index),
    )
    .await;
    assert_eq!(
        error_code(response).await,
        (StatusCode::NOT_FOUND, "MANIFEST_UNKNOWN".to_owned())
    );
}

#[tokio::test]
async fn blobs_are_streamed_with_ranges() {
    let layout = served_layout();
    let uri = format!("/v2/docker.io/library/busybox/blobs/{}", layout.layer);
    let size = layout.layer_bytes.len();

    let response = get(&layout, &uri).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header_of(&response, "content-length"), size.to_string());
    assert_eq!(
        header_of(&response, "docker-content-digest"),
        layout.layer.to_string()
    );
    assert_eq!(body(response).await, layout.layer_bytes);

    let response = send(&layout, Method::HEAD, &uri, None).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header_of(&response, "content-length"), size.to_string());
    assert!(body(response).await.is_empty());

    // Any repository of the map serves any blob of the store.
    let response = get(
        &layout,
        &format!("/v2/app/blobs/{}?ns=registry.local:5000", layout.layer),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);

    let response = send(&layout, Method::GET, &uri, Some("bytes=10-19")).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        header_of(&response, "content-range"),
        format!("bytes 10-19/{size}")
    );
    assert_eq!(header_of(&response, "content-length"), "10");
    assert_eq!(body(response).await, &layout.layer_bytes[10..20]);

    let response = send(&layout, Method::GET, &uri, Some("bytes=-5")).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(body(response).await, &layout.layer_bytes[size - 5..]);

    let response = send(&layout, Method::GET, &uri, Some("bytes=100-")).await;
    assert_eq!(response.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(body(response).await, &layout.layer_bytes[100..]);

    let response = send(
        &layout,
        Method::GET,
        &uri,
        Some(&format!("bytes={size}-{}", size + 10)),
    )
    .await;
    assert_eq!(
        header_of(&response, "content-range"),
        format!("bytes */{size}")
    );
    assert_eq!(
        error_code(response).await,
        (
            StatusCode::RANGE_NOT_SATISFIABLE,
            "RANGE_INVALID".to_owned()
        )
    );

    let unknown = Sha256Digest::of(b"not in the store");
    let response = get(
        &layout,
        &format!("/v2/docker.io/library/busybox/blobs/{unknown}"),
    )
    .await;
    assert_eq!(
        error_code(response).await,
        (StatusCode::NOT_FOUND, "BLOB_UNKNOWN".to_owned())
    );
}

#[tokio::test]
async fn malformed_requests_get_4xx_error_bodies() {
    let layout = served_layout();
    let hex = layout.layer.hex();
    let cases: Vec<(String, StatusCode, &str)> = vec![
        (
            "/v2/docker.io/library/busybox/blobs/sha256:abc".into(),
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
        ),
        (
            format!(
                "/v2/docker.io/library/busybox/blobs/sha256:{}",
                hex.to_uppercase()
            ),
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
        ),
        (
            format!("/v2/docker.io/library/busybox/blobs/sha512:{hex}"),
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
        ),
        (
            "/v2/docker.io/library/busybox/manifests/sha256:zz".into(),
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
        ),
        (
            "/v2/docker.io/library/busybox/referrers/latest".into(),
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
        ),
        (
            "/v2/docker.io/library/nothing/manifests/1".into(),
            StatusCode::NOT_FOUND,
            "NAME_UNKNOWN",
        ),
        (
            "/v2/busybox/manifests/1.36?ns=docker.io".into(),
            StatusCode::NOT_FOUND,
            "NAME_UNKNOWN",
        ),
        (
            "/v2/Docker.io/library/busybox/manifests/1.36".into(),
            StatusCode::BAD_REQUEST,
            "NAME_INVALID",
        ),
        (
            "/v2/library/busybox/manifests/1.36?ns=bad_host".into(),
            StatusCode::BAD_REQUEST,
            "NAME_INVALID",
        ),
        (
            "/v2/docker.io/library/busybox/manifests/-bad".into(),
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
        ),
        (
            "/v2/docker.io/library/busybox/manifests/nosuchtag".into(),
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
        ),
        // Attempts to leave the store.
        (
            format!("/v2/../blobs/sha256:{hex}"),
            StatusCode::BAD_REQUEST,
            "NAME_INVALID",
        ),
        (
            "/v2/docker.io/library/busybox/blobs/../../../oci-layout".into(),
            StatusCode::NOT_FOUND,
            "UNSUPPORTED",
        ),
        (
            "/v2/docker.io/library/busybox/blobs/sha256:..%2F..%2Findex.json".into(),
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
        ),
        (
            "/v2/docker.io/library/busybox/manifests/..%2F..%2Findex.json".into(),
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
        ),
        (
            format!("/v2/docker.io%2F..%2F../blobs/sha256:{hex}"),
            StatusCode::BAD_REQUEST,
            "NAME_INVALID",
        ),
        (
            "/v2/docker.io/library/busybox/nothing/here".into(),
            StatusCode::NOT_FOUND,
            "UNSUPPORTED",
        ),
        (
            "/v2/_catalog?n=many".into(),
            StatusCode::BAD_REQUEST,
            "UNSUPPORTED",
        ),
    ];
    for (uri, status, code) in cases {
        let response = get(&layout, &uri).await;
        assert_eq!(
            error_code(response).await,
            (status, code.to_owned()),
            "{uri}"
        );
    }
}

#[tokio::test]
async fn push_and_delete_are_unsupported() {
    let layout = served_layout();
    let manifest = "/v2/docker.io/library/busybox/manifests/1.36";
    let cases = [
        (Method::PUT, manifest.to_owned()),
        (Method::DELETE, manifest.to_owned()),
        (
            Method::DELETE,
            format!("/v2/docker.io/library/busybox/blobs/{}", layout.layer),
        ),
        (
            Method::POST,
            "/v2/docker.io/library/busybox/blobs/uploads/".to_owned(),
        ),
        (
            Method::PATCH,
            "/v2/docker.io/library/busybox/blobs/uploads/x".to_owned(),
        ),
        (Method::PUT, "/v2/".to_owned()),
    ];
    for (method, uri) in cases {
        let response = send(&layout, method.clone(), &uri, None).await;
        assert_eq!(header_of(&response, "allow"), "GET, HEAD");
        assert_eq!(
            error_code(response).await,
            (StatusCode::METHOD_NOT_ALLOWED, "UNSUPPORTED".to_owned()),
            "{method} {uri}"
        );
    }
}

#[tokio::test]
async fn tags_and_catalog_paginate() {
    let layout = served_layout();
    let list = |response: Response| async {
        let link = header_of(&response, "link").to_owned();
        let value: Value = serde_json::from_slice(&body(response).await).unwrap();
        (value, link)
    };

    let (value, link) = list(get(&layout, "/v2/docker.io/library/busybox/tags/list").await).await;
    assert_eq!(
        value,
        json!({ "name": "docker.io/library/busybox", "tags": ["1.36", "latest"] })
    );
    assert_eq!(link, "");
    let (value, link) =
        list(get(&layout, "/v2/docker.io/library/busybox/tags/list?n=1").await).await;
    assert_eq!(value["tags"], json!(["1.36"]));
    assert_eq!(
        link,
        r#"</v2/docker.io/library/busybox/tags/list?n=1&last=1.36>; rel="next""#
    );
    let (value, link) = list(
        get(
            &layout,
            "/v2/docker.io/library/busybox/tags/list?n=1&last=1.36",
        )
        .await,
    )
    .await;
    assert_eq!(value["tags"], json!(["latest"]));
    assert_eq!(link, "");
    let (value, _) = list(get(&layout, "/v2/library/busybox/tags/list?ns=docker.io").await).await;
    assert_eq!(
        value,
        json!({ "name": "library/busybox", "tags": ["1.36", "latest"] })
    );

    let all = [
        "docker.io/library/busybox",
        "kk.internal/binaries/etcd",
        "kk.internal/charts/x",
        "quay.io/x/app",
        "registry.local_5000/app",
    ];
    let (value, link) = list(get(&layout, "/v2/_catalog").await).await;
    assert_eq!(value, json!({ "repositories": all }));
    assert_eq!(link, "");
    let (value, link) = list(get(&layout, "/v2/_catalog?n=2").await).await;
    assert_eq!(value["repositories"], json!(all[..2]));
    assert_eq!(
        link,
        r#"</v2/_catalog?n=2&last=kk.internal/binaries/etcd>; rel="next""#
    );
    let (value, link) =
        list(get(&layout, "/v2/_catalog?n=2&last=kk.internal/charts/x").await).await;
    assert_eq!(value["repositories"], json!(all[3..]));
    assert_eq!(link, "");
    let (value, _) = list(get(&layout, "/v2/_catalog?n=0").await).await;
    assert_eq!(value["repositories"], json!([]));
}

#[tokio::test]
async fn referrers_list_artifacts_with_a_subject() {
    let layout = served_layout();
    let response = get(
        &layout,
        &format!("/v2/docker.io/library/busybox/referrers/{}", layout.index),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header_of(&response, "content-type"), OCI_INDEX);
    let value: Value = serde_json::from_slice(&body(response).await).unwrap();
    assert_eq!(value["manifests"].as_array().unwrap().len(), 1);
    let referrer = &value["manifests"][0];
    assert_eq!(referrer["digest"], layout.sbom.to_string());
    assert_eq!(referrer["artifactType"], "application/vnd.example.sbom");
    assert_eq!(referrer["mediaType"], OCI_MANIFEST);
    assert_eq!(referrer["annotations"]["org.example.kind"], "sbom");
    assert_eq!(
        referrer["size"],
        blob_bytes(&layout, layout.sbom).len() as u64
    );

    // The referrer itself is served by the subject's repository.
    let response = get(
        &layout,
        &format!("/v2/docker.io/library/busybox/manifests/{}", layout.sbom),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);

    // Filtered away, or no referrers at all: an empty index.
    let empty = json!({ "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [] });
    let response = get(
        &layout,
        &format!(
            "/v2/docker.io/library/busybox/referrers/{}?artifactType=application/x-other",
            layout.index
        ),
    )
    .await;
    assert_eq!(header_of(&response, "oci-filters-applied"), "artifactType");
    assert_eq!(
        serde_json::from_slice::<Value>(&body(response).await).unwrap(),
        empty
    );
    let response = get(
        &layout,
        &format!("/v2/docker.io/library/busybox/referrers/{}", layout.amd64),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        serde_json::from_slice::<Value>(&body(response).await).unwrap(),
        empty
    );
}

#[test]
fn opening_refuses_what_cannot_be_served() {
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        Store::open(empty.path()),
        Err(RegistryError::NotALayout { .. })
    ));

    // Two hosts that differ only in case name the same repository: refused if they disagree.
    let layout = served_layout();
    let path = layout.dir.path().join("index.json");
    let mut index: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut other = index["manifests"][2].clone();
    other["annotations"][REF_NAME] = json!("Docker.IO/library/busybox:1.36");
    index["manifests"].as_array_mut().unwrap().push(other);
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    let error = Store::open(layout.dir.path()).unwrap_err();
    assert!(
        matches!(error, RegistryError::TagConflict { .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "`docker.io/library/busybox:1.36` and `Docker.IO/library/busybox:1.36` would both be served as `docker.io/library/busybox:1.36`"
    );

    // A missing platform manifest is an omitted platform; a missing named manifest is an error.
    let fresh = served_layout();
    std::fs::remove_file(
        fresh
            .dir
            .path()
            .join("blobs/sha256")
            .join(fresh.arm64.hex()),
    )
    .unwrap();
    let store = Store::open(fresh.dir.path()).unwrap();
    assert_eq!(store.repositories().count(), 5);
    std::fs::remove_file(
        fresh
            .dir
            .path()
            .join("blobs/sha256")
            .join(fresh.docker.hex()),
    )
    .unwrap();
    assert!(matches!(
        Store::open(fresh.dir.path()),
        Err(RegistryError::MissingManifest { .. })
    ));

    // A ref name that is not fully qualified.
    index["manifests"].as_array_mut().unwrap().pop();
    index["manifests"][0]["annotations"][REF_NAME] = json!("busybox:1.36");
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    assert!(matches!(
        Store::open(layout.dir.path()),
        Err(RegistryError::RefName { .. })
    ));
}

/// skopeo, a real client, pulls through the registry over TCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skopeo_pulls_an_image_byte_for_byte() {
    let layout = served_layout();
    let store = Store::open(layout.dir.path()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move { axum::serve(listener, router(store)).await });

    let source = format!("docker://127.0.0.1:{port}/docker.io/library/busybox:1.36");
    let out = tempfile::tempdir().unwrap();
    let destination = format!("oci:{}:x", out.path().join("copy").display());
    let (raw, copy) = tokio::task::spawn_blocking(move || {
        let raw = std::process::Command::new("skopeo")
            .args(["inspect", "--raw", "--tls-verify=false", &source])
            .output()
            .unwrap_or_else(|e| panic!("this test needs skopeo on PATH: {e}"));
        let copy = std::process::Command::new("skopeo")
            .args([
                "copy",
                "--all",
                "--src-tls-verify=false",
                &source,
                &destination,
            ])
            .output()
            .unwrap_or_else(|e| panic!("this test needs skopeo on PATH: {e}"));
        (raw, copy)
    })
    .await
    .unwrap();

    // HEAD over a real connection keeps the Content-Length of the body it leaves out.
    let head = raw_head(
        port,
        &format!("/v2/docker.io/library/busybox/blobs/{}", layout.layer),
    )
    .await;
    server.abort();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let length = format!("content-length: {}\r\n", layout.layer_bytes.len());
    assert!(head.to_ascii_lowercase().contains(&length), "{head}");

    assert!(
        raw.status.success(),
        "skopeo inspect: {}",
        String::from_utf8_lossy(&raw.stderr)
    );
    assert_eq!(raw.stdout, blob_bytes(&layout, layout.index));
    assert!(
        copy.status.success(),
        "skopeo copy: {}",
        String::from_utf8_lossy(&copy.stderr)
    );
    // The copy holds the index, both platform manifests and the layer, byte for byte.
    for digest in [layout.index, layout.amd64, layout.arm64, layout.layer] {
        let copied =
            std::fs::read(out.path().join("copy/blobs/sha256").join(digest.hex())).unwrap();
        assert_eq!(copied, blob_bytes(&layout, digest), "{digest}");
    }
}

/// Sends `HEAD path` over HTTP/1.1 and returns the response head.
async fn raw_head(port: u16, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let request = format!("HEAD {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    String::from_utf8(response).unwrap()
}

/// A log sink for the access-log test.
#[derive(Clone, Default)]
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn requests_are_logged() {
    let layout = served_layout();
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let uri = format!("/v2/docker.io/library/busybox/blobs/{}", layout.layer);
    let response = send(&layout, Method::GET, &uri, Some("bytes=0-9")).await;
    assert_eq!(body(response).await.len(), 10);
    let log = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    for needle in [
        "method=GET",
        &format!("path={uri}"),
        "status=206",
        "bytes=10 ",
        "duration_ms=",
    ] {
        assert!(log.contains(needle), "{needle} in {log}");
    }
}

/// GET `uri` from the registry serving the layout at `dir`.
async fn get_from(dir: &std::path::Path, uri: &str) -> Response {
    let store = Store::open(dir).unwrap();
    router(store)
        .oneshot(Request::builder().uri(uri).body(Body::empty()).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn cosign_tags_and_tag_schema_indexes_are_served_and_listed_as_referrers() {
    const SIG_TYPE: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
    let dir = tempfile::tempdir().unwrap();
    let root = HandLayout::new(dir.path());
    let config = root.blob_descriptor("application/vnd.oci.image.config.v1+json", b"{}");
    let image = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": [],
    }));
    let image_digest = root.put_blob(&image);
    let image_desc = descriptor(OCI_MANIFEST, image_digest, image.len());
    // cosign's tag scheme: no subject, found by its tag alone.
    let tagged = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config,
        "layers": [root.blob_descriptor("application/vnd.dev.cosign.simplesigning.v1+json", b"{\"critical\":{}}")],
    }));
    let tagged_digest = root.put_blob(&tagged);
    // cosign's OCI 1.1 mode: a subject, listed by the tag-schema index a bundle carries.
    let referrer = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": SIG_TYPE,
        "config": config, "layers": [], "subject": image_desc,
    }));
    let referrer_digest = root.put_blob(&referrer);
    let mut listed = descriptor(OCI_MANIFEST, referrer_digest, referrer.len());
    listed["artifactType"] = SIG_TYPE.into();
    let tag_index = manifest_bytes(&json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [listed],
    }));
    let tag_index_digest = root.put_blob(&tag_index);
    let stem = format!("docker.io/library/app:sha256-{}", image_digest.hex());
    root.write_index(&[
        named(image_desc.clone(), "docker.io/library/app:1"),
        named(
            descriptor(OCI_MANIFEST, tagged_digest, tagged.len()),
            &format!("{stem}.sig"),
        ),
        named(
            descriptor(OCI_INDEX, tag_index_digest, tag_index.len()),
            &stem,
        ),
    ]);

    let base = "/v2/docker.io/library/app";
    let referrers = |filter: &str| format!("{base}/referrers/{image_digest}{filter}");
    let response = get_from(dir.path(), &referrers("")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let value: Value = serde_json::from_slice(&body(response).await).unwrap();
    let digests: Vec<&str> = value["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["digest"].as_str().unwrap())
        .collect();
    assert_eq!(
        digests,
        [referrer_digest.to_string(), tagged_digest.to_string()]
    );
    // `+` is a space in a query: clients send it encoded.
    let filter = format!("?artifactType={}", SIG_TYPE.replace('+', "%2B"));
    let response = get_from(dir.path(), &referrers(&filter)).await;
    assert_eq!(header_of(&response, "oci-filters-applied"), "artifactType");
    let value: Value = serde_json::from_slice(&body(response).await).unwrap();
    assert_eq!(value["manifests"][0]["digest"], referrer_digest.to_string());
    assert_eq!(value["manifests"].as_array().unwrap().len(), 1);

    for (tag, expected) in [
        (format!("sha256-{}.sig", image_digest.hex()), &tagged),
        (format!("sha256-{}", image_digest.hex()), &tag_index),
    ] {
        let response = get_from(dir.path(), &format!("{base}/manifests/{tag}")).await;
        assert_eq!(response.status(), StatusCode::OK, "{tag}");
        assert_eq!(&body(response).await, expected, "{tag}");
    }
    let response = get_from(dir.path(), &format!("{base}/manifests/{referrer_digest}")).await;
    assert_eq!(response.status(), StatusCode::OK);
}

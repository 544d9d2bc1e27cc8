//! The HTTP side: request routing, responses, ranges and error bodies.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bundle_spec::Sha256Digest;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};
use tokio_util::io::ReaderStream;

use super::names::{host_component, is_valid_repository, is_valid_tag};
use super::store::{Repository, Store};

/// The header naming the API version, on every response.
pub(crate) const API_VERSION: &str = "docker-distribution-api-version";
const DIGEST: &str = "docker-content-digest";
const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// An error response: status, OCI error code, message and detail.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    detail: serde_json::Value,
    content_range: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            detail: serde_json::Value::Null,
            content_range: None,
        }
    }

    fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = detail;
        self
    }

    fn name_unknown(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NAME_UNKNOWN",
            "repository name not known to registry",
        )
        .detail(json!({ "name": name }))
    }

    fn unsupported(message: &str) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "UNSUPPORTED", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "errors": [{ "code": self.code, "message": self.message, "detail": self.detail }]
        });
        let mut response = json_response(&body);
        *response.status_mut() = self.status;
        if let Some(size) = self.content_range
            && let Ok(value) = HeaderValue::from_str(&format!("bytes */{size}"))
        {
            response.headers_mut().insert(header::CONTENT_RANGE, value);
        }
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        }
        response
    }
}

/// A `200 OK` response with `body` as `application/json`.
fn json_response(body: &serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// What a request asks for, once its path is parsed.
enum Endpoint<'a> {
    Base,
    Catalog,
    Manifest(&'a str, &'a str),
    Blob(&'a str, &'a str),
    Tags(&'a str),
    Referrers(&'a str, &'a str),
}

fn endpoint(path: &str) -> Option<Endpoint<'_>> {
    let rest = match path {
        "/v2" | "/v2/" => return Some(Endpoint::Base),
        _ => path.strip_prefix("/v2/")?,
    };
    if rest == "_catalog" {
        return Some(Endpoint::Catalog);
    }
    let mut parts = rest.rsplitn(3, '/');
    let (last, kind, name) = (parts.next()?, parts.next()?, parts.next()?);
    Some(match (kind, last) {
        ("manifests", reference) => Endpoint::Manifest(name, reference),
        ("blobs", digest) => Endpoint::Blob(name, digest),
        ("referrers", digest) => Endpoint::Referrers(name, digest),
        ("tags", "list") => Endpoint::Tags(name),
        _ => return None,
    })
}

/// The single handler behind every `/v2` route.
pub(crate) async fn dispatch(
    State(store): State<Store>,
    method: Method,
    uri: Uri,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let Ok(Query(query)) = query else {
        return ApiError::new(
            StatusCode::BAD_REQUEST,
            "UNSUPPORTED",
            "the query string cannot be parsed",
        )
        .into_response();
    };
    handle(&store, &method, &uri, &query, &headers)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn handle(
    store: &Store,
    method: &Method,
    uri: &Uri,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    if method != Method::GET && method != Method::HEAD {
        return Err(ApiError::unsupported(
            "this registry is read-only: only GET and HEAD are supported",
        ));
    }
    let head = method == Method::HEAD;
    let Some(endpoint) = endpoint(uri.path()) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "UNSUPPORTED",
            "no such endpoint in the OCI distribution API",
        )
        .detail(json!({ "path": uri.path() })));
    };
    match endpoint {
        Endpoint::Base => Ok((
            [(header::CONTENT_TYPE, "application/json")],
            if head { "" } else { "{}" },
        )
            .into_response()),
        Endpoint::Catalog => catalog(store, query),
        Endpoint::Tags(name) => {
            let (_, repository) = lookup(store, name, query)?;
            tags(name, repository, query)
        }
        Endpoint::Manifest(name, reference) => {
            let (_, repository) = lookup(store, name, query)?;
            manifest(store, repository, reference, head).await
        }
        Endpoint::Blob(name, digest) => {
            lookup(store, name, query)?;
            let digest = parse_digest(digest)?;
            blob(store, digest, headers, head).await
        }
        Endpoint::Referrers(name, digest) => {
            let (_, repository) = lookup(store, name, query)?;
            let digest = parse_digest(digest)?;
            Ok(referrers(store, repository, digest, query))
        }
    }
}

/// Resolves a requested name (with containerd's `ns` query, if any) to a repository.
fn lookup<'s>(
    store: &'s Store,
    name: &str,
    query: &HashMap<String, String>,
) -> Result<(String, &'s Repository), ApiError> {
    if !is_valid_repository(name) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "NAME_INVALID",
            "invalid repository name",
        )
        .detail(json!({ "name": name })));
    }
    if let Some(ns) = query.get("ns") {
        let Some(host) = host_component(ns) else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "NAME_INVALID",
                "the `ns` query is not a registry host",
            )
            .detail(json!({ "ns": ns })));
        };
        let full = format!("{host}/{name}");
        if let Some(repository) = store.repository(&full) {
            return Ok((full, repository));
        }
    }
    store
        .repository(name)
        .map(|repository| (name.to_owned(), repository))
        .ok_or_else(|| ApiError::name_unknown(name))
}

fn parse_digest(text: &str) -> Result<Sha256Digest, ApiError> {
    text.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "DIGEST_INVALID",
            "provided digest is not a sha256 digest in canonical form",
        )
        .detail(json!({ "digest": text }))
    })
}

/// The `n` and `last` pagination parameters.
fn pagination(query: &HashMap<String, String>) -> Result<(Option<usize>, Option<&str>), ApiError> {
    let n = match query.get("n") {
        Some(n) => Some(n.parse::<usize>().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "UNSUPPORTED",
                "the `n` query is not a number",
            )
            .detail(json!({ "n": n }))
        })?),
        None => None,
    };
    Ok((n, query.get("last").map(String::as_str)))
}

/// One page of sorted `items` after `last`, and the `Link` to the next page if there is one.
fn page<'a>(
    items: impl Iterator<Item = &'a str>,
    n: Option<usize>,
    last: Option<&str>,
) -> (Vec<&'a str>, Option<&'a str>) {
    let mut after = items.filter(|item| last.is_none_or(|last| *item > last));
    let limit = n.unwrap_or(usize::MAX);
    let page: Vec<&str> = after.by_ref().take(limit).collect();
    let more = after.next().is_some() && !page.is_empty();
    let next = if more { page.last().copied() } else { None };
    (page, next)
}

fn with_link(mut response: Response, link: Option<String>) -> Response {
    if let Some(link) = link
        && let Ok(value) = HeaderValue::from_str(&link)
    {
        response.headers_mut().insert(header::LINK, value);
    }
    response
}

fn catalog(store: &Store, query: &HashMap<String, String>) -> Result<Response, ApiError> {
    let (n, last) = pagination(query)?;
    let (repositories, next) = page(store.repositories(), n, last);
    let link = next.map(|next| {
        format!(
            "</v2/_catalog?n={}&last={next}>; rel=\"next\"",
            n.unwrap_or(repositories.len())
        )
    });
    Ok(with_link(
        json_response(&json!({ "repositories": repositories })),
        link,
    ))
}

fn tags(
    name: &str,
    repository: &Repository,
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let (n, last) = pagination(query)?;
    let (tags, next) = page(repository.tags.keys().map(String::as_str), n, last);
    let ns = query
        .get("ns")
        .map(|ns| format!("&ns={ns}"))
        .unwrap_or_default();
    let link = next.map(|next| {
        format!(
            "</v2/{name}/tags/list?n={}&last={next}{ns}>; rel=\"next\"",
            n.unwrap_or(tags.len())
        )
    });
    Ok(with_link(
        json_response(&json!({ "name": name, "tags": tags })),
        link,
    ))
}

fn referrers(
    store: &Store,
    repository: &Repository,
    digest: Sha256Digest,
    query: &HashMap<String, String>,
) -> Response {
    let filter = query.get("artifactType");
    let manifests: Vec<_> = store
        .referrers(repository, digest)
        .iter()
        .filter(|d| filter.is_none_or(|f| d.artifact_type.as_ref() == Some(f)))
        .collect();
    let body = json!({ "schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests });
    let mut response =
        ([(header::CONTENT_TYPE, INDEX_MEDIA_TYPE)], body.to_string()).into_response();
    if filter.is_some() {
        response.headers_mut().insert(
            "oci-filters-applied",
            HeaderValue::from_static("artifactType"),
        );
    }
    response
}

async fn manifest(
    store: &Store,
    repository: &Repository,
    reference: &str,
    head: bool,
) -> Result<Response, ApiError> {
    let unknown = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "MANIFEST_UNKNOWN",
            "manifest unknown to registry",
        )
        .detail(json!({ "reference": reference }))
    };
    let digest = if reference.contains(':') {
        parse_digest(reference)?
    } else if is_valid_tag(reference) {
        *repository.tags.get(reference).ok_or_else(unknown)?
    } else {
        return Err(unknown());
    };
    let media_type = repository.manifests.get(&digest).ok_or_else(unknown)?;
    let Some(file) = open_blob(store, digest).await else {
        return Err(unknown());
    };
    serve(file, digest, media_type, None, head).await
}

async fn blob(
    store: &Store,
    digest: Sha256Digest,
    headers: &HeaderMap,
    head: bool,
) -> Result<Response, ApiError> {
    let Some(file) = open_blob(store, digest).await else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            "blob unknown to registry",
        )
        .detail(json!({ "digest": digest.to_string() })));
    };
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    serve(file, digest, "application/octet-stream", range, head).await
}

/// Opens `blobs/sha256/<hex>` if it is a regular file (not a link), with its size.
async fn open_blob(store: &Store, digest: Sha256Digest) -> Option<(tokio::fs::File, u64)> {
    let path = store.blob_path(digest);
    let metadata = tokio::fs::symlink_metadata(&path).await.ok()?;
    if !metadata.is_file() {
        return None;
    }
    let file = tokio::fs::File::open(&path).await.ok()?;
    Some((file, metadata.len()))
}

/// The byte range a `Range` header asks for, inclusive. `Ok(None)` to serve the whole
/// content (no header, or one this server ignores, as RFC 9110 allows), `Err` when the range
/// cannot be satisfied.
fn byte_range(range: Option<&str>, size: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let Some(spec) = range.and_then(|r| r.trim().strip_prefix("bytes=")) else {
        return Ok(None);
    };
    let unsatisfiable = || {
        let mut error = ApiError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "RANGE_INVALID",
            "invalid content range",
        )
        .detail(json!({ "range": spec, "size": size }));
        error.content_range = Some(size);
        error
    };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((start, end)) = spec.trim().split_once('-') else {
        return Ok(None);
    };
    let number = |s: &str| s.trim().parse::<u64>().ok();
    let (first, last) = match (start.trim().is_empty(), end.trim().is_empty()) {
        (false, false) => match (number(start), number(end)) {
            (Some(a), Some(b)) => (a, b.min(size.saturating_sub(1))),
            _ => return Ok(None),
        },
        (false, true) => match number(start) {
            Some(a) => (a, size.saturating_sub(1)),
            None => return Ok(None),
        },
        (true, false) => match number(end) {
            Some(0) => return Err(unsatisfiable()),
            Some(n) => (size.saturating_sub(n), size.saturating_sub(1)),
            None => return Ok(None),
        },
        (true, true) => return Ok(None),
    };
    if first >= size || first > last {
        return Err(unsatisfiable());
    }
    Ok(Some((first, last)))
}

/// Streams a blob file (or a range of it) with the registry's headers.
async fn serve(
    (mut file, size): (tokio::fs::File, u64),
    digest: Sha256Digest,
    media_type: &str,
    range: Option<&str>,
    head: bool,
) -> Result<Response, ApiError> {
    let range = byte_range(range, size)?;
    let (status, start, length) = match range {
        Some((first, last)) => (StatusCode::PARTIAL_CONTENT, first, last - first + 1),
        None => (StatusCode::OK, 0, size),
    };
    let body = if head {
        Body::empty()
    } else {
        if start > 0 {
            file.seek(std::io::SeekFrom::Start(start))
                .await
                .map_err(|e| io_error(&e))?;
        }
        Body::from_stream(ReaderStream::new(file.take(length)))
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    let mut set = |name: header::HeaderName, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    };
    set(header::CONTENT_LENGTH, length.to_string());
    set(header::CONTENT_TYPE, media_type.to_owned());
    set(header::HeaderName::from_static(DIGEST), digest.to_string());
    set(header::ETAG, format!("\"{digest}\""));
    set(header::ACCEPT_RANGES, "bytes".to_owned());
    if let Some((first, last)) = range {
        set(
            header::CONTENT_RANGE,
            format!("bytes {first}-{last}/{size}"),
        );
    }
    Ok(response)
}

fn io_error(error: &std::io::Error) -> ApiError {
    tracing::warn!(%error, "cannot read a blob of the store");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "UNKNOWN",
        "cannot read the blob from the store",
    )
}

#[cfg(test)]
mod tests {
    use super::byte_range;

    #[test]
    fn ranges() {
        let ok = |r: &str| byte_range(Some(r), 10).ok().flatten();
        assert_eq!(ok("bytes=0-3"), Some((0, 3)));
        assert_eq!(ok("bytes=5-"), Some((5, 9)));
        assert_eq!(ok("bytes=-4"), Some((6, 9)));
        assert_eq!(ok("bytes=2-100"), Some((2, 9)));
        assert_eq!(ok("bytes=-100"), Some((0, 9)));
        assert_eq!(ok("bytes=0-1,3-4"), None);
        assert_eq!(ok("items=0-1"), None);
        assert_eq!(ok("bytes=x-1"), None);
        for bad in ["bytes=10-", "bytes=10-20", "bytes=5-2", "bytes=-0"] {
            assert!(byte_range(Some(bad), 10).is_err(), "{bad}");
        }
        assert!(byte_range(Some("bytes=0-"), 0).is_err());
    }
}

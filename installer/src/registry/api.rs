//! The HTTP side: request routing, responses, ranges and error bodies.

use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bundle_spec::Sha256Digest;
use bundle_spec::oci::INDEX_MEDIA_TYPE;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};
use tokio_util::io::ReaderStream;

use super::live::Live;
use super::names::{host_component, is_valid_repository, is_valid_tag};
use super::store::{Repository, Store};

/// The header naming the API version, on every response.
pub(crate) const API_VERSION: &str = "docker-distribution-api-version";
const DIGEST: &str = "docker-content-digest";
/// Contents up to this size (every manifest, config and small layer) are read whole, in the
/// blocking call that opens them, and sent in one piece. A streamed body's first chunk comes
/// from another blocking read after the response head was flushed alone, and Nagle's algorithm
/// (the listener does not set `TCP_NODELAY`) then holds that small second segment until the
/// client's delayed ACK: small responses would take up to 40 ms each.
const WHOLE_LIMIT: u64 = 64 * 1024;
/// The chunk size when streaming larger blobs. Each chunk is one blocking read on tokio's
/// pool; `ReaderStream`'s default of 4 KiB would cost a thread hand-off per 4 KiB.
const CHUNK: usize = 256 * 1024;

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
    State(live): State<Live>,
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
    handle(&live.current(), &method, &uri, &query, &headers)
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
    let Some(content) = open_blob(store, digest, !head).await else {
        return Err(unknown());
    };
    serve(content, digest, media_type, None, head).await
}

async fn blob(
    store: &Store,
    digest: Sha256Digest,
    headers: &HeaderMap,
    head: bool,
) -> Result<Response, ApiError> {
    let Some(content) = open_blob(store, digest, !head).await else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "BLOB_UNKNOWN",
            "blob unknown to registry",
        )
        .detail(json!({ "digest": digest.to_string() })));
    };
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    serve(content, digest, "application/octet-stream", range, head).await
}

/// A blob of the store, opened.
#[derive(Debug)]
enum Content {
    /// All of it (a blob of at most [`WHOLE_LIMIT`] bytes, for a GET).
    Whole(Bytes),
    /// The open file and its size, to stream from (or only the size, for a HEAD).
    File(std::fs::File, u64),
}

impl Content {
    fn size(&self) -> u64 {
        match self {
            Self::Whole(bytes) => bytes.len() as u64,
            Self::File(_, size) => *size,
        }
    }
}

/// Opens `blobs/sha256/<hex>` if it is a regular file (not a link); reads it whole when it is
/// small and `read` is set. One blocking call for all of it, rather than a hand-off to tokio's
/// blocking pool per step (stat, open, read).
async fn open_blob(store: &Store, digest: Sha256Digest, read: bool) -> Option<Content> {
    let path = store.blob_path(digest);
    let opened = tokio::task::spawn_blocking(move || -> std::io::Result<Option<Content>> {
        let metadata = std::fs::symlink_metadata(&path)?;
        if !metadata.is_file() {
            return Ok(None);
        }
        let mut file = std::fs::File::open(&path)?;
        let size = metadata.len();
        if !read || size > WHOLE_LIMIT {
            return Ok(Some(Content::File(file, size)));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        std::io::Read::read_to_end(&mut file, &mut bytes)?;
        Ok(Some(Content::Whole(bytes.into())))
    });
    opened.await.ok()?.ok()?
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

/// Sends a blob (or a range of it) with the registry's headers.
async fn serve(
    content: Content,
    digest: Sha256Digest,
    media_type: &str,
    range: Option<&str>,
    head: bool,
) -> Result<Response, ApiError> {
    let size = content.size();
    let range = byte_range(range, size)?;
    let (status, start, length) = match range {
        Some((first, last)) => (StatusCode::PARTIAL_CONTENT, first, last - first + 1),
        None => (StatusCode::OK, 0, size),
    };
    let body = match content {
        _ if head => Body::empty(),
        // `size` is the length of `bytes`, and the range lies within it.
        Content::Whole(bytes) => Body::from(bytes.slice(start as usize..(start + length) as usize)),
        Content::File(file, _) => {
            let mut file = tokio::fs::File::from_std(file);
            if start > 0 {
                file.seek(std::io::SeekFrom::Start(start))
                    .await
                    .map_err(|e| io_error(&e))?;
            }
            Body::from_stream(ReaderStream::with_capacity(file.take(length), CHUNK))
        }
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
    use std::io::Write as _;

    use axum::body::Bytes;
    use axum::http::{StatusCode, header};
    use bundle_spec::Sha256Digest;

    use super::{CHUNK, Content, WHOLE_LIMIT, byte_range, serve};

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

    /// A blob above [`WHOLE_LIMIT`] is streamed in [`CHUNK`]s from the file; a small one is
    /// sent from memory. Both give the same bytes and headers for the whole blob and for every
    /// form of range, also across chunk boundaries.
    #[tokio::test]
    async fn streamed_and_whole_blobs_serve_the_same_ranges() {
        let bytes: Vec<u8> = (0..2 * CHUNK + 1000).map(|i| (i % 251) as u8).collect();
        assert!(bytes.len() as u64 > WHOLE_LIMIT);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&bytes).unwrap();
        let size = bytes.len();
        let digest = Sha256Digest::of(&bytes);
        let cases = [
            (None, 0, size),
            (Some("bytes=10-19".to_owned()), 10, 20),
            (
                Some(format!("bytes={}-{}", CHUNK - 5, CHUNK + 5)),
                CHUNK - 5,
                CHUNK + 6,
            ),
            (Some("bytes=-300000".to_owned()), size - 300_000, size),
            (Some(format!("bytes={}-", CHUNK + 1)), CHUNK + 1, size),
            (Some(format!("bytes=0-{}", 10 * size)), 0, size),
        ];
        for (range, from, to) in cases {
            for whole in [false, true] {
                let content = if whole {
                    Content::Whole(Bytes::from(bytes.clone()))
                } else {
                    // A file of its own per request, as the server opens one, at offset 0.
                    Content::File(std::fs::File::open(file.path()).unwrap(), size as u64)
                };
                let response = serve(
                    content,
                    digest,
                    "application/octet-stream",
                    range.as_deref(),
                    false,
                )
                .await
                .unwrap();
                let what = format!("{range:?}, whole: {whole}");
                let expected = if range.is_some() {
                    StatusCode::PARTIAL_CONTENT
                } else {
                    StatusCode::OK
                };
                assert_eq!(response.status(), expected, "{what}");
                let length = response.headers()[header::CONTENT_LENGTH].to_str().unwrap();
                assert_eq!(length, (to - from).to_string(), "{what}");
                if range.is_some() {
                    let content_range = response.headers()[header::CONTENT_RANGE].to_str().unwrap();
                    assert_eq!(
                        content_range,
                        format!("bytes {from}-{}/{size}", to - 1),
                        "{what}"
                    );
                }
                let body = axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .unwrap();
                assert_eq!(body.as_ref(), &bytes[from..to], "{what}");
            }
        }
    }
}

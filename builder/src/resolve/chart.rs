//! Helm charts from HTTP repositories: the index, the verified `.tgz`, and Helm's OCI config.
//!
//! A repository is a URL with an `index.yaml` listing, per chart name, every version with its
//! download `urls` and the `digest` (sha256 hex) of the package. We fetch the index (through
//! file mirrors, like every download), pick the exact version asked for (a missing one is an
//! error listing those available), resolve a relative URL against the repository, and
//! download the package verified against the index's digest. With `--locked`, the index is not
//! read at all: the lock's URL and digest are used, so a rebuild fetches the very same bytes.
//!
//! In the bundle a chart is stored the way `helm push` stores it in a registry: the package
//! as a layer and, as the config blob, the chart's metadata (`Chart.yaml`) as JSON. That JSON
//! is produced by [`chart_config_from_tgz`] (module `metadata`) through a mirror of Helm's own
//! `chart.Metadata` type rather than a generic YAML-to-JSON conversion: Helm decodes the
//! config into that type, where `appVersion: 1.10` is the string `"1.10"`, while a generic
//! conversion would write the number `1.1`, which Helm rejects. The package is also checked to
//! hold the chart and version asked for.

mod metadata;

use std::collections::BTreeMap;
use std::path::Path;

use bundle_spec::Sha256Digest;
use bundle_spec::lock::LockedFile;
use serde::Deserialize;
use url::Url;

use crate::cache::{Cache, CachedBlob};
use crate::fetch::{FetchUrl, HttpFetcher, blocking};
use crate::resolve::ResolveError;
use metadata::{archive_error, config_json, read_metadata};

/// The size limit of a repository's `index.yaml` (large public repositories reach tens of MiB).
pub const INDEX_LIMIT: u64 = 128 * 1024 * 1024;
/// How many available versions an error lists.
const LISTED_VERSIONS: usize = 20;

/// A chart resolved from an HTTP repository and downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedChart {
    /// The chart's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The repository URL, as in the manifest.
    pub repo_url: String,
    /// The package's download URL (before file mirrors).
    pub url: String,
    /// The verified `.tgz` in the cache.
    pub tgz: CachedBlob,
    /// Helm's OCI config blob: the chart's metadata as JSON.
    pub config_json: Vec<u8>,
}

impl ResolvedChart {
    /// Its lock entry (charts have no platform).
    pub fn locked(&self) -> LockedFile {
        LockedFile {
            name: self.name.clone(),
            version: self.version.clone(),
            platform: None,
            url: self.url.clone(),
            digest: self.tgz.digest,
            size: self.tgz.size,
        }
    }
}

/// Resolves chart `name` at `version` from the Helm repository `repo` and downloads it.
///
/// With `locked` (`--locked`), the lock's entry for `name` and `version` gives the URL and
/// digest, and the repository index is not fetched.
pub async fn resolve_chart(
    name: &str,
    version: &str,
    repo: &str,
    fetcher: &HttpFetcher,
    cache: &Cache,
    locked: Option<&[LockedFile]>,
) -> Result<ResolvedChart, ResolveError> {
    let (url, expected) = match locked {
        Some(locked) => {
            let entry = locked
                .iter()
                .find(|entry| {
                    entry.name == name && entry.version == version && entry.platform.is_none()
                })
                .ok_or_else(|| ResolveError::NotLocked {
                    what: format!("chart `{name}` `{version}` from `{repo}`"),
                })?;
            (entry.url.clone(), Some(entry.digest))
        }
        None => locate(name, version, repo, fetcher).await?,
    };
    let tgz = fetcher.download(&url, expected, cache, &|_, _| {}).await?;
    let path = tgz.path.clone();
    let (chart, wanted) = (name.to_owned(), version.to_owned());
    let config_json = blocking("reading `Chart.yaml`", move || {
        let metadata = read_metadata(&path)?;
        if metadata.name != chart || metadata.version != wanted {
            return Err(archive_error(
                &path,
                format!(
                    "it holds chart `{}` `{}`, not `{chart}` `{wanted}`",
                    metadata.name, metadata.version
                ),
            ));
        }
        config_json(&path, &metadata)
    })
    .await??;
    Ok(ResolvedChart {
        name: name.to_owned(),
        version: version.to_owned(),
        repo_url: repo.to_owned(),
        url,
        tgz,
        config_json,
    })
}

/// Helm's OCI config blob for the packaged chart at `path`: its `Chart.yaml` as JSON, in the
/// shape of Helm's `chart.Metadata` (fields in Helm's order, empty ones left out).
pub fn chart_config_from_tgz(path: &Path) -> Result<Vec<u8>, ResolveError> {
    config_json(path, &read_metadata(path)?)
}

/// The download URL and digest of `name` `version` according to the repository's index.
async fn locate(
    name: &str,
    version: &str,
    repo: &str,
    fetcher: &HttpFetcher,
) -> Result<(String, Option<Sha256Digest>), ResolveError> {
    let index_url = format!("{}/index.yaml", repo.trim_end_matches('/'));
    let text = fetcher.text_with_limit(&index_url, INDEX_LIMIT).await?;
    let index = parse_index(&text).map_err(|source| ResolveError::ChartIndex {
        url: FetchUrl {
            fetched: fetcher.mirrored(&index_url),
            original: index_url.clone(),
        },
        source: Box::new(source),
    })?;
    let entries = index
        .entries
        .get(name)
        .ok_or_else(|| ResolveError::ChartNotInIndex {
            chart: name.to_owned(),
            repo: repo.to_owned(),
        })?;
    let entry = entries
        .iter()
        .find(|entry| entry.version == version)
        .ok_or_else(|| ResolveError::ChartVersionMissing {
            chart: name.to_owned(),
            version: version.to_owned(),
            repo: repo.to_owned(),
            available: available(entries),
        })?;
    let entry_error = |problem: String| ResolveError::ChartIndexEntry {
        chart: name.to_owned(),
        version: version.to_owned(),
        repo: repo.to_owned(),
        problem,
    };
    let first = entry
        .urls
        .first()
        .ok_or_else(|| entry_error("no download url".to_owned()))?;
    let url = resolve_url(repo, first)
        .ok_or_else(|| entry_error(format!("the invalid download url `{first}`")))?;
    let digest = match entry.digest.as_deref() {
        None => {
            tracing::warn!(
                chart = name,
                version,
                repo,
                "the repository index gives no digest for the chart; it is trusted as downloaded"
            );
            None
        }
        Some(digest) => {
            let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
            let parsed = Sha256Digest::from_hex(&hex.to_ascii_lowercase())
                .ok_or_else(|| entry_error(format!("the invalid digest `{digest}`")))?;
            Some(parsed)
        }
    };
    Ok((url, digest))
}

/// The parts of `index.yaml` we need.
#[derive(Debug, Deserialize)]
struct Index {
    #[serde(default)]
    entries: BTreeMap<String, Vec<IndexEntry>>,
}

#[derive(Debug, Deserialize)]
struct IndexEntry {
    version: String,
    #[serde(default)]
    urls: Vec<String>,
    #[serde(default)]
    digest: Option<String>,
}

fn parse_index(text: &str) -> Result<Index, serde_saphyr::Error> {
    // The default budget suits hand-written files; an index of a big repository has millions
    // of nodes. The text is already bounded by `INDEX_LIMIT`.
    let budget = serde_saphyr::budget! {
        max_events: 50_000_000,
        max_nodes: 50_000_000,
        max_total_scalar_bytes: 256 * 1024 * 1024,
    };
    serde_saphyr::from_str_with_options(text, serde_saphyr::options! { budget: budget })
}

/// `urls[0]` of an index entry, absolute: Helm resolves a relative one against the repository.
fn resolve_url(repo: &str, url: &str) -> Option<String> {
    let base = Url::parse(&format!("{}/", repo.trim_end_matches('/'))).ok()?;
    let resolved = base.join(url).ok()?;
    matches!(resolved.scheme(), "http" | "https").then(|| resolved.to_string())
}

/// The versions of `entries`, in index order, for an error message.
fn available(entries: &[IndexEntry]) -> String {
    if entries.is_empty() {
        return "none".to_owned();
    }
    let listed: Vec<String> = entries
        .iter()
        .take(LISTED_VERSIONS)
        .map(|entry| format!("`{}`", entry.version))
        .collect();
    let more = entries.len().saturating_sub(LISTED_VERSIONS);
    if more == 0 {
        listed.join(", ")
    } else {
        format!("{} and {more} more", listed.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::metadata::tests::{APP, package};
    use super::*;
    use crate::cache::CacheError;
    use crate::fetch::FetchError;
    use crate::fetch::test_server::{Reply, TestServer, retrying};

    #[test]
    fn relative_urls_resolve_against_the_repository() {
        let cases = [
            (
                "https://example.org/charts",
                "app-1.0.0.tgz",
                Some("https://example.org/charts/app-1.0.0.tgz"),
            ),
            (
                "https://example.org/charts/",
                "sub/app.tgz",
                Some("https://example.org/charts/sub/app.tgz"),
            ),
            (
                "https://example.org/charts",
                "/top/app.tgz",
                Some("https://example.org/top/app.tgz"),
            ),
            (
                "https://example.org/charts",
                "https://cdn.example.org/app.tgz",
                Some("https://cdn.example.org/app.tgz"),
            ),
            ("https://example.org/charts", "file:///etc/passwd", None),
        ];
        for (repo, url, expected) in cases {
            assert_eq!(
                resolve_url(repo, url).as_deref(),
                expected,
                "{repo} + {url}"
            );
        }
    }

    /// A repository at `/repo` with `app` 1.1.0 (absolute url, wrong digest) and 1.0.0
    /// (relative url, right digest).
    async fn repository() -> TestServer {
        let tgz = package("app", APP);
        let digest = Sha256Digest::of(&tgz).hex();
        let wrong = Sha256Digest::of(b"other").hex();
        let index = move |base: &str| {
            format!(
                "apiVersion: v1\nentries:\n  app:\n    - version: 1.1.0\n      urls: [\"{base}/repo/app-1.0.0.tgz\"]\n      digest: {wrong}\n    - version: 1.0.0\n      urls: [charts/app-1.0.0.tgz]\n      digest: {digest}\n      created: 2024-01-01T00:00:00Z\ngenerated: 2024-01-01T00:00:00Z\n"
            )
        };
        TestServer::start(move |request, _| match request.path.as_str() {
            "/repo/index.yaml" => {
                let host = request.header("host").unwrap_or_default();
                Reply::ok(index(&format!("http://{host}")))
            }
            "/repo/charts/app-1.0.0.tgz" | "/repo/app-1.0.0.tgz" => Reply::file(&tgz, request),
            _ => Reply::status(404),
        })
        .await
    }

    #[tokio::test]
    async fn resolves_a_chart_from_its_repository() {
        let server = repository().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let repo = server.url("/repo/");
        let fetcher = retrying(0);
        let chart = resolve_chart("app", "1.0.0", &repo, &fetcher, &cache, None)
            .await
            .unwrap();
        assert_eq!(chart.url, server.url("/repo/charts/app-1.0.0.tgz"));
        assert_eq!(chart.tgz.digest, Sha256Digest::of(&package("app", APP)));
        assert!(String::from_utf8_lossy(&chart.config_json).contains(r#""appVersion":"1.10""#));
        let locked = chart.locked();
        assert_eq!((locked.platform, &locked.url), (None, &chart.url));

        // With the lock, neither the index nor the package is requested again.
        let before = server.requests().len();
        let again = resolve_chart(
            "app",
            "1.0.0",
            &repo,
            &fetcher,
            &cache,
            Some(&[chart.locked()]),
        )
        .await
        .unwrap();
        assert_eq!(again, chart);
        assert_eq!(server.requests().len(), before);
        let error = resolve_chart(
            "app",
            "1.1.0",
            &repo,
            &fetcher,
            &cache,
            Some(&[chart.locked()]),
        )
        .await
        .unwrap_err();
        assert!(matches!(error, ResolveError::NotLocked { .. }), "{error:?}");
    }

    #[tokio::test]
    async fn index_problems_are_reported() {
        let server = repository().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let repo = server.url("/repo");
        let fetcher = retrying(0);
        let resolve = |name: &'static str, version: &'static str| {
            let (repo, fetcher, cache) = (repo.clone(), fetcher.clone(), cache.clone());
            async move { resolve_chart(name, version, &repo, &fetcher, &cache, None).await }
        };
        let message = resolve("app", "2.0.0").await.unwrap_err().to_string();
        assert!(
            message.contains("no version `2.0.0` of chart `app`; available: `1.1.0`, `1.0.0`"),
            "{message}"
        );
        let message = resolve("other", "1.0.0").await.unwrap_err().to_string();
        assert!(message.contains("has no chart `other`"), "{message}");
        let error = resolve("app", "1.1.0").await.unwrap_err();
        assert!(
            matches!(
                error,
                ResolveError::Fetch(FetchError::Cache(CacheError::DigestMismatch { .. }))
            ),
            "{error:?}"
        );
        assert!(
            std::fs::read_dir(dir.path().join("blobs/sha256"))
                .unwrap()
                .next()
                .is_none()
        );
    }
}

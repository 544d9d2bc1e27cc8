//! Binaries: URL templates expanded per platform, verified by a pinned sha256 or a checksum file.
//!
//! For each target platform the binary's URL template is expanded; platforms that expand to the
//! same URL share one download. The expected sha256 comes, in this order, from the lock (with
//! `--locked`: the bytes must be exactly those locked, a different pin in the manifest is a
//! conflict), from the manifest's `sha256`, or from its `checksumUrl`: a checksum file fetched
//! once per distinct URL and searched for the downloaded file's name ([`find_checksum`]). Every
//! download is therefore verified before it enters the cache. The one exception is a catalog
//! binary whose upstream publishes no checksum ([`BinaryChecksum::PinnedByLock`]): its first
//! build trusts the TLS download, warns, and records the sha256 in the lock, which `--locked`
//! builds then hold it to.
//!
//! The result is one [`ResolvedFile`] per platform, which becomes one lock entry
//! ([`ResolvedFile::locked`]) and one platform entry of the binary's artifact.

use std::collections::BTreeMap;

use bundle_spec::Sha256Digest;
use bundle_spec::lock::LockedFile;
use bundle_spec::manifest::{Binary, BinaryChecksum};
use bundle_spec::platform::Platform;

use crate::cache::{Cache, CacheError, CachedBlob};
use crate::fetch::{FetchError, FetchUrl, HttpFetcher};
use crate::resolve::ResolveError;

/// A binary resolved and downloaded for one platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFile {
    /// The binary's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The platform it is for.
    pub platform: Platform,
    /// The URL as the manifest expands it (before file mirrors).
    pub url: String,
    /// The verified file in the cache.
    pub blob: CachedBlob,
    /// The file's name: the URL's last path segment, percent-decoded (the binary's name if the
    /// URL ends in `/`).
    pub file_name: String,
}

impl ResolvedFile {
    /// Its lock entry.
    pub fn locked(&self) -> LockedFile {
        LockedFile {
            name: self.name.clone(),
            version: self.version.clone(),
            platform: Some(self.platform.to_string()),
            url: self.url.clone(),
            digest: self.blob.digest,
            size: self.blob.size,
        }
    }
}

/// Resolves and downloads `binary` for each of `platforms`, in order.
///
/// With `locked` (`--locked`), each platform's file must have a lock entry with the same name,
/// version, platform and URL, and its digest is the one expected: a changed upstream file is a
/// digest mismatch, and no checksum file is fetched.
///
/// `unread` gives a cached file of a known digest that need not be re-hashed now (one whose
/// compressed frames the writer copies, see `build::fetch`); any other cached file is
/// re-hashed on the hit.
pub async fn resolve_binary(
    binary: &Binary,
    platforms: &[Platform],
    fetcher: &HttpFetcher,
    cache: &Cache,
    locked: Option<&[LockedFile]>,
    unread: &(dyn Fn(&Sha256Digest) -> Option<CachedBlob> + Sync),
) -> Result<Vec<ResolvedFile>, ResolveError> {
    let mut checksum_files = BTreeMap::new();
    let mut downloaded: BTreeMap<String, CachedBlob> = BTreeMap::new();
    let mut files = Vec::with_capacity(platforms.len());
    for platform in platforms {
        let url = binary.url_for(platform);
        let file_name = file_name(&url, &binary.name);
        let blob = if let Some(blob) = downloaded.get(&url) {
            blob.clone()
        } else {
            let wanted = Wanted {
                binary,
                platform,
                url: &url,
                file_name: &file_name,
            };
            let expected = wanted
                .expected(locked, fetcher, &mut checksum_files)
                .await?;
            let blob = if let Some(blob) = expected.as_ref().and_then(unread) {
                blob
            } else {
                let blob = fetcher
                    .download(&url, expected, cache, &|_, _| {})
                    .await
                    .map_err(|error| wanted.locked_mismatch(locked.is_some(), error))?;
                if expected.is_none() {
                    wanted.warn_first_use(&blob);
                }
                blob
            };
            downloaded.insert(url.clone(), blob.clone());
            blob
        };
        files.push(ResolvedFile {
            name: binary.name.clone(),
            version: binary.version.clone(),
            platform: platform.clone(),
            url,
            blob,
            file_name,
        });
    }
    Ok(files)
}

/// One binary file to resolve.
struct Wanted<'a> {
    binary: &'a Binary,
    platform: &'a Platform,
    url: &'a str,
    file_name: &'a str,
}

impl Wanted<'_> {
    /// E.g. ``binary `etcd` `v3.5.16` for `linux/amd64` ``.
    fn describe(&self) -> String {
        format!(
            "binary `{}` `{}` for `{}`",
            self.binary.name, self.binary.version, self.platform
        )
    }

    /// The digest the file must have; `None` for a binary pinned by the lock that no lock
    /// pins yet (its first build trusts the TLS download).
    async fn expected(
        &self,
        locked: Option<&[LockedFile]>,
        fetcher: &HttpFetcher,
        checksum_files: &mut BTreeMap<String, String>,
    ) -> Result<Option<Sha256Digest>, ResolveError> {
        let pinned = self.pinned()?;
        if let Some(locked) = locked {
            return self.locked_digest(locked, pinned).map(Some);
        }
        if let Some(pinned) = pinned {
            return Ok(Some(pinned));
        }
        if self.binary.checksum == BinaryChecksum::PinnedByLock {
            return Ok(None);
        }
        let Some(checksum_url) = self.binary.checksum_url_for(self.platform) else {
            return Err(ResolveError::NoChecksum {
                what: self.describe(),
            });
        };
        if !checksum_files.contains_key(&checksum_url) {
            let text = fetcher.text(&checksum_url).await?;
            checksum_files.insert(checksum_url.clone(), text);
        }
        let text = checksum_files.get(&checksum_url).map_or("", String::as_str);
        find_checksum(text, self.file_name)
            .map(Some)
            .ok_or_else(|| ResolveError::ChecksumNotListed {
                checksum_url: FetchUrl {
                    fetched: fetcher.mirrored(&checksum_url),
                    original: checksum_url.clone(),
                },
                file: self.file_name.to_owned(),
            })
    }

    /// A download's `error`, naming the binary when `--locked` (`locked`) pinned a digest that
    /// the file no longer has: for a binary pinned by the lock alone, that is the only check.
    fn locked_mismatch(&self, locked: bool, error: FetchError) -> ResolveError {
        match error {
            FetchError::Cache(CacheError::DigestMismatch {
                expected, actual, ..
            }) if locked => ResolveError::LockedDigestMismatch {
                what: self.describe(),
                url: self.url.to_owned(),
                locked: expected,
                actual,
            },
            error => error.into(),
        }
    }

    /// Says that `blob`, downloaded without a checksum to check it against, is now pinned by
    /// the lock only: nothing but TLS vouched for these bytes.
    fn warn_first_use(&self, blob: &CachedBlob) {
        tracing::warn!(
            "{} from `{}` has no published checksum; its sha256 `{}` is pinned by the lock from now on; hint: commit the lock, and verify the file out of band",
            self.describe(),
            self.url,
            blob.digest,
        );
    }

    /// The manifest's `sha256` for this platform, if it pins one.
    fn pinned(&self) -> Result<Option<Sha256Digest>, ResolveError> {
        let Some(hex) = self
            .binary
            .checksum
            .sha256_for(self.platform.architecture())
        else {
            return Ok(None);
        };
        Sha256Digest::from_hex(hex)
            .map(Some)
            .ok_or_else(|| ResolveError::InvalidSha256 {
                what: self.describe(),
                value: hex.to_owned(),
            })
    }

    fn locked_digest(
        &self,
        locked: &[LockedFile],
        pinned: Option<Sha256Digest>,
    ) -> Result<Sha256Digest, ResolveError> {
        let platform = self.platform.to_string();
        let entry = locked
            .iter()
            .find(|entry| {
                entry.name == self.binary.name
                    && entry.version == self.binary.version
                    && entry.platform.as_deref() == Some(platform.as_str())
                    && entry.url == self.url
            })
            .ok_or_else(|| ResolveError::NotLocked {
                what: format!("{} from `{}`", self.describe(), self.url),
            })?;
        match pinned {
            Some(pinned) if pinned != entry.digest => Err(ResolveError::LockConflict {
                what: self.describe(),
                locked: entry.digest,
                pinned,
            }),
            _ => Ok(entry.digest),
        }
    }
}

/// The sha256 a checksum file gives for `file_name`.
///
/// Understands a lone digest (dl.k8s.io's `.sha256` files), coreutils lines `<hex>  <file>`
/// and `<hex> *<file>` (`SHA256SUMS`, `.sha256sum`), and BSD lines `SHA256 (<file>) = <hex>`.
/// A line matches if its file is `file_name`, `./file_name` or a path ending in
/// `/file_name`, preferring them in this order. Digits may be uppercase.
pub fn find_checksum(text: &str, file_name: &str) -> Option<Sha256Digest> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    if let [only] = lines.as_slice()
        && let Some(digest) = parse_hex(only)
    {
        return Some(digest);
    }
    lines
        .iter()
        .filter_map(|line| {
            let (digest, name) = parse_line(line)?;
            Some((match_rank(name, file_name)?, digest))
        })
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, digest)| digest)
}

/// A checksum line as `(digest, file)`.
fn parse_line(line: &str) -> Option<(Sha256Digest, &str)> {
    if let Some(rest) = line.strip_prefix("SHA256 (") {
        let (name, hex) = rest.rsplit_once(") = ")?;
        return Some((parse_hex(hex)?, name));
    }
    let (hex, rest) = line.split_once(char::is_whitespace)?;
    let name = rest.trim_start();
    let name = name.strip_prefix('*').unwrap_or(name);
    Some((parse_hex(hex)?, name))
}

/// How well a listed `name` matches `file_name`: 0 exactly, 1 as `./file_name`, 2 as a path
/// ending in it.
fn match_rank(name: &str, file_name: &str) -> Option<u8> {
    if name == file_name {
        Some(0)
    } else if name.strip_prefix("./") == Some(file_name) {
        Some(1)
    } else if name
        .strip_suffix(file_name)
        .is_some_and(|prefix| prefix.ends_with('/'))
    {
        Some(2)
    } else {
        None
    }
}

fn parse_hex(hex: &str) -> Option<Sha256Digest> {
    Sha256Digest::from_hex(&hex.trim().to_ascii_lowercase())
}

/// The file name a URL downloads: its last path segment, percent-decoded; `fallback` if empty.
pub fn file_name(url: &str, fallback: &str) -> String {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .split_once("://")
        .map_or("", |(_, rest)| rest);
    let segment = path
        .split_once('/')
        .map_or("", |(_, path)| path.rsplit('/').next().unwrap_or_default());
    let name = percent_decode(segment);
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        fallback.to_owned()
    } else {
        name
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| bytes.get(index + 1..index + 3))
            .flatten()
            .filter(|pair| pair.iter().all(u8::is_ascii_hexdigit))
            .and_then(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok());
        if let Some(byte) = escaped {
            decoded.push(byte);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use bundle_spec::manifest::Manifest;

    use super::*;
    use crate::fetch::test_server::{Reply, TestServer, retrying};

    const A: &str = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";
    const B: &str = "3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d";

    fn digest(hex: &str) -> Option<Sha256Digest> {
        Sha256Digest::from_hex(hex)
    }

    #[test]
    fn checksum_file_formats() {
        let upper = A.to_uppercase();
        let cases: Vec<(String, &str, Option<&str>)> = vec![
            // dl.k8s.io `kubelet.sha256`: the digest alone.
            (format!("{A}\n"), "kubelet", Some(A)),
            (format!("  {upper}  "), "kubelet", Some(A)),
            // coreutils text and binary mode.
            (
                format!("{A}  etcd.tar.gz\n{B}  other.tar.gz\n"),
                "other.tar.gz",
                Some(B),
            ),
            (format!("{A} *etcd.tar.gz\n"), "etcd.tar.gz", Some(A)),
            (
                format!("# comment\n\n{A}  etcd.tar.gz\n"),
                "etcd.tar.gz",
                Some(A),
            ),
            // `./name` and `dir/name`; an exact name wins over a path.
            (format!("{A}  ./crictl.tgz\n"), "crictl.tgz", Some(A)),
            (
                format!("{A}  dist/linux/crictl.tgz\n"),
                "crictl.tgz",
                Some(A),
            ),
            (
                format!("{A}  dist/crictl.tgz\n{B}  crictl.tgz\n"),
                "crictl.tgz",
                Some(B),
            ),
            // BSD tag format.
            (
                format!("SHA256 (helm.tar.gz) = {A}\n"),
                "helm.tar.gz",
                Some(A),
            ),
            // Absent, or only similar names.
            (format!("{A}  etcd.tar.gz\n"), "etcd", None),
            (format!("{A}  my-etcd.tar.gz\n"), "etcd.tar.gz", None),
            (format!("{A}  etcd.tar.gz\n{B}  x\n"), "kubelet", None),
            // Not a sha256.
            ("abc  etcd.tar.gz\n".to_owned(), "etcd.tar.gz", None),
            (format!("{}\n", &A[..40]), "kubelet", None),
            (String::new(), "kubelet", None),
        ];
        for (text, file, expected) in cases {
            assert_eq!(
                find_checksum(&text, file),
                expected.and_then(digest),
                "{file} in {text:?}"
            );
        }
    }

    #[test]
    fn file_names_from_urls() {
        let cases = [
            (
                "https://dl.k8s.io/release/v1.31.4/bin/linux/amd64/kubelet",
                "kubelet",
            ),
            (
                "https://example.org/a/etcd-v3.5.16-linux-amd64.tar.gz?x=1#y",
                "etcd-v3.5.16-linux-amd64.tar.gz",
            ),
            ("https://example.org/k3s-v1.31%2Bk3s1", "k3s-v1.31+k3s1"),
            ("https://example.org/bad%zz%2", "bad%zz%2"),
            ("https://example.org/dir/", "fallback"),
            ("https://example.org", "fallback"),
            ("https://example.org/a%2Fb", "fallback"),
        ];
        for (url, expected) in cases {
            assert_eq!(file_name(url, "fallback"), expected, "{url}");
        }
    }

    /// `resolve_binary` for the test platforms, re-hashing every cached file it finds.
    async fn resolve(
        binary: &Binary,
        fetcher: &HttpFetcher,
        cache: &Cache,
        locked: Option<&[LockedFile]>,
    ) -> Result<Vec<ResolvedFile>, ResolveError> {
        resolve_binary(binary, &platforms(), fetcher, cache, locked, &|_| None).await
    }

    fn binary(spec: &str) -> Binary {
        let text = format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: t}}\nspec:\n  platforms: [linux/amd64, linux/arm64]\n  binaries:\n{spec}"
        );
        let manifest = Manifest::from_str_named(&text, "t.yaml").unwrap();
        manifest.spec().binaries[0].clone()
    }

    fn platforms() -> Vec<Platform> {
        vec![Platform::linux_amd64(), "linux/arm64".parse().unwrap()]
    }

    /// Serves `tool-amd64`, `tool-arm64` and a `SHA256SUMS` listing both.
    async fn server() -> TestServer {
        TestServer::start(|request, _| match request.path.as_str() {
            "/v1/tool-amd64" => Reply::file(b"amd64 build", request),
            "/v1/tool-arm64" => Reply::file(b"arm64 build", request),
            "/v1/any" => Reply::file(b"portable", request),
            "/v1/SHA256SUMS" => Reply::ok(format!(
                "{}  tool-amd64\n{}  ./tool-arm64\n",
                Sha256Digest::of(b"amd64 build").hex(),
                Sha256Digest::of(b"arm64 build").hex()
            )),
            _ => Reply::status(404),
        })
        .await
    }

    fn with_checksum_file(server: &TestServer) -> Binary {
        binary(&format!(
            "    - name: tool\n      version: v1\n      url: {}\n      checksumUrl: {}\n",
            server.url("/{version}/tool-{arch}"),
            server.url("/{version}/SHA256SUMS")
        ))
    }

    #[tokio::test]
    async fn resolves_per_platform_from_a_checksum_file() {
        let server = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let binary = with_checksum_file(&server);
        let files = resolve(&binary, &retrying(0), &cache, None).await.unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[1].file_name, "tool-arm64");
        assert_eq!(files[1].blob.digest, Sha256Digest::of(b"arm64 build"));
        let locked = files[0].locked();
        assert_eq!(locked.platform.as_deref(), Some("linux/amd64"));
        assert_eq!(locked.url, server.url("/v1/tool-amd64"));
        assert_eq!(
            (locked.digest, locked.size),
            (Sha256Digest::of(b"amd64 build"), 11)
        );
        let sums = server
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("SUMS"))
            .count();
        assert_eq!(sums, 1, "the checksum file is fetched once");
    }

    #[tokio::test]
    async fn platforms_with_one_url_share_a_download() {
        let server = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let hex = Sha256Digest::of(b"portable").hex();
        let binary = binary(&format!(
            "    - name: tool\n      version: v1\n      url: {}\n      sha256: {hex}\n",
            server.url("/{version}/any")
        ));
        let files = resolve(&binary, &retrying(0), &cache, None).await.unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].blob, files[1].blob);
        assert_ne!(files[0].platform, files[1].platform);
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn a_file_missing_from_the_checksum_file_is_named() {
        let server = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let binary = binary(&format!(
            "    - name: tool\n      version: v1\n      url: {}\n      checksumUrl: {}\n",
            server.url("/{version}/tool-{os}-{arch}"),
            server.url("/{version}/SHA256SUMS")
        ));
        let message = resolve(&binary, &retrying(0), &cache, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(message.contains(&server.url("/v1/SHA256SUMS")), "{message}");
        assert!(message.contains("`tool-linux-amd64`"), "{message}");
    }

    #[tokio::test]
    async fn locked_digests_are_enforced() {
        let server = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let binary = with_checksum_file(&server);
        let fetcher = retrying(0);
        let files = resolve(&binary, &fetcher, &cache, None).await.unwrap();
        let mut lock: Vec<LockedFile> = files.iter().map(ResolvedFile::locked).collect();
        let before = server.requests().len();

        // The same lock: everything is a cache hit, not even the checksum file is fetched.
        let again = resolve(&binary, &fetcher, &cache, Some(&lock))
            .await
            .unwrap();
        assert_eq!(again, files);
        assert_eq!(server.requests().len(), before);

        // Upstream drifted from the lock: a mismatch naming both digests.
        lock[1].digest = Sha256Digest::of(b"what was locked");
        let message = resolve(&binary, &fetcher, &cache, Some(&lock))
            .await
            .unwrap_err()
            .to_string();
        assert!(message.contains(&lock[1].digest.to_string()), "{message}");
        assert!(
            message.contains(&Sha256Digest::of(b"arm64 build").to_string()),
            "{message}"
        );

        // Not in the lock at all.
        lock.remove(1);
        let error = resolve(&binary, &fetcher, &cache, Some(&lock))
            .await
            .unwrap_err();
        assert!(matches!(error, ResolveError::NotLocked { .. }), "{error:?}");
    }

    /// A `tool` the catalog would mark as having no published checksum.
    fn pinned_by_lock(server: &TestServer) -> Binary {
        let mut binary = with_checksum_file(server);
        binary.checksum = BinaryChecksum::PinnedByLock;
        binary
    }

    /// Everything logged while `future` runs, as plain text.
    async fn logged<T>(future: impl Future<Output = T>) -> (T, String) {
        #[derive(Clone, Default)]
        struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .finish();
        // The test runtime is single-threaded, so the default holds for the whole future.
        let _guard = tracing::subscriber::set_default(subscriber);
        let value = future.await;
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        (value, text)
    }

    #[tokio::test]
    async fn a_binary_without_a_published_checksum_is_pinned_by_the_first_lock() {
        let server = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let binary = pinned_by_lock(&server);
        let (files, warnings) = logged(resolve(&binary, &retrying(0), &cache, None)).await;
        let files = files.unwrap();
        let locked: Vec<LockedFile> = files.iter().map(ResolvedFile::locked).collect();
        assert_eq!(locked[0].digest, Sha256Digest::of(b"amd64 build"));
        assert_eq!(locked[1].digest, Sha256Digest::of(b"arm64 build"));
        assert!(
            server.requests().iter().all(|r| !r.path.ends_with("SUMS")),
            "no checksum file is fetched"
        );
        for file in &locked {
            assert!(warnings.contains(&file.url), "{warnings}");
            assert!(warnings.contains(&file.digest.to_string()), "{warnings}");
        }
        assert!(
            warnings.contains("binary `tool` `v1` for `linux/arm64`"),
            "{warnings}"
        );
        assert!(warnings.contains("no published checksum"), "{warnings}");
        assert!(warnings.contains("pinned by the lock"), "{warnings}");
        assert!(warnings.contains("hint: commit the lock"), "{warnings}");

        // `--locked` with the same lock: the cached files, and no warning.
        let (again, quiet) = logged(resolve(&binary, &retrying(0), &cache, Some(&locked))).await;
        assert_eq!(again.unwrap(), files);
        assert_eq!(quiet, "");
    }

    #[tokio::test]
    async fn locked_refuses_a_changed_file_pinned_by_the_lock_alone() {
        let server = server().await;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let binary = pinned_by_lock(&server);
        let mut lock: Vec<LockedFile> = resolve(&binary, &retrying(0), &cache, None)
            .await
            .unwrap()
            .iter()
            .map(ResolvedFile::locked)
            .collect();
        // What the first build saw is not what upstream serves now.
        lock[1].digest = Sha256Digest::of(b"what the first build saw");
        let error = resolve(&binary, &retrying(0), &cache, Some(&lock))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, ResolveError::LockedDigestMismatch { locked, actual, .. }
                if *locked == lock[1].digest && *actual == Sha256Digest::of(b"arm64 build")),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("binary `tool` `v1` for `linux/arm64`"),
            "{message}"
        );
        assert!(message.contains(&lock[1].url), "{message}");
        assert!(message.contains(&lock[1].digest.to_string()), "{message}");
        assert!(
            message.contains(&Sha256Digest::of(b"arm64 build").to_string()),
            "{message}"
        );
    }
}

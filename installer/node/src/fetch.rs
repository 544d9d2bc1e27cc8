//! `kk-node fetch` (and `kk-install fetch`), run *on a node*: takes a binary from kk's registry,
//! verifies it and installs it.
//!
//! The installer machine never copies the bundle's binaries to the nodes itself. It sends one
//! copy of the small `kk-node` agent to each node and then a command naming what the node must fetch: a
//! reference in the registry (`kk.internal/binaries/etcd:v3.4.23`) and the manifest digests the
//! verified bundle lists for it. The node resolves the reference over TLS (trusting only the
//! installation's CA), picks its own platform from an index, refuses a manifest whose digest the
//! bundle does not list, downloads the single layer, checks its size and sha256, and installs
//! the file — or, for a release archive (`.tar.gz`, `.tgz`), the named programs inside it. So
//! the installer machine sends commands, not gigabytes, and 500 nodes cost about what 5 do.
//!
//! Every installed file goes to a temporary name in its directory, is fsynced and renamed into
//! place, so a node never runs a half-written binary. A stamp under [`STAMP_DIR`] records what a
//! fetch installed with each file's sha256; a rerun whose files still match does nothing at all
//! (no network, no write).
//!
//! A request names every host of the `image_registry` group, each serving the same store. They
//! are tried in the order given: the next one when a host cannot be reached, times out
//! (including mid-download) or answers 5xx. Every answer is checked the same way whoever gives
//! it (the manifest against the bundle's digests, the layer against its size and sha256), so a
//! fallback never weakens what a node accepts; a host that answers wrongly (4xx, a manifest the
//! bundle does not list, a corrupt blob) ends the fetch instead of being skipped.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bundle_spec::Sha256Digest;
use bundle_spec::oci::{Document as Manifest, ReferenceParts, TITLE_ANNOTATION};
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

mod error;

pub use error::FetchError;

/// Where a node keeps the record of each fetch.
pub const STAMP_DIR: &str = "/var/lib/kk/fetched";

/// What to fetch and where to put it.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// kk's registry hosts, `host:port` (HTTPS), tried in this order (see the module docs).
    pub registries: Vec<String>,
    /// The CA certificate (PEM) the registry's certificate must chain to; nothing else is trusted.
    pub ca: PathBuf,
    /// `repository:tag` in the registry.
    pub reference: String,
    /// The manifest digests the bundle lists for the reference (one per platform).
    pub expect: Vec<Sha256Digest>,
    /// The directory the files go to.
    pub into: PathBuf,
    /// For an archive: the programs to take from it by file name (all regular files when
    /// empty). For a plain file: the name to install it under (its title when empty).
    pub files: Vec<String>,
    /// Where stamps are kept ([`STAMP_DIR`] on a node).
    pub stamp_dir: PathBuf,
    /// A file holding `username:password` for a registry that wants basic credentials (an
    /// external registry; kk's wants none).
    pub auth_file: Option<PathBuf>,
}

/// What a fetch did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    /// The manifest that was installed.
    pub manifest: String,
    /// Each installed file with its sha256.
    pub files: BTreeMap<PathBuf, String>,
    /// Bytes downloaded (0 when nothing had to be done).
    pub downloaded: u64,
    /// Whether everything was already in place.
    pub unchanged: bool,
}

/// Fetches and installs `request`; does nothing when a stamp says it was done and every file
/// still matches it.
pub async fn fetch(request: &FetchRequest) -> Result<Fetched, FetchError> {
    if let Some(done) = already_done(request) {
        return Ok(done);
    }
    let client = client(&request.ca, request.auth_file.as_deref())?;
    let (repository, tag) = split_reference(&request.reference)?;
    fs::create_dir_all(&request.into).map_err(FetchError::io(&request.into))?;
    let mut unavailable = Vec::new();
    for registry in &request.registries {
        let base = format!("https://{registry}/v2/{repository}");
        match download_from(&client, &base, tag, request).await {
            Ok(downloaded) => return finish(request, downloaded).await,
            Err(error) if error.is_unavailable() => {
                // The agent has no logger: its stderr is what the install shows for the step.
                eprintln!(
                    "warning: registry `{registry}` is unavailable, trying the next: {error}"
                );
                unavailable.push(error);
            }
            Err(error) => return Err(error),
        }
    }
    Err(FetchError::exhausted(&request.registries, unavailable))
}

/// A layer downloaded from one registry host, not installed yet.
struct Downloaded {
    manifest: Sha256Digest,
    title: String,
    staged: tempfile::NamedTempFile,
    bytes: u64,
}

/// The manifest and the layer of `tag`, from the registry at `base`.
async fn download_from(
    client: &reqwest::Client,
    base: &str,
    tag: &str,
    request: &FetchRequest,
) -> Result<Downloaded, FetchError> {
    let (manifest, document) = resolve(client, base, tag, request).await?;
    let layer = single_layer(&document, &request.reference)?;
    let (staged, bytes) = download(client, base, &layer, &request.into).await?;
    Ok(Downloaded {
        manifest,
        title: layer.title,
        staged,
        bytes,
    })
}

/// Installs what was downloaded and records the stamp.
async fn finish(request: &FetchRequest, downloaded: Downloaded) -> Result<Fetched, FetchError> {
    let request_owned = request.clone();
    let Downloaded {
        manifest,
        title,
        staged,
        bytes,
    } = downloaded;
    let files = tokio::task::spawn_blocking(move || install(&staged, &title, &request_owned))
        .await
        .map_err(|e| FetchError::Io {
            path: request.into.clone(),
            source: io::Error::other(e),
        })??;
    let fetched = Fetched {
        manifest: manifest.to_string(),
        files,
        downloaded: bytes,
        unchanged: false,
    };
    write_stamp(request, &fetched)?;
    Ok(fetched)
}

/// Waits until every registry of `registries` answers `/v2/` over TLS verified with `ca` (and
/// accepts the credentials of `auth_file`, if given), for at most `wait` in all.
///
/// Every host, not any: the install's `registry.ready` uses this to prove that the node
/// reaches and trusts each host its `hosts.toml` lists, so a host that is wrong from the start
/// (its certificate, a firewall) is named at install time instead of being hidden behind the
/// fallback until the others fail too.
pub async fn ping(
    registries: &[String],
    ca: &Path,
    auth_file: Option<&Path>,
    wait: Duration,
) -> Result<(), FetchError> {
    let client = client(ca, auth_file)?;
    let deadline = tokio::time::Instant::now() + wait;
    if registries.is_empty() {
        return Err(FetchError::exhausted(registries, Vec::new()));
    }
    for registry in registries {
        ping_one(&client, registry, deadline).await?;
    }
    Ok(())
}

async fn ping_one(
    client: &reqwest::Client,
    registry: &str,
    deadline: tokio::time::Instant,
) -> Result<(), FetchError> {
    let url = format!("https://{registry}/v2/");
    loop {
        let outcome = client.get(&url).send().await;
        match outcome {
            Ok(response) if response.status().is_success() => return Ok(()),
            _ if tokio::time::Instant::now() >= deadline => {
                return Err(match outcome {
                    Ok(response) => FetchError::Status {
                        url,
                        status: response.status().as_u16(),
                    },
                    Err(source) => FetchError::Http { url, source },
                });
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

fn client(ca: &Path, auth_file: Option<&Path>) -> Result<reqwest::Client, FetchError> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(path) = auth_file {
        headers.insert(reqwest::header::AUTHORIZATION, basic_auth(path)?);
    }
    reqwest::Client::builder()
        .user_agent(concat!("kk-node/", env!("CARGO_PKG_VERSION")))
        .default_headers(headers)
        .tls_backend_preconfigured(tls_config(ca)?)
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|source| FetchError::Http {
            url: String::new(),
            source,
        })
}

/// TLS that trusts only the CA in `ca`, with ring's primitives: the agent carries one crypto
/// provider, the small one, whichever other the workspace links.
fn tls_config(ca: &Path) -> Result<rustls::ClientConfig, FetchError> {
    use rustls::pki_types::{CertificateDer, pem::PemObject as _};
    let bad = |source: Box<dyn std::error::Error + Send + Sync>| FetchError::Ca {
        path: ca.to_owned(),
        source,
    };
    let pem = fs::read(ca).map_err(FetchError::io(ca))?;
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        roots
            .add(certificate.map_err(|e| bad(Box::new(e)))?)
            .map_err(|e| bad(Box::new(e)))?;
    }
    if roots.is_empty() {
        return Err(bad("no certificate found".into()));
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(Box::new(e)))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// `Basic <base64>` of the `username:password` line in `path`, marked sensitive (never shown
/// in debug output). reqwest drops it on a redirect to another host.
fn basic_auth(path: &Path) -> Result<reqwest::header::HeaderValue, FetchError> {
    use base64::Engine as _;
    let bad = || FetchError::AuthFile {
        path: path.to_owned(),
    };
    let text = fs::read_to_string(path).map_err(|_| bad())?;
    let line = text.lines().next().unwrap_or_default();
    if !line.contains(':') {
        return Err(bad());
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(line);
    let mut value =
        reqwest::header::HeaderValue::from_str(&format!("Basic {encoded}")).map_err(|_| bad())?;
    value.set_sensitive(true);
    Ok(value)
}

/// The repository and the tag of `reference`, which a fetch needs both of (and no digest).
fn split_reference(reference: &str) -> Result<(&str, &str), FetchError> {
    match ReferenceParts::split(reference) {
        ReferenceParts {
            repository,
            tag: Some(tag),
            digest: None,
            ..
        } if !repository.is_empty() => Ok((repository, tag)),
        _ => Err(FetchError::Reference(reference.to_owned())),
    }
}

/// The manifest of the node's platform, checked against the digests the bundle lists.
async fn resolve(
    client: &reqwest::Client,
    base: &str,
    tag: &str,
    request: &FetchRequest,
) -> Result<(Sha256Digest, Manifest), FetchError> {
    let bytes = get_manifest(client, &format!("{base}/manifests/{tag}")).await?;
    let mut digest = Sha256Digest::of(&bytes);
    let mut document: Manifest = parse_manifest(&bytes, &request.reference)?;
    if let Some(entries) = &document.manifests {
        let arch = node_arch();
        let entry = entries
            .iter()
            .find(|m| {
                m.platform.as_ref().is_some_and(|p| {
                    p.os().to_string() == "linux" && p.architecture().to_string() == arch
                })
            })
            .ok_or_else(|| FetchError::NoPlatform {
                reference: request.reference.clone(),
                platform: format!("linux/{arch}"),
            })?;
        let bytes = get_manifest(client, &format!("{base}/manifests/{}", entry.digest)).await?;
        digest = Sha256Digest::of(&bytes);
        document = parse_manifest(&bytes, &request.reference)?;
    }
    if !request.expect.contains(&digest) {
        return Err(FetchError::UnexpectedManifest {
            reference: request.reference.clone(),
            digest: digest.to_string(),
        });
    }
    Ok((digest, document))
}

async fn get_manifest(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, FetchError> {
    let response = client
        .get(url)
        .header(
            reqwest::header::ACCEPT,
            bundle_spec::oci::MANIFEST_MEDIA_TYPES.join(", "),
        )
        .send()
        .await
        .map_err(|source| FetchError::Http {
            url: url.to_owned(),
            source,
        })?;
    if !response.status().is_success() {
        return Err(FetchError::Status {
            url: url.to_owned(),
            status: response.status().as_u16(),
        });
    }
    // Manifests are small; a registry sending more than this is not one to trust.
    let bytes = response.bytes().await.map_err(|source| FetchError::Http {
        url: url.to_owned(),
        source,
    })?;
    if bytes.len() > 4 << 20 {
        return Err(FetchError::Status {
            url: url.to_owned(),
            status: 413,
        });
    }
    Ok(bytes.to_vec())
}

/// The one layer of a binary artifact.
#[derive(Debug, Clone)]
struct Layer {
    digest: Sha256Digest,
    size: u64,
    title: String,
}

fn parse_manifest(bytes: &[u8], reference: &str) -> Result<Manifest, FetchError> {
    serde_json::from_slice(bytes).map_err(|source| FetchError::Manifest {
        reference: reference.to_owned(),
        reason: source.to_string(),
    })
}

fn single_layer(manifest: &Manifest, reference: &str) -> Result<Layer, FetchError> {
    let bad = |reason: &str| FetchError::Manifest {
        reference: reference.to_owned(),
        reason: reason.to_owned(),
    };
    let [layer] = manifest.layers.as_slice() else {
        return Err(bad("a binary artifact has exactly one layer"));
    };
    let digest = layer
        .digest
        .strip_prefix("sha256:")
        .and_then(Sha256Digest::from_hex)
        .ok_or_else(|| bad("its layer digest is not sha256"))?;
    // A chart's layer (Helm's OCI layout) has no title: it is kept as one file, whose name
    // the request gives.
    let title = layer
        .annotation(TITLE_ANNOTATION)
        .filter(|t| !t.is_empty() && !t.contains('/'))
        .unwrap_or_default()
        .to_owned();
    Ok(Layer {
        digest,
        size: layer.size,
        title,
    })
}

/// The node's architecture in OCI's spelling.
fn node_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// Downloads the layer into a temporary file in `dir`, enforcing its size and digest as the
/// bytes arrive.
async fn download(
    client: &reqwest::Client,
    base: &str,
    layer: &Layer,
    dir: &Path,
) -> Result<(tempfile::NamedTempFile, u64), FetchError> {
    let url = format!("{base}/blobs/{}", layer.digest);
    let http = |source| FetchError::Http {
        url: url.clone(),
        source,
    };
    let response = client.get(&url).send().await.map_err(http)?;
    if !response.status().is_success() {
        return Err(FetchError::Status {
            url,
            status: response.status().as_u16(),
        });
    }
    let mut staged = tempfile::Builder::new()
        .prefix(".kk-fetch-")
        .tempfile_in(dir)
        .map_err(FetchError::io(dir))?;
    let mut hasher = Sha256::new();
    let mut received = 0u64;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(http)?;
        received += chunk.len() as u64;
        if received > layer.size {
            return Err(FetchError::Blob {
                digest: layer.digest.to_string(),
                reason: format!("the registry sent more than its {} bytes", layer.size),
            });
        }
        hasher.update(&chunk);
        staged
            .write_all(&chunk)
            .map_err(FetchError::io(staged.path()))?;
    }
    let got = Sha256Digest::from_hex(&hex::encode(hasher.finalize()));
    if received != layer.size || got.as_ref() != Some(&layer.digest) {
        return Err(FetchError::Blob {
            digest: layer.digest.to_string(),
            reason: format!(
                "received {received} of {} bytes, sha256 {}",
                layer.size,
                got.map_or_else(String::new, |d| d.hex())
            ),
        });
    }
    Ok((staged, received))
}

/// Installs the downloaded blob: the named programs of an archive, or the file itself.
fn install(
    staged: &tempfile::NamedTempFile,
    title: &str,
    request: &FetchRequest,
) -> Result<BTreeMap<PathBuf, String>, FetchError> {
    let lower = title.to_ascii_lowercase();
    let is_archive = [".tar.gz", ".tgz"]
        .iter()
        .any(|suffix| lower.ends_with(suffix));
    if !is_archive {
        let name = request.files.first().map_or(title, String::as_str);
        if name.is_empty() {
            return Err(FetchError::Manifest {
                reference: request.reference.clone(),
                reason: "its layer has no file name (org.opencontainers.image.title) and none was asked for (--file)".to_owned(),
            });
        }
        let target = request.into.join(name);
        let mut file = fs::File::open(staged.path()).map_err(FetchError::io(staged.path()))?;
        let digest = place(&mut file, &target)?;
        return Ok(BTreeMap::from([(target, digest)]));
    }
    let file = fs::File::open(staged.path()).map_err(FetchError::io(staged.path()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut installed = BTreeMap::new();
    let archive_error = |source| FetchError::Archive {
        name: title.to_owned(),
        source,
    };
    for entry in archive.entries().map_err(archive_error)? {
        let mut entry = entry.map_err(archive_error)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(archive_error)?.into_owned();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if !request.files.is_empty() && !request.files.contains(&name) {
            continue;
        }
        let target = request.into.join(&name);
        let digest = place(&mut entry, &target)?;
        installed.insert(target, digest);
    }
    let missing: Vec<&String> = request
        .files
        .iter()
        .filter(|name| !installed.contains_key(&request.into.join(name)))
        .collect();
    if !missing.is_empty() {
        return Err(FetchError::NotInArchive {
            name: title.to_owned(),
            missing: missing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(installed)
}

/// Writes `content` to `target` (mode 0755) through a temporary file, fsync and rename;
/// returns its sha256.
fn place(content: &mut dyn Read, target: &Path) -> Result<String, FetchError> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let mut temp = tempfile::Builder::new()
        .prefix(".kk-fetch-")
        .tempfile_in(dir)
        .map_err(FetchError::io(dir))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 << 10];
    loop {
        let n = match content.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FetchError::io(target)(e)),
        };
        hasher.update(&buffer[..n]);
        temp.write_all(&buffer[..n])
            .map_err(FetchError::io(target))?;
    }
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o755))
        .map_err(FetchError::io(target))?;
    bundle_spec::durable::persist(temp, target).map_err(FetchError::io(target))?;
    Ok(hex::encode(hasher.finalize()))
}

/// The stamp file of a request: one per reference, named by the digest of the reference.
fn stamp_path(request: &FetchRequest) -> PathBuf {
    let key = Sha256Digest::of(request.reference.as_bytes()).hex();
    request.stamp_dir.join(format!("{key}.json"))
}

/// The recorded fetch, when its manifest is one the bundle lists and every file still has
/// the recorded content.
fn already_done(request: &FetchRequest) -> Option<Fetched> {
    let text = fs::read(stamp_path(request)).ok()?;
    let mut fetched: Fetched = serde_json::from_slice(&text).ok()?;
    let listed = request
        .expect
        .iter()
        .any(|digest| digest.to_string() == fetched.manifest);
    let intact = fetched.files.iter().all(|(path, sha)| {
        path.starts_with(&request.into)
            && fs::File::open(path)
                .ok()
                .and_then(|file| Sha256Digest::of_reader(file).ok())
                .is_some_and(|(digest, _)| digest.hex() == *sha)
    });
    let wanted = request
        .files
        .iter()
        .all(|name| fetched.files.contains_key(&request.into.join(name)));
    (listed && intact && wanted && !fetched.files.is_empty()).then(|| {
        fetched.unchanged = true;
        fetched.downloaded = 0;
        fetched
    })
}

fn write_stamp(request: &FetchRequest, fetched: &Fetched) -> Result<(), FetchError> {
    let path = stamp_path(request);
    fs::create_dir_all(&request.stamp_dir).map_err(FetchError::io(&request.stamp_dir))?;
    let json = serde_json::to_vec_pretty(fetched).map_err(|e| FetchError::io(&path)(e.into()))?;
    bundle_spec::durable::write(&path, &json, 0o644, ".kk-fetch-").map_err(FetchError::io(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(into: &Path, files: &[&str]) -> FetchRequest {
        FetchRequest {
            registries: vec!["127.0.0.1:1".to_owned()],
            ca: into.join("ca.crt"),
            reference: "kk.internal/binaries/etcd:v3.4.23".to_owned(),
            expect: vec![Sha256Digest::of(b"manifest")],
            into: into.to_owned(),
            files: files.iter().map(|s| (*s).to_owned()).collect(),
            stamp_dir: into.join("stamps"),
            auth_file: None,
        }
    }

    fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, content) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o755);
            header.set_cksum();
            builder
                .append_data(&mut header, name, *content)
                .expect("append");
        }
        builder.into_inner().expect("tar").finish().expect("gzip")
    }

    #[test]
    fn an_archive_gives_the_named_programs_flattened_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blob = tar_gz(&[
            ("etcd-v3.4.23-linux-amd64/etcd", b"etcd binary"),
            ("etcd-v3.4.23-linux-amd64/etcdctl", b"etcdctl binary"),
            ("etcd-v3.4.23-linux-amd64/README.md", b"readme"),
        ]);
        let mut staged = tempfile::NamedTempFile::new_in(dir.path()).expect("temp");
        staged.write_all(&blob).expect("write");
        let req = request(dir.path(), &["etcd", "etcdctl"]);
        let installed = install(&staged, "etcd-v3.4.23-linux-amd64.tar.gz", &req).expect("install");
        assert_eq!(
            installed.keys().cloned().collect::<Vec<_>>(),
            vec![dir.path().join("etcd"), dir.path().join("etcdctl")]
        );
        assert_eq!(
            fs::read(dir.path().join("etcdctl")).expect("read"),
            b"etcdctl binary"
        );
        let mode = fs::metadata(dir.path().join("etcd"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(!dir.path().join("README.md").exists());
    }

    #[test]
    fn a_layer_without_a_file_name_is_kept_whole_under_the_asked_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let chart = tar_gz(&[("tigera-operator/Chart.yaml", b"name: tigera-operator")]);
        let mut staged = tempfile::NamedTempFile::new_in(dir.path()).expect("temp");
        staged.write_all(&chart).expect("write");
        let req = request(dir.path(), &["tigera-operator-v3.30.5.tgz"]);
        let installed = install(&staged, "", &req).expect("install");
        let target = dir.path().join("tigera-operator-v3.30.5.tgz");
        assert_eq!(installed.keys().collect::<Vec<_>>(), [&target]);
        assert_eq!(fs::read(&target).expect("read"), chart, "not unpacked");
        let error = install(&staged, "", &request(dir.path(), &[])).expect_err("no name");
        assert!(error.to_string().contains("no file name"), "{error}");
    }

    #[test]
    fn a_program_missing_from_the_archive_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut staged = tempfile::NamedTempFile::new_in(dir.path()).expect("temp");
        staged
            .write_all(&tar_gz(&[("bin/containerd", b"x")]))
            .expect("write");
        let req = request(dir.path(), &["containerd", "ctr"]);
        let error = install(&staged, "containerd-1.6.20-linux-amd64.tar.gz", &req)
            .expect_err("ctr is missing");
        assert!(error.to_string().contains("`ctr`"), "{error}");
    }

    #[test]
    fn a_plain_file_is_installed_under_the_name_asked_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut staged = tempfile::NamedTempFile::new_in(dir.path()).expect("temp");
        staged.write_all(b"runc").expect("write");
        let req = request(dir.path(), &["runc"]);
        let installed = install(&staged, "runc.amd64", &req).expect("install");
        assert_eq!(installed.len(), 1);
        assert_eq!(fs::read(dir.path().join("runc")).expect("read"), b"runc");
    }

    #[test]
    fn a_stamp_counts_only_while_the_files_match_and_the_bundle_lists_the_manifest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let req = request(dir.path(), &["etcd"]);
        fs::write(dir.path().join("etcd"), b"etcd").expect("write");
        let fetched = Fetched {
            manifest: Sha256Digest::of(b"manifest").to_string(),
            files: BTreeMap::from([(dir.path().join("etcd"), Sha256Digest::of(b"etcd").hex())]),
            downloaded: 10,
            unchanged: false,
        };
        write_stamp(&req, &fetched).expect("stamp");
        assert!(already_done(&req).is_some_and(|f| f.unchanged && f.downloaded == 0));
        let mut other_bundle = req.clone();
        other_bundle.expect = vec![Sha256Digest::of(b"another manifest")];
        assert!(already_done(&other_bundle).is_none());
        let mut more_files = req.clone();
        more_files.files.push("etcdctl".to_owned());
        assert!(already_done(&more_files).is_none());
        fs::write(dir.path().join("etcd"), b"changed").expect("write");
        assert!(already_done(&req).is_none());
    }

    #[test]
    fn references_split_at_the_tag() {
        assert_eq!(
            split_reference("kk.internal/binaries/etcd:v3.4.23").ok(),
            Some(("kk.internal/binaries/etcd", "v3.4.23"))
        );
        assert_eq!(
            split_reference("registry:5000/app:1").ok(),
            Some(("registry:5000/app", "1"))
        );
        assert!(split_reference("registry:5000/app").is_err());
        assert!(split_reference(":1").is_err());
        assert!(split_reference("notag").is_err());
    }
}

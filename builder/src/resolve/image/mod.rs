//! Images through the OCI distribution API (oci-client), kept byte for byte.
//!
//! A reference resolves to the digest of whatever its tag names upstream — a manifest or an
//! index — and that document is stored exactly as served, so every digest pin keeps working. For
//! an index, only the manifests of the requested platforms are fetched, with their configs and
//! layers; the index itself is not rewritten, and the platforms it offers beyond the requested
//! ones are recorded as omitted. A requested platform the image does not have is an error, unless
//! the caller allows missing platforms.

mod access;
mod document;
mod referrers;
#[cfg(test)]
mod referrers_tests;
#[cfg(test)]
mod tests;
mod verify;

use std::collections::BTreeSet;
use std::path::PathBuf;

use bundle_spec::Sha256Digest;
use bundle_spec::lock::{LockedImage, LockedReferrer};
use bundle_spec::platform::Platform;
use oci_client::Reference;
use oci_client::client::BlobResponse;
use oci_client::errors::OciDistributionError;

pub use access::RegistryAccess;
pub use document::{BlobRef, Document, DocumentError};
pub use referrers::{COSIGN_SUFFIXES, Referrer, digest_tag};
pub use verify::verify_signed;

use crate::cache::{Cache, CacheError, CachedBlob};
use crate::fetch::{blocking, receive};
use crate::resolve::ResolveError;

/// The media types a build accepts for manifests and indexes.
pub use bundle_spec::oci::MANIFEST_MEDIA_TYPES;

/// An image to resolve: its reference as the user wrote it and fully qualified.
#[derive(Debug, Clone)]
pub struct ImageSource {
    /// Fully qualified, e.g. `docker.io/library/busybox:1.36`.
    pub reference: Reference,
    /// As written in the manifest (or the catalog), for messages.
    pub written: String,
    /// Whether its referrers are bundled (`referrers: all`, the default).
    pub bundle_referrers: bool,
    /// The cosign public key it must be signed with (`verify.key`, as written: relative to the
    /// manifest's directory).
    pub verify: Option<PathBuf>,
}

impl ImageSource {
    /// Parses a reference; it must name a tag or a digest.
    pub fn parse(text: &str) -> Result<Self, ResolveError> {
        let reference =
            bundle_spec::oci::parse_reference(text).map_err(|e| ResolveError::ImageReference {
                reference: text.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            reference,
            written: text.to_owned(),
            bundle_referrers: true,
            verify: None,
        })
    }

    /// The reference in the form `index.json` names it: registry/repository, then `:tag`,
    /// `@digest`, or both.
    pub fn name(&self) -> String {
        let r = &self.reference;
        let mut name = format!("{}/{}", r.registry(), r.repository());
        if let Some(tag) = r.tag() {
            name.push(':');
            name.push_str(tag);
        }
        if let Some(digest) = r.digest() {
            name.push('@');
            name.push_str(digest);
        }
        name
    }
}

/// An image resolved to exact documents, its manifests already in the cache.
#[derive(Debug, Clone)]
pub struct ResolvedImage {
    /// What was asked for.
    pub source: ImageSource,
    /// The top document (manifest or index) as stored.
    pub top: Document,
    /// The top document's blob in the cache.
    pub top_blob: CachedBlob,
    /// The platform manifests included (for a single manifest: the top one).
    pub manifests: Vec<(Option<Platform>, Document, CachedBlob)>,
    /// The configs and layers still to fetch, deduplicated.
    pub blobs: Vec<BlobRef>,
    /// Platforms the upstream index offers that were left out.
    pub omitted_platforms: Vec<String>,
    /// The referrers bundled with it, in the order found.
    pub referrers: Vec<Referrer>,
}

impl ResolvedImage {
    /// The lock entry for this image.
    pub fn locked(&self) -> LockedImage {
        LockedImage {
            reference: self.source.name(),
            digest: self.top.digest,
            media_type: self.top.media_type.clone(),
        }
    }
}

/// What a resolution may do.
#[derive(Debug, Clone, Copy)]
pub struct ResolveOptions<'a> {
    /// The platforms wanted.
    pub platforms: &'a [Platform],
    /// Warn instead of failing when a wanted platform is missing.
    pub allow_missing_platforms: bool,
    /// With `--locked`: the lock's referrers, the only ones a bundled image gets.
    pub locked_referrers: Option<&'a [LockedReferrer]>,
    /// The key the image must be signed with, if its manifest says so.
    pub verify: Option<&'a KeyCheck>,
}

/// A `verify.key`, read.
#[derive(Debug, Clone)]
pub struct KeyCheck {
    /// The key file, for messages.
    pub path: PathBuf,
    /// The key.
    pub key: p256::ecdsa::VerifyingKey,
}

/// Resolves `source`: the top document (by the locked digest, if any, after checking the tag
/// still points at it), then the manifests of the wanted platforms, then its referrers.
///
/// `manifests_known` is told the configs and layers of the manifests kept as soon as they are
/// known, before the referrers are looked for (several round trips, mostly 404s): a build
/// starts downloading the layers then. A single manifest's config is not told: the platform
/// check fetches it. An image whose signature must be checked is told only
/// with the rest, in the result, so none of its layers is asked for before the check passed.
pub async fn resolve_image(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    locked: Option<&LockedImage>,
    options: ResolveOptions<'_>,
    manifests_known: &dyn Fn(&[BlobRef]),
) -> Result<ResolvedImage, ResolveError> {
    let early = |blobs: &[BlobRef]| {
        if options.verify.is_none() {
            manifests_known(blobs);
        }
    };
    let fetch = access.fetch_reference(&source.reference);
    let (top, top_blob) = pull_document(access, cache, source, &fetch).await?;
    if let Some(pin) = source.reference.digest()
        && pin != top.digest.to_string()
    {
        return Err(ResolveError::ManifestDigest {
            reference: source.name(),
            expected: pin.to_owned(),
            actual: top.digest,
        });
    }
    if let Some(locked) = locked
        && locked.digest != top.digest
    {
        return Err(ResolveError::Drift {
            reference: source.name(),
            locked: locked.digest,
            current: top.digest,
        });
    }
    let mut manifests = Vec::new();
    let mut omitted = Vec::new();
    let referrers = if top.is_index() {
        let (chosen, left_out) = choose_platforms(source, &top, options)?;
        omitted = left_out;
        // The platforms' manifests are pulled at once: each is a round trip of its own.
        let pulls = chosen.into_iter().map(|(platform, entry)| {
            let by_digest = Reference::with_digest(
                fetch.registry().to_owned(),
                fetch.repository().to_owned(),
                entry.digest.to_string(),
            );
            async move {
                let (document, blob) = pull_document(access, cache, source, &by_digest).await?;
                if document.digest != entry.digest {
                    return Err(ResolveError::ManifestDigest {
                        reference: source.name(),
                        expected: entry.digest.to_string(),
                        actual: document.digest,
                    });
                }
                Ok((Some(platform), document, blob))
            }
        });
        manifests = futures_util::future::try_join_all(pulls).await?;
        early(&blobs_of(manifests.iter().map(|(_, document, _)| document)));
        find_referrers(access, cache, source, &fetch, &top, &manifests, options).await?
    } else {
        // The config (which says the platform) and the referrers are round trips that need
        // nothing from each other: they run at once. Both end before either error is told, so
        // a wrong platform is named first, as when they ran one after the other.
        let single = [(None, top.clone(), top_blob.clone())];
        // Told before the platform is checked: the config is one more round trip, and an
        // image of the wrong platform fails the build anyway, stopping its downloads. The
        // config itself is not told: the check fetches it, and told, it was downloaded twice
        // at once (it is planned with the rest once the image is resolved, then a cache hit).
        let config = top.config.as_ref().map(|config| config.digest);
        let layers = blobs_of(std::iter::once(&top));
        early(
            &layers
                .into_iter()
                .filter(|blob| Some(blob.digest) != config)
                .collect::<Vec<_>>(),
        );
        let (platform, referrers) = futures_util::join!(
            check_single_platform(access, cache, source, &fetch, &top, options),
            find_referrers(access, cache, source, &fetch, &top, &single, options),
        );
        manifests.push((platform?, top.clone(), top_blob.clone()));
        referrers?
    };
    let blobs = blobs_of(
        manifests
            .iter()
            .map(|(_, document, _)| document)
            .chain(referrers.iter().map(|referrer| &referrer.document)),
    );
    Ok(ResolvedImage {
        source: source.clone(),
        top,
        top_blob,
        manifests,
        blobs,
        omitted_platforms: omitted,
        referrers,
    })
}

/// The blobs `documents` name, each once, in the order first named.
fn blobs_of<'a>(documents: impl Iterator<Item = &'a Document>) -> Vec<BlobRef> {
    let mut seen = BTreeSet::new();
    documents
        .flat_map(|document| document.blobs.iter().cloned())
        .filter(|blob| seen.insert(blob.digest))
        .collect()
}

/// The referrers bundled with an image: those the lock names, or those found upstream for the
/// top document and each platform manifest kept; none with `referrers: none`. A `verify` key
/// is checked against them (found upstream even when none are bundled) before anything else.
async fn find_referrers(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
    top: &Document,
    manifests: &[(Option<Platform>, Document, CachedBlob)],
    options: ResolveOptions<'_>,
) -> Result<Vec<Referrer>, ResolveError> {
    let bundled = source.bundle_referrers;
    let referrers = match options.locked_referrers {
        Some(lock) if bundled => {
            let mine: Vec<&LockedReferrer> =
                lock.iter().filter(|r| r.image == source.name()).collect();
            referrers::fetch_locked(access, cache, source, fetch, &mine).await?
        }
        _ if bundled || options.verify.is_some() => {
            let mut subjects = vec![top.digest];
            for (_, manifest, _) in manifests {
                if !subjects.contains(&manifest.digest) {
                    subjects.push(manifest.digest);
                }
            }
            referrers::discover(access, cache, source, fetch, &subjects).await?
        }
        _ => Vec::new(),
    };
    if let Some(check) = options.verify {
        verify_signed(access, cache, source, fetch, top.digest, &referrers, check).await?;
    }
    Ok(if bundled { referrers } else { Vec::new() })
}

/// An index entry chosen for a wanted platform.
type PlatformEntry = (Platform, BlobRef);

/// The index entries for the wanted platforms, and the platforms left out.
fn choose_platforms(
    source: &ImageSource,
    index: &Document,
    options: ResolveOptions<'_>,
) -> Result<(Vec<PlatformEntry>, Vec<String>), ResolveError> {
    let mut chosen = Vec::new();
    for wanted in options.platforms {
        match index
            .entries
            .iter()
            .find(|(platform, _)| platform.as_ref().is_some_and(|p| wanted.matches(p)))
        {
            Some((_, entry)) => chosen.push((wanted.clone(), entry.clone())),
            None => missing_platform(source, wanted, &index.platforms(), options)?,
        }
    }
    let omitted = index
        .platforms()
        .into_iter()
        .filter(|offered| {
            !options.platforms.iter().any(|wanted| {
                wanted.to_string() == *offered
                    || offered
                        .parse::<Platform>()
                        .is_ok_and(|p| wanted.matches(&p))
            })
        })
        .collect();
    Ok((chosen, omitted))
}

fn missing_platform(
    source: &ImageSource,
    wanted: &Platform,
    available: &[String],
    options: ResolveOptions<'_>,
) -> Result<(), ResolveError> {
    let error = ResolveError::PlatformMissing {
        reference: source.name(),
        platform: wanted.to_string(),
        available: available.join(", "),
    };
    if options.allow_missing_platforms {
        tracing::warn!("{error}");
        return Ok(());
    }
    Err(error)
}

/// A single-platform image must be of a wanted platform: its config says which it is (charts
/// and other artifacts have configs without a platform, and no platform to check).
async fn check_single_platform(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
    manifest: &Document,
    options: ResolveOptions<'_>,
) -> Result<Option<Platform>, ResolveError> {
    let Some(config) = manifest.config.as_ref() else {
        return Ok(None);
    };
    let blob = fetch_blob(access, cache, source, fetch, config, &|_, _| {}).await?;
    let bytes = tokio::fs::read(&blob.path)
        .await
        .map_err(|source| ResolveError::File {
            path: blob.path.clone(),
            source,
        })?;
    let Some(platform) = document::config_platform(&bytes) else {
        return Ok(None);
    };
    for wanted in options.platforms {
        if !wanted.matches(&platform) {
            missing_platform(source, wanted, &[platform.to_string()], options)?;
        }
    }
    Ok(Some(platform))
}

/// Pulls a manifest or index exactly as served (see [`document_bytes`]) and stores it in the
/// cache.
async fn pull_document(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
) -> Result<(Document, CachedBlob), ResolveError> {
    let bytes = document_bytes(access, cache, fetch)
        .await?
        .map_err(|e| registry_error(source, &fetch.whole(), e))?;
    store_document(cache, source, bytes).await
}

/// The bytes of the manifest or index `fetch` names: from the cache when `fetch` names it by
/// digest and the cache holds it (checked against that digest), else as the registry serves
/// them (see [`pull_bytes`]). What a digest names is the same wherever it is read from, and a
/// rebuild spares the registry a round trip for each platform manifest and locked referrer.
async fn document_bytes(
    access: &RegistryAccess,
    cache: &Cache,
    fetch: &Reference,
) -> Result<Result<bytes::Bytes, OciDistributionError>, ResolveError> {
    if let Some(digest) = fetch.digest().and_then(|digest| digest.parse().ok()) {
        let lookup = cache.clone();
        let cached = blocking("reading a cached manifest", move || {
            lookup.read_small(&digest)
        })
        .await??;
        if let Some(bytes) = cached {
            return Ok(Ok(bytes.into()));
        }
    }
    pull_bytes(access, fetch).await
}

/// The bytes of the manifest or index `fetch` names, as served; the registry's error apart
/// (the outer one is the client's set-up), for callers to whom "not found" is an answer.
async fn pull_bytes(
    access: &RegistryAccess,
    fetch: &Reference,
) -> Result<Result<bytes::Bytes, OciDistributionError>, ResolveError> {
    let client = access.client(fetch).await?;
    let auth = access.auth(fetch)?;
    Ok(client
        .pull_manifest_raw(fetch, &auth, MANIFEST_MEDIA_TYPES)
        .await
        .map(|(bytes, _header_digest)| bytes))
}

/// A registry's error while fetching `fetched` for `source`.
fn registry_error(
    source: &ImageSource,
    fetched: &str,
    error: OciDistributionError,
) -> ResolveError {
    ResolveError::Registry {
        reference: source.name(),
        fetched: fetched.to_owned(),
        source: Box::new(error),
    }
}

/// Parses a manifest or index and stores its `bytes` in the cache.
async fn store_document(
    cache: &Cache,
    source: &ImageSource,
    bytes: bytes::Bytes,
) -> Result<(Document, CachedBlob), ResolveError> {
    let digest = Sha256Digest::of(&bytes);
    let document =
        Document::parse(&bytes, digest).map_err(|reason| ResolveError::InvalidManifest {
            reference: source.name(),
            reason,
        })?;
    let store = cache.clone();
    let blob = blocking("storing a manifest", move || {
        store.put_bytes(&bytes, Some(digest))
    })
    .await??;
    Ok((document, blob))
}

/// Fetches one config or layer into the cache, resuming a partial download, verified by digest
/// and by the size its descriptor gives: a registry sending more is cut off as soon as it does,
/// one sending less fails; either error names the blob. The cache's file work runs off the async
/// workers.
pub async fn fetch_blob(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
    blob: &BlobRef,
    progress: &(dyn Fn(u64, Option<u64>) + Send + Sync),
) -> Result<CachedBlob, ResolveError> {
    let (lookup, digest, size) = (cache.clone(), blob.digest, blob.size);
    if let Some(hit) = blocking("checking the cache", move || lookup.get(&digest)).await?? {
        progress(hit.size, Some(hit.size));
        return Ok(hit);
    }
    let client = access.client(fetch).await?;
    let auth = access.auth(fetch)?;
    let failed = |e: OciDistributionError| {
        registry_error(source, &format!("{}@{}", fetch.whole(), blob.digest), e)
    };
    client
        .store_auth_if_needed(fetch.resolve_registry(), &auth)
        .await;
    let (starter, key) = (cache.clone(), format!("oci/{}", blob.digest.hex()));
    let what = format!("blob `{}` of `{}`", blob.digest, source.name());
    let mut download = blocking("resuming a partial download", move || {
        let mut download = starter.begin(&key, &what, Some(digest))?;
        if download.offset() > size {
            download.restart()?;
        }
        download.expect_size(size);
        Ok::<_, CacheError>(download)
    })
    .await??;
    progress(download.offset(), Some(size));
    // A partial file holding every byte (a run stopped just before storing it) needs no request:
    // the registry could not serve a range starting at its end.
    if download.offset() < size {
        let digest = blob.digest.to_string();
        let response = client
            .pull_blob_stream_partial(fetch, digest.as_str(), download.offset(), None)
            .await
            .map_err(failed)?;
        let stream = match response {
            BlobResponse::Full(stream) => {
                download = blocking("restarting a download", move || {
                    download.restart()?;
                    download.expect_size(size);
                    Ok::<_, CacheError>(download)
                })
                .await??;
                stream.stream
            }
            BlobResponse::Partial(stream) => stream.stream,
        };
        let tell = |received: u64| progress(received.min(size), Some(size));
        let received = receive(stream, download, &tell).await??;
        download = received.download;
        if let Some(error) = received.failure {
            // oci-client checks the digest once a whole blob arrived; a short one is left to
            // `finish`, which names the sizes.
            if !(download.offset() < size && is_digest_check(&error)) {
                return Err(ResolveError::Transfer {
                    what: format!("{} blob {}", source.name(), blob.digest),
                    source: error,
                });
            }
        }
    }
    Ok(blocking("storing a blob", move || download.finish()).await??)
}

/// Whether a stream error is oci-client's digest check at the end of a blob.
fn is_digest_check(error: &std::io::Error) -> bool {
    matches!(error.get_ref(), Some(inner) if inner.is::<oci_client::errors::DigestError>())
}

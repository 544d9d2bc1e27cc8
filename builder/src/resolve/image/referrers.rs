//! The OCI referrers of an image: the signatures, attestations and SBOMs stored beside it.
//!
//! For each manifest of an image kept (the index and each platform manifest), referrers are
//! found three ways, as clients look for them: the referrers API (`/v2/<repo>/referrers/<digest>`,
//! OCI distribution 1.1), which oci-client falls back from to the referrers tag schema (the index
//! tagged `sha256-<hex>`) when the registry answers 404, as Debian's docker-registry 2.8 does;
//! and cosign's own tags `sha256-<hex>.sig`, `.att` and `.sbom`. Referrers of referrers are
//! followed one level (cosign signs attestations): a signature of an SBOM is kept, nothing
//! beyond. Every document is stored as served, found in a fixed order (API entries by digest,
//! then the tags in that order), so a lock records them and a locked build fetches the same.

use std::collections::BTreeSet;

use bundle_spec::Sha256Digest;
use bundle_spec::lock::LockedReferrer;
use bundle_spec::oci;
use futures_util::future::try_join_all;
use oci_client::Reference;
use oci_client::errors::{OciDistributionError, OciErrorCode};

use super::{
    Document, ImageSource, RegistryAccess, document_bytes, pull_bytes, registry_error,
    store_document,
};
use crate::cache::{Cache, CachedBlob};
use crate::resolve::ResolveError;

/// cosign's tag suffixes, in the order they are looked for.
pub const COSIGN_SUFFIXES: [&str; 3] = ["sig", "att", "sbom"];

/// How many levels of referrers are followed: the image's, and theirs.
const DEPTH: usize = 2;

/// A manifest referring to one of an image's manifests, in the cache.
#[derive(Debug, Clone)]
pub struct Referrer {
    /// The manifest it refers to.
    pub subject: Sha256Digest,
    /// The cosign tag it was found under; `None` when found through the referrers API.
    pub tag: Option<String>,
    /// The document, as far as the build reads it.
    pub document: Document,
    /// The document's fields a referrer needs beyond that (`subject`, `artifactType`,
    /// annotations, the layers' annotations).
    pub raw: oci::Document,
    /// Its blob in the cache.
    pub blob: CachedBlob,
}

impl Referrer {
    /// The lock entry for this referrer of `image` (a reference as the lock names images).
    pub fn locked(&self, image: &str) -> LockedReferrer {
        LockedReferrer {
            image: image.to_owned(),
            subject: self.subject,
            tag: self.tag.clone(),
            digest: self.document.digest,
            media_type: self.document.media_type.clone(),
        }
    }

    /// Whether it is a cosign signature: found under a `.sig` tag, or an OCI 1.1 referrer of
    /// cosign's signature artifact type.
    pub fn is_signature(&self) -> bool {
        // A tag, not a file name: cosign writes `.sig` in lowercase only.
        let suffix = self.tag.as_deref().and_then(|tag| tag.rsplit_once('.'));
        suffix.is_some_and(|(_, suffix)| suffix == "sig")
            || self.raw.artifact_type.as_deref()
                == Some(bundle_spec::sign::image::SIGNATURE_ARTIFACT_TYPE)
    }
}

/// The tag of the referrers tag schema for `digest`, and the stem of cosign's tags.
pub fn digest_tag(digest: &Sha256Digest) -> String {
    format!("sha256-{}", digest.hex())
}

/// Finds and fetches the referrers of `subjects` (manifests of `source`, fetched as `fetch`),
/// and theirs, one level down.
///
/// The subjects of a level are asked about at once, and so are the ways of finding each one's
/// referrers: every answer is one round trip to the registry, mostly a 404, and asked in turn
/// they were most of an image's resolution. The answers are joined in the fixed order the
/// module's documentation gives, so what is found does not depend on which answer came first.
pub(super) async fn discover(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
    subjects: &[Sha256Digest],
) -> Result<Vec<Referrer>, ResolveError> {
    let lookup = Lookup {
        access,
        cache,
        source,
        fetch,
    };
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    let mut level = subjects.to_vec();
    for _ in 0..DEPTH {
        let asked = level.iter().map(|subject| lookup.referrers_of(*subject));
        let mut next = Vec::new();
        for referrer in try_join_all(asked).await?.into_iter().flatten() {
            if seen.insert((referrer.tag.clone(), referrer.document.digest)) {
                next.push(referrer.document.digest);
                found.push(referrer);
            }
        }
        level = next;
    }
    Ok(found)
}

/// What every lookup of one image's referrers shares: the image, and where it is fetched from.
#[derive(Clone, Copy)]
struct Lookup<'a> {
    access: &'a RegistryAccess,
    cache: &'a Cache,
    source: &'a ImageSource,
    fetch: &'a Reference,
}

impl Lookup<'_> {
    /// The referrers of one manifest: the API's (or its tag-schema index's), then cosign's tags.
    async fn referrers_of(self, subject: Sha256Digest) -> Result<Vec<Referrer>, ResolveError> {
        let (mut referrers, tagged) =
            futures_util::try_join!(self.listed(subject), self.tagged(subject))?;
        // A registry that lists cosign's tagged manifests among the referrers (kk's own does)
        // names them twice: the tag is kept, so clients of cosign's tag scheme still find them.
        let tagged_digests: BTreeSet<Sha256Digest> =
            tagged.iter().map(|r| r.document.digest).collect();
        referrers.retain(|r| !tagged_digests.contains(&r.document.digest));
        referrers.extend(tagged);
        Ok(referrers)
    }

    /// The referrers the registry lists for `subject` (the referrers API, or the tag schema's
    /// index), in digest order.
    async fn listed(self, subject: Sha256Digest) -> Result<Vec<Referrer>, ResolveError> {
        let Self {
            access,
            cache,
            source,
            fetch,
        } = self;
        let client = access.client(fetch).await?;
        let auth = access.auth(fetch)?;
        client
            .store_auth_if_needed(fetch.resolve_registry(), &auth)
            .await;
        let by_digest = at_digest(fetch, &subject);
        let index = client
            .pull_referrers(&by_digest, None)
            .await
            .map_err(|e| registry_error(source, &format!("{}/referrers", by_digest.whole()), e))?;
        let listed: BTreeSet<Sha256Digest> = index
            .manifests
            .iter()
            .map(|entry| {
                entry
                    .digest
                    .parse()
                    .map_err(|_| ResolveError::InvalidManifest {
                        reference: source.name(),
                        reason: super::DocumentError::Digest {
                            digest: entry.digest.clone(),
                        },
                    })
            })
            .collect::<Result<_, _>>()?;
        try_join_all(listed.into_iter().map(|digest| async move {
            let at = at_digest(fetch, &digest);
            fetch_referrer(access, cache, source, &at, subject, None, digest).await
        }))
        .await
    }

    /// The referrers of `subject` under cosign's tags, in [`COSIGN_SUFFIXES`]' order.
    async fn tagged(self, subject: Sha256Digest) -> Result<Vec<Referrer>, ResolveError> {
        let found = try_join_all(COSIGN_SUFFIXES.map(|suffix| async move {
            let tag = format!("{}.{suffix}", digest_tag(&subject));
            let at = Reference::with_tag(
                self.fetch.registry().to_owned(),
                self.fetch.repository().to_owned(),
                tag.clone(),
            );
            match pull_bytes(self.access, &at).await? {
                Ok(bytes) => Ok(Some(
                    referrer(self.cache, self.source, subject, Some(tag), bytes).await?,
                )),
                Err(error) if is_not_found(&error) => Ok(None),
                Err(error) => Err(registry_error(self.source, &at.whole(), error)),
            }
        }))
        .await?;
        Ok(found.into_iter().flatten().collect())
    }
}

/// Fetches the referrers a lock names for `source`, by digest.
pub(super) async fn fetch_locked(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    fetch: &Reference,
    locked: &[&LockedReferrer],
) -> Result<Vec<Referrer>, ResolveError> {
    let mut referrers = Vec::new();
    for entry in locked {
        let at = at_digest(fetch, &entry.digest);
        referrers.push(
            fetch_referrer(
                access,
                cache,
                source,
                &at,
                entry.subject,
                entry.tag.clone(),
                entry.digest,
            )
            .await?,
        );
    }
    Ok(referrers)
}

/// Fetches the referrer `digest` (as `at`) and checks its digest.
async fn fetch_referrer(
    access: &RegistryAccess,
    cache: &Cache,
    source: &ImageSource,
    at: &Reference,
    subject: Sha256Digest,
    tag: Option<String>,
    digest: Sha256Digest,
) -> Result<Referrer, ResolveError> {
    let bytes = document_bytes(access, cache, at)
        .await?
        .map_err(|error| registry_error(source, &at.whole(), error))?;
    let referrer = referrer(cache, source, subject, tag, bytes).await?;
    if referrer.document.digest != digest {
        return Err(ResolveError::ManifestDigest {
            reference: source.name(),
            expected: digest.to_string(),
            actual: referrer.document.digest,
        });
    }
    Ok(referrer)
}

/// A referrer from its document's `bytes`, stored in the cache, with the fields only referrers
/// need read.
async fn referrer(
    cache: &Cache,
    source: &ImageSource,
    subject: Sha256Digest,
    tag: Option<String>,
    bytes: bytes::Bytes,
) -> Result<Referrer, ResolveError> {
    let raw = serde_json::from_slice(&bytes).map_err(|e| ResolveError::InvalidManifest {
        reference: source.name(),
        reason: super::DocumentError::Json(e),
    })?;
    let (document, blob) = store_document(cache, source, bytes).await?;
    Ok(Referrer {
        subject,
        tag,
        document,
        raw,
        blob,
    })
}

fn at_digest(fetch: &Reference, digest: &Sha256Digest) -> Reference {
    Reference::with_digest(
        fetch.registry().to_owned(),
        fetch.repository().to_owned(),
        digest.to_string(),
    )
}

/// Whether a registry's answer says the manifest does not exist (a tag never pushed).
fn is_not_found(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().all(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound
            )
        }),
        _ => false,
    }
}

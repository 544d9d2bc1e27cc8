//! What to push: the store read into one plan per repository, in dependency order.

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::Sha256Digest;
use bundle_spec::oci::Document;

use super::PushError;
use crate::registry::Store;

/// Everything one repository of the store needs in the target registry.
#[derive(Debug)]
pub(super) struct RepositoryPlan {
    /// The rule-1 repository name (`docker.io/library/busybox`).
    pub(super) name: String,
    /// The config and layer blobs of every manifest, each once, by digest.
    pub(super) blobs: Vec<Blob>,
    /// The manifests, every one after the manifests it references (an index after its
    /// platform manifests, a referrer after its subject).
    pub(super) manifests: Vec<Manifest>,
}

/// A blob to push.
#[derive(Debug, Clone, Copy)]
pub(super) struct Blob {
    /// Its digest.
    pub(super) digest: Sha256Digest,
    /// Its size in bytes.
    pub(super) size: u64,
}

/// A manifest or index to push.
#[derive(Debug)]
pub(super) struct Manifest {
    /// Its digest.
    pub(super) digest: Sha256Digest,
    /// The media type it is stored under.
    pub(super) media_type: String,
    /// Its bytes, as stored.
    pub(super) bytes: Vec<u8>,
    /// The tags naming it (none: it is pushed by digest).
    pub(super) tags: Vec<String>,
    /// For an index: the entries the store does not have (omitted platforms), as
    /// `os/architecture[/variant]` or, without a platform, the digest.
    pub(super) missing: Vec<String>,
    /// For an index: the entries the store has, as `(os/architecture[/variant], digest)`.
    pub(super) present: Vec<(String, Sha256Digest)>,
}

/// A manifest read from the store, before ordering.
struct Read {
    media_type: String,
    bytes: Vec<u8>,
    document: Document,
}

/// The plans of every repository of `store`, sorted by repository name.
pub(super) fn plan(store: &Store) -> Result<Vec<RepositoryPlan>, PushError> {
    store
        .repositories()
        .map(|name| plan_repository(store, name))
        .collect()
}

fn plan_repository(store: &Store, name: &str) -> Result<RepositoryPlan, PushError> {
    let mut plan = RepositoryPlan {
        name: name.to_owned(),
        blobs: Vec::new(),
        manifests: Vec::new(),
    };
    let Some(repository) = store.repository(name) else {
        return Ok(plan);
    };

    let mut tags: BTreeMap<Sha256Digest, Vec<String>> = BTreeMap::new();
    for (tag, digest) in &repository.tags {
        tags.entry(*digest).or_default().push(tag.clone());
    }

    let mut read: BTreeMap<Sha256Digest, Read> = BTreeMap::new();
    for (digest, media_type) in &repository.manifests {
        let path = store.blob_path(*digest);
        let bytes = std::fs::read(&path).map_err(|source| PushError::Read {
            path: path.clone(),
            source,
        })?;
        let document: Document =
            serde_json::from_slice(&bytes).map_err(|source| PushError::Json { path, source })?;
        read.insert(
            *digest,
            Read {
                media_type: media_type.clone(),
                bytes,
                document,
            },
        );
    }

    plan.blobs = blobs_of(store, name, &read)?;

    let order = dependency_order(&read);
    for digest in order {
        let Some(current) = read.remove(&digest) else {
            continue;
        };
        let missing = missing_entries(&current.document, &repository.manifests);
        let present = present_entries(&current.document, &repository.manifests);
        plan.manifests.push(Manifest {
            digest,
            media_type: current.media_type,
            bytes: current.bytes,
            tags: tags.remove(&digest).unwrap_or_default(),
            missing,
            present,
        });
    }
    Ok(plan)
}

/// The config and layer blobs of the manifests `read`, each once, with their sizes.
fn blobs_of(
    store: &Store,
    name: &str,
    read: &BTreeMap<Sha256Digest, Read>,
) -> Result<Vec<Blob>, PushError> {
    let mut blobs: BTreeMap<Sha256Digest, u64> = BTreeMap::new();
    for (manifest, current) in read {
        let document = &current.document;
        for descriptor in document
            .config
            .iter()
            .chain(&document.layers)
            .chain(&document.blobs)
        {
            let missing = || PushError::MissingBlob {
                repository: name.to_owned(),
                manifest: manifest.to_string(),
                digest: descriptor.digest.clone(),
            };
            let digest: Sha256Digest = descriptor.digest.parse().map_err(|_| missing())?;
            if blobs.contains_key(&digest) {
                continue;
            }
            let path = store.blob_path(digest);
            let metadata = match std::fs::symlink_metadata(&path) {
                Ok(metadata) if metadata.is_file() => metadata,
                Ok(_) => return Err(missing()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(missing()),
                Err(source) => return Err(PushError::Read { path, source }),
            };
            blobs.insert(digest, metadata.len());
        }
    }
    Ok(blobs
        .into_iter()
        .map(|(digest, size)| Blob { digest, size })
        .collect())
}

/// The manifests of `read` in depth-first post-order: each after everything it references
/// that `read` holds too.
fn dependency_order(read: &BTreeMap<Sha256Digest, Read>) -> Vec<Sha256Digest> {
    // Depth-first, post-order: a manifest comes after everything it references that this
    // repository pushes too.
    let mut done: BTreeSet<Sha256Digest> = BTreeSet::new();
    let mut order: Vec<Sha256Digest> = Vec::new();
    for &root in read.keys() {
        let mut stack: Vec<(Sha256Digest, bool)> = vec![(root, false)];
        let mut entered: BTreeSet<Sha256Digest> = BTreeSet::new();
        while let Some((digest, children_done)) = stack.pop() {
            if done.contains(&digest) {
                continue;
            }
            if children_done {
                done.insert(digest);
                order.push(digest);
                continue;
            }
            if !entered.insert(digest) {
                // A cycle cannot happen with content addressing; never loop on one.
                continue;
            }
            stack.push((digest, true));
            if let Some(current) = read.get(&digest) {
                for child in current
                    .document
                    .manifests
                    .iter()
                    .flatten()
                    .chain(&current.document.subject)
                {
                    if let Ok(child) = child.digest.parse::<Sha256Digest>()
                        && read.contains_key(&child)
                        && !done.contains(&child)
                    {
                        stack.push((child, false));
                    }
                }
            }
        }
    }

    order
}

/// The entries of an index that `present` lacks, as `os/architecture[/variant]` (or the
/// digest of an entry without a platform).
fn missing_entries<V>(document: &Document, present: &BTreeMap<Sha256Digest, V>) -> Vec<String> {
    document
        .manifests
        .iter()
        .flatten()
        .filter(|child| {
            child
                .digest
                .parse::<Sha256Digest>()
                .map_or(true, |d| !present.contains_key(&d))
        })
        .map(|child| platform_name(child.platform.as_ref()).unwrap_or(child.digest.clone()))
        .collect()
}

/// The entries of an index that `present` has, with their platforms (entries without one,
/// such as attestations, are left out: no node pulls them by platform).
fn present_entries<V>(
    document: &Document,
    present: &BTreeMap<Sha256Digest, V>,
) -> Vec<(String, Sha256Digest)> {
    document
        .manifests
        .iter()
        .flatten()
        .filter_map(|child| {
            let digest = child.digest.parse::<Sha256Digest>().ok()?;
            let platform = platform_name(child.platform.as_ref())?;
            present.contains_key(&digest).then_some((platform, digest))
        })
        .collect()
}

/// `os/architecture[/variant]`.
fn platform_name(platform: Option<&oci_spec::image::Platform>) -> Option<String> {
    let p = platform?;
    Some(match p.variant() {
        Some(variant) => format!("{}/{}/{variant}", p.os(), p.architecture()),
        None => format!("{}/{}", p.os(), p.architecture()),
    })
}

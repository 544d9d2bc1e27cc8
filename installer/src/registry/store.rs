//! The store: an unpacked bundle (an OCI image layout) and the repositories it serves. This
//! module reads it ([`Store`]); its `write` child fills it ([`unpack`]): one owner of the
//! layout.

mod prune;
mod revision;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bundle_spec::Sha256Digest;
use bundle_spec::oci::{
    BLOBS_DIR, Descriptor, Document, INDEX_PATH, MANIFEST_MEDIA_TYPE, OCI_LAYOUT_PATH,
    REF_NAME_ANNOTATION,
};

use super::RegistryError;
use super::live::{IndexId, index_id};
use super::names::{parse_ref_name, repository_name};

pub use prune::{Pruned, prune};
pub(crate) use revision::stored_blobs;
pub use revision::{Revision, list};
pub use write::{Unpacked, check_base, unpack};

/// The largest manifest the store reads (as the distribution reference implementation).
const MANIFEST_LIMIT: u64 = 4 * 1024 * 1024;

/// One repository: its tags and the manifests it serves by digest.
#[derive(Debug, Default)]
pub(crate) struct Repository {
    /// Tag → manifest digest.
    pub(crate) tags: BTreeMap<String, Sha256Digest>,
    /// Manifest digest → stored media type.
    pub(crate) manifests: BTreeMap<Sha256Digest, String>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    /// The `index.json` read, to tell when it was replaced.
    index_id: Option<IndexId>,
    repositories: BTreeMap<String, Repository>,
    /// Subject digest → descriptors of the manifests that refer to it.
    referrers: BTreeMap<Sha256Digest, Vec<Descriptor>>,
}

/// An unpacked bundle store, read once and served by [`super::router`].
///
/// Cloning is cheap: clones share the repository map.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// A manifest found while walking the layout: its digest, stored media type and content.
struct Walked {
    digest: Sha256Digest,
    media_type: String,
    document: Document,
}

impl Store {
    /// Opens the OCI image layout in `dir`: reads `index.json` and every manifest and index
    /// it reaches, and builds the repository map (see [`crate::registry`] for the names).
    ///
    /// Blob contents other than manifests are not read; a platform manifest missing from an
    /// index (an omitted platform) is skipped.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, RegistryError> {
        let root = dir.as_ref().to_path_buf();
        if !root.join(OCI_LAYOUT_PATH).is_file() {
            return Err(RegistryError::NotALayout { dir: root });
        }
        let index_path = root.join(INDEX_PATH);
        // Taken before the read: a replacement between the two is then seen as a change.
        let index_id = index_id(&root);
        let bytes = std::fs::read(&index_path).map_err(|source| RegistryError::Read {
            path: index_path.clone(),
            source,
        })?;
        let index: Document =
            serde_json::from_slice(&bytes).map_err(|source| RegistryError::Json {
                path: index_path.clone(),
                source,
            })?;

        let mut repositories: BTreeMap<String, Repository> = BTreeMap::new();
        // (repository, tag) → ref name, to report conflicts.
        let mut tag_owner: BTreeMap<(String, String), String> = BTreeMap::new();
        // Every manifest seen, with the repositories that reach it.
        let mut seen: BTreeMap<Sha256Digest, (String, BTreeSet<String>)> = BTreeMap::new();
        let mut referrers: BTreeMap<Sha256Digest, Vec<Descriptor>> = BTreeMap::new();

        for descriptor in index.manifests.unwrap_or_default() {
            let digest = parse_digest(&index_path, &descriptor.digest)?;
            let repository = match descriptor.annotation(REF_NAME_ANNOTATION) {
                Some(ref_name) => {
                    let (repository, tag) = name_of(ref_name)?;
                    if let Some(tag) = tag {
                        let key = (repository.clone(), tag.clone());
                        if let Some(first) = tag_owner.get(&key) {
                            let same = repositories.get(&repository).and_then(|r| r.tags.get(&tag))
                                == Some(&digest);
                            if !same {
                                return Err(RegistryError::TagConflict {
                                    repository,
                                    tag,
                                    first: first.clone(),
                                    second: ref_name.to_owned(),
                                });
                            }
                        }
                        tag_owner.insert(key, ref_name.to_owned());
                        repositories
                            .entry(repository.clone())
                            .or_default()
                            .tags
                            .insert(tag, digest);
                    }
                    repositories.entry(repository.clone()).or_default();
                    Some(repository)
                }
                None => None,
            };
            let top = read_manifest(&root, digest, &descriptor, true)?;
            walk(&root, top, repository.as_ref(), &mut seen, &mut referrers)?;
        }

        for (digest, (media_type, names)) in &seen {
            for name in names {
                if let Some(repository) = repositories.get_mut(name) {
                    repository.manifests.insert(*digest, media_type.clone());
                }
            }
        }
        tag_referrers(&root, &repositories, &mut referrers)?;
        // A referrer is served by every repository that serves its subject.
        for (subject, list) in &referrers {
            for repository in repositories.values_mut() {
                if repository.manifests.contains_key(subject) {
                    for referrer in list {
                        if let (Ok(digest), Some(media_type)) = (
                            referrer.digest.parse::<Sha256Digest>(),
                            &referrer.media_type,
                        ) {
                            repository.manifests.insert(digest, media_type.clone());
                        }
                    }
                }
            }
        }

        Ok(Self {
            inner: Arc::new(Inner {
                root,
                index_id,
                repositories,
                referrers,
            }),
        })
    }

    /// The repository names served, sorted.
    pub fn repositories(&self) -> impl Iterator<Item = &str> {
        self.inner.repositories.keys().map(String::as_str)
    }

    /// The repository named `name`.
    pub(crate) fn repository(&self, name: &str) -> Option<&Repository> {
        self.inner.repositories.get(name)
    }

    /// The descriptors of the manifests whose subject is `digest`, if `repository` serves it.
    pub(crate) fn referrers(&self, repository: &Repository, digest: Sha256Digest) -> &[Descriptor] {
        if repository.manifests.contains_key(&digest) {
            self.inner.referrers.get(&digest).map_or(&[], Vec::as_slice)
        } else {
            &[]
        }
    }

    /// The directory the store was read from.
    pub(crate) fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The identity of the `index.json` it was read from.
    pub(crate) fn index_id(&self) -> Option<IndexId> {
        self.inner.index_id
    }

    /// The path of the blob `digest` (which may not exist).
    pub(crate) fn blob_path(&self, digest: Sha256Digest) -> PathBuf {
        blob_path(&self.inner.root, digest)
    }
}

/// `blobs/sha256/<hex>` under `root`: the only kind of path the registry ever opens.
fn blob_path(root: &Path, digest: Sha256Digest) -> PathBuf {
    root.join(BLOBS_DIR).join(digest.hex())
}

fn parse_digest(path: &Path, text: &str) -> Result<Sha256Digest, RegistryError> {
    text.parse().map_err(|source| RegistryError::Digest {
        path: path.to_path_buf(),
        digest: text.to_owned(),
        source,
    })
}

/// The repository name and tag of a ref name.
fn name_of(ref_name: &str) -> Result<(String, Option<String>), RegistryError> {
    let invalid = || RegistryError::RefName {
        ref_name: ref_name.to_owned(),
    };
    let (host, parsed) = parse_ref_name(ref_name).ok_or_else(invalid)?;
    let repository = repository_name(host, parsed.path).ok_or_else(invalid)?;
    if let Some(tag) = parsed.tag
        && !super::names::is_valid_tag(tag)
    {
        return Err(invalid());
    }
    Ok((repository, parsed.tag.map(str::to_owned)))
}

/// Reads and parses the manifest `descriptor` points to. `None` if the blob is absent and
/// `required` is false (an omitted platform).
fn read_manifest(
    root: &Path,
    digest: Sha256Digest,
    descriptor: &Descriptor,
    required: bool,
) -> Result<Option<Walked>, RegistryError> {
    let path = blob_path(root, digest);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if required {
                Err(RegistryError::MissingManifest {
                    digest: digest.to_string(),
                    path,
                })
            } else {
                Ok(None)
            };
        }
        Err(source) => return Err(RegistryError::Read { path, source }),
    };
    let mut bytes = Vec::new();
    file.take(MANIFEST_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| RegistryError::Read {
            path: path.clone(),
            source,
        })?;
    if bytes.len() as u64 > MANIFEST_LIMIT {
        return Err(RegistryError::ManifestTooLarge {
            digest: digest.to_string(),
            size: std::fs::metadata(&path).map_or(MANIFEST_LIMIT + 1, |m| m.len()),
            limit: MANIFEST_LIMIT,
        });
    }
    let document: Document =
        serde_json::from_slice(&bytes).map_err(|source| RegistryError::Json { path, source })?;
    let media_type = descriptor
        .media_type
        .clone()
        .or_else(|| document.media_type.clone())
        .unwrap_or_else(|| MANIFEST_MEDIA_TYPE.to_owned());
    Ok(Some(Walked {
        digest,
        media_type,
        document,
    }))
}

/// cosign's tags (`sha256-<hex>.sig`, `.att`, `.sbom`) name manifests without a `subject`: they
/// are listed among the referrers of the digest their tag names too, so a client asking the
/// referrers API finds what a client of cosign's tag scheme finds.
fn tag_referrers(
    root: &Path,
    repositories: &BTreeMap<String, Repository>,
    referrers: &mut BTreeMap<Sha256Digest, Vec<Descriptor>>,
) -> Result<(), RegistryError> {
    for repository in repositories.values() {
        for (tag, digest) in &repository.tags {
            let Some(subject) = cosign_tag_subject(tag) else {
                continue;
            };
            let listed = referrers.entry(subject).or_default();
            if listed.iter().any(|d| d.digest == digest.to_string()) {
                continue;
            }
            let Some(media_type) = repository.manifests.get(digest) else {
                continue;
            };
            let descriptor = Descriptor {
                platform: None,
                media_type: Some(media_type.clone()),
                digest: digest.to_string(),
                size: 0,
                artifact_type: None,
                annotations: None,
            };
            if let Some(walked) = read_manifest(root, *digest, &descriptor, false)?
                && walked.document.subject.is_none()
            {
                listed.push(referrer_descriptor(root, &walked)?);
            }
        }
    }
    Ok(())
}

/// The digest a cosign tag (`sha256-<hex>.sig`, `.att`, `.sbom`) names.
fn cosign_tag_subject(tag: &str) -> Option<Sha256Digest> {
    let (stem, suffix) = tag.rsplit_once('.')?;
    if !matches!(suffix, "sig" | "att" | "sbom") {
        return None;
    }
    Sha256Digest::from_hex(stem.strip_prefix("sha256-")?)
}

/// The descriptor of a referrer as the referrers API lists it: media type, digest, size,
/// `artifactType` (or else its config's media type) and annotations.
fn referrer_descriptor(root: &Path, walked: &Walked) -> Result<Descriptor, RegistryError> {
    let path = blob_path(root, walked.digest);
    let size = std::fs::metadata(&path)
        .map_err(|source| RegistryError::Read {
            path: path.clone(),
            source,
        })?
        .len();
    Ok(Descriptor {
        platform: None,
        media_type: Some(walked.media_type.clone()),
        digest: walked.digest.to_string(),
        size,
        artifact_type: walked.document.artifact_type.clone().or_else(|| {
            walked
                .document
                .config
                .as_ref()
                .and_then(|c| c.media_type.clone())
        }),
        annotations: walked.document.annotations.clone(),
    })
}

/// Records `manifest` and, for an index, its present children, as reached from `repository`;
/// collects referrers.
fn walk(
    root: &Path,
    manifest: Option<Walked>,
    repository: Option<&String>,
    seen: &mut BTreeMap<Sha256Digest, (String, BTreeSet<String>)>,
    referrers: &mut BTreeMap<Sha256Digest, Vec<Descriptor>>,
) -> Result<(), RegistryError> {
    let mut queue: Vec<Walked> = manifest.into_iter().collect();
    while let Some(current) = queue.pop() {
        let first_visit = !seen.contains_key(&current.digest);
        let entry = seen
            .entry(current.digest)
            .or_insert_with(|| (current.media_type.clone(), BTreeSet::new()));
        if let Some(name) = repository {
            entry.1.insert(name.clone());
        }
        let path = blob_path(root, current.digest);
        if first_visit && let Some(subject) = &current.document.subject {
            let subject_digest = parse_digest(&path, &subject.digest)?;
            referrers
                .entry(subject_digest)
                .or_default()
                .push(referrer_descriptor(root, &current)?);
        }
        for child in current.document.manifests.iter().flatten() {
            let digest = parse_digest(&path, &child.digest)?;
            if let Some(walked) = read_manifest(root, digest, child, false)? {
                queue.push(walked);
            }
        }
    }
    Ok(())
}

//! Store revisions: every bundle unpacked into a store is one revision, recorded beside its
//! header files as `kk-bundle/<identity>/revision.json` (identity, order, unpack time, version,
//! base, the blobs it needs) and `kk-bundle/<identity>/revision-index.json` (the bundle's own
//! `index.json`, which the store's merged index no longer tells apart).
//!
//! # Order
//!
//! Revisions are ordered by the sequence number each unpack gives its record (one more than the
//! highest recorded), never by clock or by a delta's base: the newest is the **installed**
//! revision, the one before it the **previous** one. Unpacking a bundle that is already a
//! revision makes it the newest again (the operator carried it in again, e.g. to roll back).
//!
//! # Stores unpacked before revisions
//!
//! A header directory without `revision.json` (only `SHA256SUMS`, `bundle.json`) is still a
//! revision, derived: its blobs are the checksum list's and its delta base's, its version comes
//! from `bundle.json`, its index entries are those of the store's index whose manifest it
//! carries. What cannot be derived: the unpack time (the checksum list's modification time
//! stands in), the order among such revisions beyond that time (they all count as older than
//! every recorded one), and tags a later bundle took over in the merged index.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use bundle_spec::description::Description;
use bundle_spec::member::MemberKind;
use bundle_spec::oci::{BLOBS_DIR, INDEX_PATH};
use bundle_spec::{ArtifactKind, Bundle, ChecksumList, Sha256Digest};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::durable;
use crate::registry::RevisionError;

/// The directory of every bundle's header files, one subdirectory per identity.
pub(crate) const HEADERS_DIR: &str = "kk-bundle";
/// A revision's record in its header directory.
const RECORD_FILE: &str = "revision.json";
/// The bundle's own `index.json` in its header directory.
const INDEX_FILE: &str = "revision-index.json";
const CHECKSUMS_FILE: &str = "SHA256SUMS";
const DESCRIPTION_FILE: &str = "bundle.json";
/// The lock unpack and prune take on a store, in the store.
const LOCK_FILE: &str = ".kk-store.lock";
/// Temporary files of a record write.
const TEMP_PREFIX: &str = ".kk-revision-";

/// One bundle unpacked into a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The bundle's identity.
    pub identity: Sha256Digest,
    /// Its place in the order; `None` for a store unpacked before revisions were recorded.
    pub sequence: Option<u64>,
    /// When it was unpacked (for a derived revision, its header's modification time).
    pub unpacked: Timestamp,
    /// The Kubernetes version it installs, else its manifest's name.
    pub version: String,
    /// For a delta bundle, the identity of its base.
    pub base: Option<Sha256Digest>,
    /// Every blob its index needs: those it carried and those a delta takes from its base.
    pub blobs: BTreeSet<Sha256Digest>,
    /// Its `index.json` entries; `None` when derived (taken from the store's index).
    pub(crate) index: Option<Vec<serde_json::Value>>,
}

impl Revision {
    /// Whether the record was derived from a store unpacked before revisions.
    pub fn derived(&self) -> bool {
        self.sequence.is_none()
    }
}

/// `revision.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Record {
    identity: Sha256Digest,
    sequence: u64,
    unpacked: Timestamp,
    version: String,
    base: Option<Sha256Digest>,
    blobs: BTreeSet<Sha256Digest>,
}

/// The exclusive lock of a store, held while this value lives: an unpack and a prune of one
/// store never run at once (a prune would delete the blobs an unpack has not recorded yet).
/// The kernel's `flock`, so a killed holder leaves no stale lock; the file is never removed.
#[derive(Debug)]
pub(crate) struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Waits for and takes the lock of the store `dir` (which must exist).
    pub(crate) fn acquire(dir: &Path) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(LOCK_FILE))?;
        file.lock()?;
        Ok(Self { _file: file })
    }
}

/// The version a bundle is known by: its kubeadm's, else its manifest's name.
fn version_of(description: &Description) -> String {
    description
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Binary && a.name == "kubeadm")
        .map_or_else(|| description.manifest.name.clone(), |a| a.version.clone())
}

/// The blobs a bundle's index needs: those in its checksum list and a delta's base blobs.
fn blobs_of(checksums: &ChecksumList, description: &Description) -> BTreeSet<Sha256Digest> {
    let carried = checksums.iter().filter_map(|(path, _)| match path.kind() {
        MemberKind::Blob(digest) => Some(digest),
        _ => None,
    });
    let taken = description
        .base
        .iter()
        .flat_map(|b| &b.blobs)
        .map(|b| b.digest);
    carried.chain(taken).collect()
}

/// Records `bundle` as the newest revision of the store `dir`, whose blobs are in place and
/// whose header directory exists: its index first, the record last (a record names only
/// what is on disk). The caller holds the [`StoreLock`].
pub(crate) fn record(
    dir: &Path,
    bundle: &Bundle,
    index: &[u8],
    unpacked: Timestamp,
) -> Result<(), RevisionError> {
    let identity = bundle.identity();
    let sequence = last_sequence(dir).map_or(1, |s| s + 1);
    let record = Record {
        identity,
        sequence,
        unpacked,
        version: version_of(bundle.description()),
        base: bundle.base().map(|b| b.identity),
        blobs: blobs_of(bundle.checksums(), bundle.description()),
    };
    let headers = header_dir(dir, identity);
    write(&headers.join(INDEX_FILE), index)?;
    let bytes = serde_json::to_vec_pretty(&record).map_err(|source| RevisionError::Json {
        path: headers.join(RECORD_FILE),
        source,
    })?;
    write(&headers.join(RECORD_FILE), &bytes)
}

/// The highest sequence recorded in the store `dir`. A record that cannot be read is skipped
/// with a warning: it must not stop an unpack (`revisions` and `prune` name it).
fn last_sequence(dir: &Path) -> Option<u64> {
    let entries = fs::read_dir(dir.join(HEADERS_DIR)).ok()?;
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path().join(RECORD_FILE))
        .filter(|path| path.exists())
        .filter_map(|path| {
            let record = fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    serde_json::from_slice::<Record>(&bytes).map_err(|e| e.to_string())
                });
            record
                .inspect_err(|error| {
                    tracing::warn!(path = %path.display(), %error, "a revision record cannot be read");
                })
                .ok()
        })
        .map(|record| record.sequence)
        .max()
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), RevisionError> {
    durable::write(path, bytes, 0o644, TEMP_PREFIX).map_err(|source| RevisionError::Write {
        path: path.to_owned(),
        source,
    })
}

/// `kk-bundle/<identity>` below `dir`.
pub(crate) fn header_dir(dir: &Path, identity: Sha256Digest) -> PathBuf {
    dir.join(HEADERS_DIR).join(identity.hex())
}

/// Every revision of the store `dir`, oldest first (see the module documentation for the
/// order). A store without `kk-bundle/` has none.
pub fn list(dir: &Path) -> Result<Vec<Revision>, RevisionError> {
    let headers = dir.join(HEADERS_DIR);
    let entries = match fs::read_dir(&headers) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RevisionError::Read {
                path: headers,
                source,
            });
        }
    };
    let mut revisions = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| RevisionError::Read {
            path: headers.clone(),
            source,
        })?;
        // Anything but a header directory (a retired revision's `.pruned-…`) is not a revision.
        let Some(identity) = entry.file_name().to_str().and_then(Sha256Digest::from_hex) else {
            continue;
        };
        if let Some(revision) = read(&entry.path(), identity)? {
            revisions.push(revision);
        }
    }
    revisions.sort_by_key(|r| (r.sequence.is_some(), r.sequence, r.unpacked, r.identity));
    Ok(revisions)
}

/// The revision in the header directory `path`: recorded, derived, or `None` for a directory
/// an unpack killed before its checksum list was written.
fn read(path: &Path, identity: Sha256Digest) -> Result<Option<Revision>, RevisionError> {
    let record_path = path.join(RECORD_FILE);
    match fs::read(&record_path) {
        Ok(bytes) => {
            let record: Record =
                serde_json::from_slice(&bytes).map_err(|source| RevisionError::Json {
                    path: record_path.clone(),
                    source,
                })?;
            if record.identity != identity {
                return Err(RevisionError::Mismatch { path: record_path });
            }
            let index = read_index(&path.join(INDEX_FILE))?;
            Ok(Some(Revision {
                identity,
                sequence: Some(record.sequence),
                unpacked: record.unpacked,
                version: record.version,
                base: record.base,
                blobs: record.blobs,
                index: Some(index),
            }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => derive(path, identity),
        Err(source) => Err(RevisionError::Read {
            path: record_path,
            source,
        }),
    }
}

/// The manifests of an `index.json`.
pub(crate) fn read_index(path: &Path) -> Result<Vec<serde_json::Value>, RevisionError> {
    let bytes = fs::read(path).map_err(|source| RevisionError::Read {
        path: path.to_owned(),
        source,
    })?;
    let index: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| RevisionError::Json {
            path: path.to_owned(),
            source,
        })?;
    Ok(index["manifests"].as_array().cloned().unwrap_or_default())
}

/// A revision of a store unpacked before revisions, from its header files.
fn derive(path: &Path, identity: Sha256Digest) -> Result<Option<Revision>, RevisionError> {
    let checksums_path = path.join(CHECKSUMS_FILE);
    let read_error = |path: &Path| {
        let path = path.to_owned();
        move |source| RevisionError::Read { path, source }
    };
    let checksums = match fs::read(&checksums_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(&checksums_path)(source)),
    };
    let unpacked = fs::metadata(&checksums_path)
        .and_then(|m| m.modified())
        .map_err(read_error(&checksums_path))?;
    let checksums = ChecksumList::parse(&checksums).map_err(|source| RevisionError::Header {
        path: checksums_path.clone(),
        source: Box::new(source),
    })?;
    let description_path = path.join(DESCRIPTION_FILE);
    // Written right after the checksum list: without it, the unpack was killed in between.
    let description = match fs::read(&description_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(&description_path)(source)),
    };
    let description: Description =
        serde_json::from_slice(&description).map_err(|source| RevisionError::Json {
            path: description_path,
            source,
        })?;
    Ok(Some(Revision {
        identity,
        sequence: None,
        unpacked: Timestamp::try_from(unpacked).unwrap_or(Timestamp::UNIX_EPOCH),
        version: version_of(&description),
        base: description.base.as_ref().map(|b| b.identity),
        blobs: blobs_of(&checksums, &description),
        index: None,
    }))
}

/// The index entries of `revision`: its own, or for a derived one, those of the store's
/// `index.json` (`store_index`) whose manifest it carries.
pub(crate) fn entries_of(
    revision: &Revision,
    store_index: &[serde_json::Value],
) -> Vec<serde_json::Value> {
    match &revision.index {
        Some(index) => index.clone(),
        None => store_index
            .iter()
            .filter(|d| {
                d["digest"]
                    .as_str()
                    .and_then(|d| d.parse::<Sha256Digest>().ok())
                    .is_some_and(|d| revision.blobs.contains(&d))
            })
            .cloned()
            .collect(),
    }
}

/// The path of the store's `index.json`.
pub(crate) fn store_index(dir: &Path) -> PathBuf {
    dir.join(INDEX_PATH)
}

/// Every blob file of the store with its size (temporary files of a write are not blobs).
pub(crate) fn stored_blobs(dir: &Path) -> Result<Vec<(Sha256Digest, u64)>, RevisionError> {
    let blobs = dir.join(BLOBS_DIR);
    let read_error = |source| RevisionError::Read {
        path: blobs.clone(),
        source,
    };
    let entries = match fs::read_dir(&blobs) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(read_error(source)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(read_error)?;
        let Some(digest) = entry.file_name().to_str().and_then(Sha256Digest::from_hex) else {
            continue;
        };
        let meta = entry.metadata().map_err(read_error)?;
        if meta.is_file() {
            found.push((digest, meta.len()));
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests;

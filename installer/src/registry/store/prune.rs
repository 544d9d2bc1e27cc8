//! `registry prune --keep N`: the store keeps its `N` newest revisions (the installed one, and
//! with `N ≥ 2` the previous one; see [`super::revision`] for the order) and loses every blob
//! none of them needs.
//!
//! A kept delta needs the blobs it takes from its base, and they are in its own blob set, so a
//! base revision can go while its delta stays: what the delta needs stays with it.
//!
//! # Why it is safe to interrupt
//!
//! The steps run in this order, each durable before the next starts:
//! 1. `index.json` is rewritten to the kept revisions' entries (a reader now names only what
//!    stays);
//! 2. each dropped revision's header directory is renamed to `kk-bundle/.pruned-<identity>`
//!    (no longer a revision) and then removed;
//! 3. the blobs no kept revision needs are deleted.
//!
//! Killed anywhere, the store opens and every kept revision has all its blobs; a rerun plans
//! the same kept set (the dropped revisions are the oldest) and finishes the job. An unpack and
//! a prune of one store exclude each other through [`StoreLock`].

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use bundle_spec::Sha256Digest;
use bundle_spec::oci::{BLOBS_DIR, REF_NAME_ANNOTATION};

use super::revision::{self, HEADERS_DIR, Revision, StoreLock};
use crate::durable;
use crate::registry::RevisionError;

/// A dropped revision's header directory, on its way out, is renamed with this prefix.
const RETIRED_PREFIX: &str = ".pruned-";
/// Temporary files of the index write.
const TEMP_PREFIX: &str = ".kk-prune-";

/// What a prune did (or, with `dry_run`, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// The revisions kept, oldest first.
    pub kept: Vec<Sha256Digest>,
    /// The revisions dropped, oldest first.
    pub dropped: Vec<Sha256Digest>,
    /// The blobs deleted.
    pub blobs: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Nothing was changed.
    pub dry_run: bool,
}

/// The revisions a prune keeping `keep` keeps: the `keep` newest, never fewer than one (the
/// installed revision always stays). `revisions` is oldest first, as [`revision::list`] gives
/// them; returns (kept, dropped).
pub(crate) fn select(revisions: &[Revision], keep: usize) -> (&[Revision], &[Revision]) {
    let cut = revisions.len().saturating_sub(keep.max(1));
    let (dropped, kept) = revisions.split_at(cut);
    (kept, dropped)
}

/// The work a prune of one store does, planned from its revisions.
#[derive(Debug)]
pub(crate) struct Plan {
    dir: PathBuf,
    kept: Vec<Revision>,
    dropped: Vec<Revision>,
    /// The blobs to delete, with their sizes.
    garbage: Vec<(Sha256Digest, u64)>,
}

impl Plan {
    /// Plans a prune of the store `dir` keeping `keep` revisions. The caller holds the lock.
    pub(crate) fn new(dir: &Path, keep: usize) -> Result<Self, RevisionError> {
        let revisions = revision::list(dir)?;
        if revisions.is_empty() {
            return Err(RevisionError::NoRevisions {
                dir: dir.to_owned(),
            });
        }
        let (kept, dropped) = select(&revisions, keep);
        let needed: BTreeSet<Sha256Digest> =
            kept.iter().flat_map(|r| r.blobs.iter().copied()).collect();
        let garbage = revision::stored_blobs(dir)?
            .into_iter()
            .filter(|(digest, _)| !needed.contains(digest))
            .collect();
        Ok(Self {
            dir: dir.to_owned(),
            kept: kept.to_vec(),
            dropped: dropped.to_vec(),
            garbage,
        })
    }

    /// What the plan does, before it does it.
    fn report(&self, dry_run: bool) -> Pruned {
        Pruned {
            kept: self.kept.iter().map(|r| r.identity).collect(),
            dropped: self.dropped.iter().map(|r| r.identity).collect(),
            blobs: self.garbage.len(),
            bytes: self.garbage.iter().map(|(_, size)| size).sum(),
            dry_run,
        }
    }

    /// Step 1: `index.json` names the kept revisions' manifests only (left alone when it
    /// already does).
    pub(crate) fn write_index(&self) -> Result<(), RevisionError> {
        let path = revision::store_index(&self.dir);
        let bytes = fs::read(&path).map_err(|source| RevisionError::Read {
            path: path.clone(),
            source,
        })?;
        let json_error = |source| RevisionError::Json {
            path: path.clone(),
            source,
        };
        let mut index: serde_json::Value = serde_json::from_slice(&bytes).map_err(json_error)?;
        let current = index["manifests"].as_array().cloned().unwrap_or_default();
        let manifests = kept_entries(&self.kept, &current);
        if manifests == current {
            return Ok(());
        }
        index["manifests"] = serde_json::Value::Array(manifests);
        let bytes = serde_json::to_vec(&index).map_err(json_error)?;
        durable::write(&path, &bytes, 0o644, TEMP_PREFIX)
            .map_err(|source| RevisionError::Write { path, source })
    }

    /// Step 2: the dropped revisions' records go, and what a killed run left of them.
    pub(crate) fn retire_revisions(&self) -> Result<(), RevisionError> {
        let headers = self.dir.join(HEADERS_DIR);
        let write_error = |path: &Path| {
            let path = path.to_owned();
            move |source| RevisionError::Write { path, source }
        };
        for revision in &self.dropped {
            let from = revision::header_dir(&self.dir, revision.identity);
            let to = headers.join(format!("{RETIRED_PREFIX}{}", revision.identity.hex()));
            fs::rename(&from, &to).map_err(write_error(&from))?;
        }
        durable::sync_dir(&headers).map_err(write_error(&headers))?;
        for entry in fs::read_dir(&headers).map_err(write_error(&headers))? {
            let entry = entry.map_err(write_error(&headers))?;
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(RETIRED_PREFIX)
            {
                fs::remove_dir_all(entry.path()).map_err(write_error(&entry.path()))?;
            }
        }
        Ok(())
    }

    /// Step 3: the blobs no kept revision needs are deleted.
    pub(crate) fn delete_blobs(&self) -> Result<(), RevisionError> {
        let blobs = self.dir.join(BLOBS_DIR);
        for (digest, _) in &self.garbage {
            let path = blobs.join(digest.hex());
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(RevisionError::Write { path, source: e });
                }
                _ => {}
            }
        }
        durable::sync_dir(&blobs).map_err(|source| RevisionError::Write {
            path: blobs,
            source,
        })
    }
}

/// Prunes the store `dir` to its `keep` newest revisions (at least one); with `dry_run`, only
/// says what it would remove. Waits for an unpack of the store to end first.
pub fn prune(dir: &Path, keep: usize, dry_run: bool) -> Result<Pruned, RevisionError> {
    let _lock = StoreLock::acquire(dir).map_err(|source| RevisionError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let plan = Plan::new(dir, keep)?;
    let pruned = plan.report(dry_run);
    if !dry_run {
        plan.write_index()?;
        plan.retire_revisions()?;
        plan.delete_blobs()?;
    }
    Ok(pruned)
}

/// The entries of the kept revisions (oldest first), merged as unpacking them in that order
/// would: a later entry with the same reference name (or, without one, digest) replaces an
/// earlier one. Sorted by that key, as the unpack writes them.
fn kept_entries(kept: &[Revision], current: &[serde_json::Value]) -> Vec<serde_json::Value> {
    let key = |d: &serde_json::Value| {
        d["annotations"][REF_NAME_ANNOTATION]
            .as_str()
            .map_or_else(|| d["digest"].to_string(), str::to_owned)
    };
    let mut merged = std::collections::BTreeMap::new();
    for revision in kept {
        for entry in revision::entries_of(revision, current) {
            merged.insert(key(&entry), entry);
        }
    }
    merged.into_values().collect()
}

#[cfg(test)]
mod tests;

//! Writing the store: a bundle unpacked into it (`kk-install unpack`, and `registry serve` or
//! `push` with `--bundle`). The reader is [`super::Store`]; both live here so that one module
//! owns the layout.
//!
//! The store is shared by every bundle unpacked into it, so unpacking adds rather than
//! replaces: blobs already present are checked (re-hashed) and skipped, `index.json` is merged
//! (an entry with the same reference name is replaced), and each bundle's header files are
//! kept under `kk-bundle/<identity>/` with its revision record (see `super::revision`). The
//! store's lock is held throughout, so that a prune never runs meanwhile. Nothing is ever written next to the bundle: its medium
//! may be read-only.
//!
//! # Why it is safe to interrupt
//!
//! - A blob goes to a temporary file in `blobs/sha256/`, is renamed to its digest only once the
//!   digest matched, and is synced before the rename (see `crate::durable`).
//! - `index.json` and the header files are written last, after the whole bundle verified and
//!   after `blobs/sha256/` itself was synced: a failed or cut unpack never leaves an index that
//!   names a blob the store does not have, even across a power cut.
//! - Directories below the store are created one component at a time and must be real
//!   directories: a symbolic link planted as `blobs` or `kk-bundle/<identity>` is refused, never
//!   followed (the reader serves only regular files, so a write through a link would also be a
//!   blob the registry cannot serve).

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bundle_spec::member::{MemberKind, MemberPath};
use bundle_spec::oci::{BLOBS_DIR, INDEX_PATH, OCI_LAYOUT_PATH, REF_NAME_ANNOTATION};
use bundle_spec::read::{MemberHeader, MemberVisitor};
use bundle_spec::{BaseBlob, Bundle, BundleError, Sha256Digest, Verified};
use tempfile::NamedTempFile;

use super::revision::{self, StoreLock};
use crate::durable;

/// Temporary files of an unpack carry this prefix; leftovers of a killed run are removed.
const TEMP_PREFIX: &str = ".kk-unpack-";

/// Files are published 0644, as in the bundle.
const FILE_MODE: u32 = 0o644;

/// What an unpack did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Unpacked {
    /// The full verification's figures.
    pub verified: Verified,
    /// Blobs written.
    pub written: usize,
    /// Blobs already in the store (verified, not rewritten).
    pub skipped: usize,
}

/// Unpacks `bundle` into the store `dir` (created if needed; see the module documentation),
/// after checking there is room. `progress` is called with the count of every chunk of member
/// bytes read.
pub fn unpack(
    bundle: &mut Bundle,
    dir: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<Unpacked, BundleError> {
    check_base(bundle, dir)?;
    // Headers whose sizes lie are refused before the store is touched: listing them reads
    // only their frames, where the walk below would write every blob before the lie.
    bundle.members()?;
    // A failed unpack into a store this run creates removes it whole: verified blobs of a
    // bundle that failed are no store anyone asked for. A store that was there keeps them,
    // so that unpacking again (a repaired copy of the bundle) resumes rather than starts over.
    let created = first_missing(dir);
    let unpacked = unpack_into(bundle, dir, progress);
    if unpacked.is_err()
        && let Some(created) = created
        && let Err(error) = fs::remove_dir_all(&created)
        && error.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(path = %created.display(), %error, "could not remove the store of a failed unpack");
    }
    unpacked
}

/// The outermost directory of `dir` and its ancestors that does not exist yet: what creating
/// `dir` creates. `None` if `dir` exists (as anything: the unpack refuses what is not a
/// directory, and removes nothing it did not create).
fn first_missing(dir: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut path = Some(dir);
    while let Some(candidate) = path.filter(|p| !p.as_os_str().is_empty()) {
        if fs::symlink_metadata(candidate).is_ok() {
            break;
        }
        missing = Some(candidate.to_owned());
        path = candidate.parent();
    }
    missing
}

/// [`unpack`] once the bundle's headers were checked: creates the store, writes the blobs as
/// they verify, then publishes the index.
fn unpack_into(
    bundle: &mut Bundle,
    dir: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<Unpacked, BundleError> {
    // The store's own path is the operator's: links above it (a store on another disk) are
    // theirs to make. Below it, nothing is followed.
    fs::create_dir_all(dir).map_err(|source| BundleError::Write {
        path: dir.to_owned(),
        source,
    })?;
    // A prune of this store would delete the blobs this unpack has not recorded yet.
    let _lock = StoreLock::acquire(dir).map_err(|source| BundleError::Write {
        path: dir.to_owned(),
        source,
    })?;
    create_dirs(dir, Path::new(BLOBS_DIR))?;
    let blobs = dir.join(BLOBS_DIR);
    remove_leftovers(&blobs).map_err(|source| BundleError::Write {
        path: blobs.clone(),
        source,
    })?;
    check_space(bundle, dir)?;
    let mut store = StoreVisitor {
        root: dir.to_owned(),
        progress,
        headers: Vec::new(),
        written: 0,
        skipped: 0,
    };
    let verified = bundle.walk(&mut store)?;
    store.publish(bundle)?;
    Ok(Unpacked {
        verified,
        written: store.written,
        skipped: store.skipped,
    })
}

/// For a delta bundle, checks that the store holds every blob the delta takes from its base
/// (a regular file of the listed size: the unpack that put it there verified its digest), so a
/// delta onto the wrong store is refused before anything is written.
pub fn check_base(bundle: &Bundle, dir: &Path) -> Result<(), BundleError> {
    let Some(base) = bundle.base() else {
        return Ok(());
    };
    let present = |blob: &BaseBlob| {
        fs::symlink_metadata(dir.join(BLOBS_DIR).join(blob.digest.hex()))
            .is_ok_and(|m| m.is_file() && m.len() == blob.size)
    };
    match base.blobs.iter().find(|blob| !present(blob)) {
        Some(missing) => Err(BundleError::BaseBlobMissing {
            digest: missing.digest,
            base: base.identity,
            store: dir.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Creates `relative` below `root`, each component a real directory.
fn create_dirs(root: &Path, relative: &Path) -> Result<(), BundleError> {
    durable::create_dirs_below(root, relative).map_err(|(path, source)| {
        if source.kind() == io::ErrorKind::NotADirectory {
            BundleError::UnsafeDestination { path }
        } else {
            BundleError::Write { path, source }
        }
    })
}

/// Refuses before writing anything when the store's file system cannot hold what is missing.
fn check_space(bundle: &Bundle, dir: &Path) -> Result<(), BundleError> {
    let present: u64 = bundle
        .checksums()
        .iter()
        .filter(|(path, _)| matches!(path.kind(), MemberKind::Blob(_)))
        .filter_map(|(path, _)| fs::symlink_metadata(dir.join(path.as_str())).ok())
        .filter(fs::Metadata::is_file)
        .map(|meta| meta.len())
        .sum();
    let needed = bundle.content_size().saturating_sub(present);
    let available = fs4::available_space(dir).map_err(|source| BundleError::Write {
        path: dir.to_owned(),
        source,
    })?;
    if available < needed {
        return Err(BundleError::Write {
            path: dir.to_owned(),
            source: io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "the store needs {} more but its file system has {} free; free some space or choose another --store",
                    bytesize::ByteSize(needed),
                    bytesize::ByteSize(available)
                ),
            ),
        });
    }
    Ok(())
}

fn remove_leftovers(blobs: &Path) -> io::Result<()> {
    for entry in fs::read_dir(blobs)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// A member on its way into the store.
enum Pending {
    /// A blob in a temporary file, and where it goes.
    Blob(NamedTempFile, PathBuf),
    /// A blob the store already has, verified.
    Present,
    /// A layout or header file, written once the whole bundle verified.
    Bytes(Vec<u8>),
}

struct StoreVisitor<'a> {
    root: PathBuf,
    progress: &'a mut dyn FnMut(u64),
    headers: Vec<(MemberPath, Vec<u8>)>,
    written: usize,
    skipped: usize,
}

impl StoreVisitor<'_> {
    /// Reads `data` to its end into `out`, reporting progress.
    fn copy(
        &mut self,
        data: &mut dyn Read,
        out: &mut dyn Write,
        path: &Path,
    ) -> Result<(), BundleError> {
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let n = match data.read(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BundleError::from_read_error(e)),
            };
            out.write_all(&chunk[..n])
                .map_err(|source| BundleError::Write {
                    path: path.to_owned(),
                    source,
                })?;
            (self.progress)(n as u64);
        }
    }

    fn receive_blob(
        &mut self,
        digest: &Sha256Digest,
        member: &MemberHeader,
        data: &mut dyn Read,
    ) -> Result<Pending, BundleError> {
        let target = self.root.join(member.path.as_str());
        // Only a regular file counts: a link in its place is replaced (the rename replaces
        // the link itself), as the registry would not serve it.
        let present = fs::symlink_metadata(&target).is_ok_and(|m| m.is_file())
            && fs::File::open(&target)
                .and_then(Sha256Digest::of_reader)
                .is_ok_and(|(found, size)| found == *digest && size == member.size);
        if present {
            self.copy(data, &mut io::sink(), &target)?;
            return Ok(Pending::Present);
        }
        let dir = self.root.join(BLOBS_DIR);
        let mut temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&dir)
            .map_err(|source| BundleError::Write {
                path: dir.clone(),
                source,
            })?;
        self.copy(data, &mut temp, &target)?;
        Ok(Pending::Blob(temp, target))
    }

    /// Writes the layout and header files once every member verified: the bundle's header
    /// directory first (refusing a link there before anything is written), then its revision
    /// record, `index.json` last, so that the index names the bundle only once all of it is in
    /// place.
    fn publish(&self, bundle: &Bundle) -> Result<(), BundleError> {
        let identity = &bundle.identity();
        // The blobs' data and renames reach the disk before any index that names them: one
        // sync of the file system for all of them, rather than an fsync per blob (a bundle has
        // thousands). A crash before it can leave a blob renamed but short; no index names it,
        // and the next unpack re-hashes it and writes it again.
        let blobs = self.root.join(BLOBS_DIR);
        durable::sync_file_system(&blobs).map_err(|source| BundleError::Write {
            path: blobs,
            source,
        })?;
        let headers = Path::new("kk-bundle").join(identity.hex());
        create_dirs(&self.root, &headers)?;
        let mut index = None;
        for (path, bytes) in &self.headers {
            match path.kind() {
                MemberKind::OciLayout => write_file(&self.root.join(OCI_LAYOUT_PATH), bytes)?,
                MemberKind::Index => index = Some(bytes),
                _ => {
                    let name = path.as_str().trim_start_matches("kk-bundle/");
                    let relative = headers.join(name);
                    create_dirs(&self.root, relative.parent().unwrap_or(&headers))?;
                    write_file(&self.root.join(relative), bytes)?;
                }
            }
        }
        if let Some(bytes) = index {
            revision::record(&self.root, bundle, bytes, jiff::Timestamp::now()).map_err(
                |error| BundleError::Write {
                    path: revision::header_dir(&self.root, *identity),
                    source: io::Error::other(error),
                },
            )?;
            let path = self.root.join(INDEX_PATH);
            write_file(&path, &merge_index(&path, bytes)?)?;
        }
        Ok(())
    }
}

impl MemberVisitor for StoreVisitor<'_> {
    type Pending = Pending;

    fn receive(
        &mut self,
        member: &MemberHeader,
        data: &mut dyn Read,
    ) -> Result<Pending, BundleError> {
        if let MemberKind::Blob(digest) = member.path.kind() {
            return self.receive_blob(&digest, member, data);
        }
        let mut bytes = Vec::new();
        self.copy(data, &mut bytes, Path::new(member.path.as_str()))?;
        Ok(Pending::Bytes(bytes))
    }

    fn accept(
        &mut self,
        member: &MemberHeader,
        pending: Pending,
        _: Sha256Digest,
    ) -> Result<(), BundleError> {
        match pending {
            Pending::Blob(temp, target) => {
                let write_error = |source| BundleError::Write {
                    path: target.clone(),
                    source,
                };
                temp.as_file()
                    .set_permissions(fs::Permissions::from_mode(FILE_MODE))
                    .map_err(write_error)?;
                // Renamed now; the file system is synced once, before publishing.
                durable::rename_unsynced(temp, &target).map_err(write_error)?;
                self.written += 1;
            }
            Pending::Present => self.skipped += 1,
            Pending::Bytes(bytes) => self.headers.push((member.path.clone(), bytes)),
        }
        Ok(())
    }
}

/// The store's `index.json` with the bundle's entries added: an entry whose reference name (or,
/// without one, digest) the store already lists replaces it. Keys come out sorted.
fn merge_index(existing: &Path, new: &[u8]) -> Result<Vec<u8>, BundleError> {
    let invalid = |e: serde_json::Error| BundleError::Write {
        path: existing.to_owned(),
        source: io::Error::other(e),
    };
    let mut new: serde_json::Value = serde_json::from_slice(new).map_err(invalid)?;
    let Ok(old) = fs::read(existing) else {
        return serde_json::to_vec(&new).map_err(invalid);
    };
    let old: serde_json::Value = serde_json::from_slice(&old).map_err(invalid)?;
    let key = |d: &serde_json::Value| {
        d["annotations"][REF_NAME_ANNOTATION]
            .as_str()
            .map_or_else(|| d["digest"].to_string(), str::to_owned)
    };
    let added: Vec<serde_json::Value> = new["manifests"].as_array().cloned().unwrap_or_default();
    let mut merged: Vec<serde_json::Value> = old["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| !added.iter().any(|a| key(a) == key(d)))
        .cloned()
        .collect();
    merged.extend(added);
    merged.sort_by_key(|d| key(d));
    new["manifests"] = serde_json::Value::Array(merged);
    serde_json::to_vec(&new).map_err(invalid)
}

/// Writes a small file durably (see `crate::durable`).
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    durable::write(path, bytes, FILE_MODE, TEMP_PREFIX).map_err(|source| BundleError::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;

//! `kk-install unpack`: a bundle into a content store, the OCI layout the registry serves.
//!
//! The store is shared by every bundle unpacked into it, so unpacking adds rather than replaces:
//! blobs already present are checked (re-hashed) and skipped, `index.json` is merged (an entry
//! with the same reference name is replaced), and each bundle's header files are kept under
//! `kk-bundle/<identity>/`. Blobs are written to temporary files beside their final name and
//! renamed only once their digest matched; `index.json` and the header files are written last,
//! after the whole bundle verified, so a failed unpack never leaves an index that names a blob
//! the store does not have. Nothing is ever written next to the bundle: its medium may be
//! read-only.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bundle_spec::member::{MemberKind, MemberPath};
use bundle_spec::read::{MemberHeader, MemberVisitor};
use bundle_spec::{Bundle, BundleError, Sha256Digest, Verified};
use indicatif::ProgressBar;
use tempfile::NamedTempFile;

/// Temporary files of an unpack carry this prefix; leftovers of a killed run are removed.
const TEMP_PREFIX: &str = ".kk-unpack-";

/// What an unpack did.
#[derive(Debug, Clone)]
pub(crate) struct Unpacked {
    /// The full verification's figures.
    pub(crate) verified: Verified,
    /// Blobs written.
    pub(crate) written: usize,
    /// Blobs already in the store (verified, not rewritten).
    pub(crate) skipped: usize,
}

/// Unpacks `bundle` into the store `dir` (created if needed), after checking there is room.
pub(crate) fn unpack(
    bundle: &mut Bundle,
    dir: &Path,
    progress: &ProgressBar,
) -> Result<Unpacked, BundleError> {
    let write_error = |path: &Path| {
        let path = path.to_owned();
        move |source| BundleError::Write { path, source }
    };
    fs::create_dir_all(dir.join("blobs/sha256")).map_err(write_error(dir))?;
    remove_leftovers(&dir.join("blobs/sha256")).map_err(write_error(dir))?;
    check_space(bundle, dir)?;
    let mut store = StoreVisitor {
        root: dir.to_owned(),
        progress: progress.clone(),
        headers: Vec::new(),
        written: 0,
        skipped: 0,
    };
    let verified = bundle.walk(&mut store)?;
    store.publish(&bundle.identity())?;
    Ok(Unpacked {
        verified,
        written: store.written,
        skipped: store.skipped,
    })
}

/// Refuses before writing anything when the store's file system cannot hold what is missing.
fn check_space(bundle: &Bundle, dir: &Path) -> Result<(), BundleError> {
    let present: u64 = bundle
        .checksums()
        .iter()
        .filter(|(path, _)| matches!(path.kind(), MemberKind::Blob(_)))
        .filter_map(|(path, _)| fs::metadata(dir.join(path.as_str())).ok())
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

struct StoreVisitor {
    root: PathBuf,
    progress: ProgressBar,
    headers: Vec<(MemberPath, Vec<u8>)>,
    written: usize,
    skipped: usize,
}

impl StoreVisitor {
    /// Reads `data` to its end into `out`, advancing the progress bar.
    fn copy(
        &self,
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
            self.progress.inc(n as u64);
        }
    }

    fn receive_blob(
        &self,
        digest: &Sha256Digest,
        member: &MemberHeader,
        data: &mut dyn Read,
    ) -> Result<Pending, BundleError> {
        let target = self.root.join(member.path.as_str());
        let present = fs::File::open(&target)
            .and_then(Sha256Digest::of_reader)
            .is_ok_and(|(found, size)| found == *digest && size == member.size);
        if present {
            self.copy(data, &mut io::sink(), &target)?;
            return Ok(Pending::Present);
        }
        let dir = self.root.join("blobs/sha256");
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

    /// Writes the layout and header files once every member verified.
    fn publish(&self, identity: &Sha256Digest) -> Result<(), BundleError> {
        for (path, bytes) in &self.headers {
            match path.kind() {
                MemberKind::OciLayout => write_file(&self.root.join("oci-layout"), bytes)?,
                MemberKind::Index => write_file(
                    &self.root.join("index.json"),
                    &merge_index(&self.root.join("index.json"), bytes)?,
                )?,
                _ => {
                    let name = path.as_str().trim_start_matches("kk-bundle/");
                    let dir = self.root.join("kk-bundle").join(identity.hex());
                    fs::create_dir_all(&dir).map_err(|source| BundleError::Write {
                        path: dir.clone(),
                        source,
                    })?;
                    write_file(&dir.join(name), bytes)?;
                }
            }
        }
        Ok(())
    }
}

impl MemberVisitor for StoreVisitor {
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
                    .set_permissions(fs::Permissions::from_mode(0o644))
                    .map_err(write_error)?;
                temp.persist(&target).map_err(|e| write_error(e.error))?;
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
        d["annotations"]["org.opencontainers.image.ref.name"]
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

/// Writes a small file atomically (temporary file, then rename).
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    let write_error = |source| BundleError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(write_error)?;
    temp.write_all(bytes).map_err(write_error)?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(write_error)?;
    temp.persist(path).map_err(|e| write_error(e.error))?;
    Ok(())
}

//! The lock file on disk: `<manifest stem>.lock.yaml` beside the manifest unless `--lock` says
//! otherwise. Written to a temporary file beside it, synced, renamed over it, and the directory
//! synced: an interrupted build or a power cut never leaves half a lock, and a lock a build
//! reported written survives a crash (without the syncs, ext4 and xfs may put the rename on
//! disk before the data, leaving an empty lock).

use std::path::{Path, PathBuf};

use bundle_spec::Lock;
use bundle_spec::lock::LOCK_VERSION;

/// Where the lock of `manifest` lives by default: `cluster.yaml` → `cluster.lock.yaml`.
pub fn default_lock_path(manifest: &Path) -> PathBuf {
    let stem = manifest
        .file_stem()
        .map_or_else(|| "manifest".into(), |s| s.to_string_lossy().into_owned());
    manifest.with_file_name(format!("{stem}.lock.yaml"))
}

/// Reads a lock file.
pub fn read_lock(path: &Path) -> Result<Lock, LockFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| LockFileError::File {
        path: path.to_owned(),
        source,
    })?;
    let lock: Lock = serde_saphyr::from_str(&text).map_err(|e| LockFileError::Invalid {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    if lock.version != LOCK_VERSION {
        return Err(LockFileError::Invalid {
            path: path.to_owned(),
            reason: format!(
                "version {} is not {LOCK_VERSION}, the version this kk-bundle writes",
                lock.version
            ),
        });
    }
    Ok(lock)
}

/// Writes a lock file atomically.
pub fn write_lock(path: &Path, lock: &Lock) -> Result<(), LockFileError> {
    let mut text = String::from(
        "# Written by kk-bundle: the exact sources of a bundle. Rebuild with `kk-bundle build --locked`.\n",
    );
    text.push_str(
        &serde_saphyr::to_string(lock).map_err(|e| LockFileError::Invalid {
            path: path.to_owned(),
            reason: e.to_string(),
        })?,
    );
    bundle_spec::durable::write(path, text.as_bytes(), LOCK_MODE, ".kk-lock-").map_err(|source| {
        LockFileError::File {
            path: path.to_owned(),
            source,
        }
    })
}

/// A lock file cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockFileError {
    /// The file could not be read or written.
    #[error("cannot access `{}`", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The lock file is malformed.
    #[error("lock file `{}` is invalid: {reason}; hint: delete it and rebuild without `--locked`", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The mode of a lock file: what the temporary file it was renamed from always had.
const LOCK_MODE: u32 = 0o600;

#[cfg(test)]
mod tests {
    use super::*;
    use bundle_spec::durable::journal;
    use bundle_spec::lock::{LockedFile, LockedImage};

    #[test]
    fn round_trips_and_names_the_default_path() {
        assert_eq!(
            default_lock_path(Path::new("/m/lab.yaml")),
            Path::new("/m/lab.lock.yaml")
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock.yaml");
        let mut lock = Lock::new("2026-11-22T00:00:00Z".parse().unwrap());
        lock.images.push(LockedImage {
            reference: "docker.io/library/busybox:1.36".into(),
            digest: bundle_spec::Sha256Digest::of(b"i"),
            media_type: "application/vnd.oci.image.index.v1+json".into(),
        });
        lock.binaries.push(LockedFile {
            name: "etcd".into(),
            version: "v3.5.16".into(),
            platform: Some("linux/amd64".into()),
            url: "https://example.org/etcd.tar.gz".into(),
            digest: bundle_spec::Sha256Digest::of(b"b"),
            size: 3,
        });
        journal::take();
        write_lock(&path, &lock).unwrap();
        assert_eq!(read_lock(&path).unwrap(), lock);
        // Synced before the rename, the directory after it.
        journal::assert_durable(&journal::take(), &path);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        std::fs::write(&path, "version: 9\ncreated: 2026-11-22T00:00:00Z\n").unwrap();
        assert!(
            read_lock(&path)
                .unwrap_err()
                .to_string()
                .contains("version 9")
        );
    }
}

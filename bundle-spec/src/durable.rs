//! Durable file replacement: after a crash or power cut a file is either its old self or its
//! new self, never empty or half written, and once a call returns the new one survives.
//!
//! Every write goes the same way: a temporary file in the target's own directory (a rename is
//! atomic only within one file system) → write → `fsync` the file → rename it over the target
//! → `fsync` the directory. Without the first `fsync`, ext4 and xfs may put the rename on disk
//! before the data, and after a crash the name points at an empty file; without the second,
//! the rename itself may be lost, and a store index or `known_hosts` entry that was written is
//! gone after a reboot.
//!
//! Both binaries write through this module (the installer's store, state, certificates and
//! `known_hosts`; the builder's lock file and cache), so the steps and the file systems they
//! tolerate are the same everywhere.

use std::fs::{self, File, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// Replaces `path` with `bytes`, mode `mode`, durably. The temporary file is named
/// `<prefix>…` so that a caller can recognise leftovers of a killed run.
pub fn write(path: &Path, bytes: &[u8], mode: u32, prefix: &str) -> io::Result<()> {
    persist(written_temp(path, bytes, mode, prefix)?, path)
}

/// Like [`write()`], but never replaces a file: if `path` exists the rename itself fails with
/// [`io::ErrorKind::AlreadyExists`], so two writers racing for one name cannot both win.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32, prefix: &str) -> io::Result<()> {
    let temp = written_temp(path, bytes, mode, prefix)?;
    sync_file(&temp)?;
    #[cfg(any(test, feature = "test-support"))]
    let from = temp.path().to_owned();
    temp.persist_noclobber(path).map_err(|e| e.error)?;
    #[cfg(any(test, feature = "test-support"))]
    journal::record(journal::Step::Rename {
        from,
        to: path.to_owned(),
    });
    sync_dir(parent(path))
}

/// A temporary file beside `path` holding `bytes` with mode `mode`, not yet synced.
fn written_temp(path: &Path, bytes: &[u8], mode: u32, prefix: &str) -> io::Result<NamedTempFile> {
    let mut temp = tempfile::Builder::new()
        .prefix(prefix)
        .tempfile_in(parent(path))?;
    // The mode before the bytes: a private key is never readable by others, not even briefly.
    temp.as_file()
        .set_permissions(Permissions::from_mode(mode))?;
    temp.write_all(bytes)?;
    Ok(temp)
}

/// Moves the fully written `temp` (created in `path`'s directory) over `path`, durably: its data
/// first, then the rename, then the directory entry.
pub fn persist(temp: NamedTempFile, path: &Path) -> io::Result<()> {
    sync_file(&temp)?;
    rename_unsynced(temp, path)?;
    sync_dir(parent(path))
}

/// Syncs the data of `temp` to disk.
fn sync_file(temp: &NamedTempFile) -> io::Result<()> {
    temp.as_file().sync_all()?;
    #[cfg(any(test, feature = "test-support"))]
    journal::record(journal::Step::SyncFile(temp.path().to_owned()));
    Ok(())
}

/// Renames `temp` (created in `path`'s directory) over `path` with nothing synced: for the
/// many files of one bulk write, made durable all at once by [`sync_file_system`] before
/// anything refers to them. Until then a crash may leave such a file renamed but empty or
/// short, so its readers must check its content (the store's blobs are named by their digest,
/// and an unpack re-hashes any blob it finds before keeping it).
pub fn rename_unsynced(temp: NamedTempFile, path: &Path) -> io::Result<()> {
    #[cfg(any(test, feature = "test-support"))]
    let from = temp.path().to_owned();
    temp.persist(path).map_err(|e| e.error)?;
    #[cfg(any(test, feature = "test-support"))]
    journal::record(journal::Step::Rename {
        from,
        to: path.to_owned(),
    });
    Ok(())
}

/// Makes everything written to the file system that holds `dir` durable: the data and the
/// renames of every file at once (`syncfs`). One call instead of an `fsync` per file: a bundle
/// has thousands of blobs, and the per-file syncs cost a quarter of an unpack.
pub fn sync_file_system(dir: &Path) -> io::Result<()> {
    let handle = File::open(dir)?;
    rustix::fs::syncfs(&handle)?;
    #[cfg(any(test, feature = "test-support"))]
    journal::record(journal::Step::SyncFs(dir.to_owned()));
    Ok(())
}

/// Makes the entries of `dir` (a rename into it, a new file) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    tolerate_unsyncable_dir(File::open(dir).and_then(|handle| handle.sync_all()))?;
    #[cfg(any(test, feature = "test-support"))]
    journal::record(journal::Step::SyncDir(dir.to_owned()));
    Ok(())
}

/// The outcome of a directory `fsync`, with the one failure that is not one: some file systems
/// (and some FUSE ones) cannot fsync a directory and say so with EINVAL. The rename is as
/// durable there as it can be made.
fn tolerate_unsyncable_dir(synced: io::Result<()>) -> io::Result<()> {
    match synced {
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
        other => other,
    }
}

/// Creates the directory `relative` below `root` (each missing component, synced into its
/// parent), refusing to go through anything that is not a real directory: a symbolic link
/// planted inside a store must not send a write outside it. `root` itself is the operator's
/// choice and is not checked. On failure, the component at fault and why; a component that is
/// not a real directory (a link, a file) is [`io::ErrorKind::NotADirectory`].
pub fn create_dirs_below(root: &Path, relative: &Path) -> Result<(), (PathBuf, io::Error)> {
    let mut dir = root.to_path_buf();
    for component in relative.components() {
        let std::path::Component::Normal(name) = component else {
            let error = io::Error::new(io::ErrorKind::InvalidInput, "a path leaving its root");
            return Err((root.join(relative), error));
        };
        dir.push(name);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                let error = io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a real directory (a link or a file)",
                );
                return Err((dir, error));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Err(e) = fs::create_dir(&dir).and_then(|()| sync_dir(parent(&dir))) {
                    return Err((dir, e));
                }
            }
            Err(e) => return Err((dir, e)),
        }
    }
    Ok(())
}

/// The directory holding `path` (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// What the durable steps did on this thread, for tests to check that a write went through
/// them: `fsync` cannot be observed from outside, so the order of the steps is.
#[cfg(any(test, feature = "test-support"))]
pub mod journal {
    use std::path::PathBuf;

    /// One durable step.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Step {
        /// A file's data were synced.
        SyncFile(PathBuf),
        /// A file was renamed into place.
        Rename {
            /// The temporary name.
            from: PathBuf,
            /// The final name.
            to: PathBuf,
        },
        /// A directory's entries were synced.
        SyncDir(PathBuf),
        /// The whole file system holding the directory was synced.
        SyncFs(PathBuf),
    }

    thread_local! {
        static STEPS: std::cell::RefCell<Vec<Step>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    pub(crate) fn record(step: Step) {
        STEPS.with(|steps| steps.borrow_mut().push(step));
    }

    /// The steps recorded on this thread since the last call.
    pub fn take() -> Vec<Step> {
        STEPS.with(|steps| std::mem::take(&mut *steps.borrow_mut()))
    }

    /// Asserts that `steps` made `path` durable: its temporary file in the same directory
    /// synced, renamed onto it, then the directory synced.
    ///
    /// # Panics
    ///
    /// When they did not: that is the assertion.
    #[track_caller]
    pub fn assert_durable(steps: &[Step], path: &std::path::Path) {
        let dir = path.parent().expect("a parent");
        let renamed = steps
            .iter()
            .position(|s| matches!(s, Step::Rename { to, .. } if to == path))
            .unwrap_or_else(|| {
                panic!(
                    "`{}` was not renamed into place: {steps:#?}",
                    path.display()
                )
            });
        let Step::Rename { from, .. } = &steps[renamed] else {
            unreachable!()
        };
        assert_eq!(
            from.parent(),
            Some(dir),
            "the temporary file is beside its target"
        );
        assert!(
            steps[..renamed].contains(&Step::SyncFile(from.clone())),
            "`{}` was renamed before its data were synced: {steps:#?}",
            path.display()
        );
        assert!(
            steps[renamed..].contains(&Step::SyncDir(dir.to_owned())),
            "the rename of `{}` was not synced: {steps:#?}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::journal::{self, Step};
    use super::*;

    #[test]
    fn a_write_syncs_the_file_renames_then_syncs_the_directory() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("index.json");
        fs::write(&path, "old").expect("write");
        journal::take();
        write(&path, b"new", 0o640, ".kk-test-").expect("write");
        let steps = journal::take();
        journal::assert_durable(&steps, &path);
        assert_eq!(steps.len(), 3, "{steps:#?}");
        assert!(matches!(&steps[2], Step::SyncDir(d) if d == dir.path()));
        assert_eq!(fs::read(&path).expect("read"), b"new");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        assert_eq!(
            fs::read_dir(dir.path()).expect("dir").count(),
            1,
            "no temporary file is left"
        );
    }

    #[test]
    fn a_directory_that_cannot_be_synced_is_tolerated_and_nothing_else() {
        // (errno of the directory fsync, whether the write succeeds)
        let table = [
            (None, true),
            (Some(rustix::io::Errno::INVAL), true),
            (Some(rustix::io::Errno::IO), false),
            (Some(rustix::io::Errno::NOSPC), false),
            (Some(rustix::io::Errno::ACCESS), false),
        ];
        for (errno, ok) in table {
            let synced = errno.map_or(Ok(()), |e| {
                Err(io::Error::from_raw_os_error(e.raw_os_error()))
            });
            assert_eq!(tolerate_unsyncable_dir(synced).is_ok(), ok, "{errno:?}");
        }
    }

    #[test]
    fn a_new_file_is_written_durably_and_never_replaces_one() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("ca.key");
        journal::take();
        write_new(&path, b"one", 0o600, ".kk-test-").expect("write");
        journal::assert_durable(&journal::take(), &path);
        let error = write_new(&path, b"two", 0o600, ".kk-test-").expect_err("clobbered");
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).expect("read"), b"one");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            fs::read_dir(dir.path()).expect("dir").count(),
            1,
            "no temporary file is left"
        );
    }

    #[test]
    fn directories_below_the_root_are_never_links() {
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("store");
        let outside = dir.path().join("outside");
        fs::create_dir_all(&root).expect("root");
        fs::create_dir_all(&outside).expect("outside");
        create_dirs_below(&root, Path::new("blobs/sha256")).expect("creates");
        assert!(root.join("blobs/sha256").is_dir());
        create_dirs_below(&root, Path::new("blobs/sha256")).expect("idempotent");

        std::os::unix::fs::symlink(&outside, root.join("kk-bundle")).expect("link");
        let (at, error) = create_dirs_below(&root, Path::new("kk-bundle/abc")).expect_err("a link");
        assert_eq!(error.kind(), io::ErrorKind::NotADirectory);
        assert_eq!(at, root.join("kk-bundle"));
        assert_eq!(fs::read_dir(&outside).expect("dir").count(), 0);

        fs::write(root.join("file"), "").expect("file");
        assert!(create_dirs_below(&root, Path::new("file/x")).is_err());
        assert!(create_dirs_below(&root, Path::new("../x")).is_err());
    }
}

//! Files of the PKI directory: reading pairs, and writing so that a crash never leaves a torn
//! file.
//!
//! Every write goes to a temporary file in the target's directory, is flushed to disk, renamed
//! into place and the directory flushed too: after a crash a file is either whole or absent.
//! [`write_new`] refuses to replace an existing file (the rename itself refuses), so even a
//! file appearing between the check and the write is never overwritten.

use std::fs;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use bundle_spec::durable::{self, sync_dir};

use super::PkiError;

/// Mode of private keys (and `sa.pub`, as kubeadm writes it).
pub(super) const KEY_MODE: u32 = 0o600;
/// Mode of certificates.
pub(super) const CERT_MODE: u32 = 0o644;
/// Mode of the directories kk creates.
pub(super) const DIR_MODE: u32 = 0o700;

/// The two files of a pair, e.g. `x.crt` and `x.key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PairPaths {
    /// The certificate (or `sa.pub`).
    pub(super) cert: PathBuf,
    /// The private key.
    pub(super) key: PathBuf,
}

impl PairPaths {
    /// `dir/base.crt` and `dir/base.key`.
    pub(super) fn new(dir: &Path, base: &Path) -> Self {
        let with = |extension: &str| {
            let mut path = dir.join(base).into_os_string();
            path.push(extension);
            PathBuf::from(path)
        };
        Self {
            cert: with(".crt"),
            key: with(".key"),
        }
    }
}

/// The contents of a pair: both files, or neither.
pub(super) fn read_pair(paths: &PairPaths) -> Result<Option<(String, String)>, PkiError> {
    match (exists(&paths.cert)?, exists(&paths.key)?) {
        (true, true) => Ok(Some((read(&paths.cert)?, read(&paths.key)?))),
        (false, false) => Ok(None),
        (true, false) => Err(PkiError::HalfPair {
            present: paths.cert.clone(),
            missing: paths.key.clone(),
        }),
        (false, true) => Err(PkiError::HalfPair {
            present: paths.key.clone(),
            missing: paths.cert.clone(),
        }),
    }
}

fn exists(path: &Path) -> Result<bool, PkiError> {
    path.try_exists().map_err(|source| PkiError::Read {
        path: path.to_owned(),
        source,
    })
}

fn read(path: &Path) -> Result<String, PkiError> {
    fs::read_to_string(path).map_err(|source| PkiError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Creates `dir` and any missing parent with mode 0700, flushing each new entry to disk.
pub(super) fn ensure_dir(dir: &Path) -> Result<(), PkiError> {
    let fail = |source| PkiError::Write {
        path: dir.to_owned(),
        source,
    };
    if dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(parent) = parent {
        ensure_dir(parent)?;
    }
    fs::DirBuilder::new()
        .mode(DIR_MODE)
        .create(dir)
        .map_err(fail)?;
    // The mode given to mkdir is masked by the umask; set it exactly.
    fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE)).map_err(fail)?;
    sync_dir(parent.unwrap_or(Path::new("."))).map_err(fail)
}

/// Writes a file that must not exist yet.
pub(super) fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), PkiError> {
    durable::write_new(path, bytes, mode, TEMP_PREFIX).map_err(write_error(path))
}

/// Writes a file, replacing any file there.
pub(super) fn write_replacing(path: &Path, bytes: &[u8], mode: u32) -> Result<(), PkiError> {
    durable::write(path, bytes, mode, TEMP_PREFIX).map_err(write_error(path))
}

/// The prefix of the temporary files, so that leftovers of a killed run are recognisable.
const TEMP_PREFIX: &str = ".kk-pki-";

fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError {
    move |source| PkiError::Write {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("metadata").mode() & 0o7777
    }

    #[test]
    fn writes_with_the_mode_asked_and_never_clobbers() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("a/b");
        ensure_dir(&dir).expect("dir");
        assert_eq!(mode(&tmp.path().join("a")), DIR_MODE);
        assert_eq!(mode(&dir), DIR_MODE);
        let file = dir.join("x.key");
        write_new(&file, b"one", KEY_MODE).expect("write");
        assert_eq!(mode(&file), KEY_MODE);
        let err = write_new(&file, b"two", KEY_MODE).expect_err("clobbered");
        assert!(err.to_string().contains("x.key"), "{err}");
        assert_eq!(fs::read(&file).expect("read"), b"one");
        write_replacing(&file, b"three", CERT_MODE).expect("replace");
        assert_eq!(fs::read(&file).expect("read"), b"three");
        assert_eq!(mode(&file), CERT_MODE);
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(&dir).expect("ls").count(), 1);
    }

    #[test]
    fn a_pair_is_both_files_or_neither() {
        let tmp = tempfile::tempdir().expect("tmp");
        let paths = PairPaths::new(tmp.path(), Path::new("front-proxy-ca"));
        assert_eq!(paths.cert, tmp.path().join("front-proxy-ca.crt"));
        assert_eq!(read_pair(&paths).expect("none"), None);
        fs::write(&paths.key, "k").expect("key");
        let err = read_pair(&paths).expect_err("half");
        assert!(
            matches!(&err, PkiError::HalfPair { missing, .. } if *missing == paths.cert),
            "{err}"
        );
        fs::write(&paths.cert, "c").expect("cert");
        assert_eq!(
            read_pair(&paths).expect("both"),
            Some(("c".to_owned(), "k".to_owned()))
        );
    }
}

//! `kk-bundle keygen`: a cosign key pair in cosign's own files, as `cosign generate-key-pair`
//! writes them: `<prefix>.key` (encrypted, mode 0600) and `<prefix>.pub`.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use bundle_spec::sign::keys::{self, KeyError};

/// The private key's mode: its owner's alone, as cosign writes it.
const PRIVATE_MODE: u32 = 0o600;
/// The public key's mode: anyone may read it.
const PUBLIC_MODE: u32 = 0o644;
/// Temporary files of a killed run are recognisable by this prefix.
const TEMP_PREFIX: &str = ".kk-keygen-";

/// Why no key pair was written.
#[derive(Debug, thiserror::Error)]
pub enum KeygenError {
    /// A file of the pair exists and `--force` was not given.
    #[error(
        "`{}` exists; hint: pass `--force` to replace the key pair, or choose another `--output-key-prefix`",
        .0.display()
    )]
    Exists(PathBuf),
    /// The key pair could not be made.
    #[error("cannot make a key pair")]
    Key(#[source] KeyError),
    /// A file could not be written (the pair's other file is removed again).
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// The files a [`keygen`] wrote.
#[derive(Debug)]
pub struct KeyFiles {
    /// `<prefix>.key`.
    pub private_key: PathBuf,
    /// `<prefix>.pub`.
    pub public_key: PathBuf,
    /// The public key's fingerprint ([`keys::fingerprint`]).
    pub fingerprint: String,
}

/// The pair's paths: `<prefix>.key` and `<prefix>.pub`.
pub fn key_paths(prefix: &Path) -> (PathBuf, PathBuf) {
    let with = |extension: &str| {
        let mut path = OsString::from(prefix.as_os_str());
        path.push(extension);
        PathBuf::from(path)
    };
    (with(".key"), with(".pub"))
}

/// Makes a key pair encrypted under `passphrase` and writes it to `<prefix>.key` and
/// `<prefix>.pub`, durably. Without `force` an existing file of either name is never replaced.
/// Never half a pair: if the public key cannot be written, the private key just written is
/// removed again.
pub fn keygen(prefix: &Path, passphrase: &[u8], force: bool) -> Result<KeyFiles, KeygenError> {
    let (private_key, public_key) = key_paths(prefix);
    if !force {
        // Both checked before anything is written, so a refusal writes nothing.
        for path in [&private_key, &public_key] {
            if path.symlink_metadata().is_ok() {
                return Err(KeygenError::Exists(path.clone()));
            }
        }
    }
    let pair = keys::generate_key_pair(passphrase).map_err(KeygenError::Key)?;
    write(
        &private_key,
        pair.private_pem.as_bytes(),
        PRIVATE_MODE,
        force,
    )?;
    if let Err(error) = write(&public_key, pair.public_pem.as_bytes(), PUBLIC_MODE, force) {
        // Best effort: the error that matters is the one being returned.
        let _ = std::fs::remove_file(&private_key);
        return Err(error);
    }
    Ok(KeyFiles {
        private_key,
        public_key,
        fingerprint: keys::fingerprint(pair.signing_key.verifying_key()),
    })
}

/// Writes one file of the pair durably; without `force`, only if it does not exist (a file
/// that appeared since the check is not replaced either).
fn write(path: &Path, bytes: &[u8], mode: u32, force: bool) -> Result<(), KeygenError> {
    let written = if force {
        bundle_spec::durable::write(path, bytes, mode, TEMP_PREFIX)
    } else {
        bundle_spec::durable::write_new(path, bytes, mode, TEMP_PREFIX)
    };
    written.map_err(|source| match source.kind() {
        io::ErrorKind::AlreadyExists => KeygenError::Exists(path.to_owned()),
        _ => KeygenError::Write {
            path: path.to_owned(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    const PASSPHRASE: &[u8] = b"keygen test";

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path)
            .expect("exists")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_pair_is_written_durably_with_private_modes_and_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let prefix = dir.path().join("release");
        bundle_spec::durable::journal::take();
        let files = keygen(&prefix, PASSPHRASE, false).expect("writes");
        let steps = bundle_spec::durable::journal::take();
        assert_eq!(files.private_key, dir.path().join("release.key"));
        assert_eq!(files.public_key, dir.path().join("release.pub"));
        bundle_spec::durable::journal::assert_durable(&steps, &files.private_key);
        bundle_spec::durable::journal::assert_durable(&steps, &files.public_key);
        assert_eq!(mode(&files.private_key), 0o600);
        assert_eq!(mode(&files.public_key), 0o644);
        let private = std::fs::read_to_string(&files.private_key).expect("reads");
        let public = std::fs::read_to_string(&files.public_key).expect("reads");
        let key = keys::read_private_key(&private, PASSPHRASE).expect("the key reads back");
        let public = keys::read_public_key(&public).expect("the public key reads back");
        assert_eq!(key.verifying_key(), &public, "the two files are one pair");
        assert_eq!(files.fingerprint, keys::fingerprint(&public));
    }

    #[test]
    fn an_existing_file_of_the_pair_is_replaced_only_with_force() {
        let dir = tempfile::tempdir().expect("tempdir");
        let prefix = dir.path().join("cosign");
        let (private_key, public_key) = key_paths(&prefix);
        // Either file alone stops it, and nothing is written.
        for existing in [&private_key, &public_key] {
            std::fs::write(existing, "old").expect("writes");
            let error = keygen(&prefix, PASSPHRASE, false).expect_err("exists");
            assert!(
                matches!(&error, KeygenError::Exists(path) if path == existing),
                "{error}"
            );
            assert!(error.to_string().contains("pass `--force`"), "{error}");
            assert_eq!(std::fs::read_dir(dir.path()).expect("lists").count(), 1);
            std::fs::remove_file(existing).expect("removes");
        }
        std::fs::write(&private_key, "old").expect("writes");
        let files = keygen(&prefix, PASSPHRASE, true).expect("replaces");
        let private = std::fs::read_to_string(&files.private_key).expect("reads");
        keys::read_private_key(&private, PASSPHRASE).expect("the new key");
        assert_eq!(mode(&files.private_key), 0o600);
    }

    #[test]
    fn when_the_public_key_cannot_be_written_no_private_key_is_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let prefix = dir.path().join("cosign");
        let (private_key, public_key) = key_paths(&prefix);
        // A directory where the public key goes: replacing it fails even with --force.
        std::fs::create_dir(&public_key).expect("mkdir");
        let error = keygen(&prefix, PASSPHRASE, true).expect_err("cannot write");
        assert!(
            matches!(&error, KeygenError::Write { path, .. } if *path == public_key),
            "{error}"
        );
        assert!(!private_key.exists(), "half a pair was left");
    }
}

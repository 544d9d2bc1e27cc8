//! The work directory's lock: one install or reset at a time on an install state.
//!
//! Two runs on the same work directory would each run the steps the other has not recorded yet
//! (two `kubeadm join`s on one node, the second failing on the `ca.crt` the first wrote). So an
//! install or a reset holds an exclusive lock on `<work dir>/install.lock` from before it
//! touches a node until it ends, with its PID written in the file for the run it refuses.
//! The lock is the kernel's (`flock`), tied to the open file: it goes with the process however
//! it ends, so a killed run leaves no stale lock behind, and the file itself is never removed
//! (removing it would let two runs lock two different files of the same name).

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use super::error::InstallError;

/// The lock file's name in the work directory.
pub const LOCK_FILE: &str = "install.lock";

/// The work directory's lock, held while this value lives.
#[derive(Debug)]
pub struct StateLock {
    /// Holding the descriptor holds the lock.
    _file: File,
}

impl StateLock {
    /// Takes the lock of `work_dir` (created if missing) and writes this process's PID into it;
    /// refuses at once, naming the holder's PID, when another run holds it.
    pub fn acquire(work_dir: &Path) -> Result<Self, InstallError> {
        let path = work_dir.join(LOCK_FILE);
        let failed = |source| InstallError::Lock {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(work_dir).map_err(failed)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                // Unreadable or not written yet: the refusal still stands, without a PID.
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(InstallError::Locked {
                    work_dir: work_dir.to_owned(),
                    pid: (!pid.is_empty()).then(|| pid.to_owned()),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(failed(source)),
        }
        file.set_len(0).map_err(failed)?;
        writeln!(file, "{}", std::process::id()).map_err(failed)?;
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_is_refused_naming_the_first_ones_pid_until_the_first_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work_dir = dir.path().join("work");
        let first = StateLock::acquire(&work_dir).expect("first");
        let pid = std::process::id().to_string();
        assert_eq!(
            std::fs::read_to_string(work_dir.join(LOCK_FILE)).expect("lock file"),
            format!("{pid}\n")
        );
        let error = StateLock::acquire(&work_dir).expect_err("second");
        assert!(
            matches!(&error, InstallError::Locked { pid: Some(held), .. } if *held == pid),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(&format!("PID {pid}")), "{message}");
        assert!(
            message.contains(&work_dir.display().to_string()),
            "{message}"
        );
        drop(first);
        let _again = StateLock::acquire(&work_dir).expect("free once the first ended");
        assert_eq!(
            std::fs::read_to_string(work_dir.join(LOCK_FILE)).expect("lock file"),
            format!("{pid}\n"),
            "the PID is rewritten, not appended"
        );
    }
}

//! The node agent (`kk-node`) this kk-install sends to the nodes, and where it comes from.
//!
//! The operator carries one file: the release `kk-install` has the agent appended behind a
//! trailer ([`TRAILER_LEN`] bytes: [`MAGIC`], the agent's length as a little-endian u64, its
//! sha256), which the loader ignores. [`locate`] looks, in order, at the file named by
//! [`ENV`], at that trailer of the running executable (verified, then extracted into the work
//! directory), and at a `kk-node` beside the executable (debug builds and tests).

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

/// The environment variable naming an agent file, which overrides the embedded one.
pub const ENV: &str = "KK_NODE_AGENT";
/// The first bytes of the trailer.
pub const MAGIC: &[u8; 8] = b"KKAGENT1";
/// The trailer's length: magic, u64 length, sha256.
pub const TRAILER_LEN: usize = 48;
/// The agent's file name (beside the executable; on the nodes, in `/usr/local/bin`).
pub const FILE_NAME: &str = "kk-node";

/// The agent could not be found, or the embedded one is damaged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// None of the three places holds an agent.
    #[error(
        "no node agent `kk-node`: `{ENV}` is not set, `{}` carries none behind it, and `{}` does not exist; hint: use the kk-install that `scripts/dist.sh` builds, or set `{ENV}` to a kk-node binary", exe.display(), beside.display()
    )]
    Missing {
        /// The running executable.
        exe: PathBuf,
        /// Where a `kk-node` beside it would be.
        beside: PathBuf,
    },
    /// The trailer is there but the agent behind it is not the one it names.
    #[error("the node agent appended to `{}` is damaged: {reason}; hint: download kk-install again", exe.display())]
    Tampered {
        /// The executable.
        exe: PathBuf,
        /// What does not match.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("cannot read or write `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl AgentError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The trailer that follows `agent` in the executable.
pub fn trailer(agent: &[u8]) -> [u8; TRAILER_LEN] {
    let mut trailer = [0u8; TRAILER_LEN];
    trailer[..8].copy_from_slice(MAGIC);
    trailer[8..16].copy_from_slice(&(agent.len() as u64).to_le_bytes());
    trailer[16..].copy_from_slice(&Sha256::digest(agent));
    trailer
}

/// The agent file to send: `$KK_NODE_AGENT`, else the one embedded in `exe` (extracted under
/// `work_dir`), else `kk-node` beside `exe`.
pub fn locate(exe: &Path, work_dir: &Path) -> Result<PathBuf, AgentError> {
    if let Some(path) = std::env::var_os(ENV) {
        return Ok(PathBuf::from(path));
    }
    if let Some(agent) = embedded(exe)? {
        let path = work_dir.join("tmp").join(FILE_NAME);
        let dir = path.parent().unwrap_or(work_dir);
        std::fs::create_dir_all(dir).map_err(AgentError::io(dir))?;
        bundle_spec::durable::write(&path, &agent, 0o755, ".kk-node-")
            .map_err(AgentError::io(&path))?;
        return Ok(path);
    }
    let beside = exe.with_file_name(FILE_NAME);
    if beside.is_file() {
        return Ok(beside);
    }
    Err(AgentError::Missing {
        exe: exe.to_owned(),
        beside,
    })
}

/// The agent behind the trailer of `exe`, verified; `None` when `exe` ends without one.
pub fn embedded(exe: &Path) -> Result<Option<Vec<u8>>, AgentError> {
    let mut file = File::open(exe).map_err(AgentError::io(exe))?;
    let size = file.metadata().map_err(AgentError::io(exe))?.len();
    let Some(start) = size.checked_sub(TRAILER_LEN as u64) else {
        return Ok(None);
    };
    let mut trailer = [0u8; TRAILER_LEN];
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.read_exact(&mut trailer))
        .map_err(AgentError::io(exe))?;
    if &trailer[..8] != MAGIC {
        return Ok(None);
    }
    let tampered = |reason: String| AgentError::Tampered {
        exe: exe.to_owned(),
        reason,
    };
    let length = u64::from_le_bytes(trailer[8..16].try_into().unwrap_or_default());
    let begin = start
        .checked_sub(length)
        .ok_or_else(|| tampered(format!("its length {length} exceeds the file")))?;
    let mut agent = vec![0u8; usize::try_from(length).map_err(|e| tampered(e.to_string()))?];
    file.seek(SeekFrom::Start(begin))
        .and_then(|_| file.read_exact(&mut agent))
        .map_err(AgentError::io(exe))?;
    if Sha256::digest(&agent).as_slice() != &trailer[16..] {
        return Err(tampered(format!(
            "its sha256 is {}, the trailer says {}",
            hex::encode(Sha256::digest(&agent)),
            hex::encode(&trailer[16..])
        )));
    }
    Ok(Some(agent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(dir: &Path, agent: &[u8], trailer: &[u8]) -> PathBuf {
        let path = dir.join("kk-install");
        std::fs::write(
            &path,
            [b"\x7fELF program".as_slice(), agent, trailer].concat(),
        )
        .expect("write");
        path
    }

    #[test]
    fn an_appended_agent_comes_back_whole_and_is_extracted_under_the_work_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let agent = b"the agent's bytes".as_slice();
        let exe = executable(dir.path(), agent, &trailer(agent));
        assert_eq!(embedded(&exe).expect("verified").as_deref(), Some(agent));
        // `KK_NODE_AGENT` is not set by the test runner.
        let located = locate(&exe, &dir.path().join("work")).expect("located");
        assert_eq!(located, dir.path().join("work/tmp/kk-node"));
        assert_eq!(std::fs::read(&located).expect("read"), agent);
    }

    #[test]
    fn a_tampered_agent_or_length_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut wrong = trailer(b"the agent's bytes");
        let exe = executable(dir.path(), b"the agent's bytez", &wrong);
        let error = embedded(&exe).expect_err("tampered").to_string();
        assert!(
            error.contains("damaged") && error.contains("sha256"),
            "{error}"
        );
        wrong[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let exe = executable(dir.path(), b"", &wrong);
        let error = embedded(&exe).expect_err("too long").to_string();
        assert!(error.contains("exceeds the file"), "{error}");
    }

    #[test]
    fn without_a_trailer_the_agent_beside_the_executable_is_taken_else_all_places_are_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = executable(dir.path(), b"", b"");
        assert!(embedded(&exe).expect("readable").is_none());
        let error = locate(&exe, dir.path()).expect_err("missing").to_string();
        for place in [ENV, "carries none", "kk-node` does not exist"] {
            assert!(error.contains(place), "{place}: {error}");
        }
        std::fs::write(dir.path().join(FILE_NAME), b"agent").expect("write");
        assert_eq!(
            locate(&exe, dir.path()).expect("beside"),
            dir.path().join(FILE_NAME)
        );
    }
}

//! Unpacking verified members into a directory.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use tempfile::NamedTempFile;

use super::MemberHeader;
use super::walk::MemberVisitor;
use crate::bundle_error::{BundleError, from_io};
use crate::digest::Sha256Digest;
use crate::member::MEMBER_MODE;

/// Writes each member to a temporary file in its final directory and renames it into place
/// once its digest matched; a member that fails leaves nothing behind.
#[derive(Debug)]
pub(crate) struct Unpacker {
    root: PathBuf,
}

impl Unpacker {
    pub(crate) fn new(root: &Path) -> Result<Self, BundleError> {
        fs::create_dir_all(root).map_err(|source| BundleError::Write {
            path: root.to_owned(),
            source,
        })?;
        Ok(Self {
            root: root.to_owned(),
        })
    }

    /// Creates the directories below the root that `relative` needs, refusing to go through
    /// anything that is not a real directory: a symbolic link planted in the destination must
    /// not redirect a member outside it.
    fn directory_for(&self, relative: &Path) -> Result<PathBuf, BundleError> {
        let mut dir = self.root.clone();
        let parent = relative.parent().unwrap_or(Path::new(""));
        for component in parent.components() {
            let Component::Normal(name) = component else {
                return Err(BundleError::UnsafeDestination {
                    path: dir.join(relative),
                });
            };
            dir.push(name);
            match fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Err(BundleError::UnsafeDestination { path: dir }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    fs::create_dir(&dir).map_err(|source| BundleError::Write {
                        path: dir.clone(),
                        source,
                    })?;
                }
                Err(source) => return Err(BundleError::Write { path: dir, source }),
            }
        }
        Ok(dir)
    }
}

impl MemberVisitor for Unpacker {
    type Pending = NamedTempFile;

    fn receive(
        &mut self,
        member: &MemberHeader,
        data: &mut dyn Read,
    ) -> Result<NamedTempFile, BundleError> {
        let dir = self.directory_for(Path::new(member.path.as_str()))?;
        let write_error = |source| BundleError::Write {
            path: dir.join(member.path.as_str()),
            source,
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".kk-unpack-")
            .tempfile_in(&dir)
            .map_err(write_error)?;
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let n = match data.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(from_io(e, BundleError::Read)),
            };
            temp.write_all(&chunk[..n]).map_err(write_error)?;
        }
        Ok(temp)
    }

    fn accept(
        &mut self,
        member: &MemberHeader,
        pending: NamedTempFile,
        _: Sha256Digest,
    ) -> Result<(), BundleError> {
        let target = self.root.join(member.path.as_str());
        // Temporary files are created 0600; members are published 0644, as in the tar.
        let mode = fs::Permissions::from_mode(MEMBER_MODE);
        pending
            .as_file()
            .set_permissions(mode)
            .map_err(|source| BundleError::Write {
                path: target.clone(),
                source,
            })?;
        pending.persist(&target).map_err(|e| BundleError::Write {
            path: target.clone(),
            source: e.error,
        })?;
        Ok(())
    }
}

//! The bytes of a bundle: one file, or its parts read as one stream.
//!
//! Parts are checked against the parts index when opened (present, right size) and hashed as
//! they are read front to back, so a full verification also proves every part's sha256. The
//! source is only ever opened for reading: the medium may be read-only, and nothing is written
//! next to the bundle.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;
use crate::parts::{PartsIndex, find_parts_index};

/// A readable, seekable bundle.
#[derive(Debug)]
pub(crate) enum Source {
    /// A single-file bundle.
    File(File),
    /// A split bundle.
    Parts(Parts),
}

/// The parts of a split bundle as one stream.
#[derive(Debug)]
pub(crate) struct Parts {
    files: Vec<Part>,
    position: u64,
    len: u64,
}

#[derive(Debug)]
struct Part {
    path: PathBuf,
    file: File,
    start: u64,
    size: u64,
    expected: Sha256Digest,
    hasher: Sha256,
    hashed: u64,
}

impl Source {
    /// Opens `path` as a single file, or as parts if it names a parts index or a first part.
    pub(crate) fn open(path: &Path) -> Result<Self, BundleError> {
        match find_parts_index(path) {
            Some(index) => Parts::open(&index).map(Self::Parts),
            None => File::open(path)
                .map(Self::File)
                .map_err(|source| BundleError::Open {
                    path: path.to_owned(),
                    source,
                }),
        }
    }

    /// Parts whose bytes were not all read front to back since opening.
    pub(crate) fn unverified_parts(&self) -> Vec<PathBuf> {
        match self {
            Self::File(_) => Vec::new(),
            Self::Parts(parts) => parts
                .files
                .iter()
                .filter(|p| p.hashed != p.size)
                .map(|p| p.path.clone())
                .collect(),
        }
    }
}

impl Parts {
    fn open(index_path: &Path) -> Result<Self, BundleError> {
        let index = PartsIndex::read(index_path)?;
        let mut parts = Vec::with_capacity(index.parts.len());
        let mut start = 0;
        for (entry, path) in index.parts.iter().zip(index.part_paths(index_path)) {
            let file = File::open(&path).map_err(|source| match source.kind() {
                io::ErrorKind::NotFound => BundleError::PartMissing { path: path.clone() },
                _ => BundleError::Open {
                    path: path.clone(),
                    source,
                },
            })?;
            let actual = file
                .metadata()
                .map_err(|source| BundleError::Open {
                    path: path.clone(),
                    source,
                })?
                .len();
            if actual != entry.size {
                return Err(BundleError::PartSize {
                    path,
                    expected: entry.size,
                    actual,
                });
            }
            parts.push(Part {
                path,
                file,
                start,
                size: entry.size,
                expected: entry.sha256,
                hasher: Sha256::new(),
                hashed: 0,
            });
            start += entry.size;
        }
        Ok(Self {
            files: parts,
            position: 0,
            len: start,
        })
    }

    fn current(&mut self) -> Option<&mut Part> {
        let position = self.position;
        self.files.iter_mut().find(|p| position < p.start + p.size)
    }
}

impl Part {
    /// Feeds `bytes` read at `offset` (within the part) to the part's hash when they continue
    /// a front-to-back read, and checks the digest when the part is complete.
    fn observe(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if offset == 0 {
            self.hasher = Sha256::new();
            self.hashed = 0;
        }
        if offset != self.hashed || self.hashed == self.size {
            return Ok(());
        }
        self.hasher.update(bytes);
        self.hashed += bytes.len() as u64;
        if self.hashed == self.size {
            let actual = Sha256Digest::from_hasher(std::mem::take(&mut self.hasher));
            if actual != self.expected {
                return Err(io::Error::other(BundleError::PartDigest {
                    path: self.path.clone(),
                    expected: self.expected,
                    actual,
                }));
            }
        }
        Ok(())
    }
}

impl Read for Parts {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let position = self.position;
        let Some(part) = self.current() else {
            return Ok(0);
        };
        let offset = position - part.start;
        let want = buf
            .len()
            .min(usize::try_from(part.size - offset).unwrap_or(usize::MAX));
        part.file.seek(SeekFrom::Start(offset))?;
        let n = part.file.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::other(BundleError::PartSize {
                path: part.path.clone(),
                expected: part.size,
                actual: offset,
            }));
        }
        part.observe(offset, &buf[..n])?;
        self.position += n as u64;
        Ok(n)
    }
}

impl Seek for Parts {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.position.checked_add_signed(d),
        };
        self.position = target.ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        Ok(self.position)
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::File(f) => f.read(buf),
            Self::Parts(p) => p.read(buf),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            Self::File(f) => f.seek(to),
            Self::Parts(p) => p.seek(to),
        }
    }
}

//! Where a bundle's bytes go: one file, or parts below a size limit, each written to a
//! temporary file beside its final name and renamed into place only when the whole bundle is
//! complete, so an interrupted or failed write leaves nothing that looks like a bundle.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::WRITE_CHUNK;
use super::sync_ahead::SyncAhead;
use crate::bundle_error::BundleError;
use crate::digest::{BackgroundHashing, Sha256Digest};
use crate::durable;
use crate::parts::{PartEntry, PartsIndex, part_path, parts_index_path};

/// The largest part a FAT32 file system can hold is 4 GiB - 1 byte.
pub const MAX_PART_SIZE: u64 = (4 << 30) - 1;
/// Part numbers have three digits.
const MAX_PARTS: usize = 999;

type PartFile = BackgroundHashing<BufWriter<SyncAhead>>;

/// The bundle file(s) being written. Each part is hashed, and split bundles also hash the
/// whole; a single file is its own one part, so its hash is the whole's.
pub(crate) struct Output {
    target: PathBuf,
    split: Option<u64>,
    current: Option<PartFile>,
    finished: Vec<(NamedTempFile, Sha256Digest, u64)>,
    whole: BackgroundHashing<io::Sink>,
}

/// The files a finished bundle consists of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFiles {
    /// The single file, or the parts index followed by the parts.
    pub paths: Vec<PathBuf>,
    /// The size of the whole bundle (all parts together).
    pub size: u64,
    /// The sha256 of the whole bundle (all parts concatenated).
    pub sha256: Sha256Digest,
}

impl Output {
    pub(crate) fn new(target: &Path, split: Option<u64>) -> Result<Self, BundleError> {
        if let Some(size) = split
            && !(1..=MAX_PART_SIZE).contains(&size)
        {
            return Err(BundleError::PartSizeInvalid {
                size,
                max: MAX_PART_SIZE,
            });
        }
        Ok(Self {
            target: target.to_owned(),
            split,
            current: None,
            finished: Vec::new(),
            whole: BackgroundHashing::new(io::sink()),
        })
    }

    fn open_part(&mut self) -> io::Result<&mut PartFile> {
        if self.current.is_none() {
            if self.finished.len() == MAX_PARTS {
                return Err(io::Error::other(format!(
                    "more than {MAX_PARTS} parts; choose a larger split size"
                )));
            }
            let dir = match self.target.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let temp = tempfile::Builder::new()
                .prefix(".kk-bundle-")
                .suffix(".tmp")
                .tempfile_in(dir)?;
            self.current = Some(BackgroundHashing::new(BufWriter::with_capacity(
                1 << 20,
                SyncAhead::new(temp)?,
            )));
        }
        Ok(self.current.as_mut().expect("opened above"))
    }

    fn close_part(&mut self) -> io::Result<()> {
        if let Some(part) = self.current.take() {
            let (writer, digest, size) = part.finish()?;
            let (temp, _syncs) = writer
                .into_inner()
                .map_err(io::IntoInnerError::into_error)?
                .finish()?;
            self.finished.push((temp, digest, size));
        }
        Ok(())
    }

    /// Renames everything into place, the parts index last.
    pub(crate) fn commit(mut self) -> Result<OutputFiles, BundleError> {
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| BundleError::Write { path, source }
        };
        self.close_part().map_err(io_error(&self.target))?;
        if self.split.is_none() {
            let (temp, sha256, size) = self.finished.pop().expect("a bundle has at least one file");
            durable::persist(temp, &self.target).map_err(io_error(&self.target))?;
            return Ok(OutputFiles {
                paths: vec![self.target],
                size,
                sha256,
            });
        }
        let (_, sha256, size) = self.whole.finish().map_err(io_error(&self.target))?;
        let mut paths = vec![parts_index_path(&self.target)];
        let mut index = PartsIndex::new(&self.target, size, sha256);
        for (number, (temp, digest, part_size)) in self.finished.into_iter().enumerate() {
            let path = part_path(&self.target, number + 1);
            durable::persist(temp, &path).map_err(io_error(&path))?;
            index.parts.push(PartEntry::new(&path, part_size, digest));
            paths.push(path);
        }
        index.write(&paths[0])?;
        Ok(OutputFiles {
            paths,
            size,
            sha256,
        })
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let buf = &buf[..buf.len().min(WRITE_CHUNK)];
        let split = self.split;
        let part = self.open_part()?;
        let room = split.map_or(usize::MAX, |limit| {
            usize::try_from(limit - part.count()).unwrap_or(usize::MAX)
        });
        let written = part.write(&buf[..buf.len().min(room)])?;
        let full = split.is_some_and(|limit| part.count() == limit);
        if split.is_some() {
            self.whole.write_all(&buf[..written])?;
        }
        if full {
            self.close_part()?;
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.current.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl crate::write::frames::HashedWrite for Output {
    fn write_owned(&mut self, bytes: Vec<u8>) -> io::Result<Vec<u8>> {
        if self.split.is_some() {
            // Parts and the whole are hashed apart, and a part may end inside `bytes`.
            return crate::write::frames::write_in_chunks(self, bytes);
        }
        self.open_part()?.write_owned(bytes, WRITE_CHUNK)
    }

    fn sha256_so_far(&self) -> io::Result<Sha256Digest> {
        match (&self.split, &self.current) {
            (None, Some(part)) => part.digest_so_far(),
            (None, None) => Ok(Sha256Digest::of(b"")),
            (Some(_), _) => self.whole.digest_so_far(),
        }
    }
}

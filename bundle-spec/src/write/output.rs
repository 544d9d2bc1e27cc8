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

/// The bundle file(s) being written. A single file is not hashed here: its integrity frame
/// covers it. Split bundles hash each part and the whole, for the parts index.
pub(crate) struct Output {
    target: PathBuf,
    sink: Sink,
}

enum Sink {
    Single(BufWriter<SyncAhead>),
    Split(Parts),
}

/// The parts of a split bundle: the one being written, those finished with their hashes and
/// sizes, and the hash of all of them.
struct Parts {
    limit: u64,
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
    /// For a split bundle, the sha256 of all parts concatenated, which its parts index
    /// records. A single file is not hashed as a whole: its integrity frame covers it.
    pub sha256: Option<Sha256Digest>,
}

impl Output {
    pub(crate) fn new(target: &Path, split: Option<u64>) -> Result<Self, BundleError> {
        let sink = match split {
            Some(size) if !(1..=MAX_PART_SIZE).contains(&size) => {
                return Err(BundleError::PartSizeInvalid {
                    size,
                    max: MAX_PART_SIZE,
                });
            }
            Some(limit) => Sink::Split(Parts {
                limit,
                current: None,
                finished: Vec::new(),
                whole: BackgroundHashing::new(io::sink()),
            }),
            None => Sink::Single(temp_file(target).map_err(|source| BundleError::Write {
                path: target.to_owned(),
                source,
            })?),
        };
        Ok(Self {
            target: target.to_owned(),
            sink,
        })
    }

    /// Renames everything into place, the parts index last.
    pub(crate) fn commit(self) -> Result<OutputFiles, BundleError> {
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| BundleError::Write { path, source }
        };
        let mut parts = match self.sink {
            Sink::Single(file) => {
                let (temp, _syncs) = file
                    .into_inner()
                    .map_err(io::IntoInnerError::into_error)
                    .and_then(SyncAhead::finish)
                    .map_err(io_error(&self.target))?;
                let size = temp
                    .as_file()
                    .metadata()
                    .map_err(io_error(&self.target))?
                    .len();
                durable::persist(temp, &self.target).map_err(io_error(&self.target))?;
                return Ok(OutputFiles {
                    paths: vec![self.target],
                    size,
                    sha256: None,
                });
            }
            Sink::Split(parts) => parts,
        };
        parts.close_part().map_err(io_error(&self.target))?;
        let (_, sha256, size) = parts.whole.finish().map_err(io_error(&self.target))?;
        let mut paths = vec![parts_index_path(&self.target)];
        let mut index = PartsIndex::new(&self.target, size, sha256);
        for (number, (temp, digest, part_size)) in parts.finished.into_iter().enumerate() {
            let path = part_path(&self.target, number + 1);
            durable::persist(temp, &path).map_err(io_error(&path))?;
            index.parts.push(PartEntry::new(&path, part_size, digest));
            paths.push(path);
        }
        index.write(&paths[0])?;
        Ok(OutputFiles {
            paths,
            size,
            sha256: Some(sha256),
        })
    }
}

/// A temporary file beside `target`, to be renamed over it when complete.
fn temp_file(target: &Path) -> io::Result<BufWriter<SyncAhead>> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let temp = tempfile::Builder::new()
        .prefix(".kk-bundle-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    Ok(BufWriter::with_capacity(1 << 20, SyncAhead::new(temp)?))
}

impl Parts {
    fn open_part(&mut self, target: &Path) -> io::Result<&mut PartFile> {
        if self.current.is_none() {
            if self.finished.len() == MAX_PARTS {
                return Err(io::Error::other(format!(
                    "more than {MAX_PARTS} parts; choose a larger split size"
                )));
            }
            self.current = Some(BackgroundHashing::new(temp_file(target)?));
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

    /// Writes to the current part as much of `buf` as fits in it.
    fn write(&mut self, target: &Path, buf: &[u8]) -> io::Result<usize> {
        let limit = self.limit;
        let part = self.open_part(target)?;
        let room = usize::try_from(limit - part.count()).unwrap_or(usize::MAX);
        let written = part.write(&buf[..buf.len().min(room)])?;
        let full = part.count() == limit;
        self.whole.write_all(&buf[..written])?;
        if full {
            self.close_part()?;
        }
        Ok(written)
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let buf = &buf[..buf.len().min(WRITE_CHUNK)];
        match &mut self.sink {
            Sink::Single(file) => file.write(buf),
            Sink::Split(parts) => parts.write(&self.target, buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Single(file) => file.flush(),
            Sink::Split(parts) => parts.current.as_mut().map_or(Ok(()), Write::flush),
        }
    }
}

//! Writing a bundle: header, layout files and verified blobs into one seekable zstd stream.
//!
//! The writer is handed everything it writes up front (the description, the index and the
//! blobs as files with the digest they must have), because the checksum list that opens the
//! bundle names every member. Blobs are streamed from disk and hashed on the way; a blob that is
//! not what it claims aborts the write, and the temporary output is deleted.

pub(crate) mod frames;
mod output;

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use oci_spec::image::ImageIndex;
use sha2::{Digest as _, Sha256};

pub use frames::MAX_FRAME_SIZE;
pub(crate) use frames::{INTEGRITY_FRAME_SIZE, integrity_frame};
pub use output::{MAX_PART_SIZE, OutputFiles};

use crate::checksums::ChecksumList;
use crate::description::Description;
use crate::digest::Sha256Digest;
use crate::error::{BundleError, from_io};
use crate::layout::{OCI_LAYOUT, index_bytes};
use crate::member::{
    BLOCK, CHECKSUMS_PATH, DESCRIPTION_PATH, INDEX_PATH, MemberPath, OCI_LAYOUT_PATH,
    canonical_header, padding,
};
use frames::FrameEncoder;
use output::Output;

/// The zstd level for data that compresses; chosen by measurement (see BENCHMARKS.md).
pub const DEFAULT_LEVEL: i32 = 9;

/// A blob on disk and the digest and size it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFile {
    /// The digest the file's content must have.
    pub digest: Sha256Digest,
    /// The size the file must have.
    pub size: u64,
    /// Where the content is.
    pub path: PathBuf,
}

/// Everything a bundle holds.
#[derive(Debug, Clone)]
pub struct BundleContents {
    /// The description; its `created` time dates every member.
    pub description: Description,
    /// The OCI image index, written as `index.json`.
    pub index: ImageIndex,
    /// Every blob the index reaches. The same digest given twice is written once.
    pub blobs: Vec<BlobFile>,
}

/// How to write.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// zstd level for frames that compress (frames that do not are written at level 1).
    pub level: i32,
    /// zstd worker threads.
    pub workers: u32,
    /// Split into parts of at most this many bytes.
    pub split_size: Option<u64>,
    /// Re-hash every blob while writing it and fail on a mismatch. Only a caller that verified
    /// the blob files itself moments before (a cache that re-hashes on every hit) turns this off:
    /// on machines without SHA instructions hashing is the slowest step of a write.
    pub verify_blobs: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Self {
            level: DEFAULT_LEVEL,
            workers,
            split_size: None,
            verify_blobs: true,
        }
    }
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenBundle {
    /// The sha256 of the checksum list: the bundle's identity.
    pub identity: Sha256Digest,
    /// The files written, the sizes and the hash of the whole.
    pub output: OutputFiles,
    /// How many members the tar holds.
    pub members: usize,
}

/// Writes `contents` to `target` (or to parts beside it). Nothing appears at `target` unless
/// the whole bundle was written.
pub fn write_bundle(
    contents: &BundleContents,
    target: &Path,
    options: &WriteOptions,
) -> Result<WrittenBundle, BundleError> {
    let mtime = u64::try_from(contents.description.created.as_second())
        .map_err(|_| BundleError::CreatedBeforeEpoch(contents.description.created))?;
    let description = contents.description.to_bytes().map_err(BundleError::Json)?;
    let index = index_bytes(&contents.index)?;
    let mut blobs = contents.blobs.clone();
    blobs.sort_by_key(|b| b.digest);
    blobs.dedup_by(|a, b| a.digest == b.digest);

    let small: [(&'static str, &[u8]); 3] = [
        (DESCRIPTION_PATH, &description),
        (OCI_LAYOUT_PATH, OCI_LAYOUT),
        (INDEX_PATH, &index),
    ];
    let mut list = ChecksumList::new();
    for (path, bytes) in small {
        list.insert(MemberPath::fixed(path), Sha256Digest::of(bytes));
    }
    for blob in &blobs {
        list.insert(MemberPath::blob(&blob.digest), blob.digest);
    }
    let checksums = list.to_bytes();

    let output = Output::new(target, options.split_size)?;
    let mut tar = TarFrames {
        frames: FrameEncoder::new(output, options.level, options.workers),
        mtime,
        verify: options.verify_blobs,
    };
    tar.member_bytes(&MemberPath::fixed(CHECKSUMS_PATH), &checksums)?;
    for (path, bytes) in small {
        tar.member_bytes(&MemberPath::fixed(path), bytes)?;
    }
    for blob in &blobs {
        tar.member_blob(blob)?;
    }
    let output = tar.finish()?.commit()?;
    Ok(WrittenBundle {
        identity: Sha256Digest::of(&checksums),
        output,
        members: 4 + blobs.len(),
    })
}

/// The tar stream, each member starting a new frame.
struct TarFrames {
    frames: FrameEncoder<Output>,
    mtime: u64,
    verify: bool,
}

impl TarFrames {
    fn start(&mut self, path: &MemberPath, size: u64) -> Result<(), BundleError> {
        self.frames.end_frame()?;
        let header = canonical_header(path, size, self.mtime);
        self.write(header.as_bytes())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), BundleError> {
        self.frames
            .write_all(bytes)
            .map_err(|e| from_io(e, BundleError::Output))
    }

    fn pad(&mut self, size: u64) -> Result<(), BundleError> {
        let zeros = [0u8; BLOCK as usize];
        self.write(&zeros[..padding(size) as usize])
    }

    fn member_bytes(&mut self, path: &MemberPath, bytes: &[u8]) -> Result<(), BundleError> {
        self.start(path, bytes.len() as u64)?;
        self.write(bytes)?;
        self.pad(bytes.len() as u64)
    }

    fn member_blob(&mut self, blob: &BlobFile) -> Result<(), BundleError> {
        let read_error = |source| BundleError::BlobRead {
            path: blob.path.clone(),
            source,
        };
        let file = File::open(&blob.path).map_err(read_error)?;
        self.start(&MemberPath::blob(&blob.digest), blob.size)?;
        let mut reader = BufReader::with_capacity(1 << 20, file).take(blob.size + 1);
        let mut hasher = self.verify.then(Sha256::new);
        let mut chunk = vec![0u8; 1 << 20];
        let mut size = 0;
        loop {
            let n = reader.read(&mut chunk).map_err(read_error)?;
            size += n as u64;
            if n == 0 || size > blob.size {
                break;
            }
            if let Some(hasher) = &mut hasher {
                hasher.update(&chunk[..n]);
            }
            self.write(&chunk[..n])?;
        }
        let digest = hasher.map_or(blob.digest, Sha256Digest::from_hasher);
        if size != blob.size || digest != blob.digest {
            return Err(BundleError::BlobMismatch {
                path: blob.path.clone(),
                expected: blob.digest,
                expected_size: blob.size,
                actual: digest,
                actual_size: size,
            });
        }
        self.pad(blob.size)
    }

    fn finish(mut self) -> Result<Output, BundleError> {
        // The end-of-archive marker, two zero blocks, in a frame of its own.
        self.frames.end_frame()?;
        self.write(&[0u8; 2 * BLOCK as usize])?;
        self.frames.finish()
    }
}

//! Writing a bundle: header, layout files and verified blobs into one seekable zstd stream.
//!
//! The writer is handed everything it writes up front (the description, the index and the
//! blobs as files with the digest they must have), because the checksum list that opens the
//! bundle names every member. Blobs are streamed from disk and hashed on the way; a blob that is
//! not what it claims aborts the write, and the temporary output is deleted.

mod cached;
mod frame_cache;
pub(crate) mod frames;
mod output;
mod resign;
mod stored;
mod sync_ahead;

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use oci_spec::image::ImageIndex;
use p256::ecdsa::SigningKey;
use sha2::{Digest as _, Sha256};

pub use frame_cache::{CACHED_BLOB_SIZE, FrameCache};
pub use output::{MAX_PART_SIZE, OutputFiles};
pub use resign::{SignedBundle, sign_bundle};

use crate::bundle_error::{BundleError, from_io};
use crate::checksums::ChecksumList;
use crate::description::{DELTA_FORMAT_VERSION, Description};
use crate::digest::Sha256Digest;
use crate::format_version::{IntegrityKind, SUPPORTED_MAJORS};
use crate::layout::index_bytes;
use crate::member::{
    BLOCK, CHECKSUMS_PATH, DESCRIPTION_PATH, MemberPath, SIGNATURE_PATH, canonical_header, padding,
};
use crate::oci::{INDEX_PATH, OCI_LAYOUT, OCI_LAYOUT_PATH};
use crate::sbom::{SBOM_PATH, spdx_document};
use crate::sign::sigstore;
use cached::{Ahead, CachedFrames};
use frames::FrameEncoder;
use output::Output;

/// The largest frame, in decompressed bytes. Bounds the memory a reader needs per frame.
pub const MAX_FRAME_SIZE: usize = 32 << 20;

/// The most handed to one `write` call. A frame is up to 32 MiB; written whole, it bypasses the
/// `BufWriter` and goes to the kernel in one call, which on Linux copies into the page cache up
/// to ten times slower than the same bytes in 1 MiB calls (measured with `dd bs=32M` against
/// `bs=1M`: 0.05–0.18 s against 0.01 s for 48 MB).
pub(crate) const WRITE_CHUNK: usize = 1 << 20;

/// A stored frame goes to the output (and its hash) in pieces of about this size, as it is laid
/// out or read from the frame cache: a whole 32 MiB frame at a time kept the hash waiting for
/// each, and took a fresh 32 MiB buffer (8192 page faults) for nearly every frame of a rebuild.
pub(crate) const PIECE_SIZE: usize = 4 << 20;

/// The zstd level for data that compresses; chosen by measurement (see BENCHMARKS.md).
pub const DEFAULT_LEVEL: i32 = 6;

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
    /// zstd level for frames that compress (frames that do not are stored, see SPEC §2.1).
    pub level: i32,
    /// zstd worker threads.
    pub workers: u32,
    /// Split into parts of at most this many bytes.
    pub split_size: Option<u64>,
    /// Re-hash every blob while writing it and fail on a mismatch. Only a caller that verified
    /// the blob files itself moments before (a cache that re-hashes on every hit) turns this off:
    /// on machines without SHA instructions hashing is the slowest step of a write.
    pub verify_blobs: bool,
    /// Copy the compressed frames of large blobs from this cache when it has them, and store
    /// them there when it does not (see [`FrameCache`]).
    pub frame_cache: Option<FrameCache>,
    /// Sign the checksum list with this key and embed the signature as the last member
    /// (SPEC §3.6). Signing is deterministic (RFC 6979), so a signed bundle is reproducible too.
    pub signing_key: Option<SigningKey>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Self {
            level: DEFAULT_LEVEL,
            workers,
            split_size: None,
            verify_blobs: true,
            frame_cache: None,
            signing_key: None,
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
    /// The embedded signature (a Sigstore bundle JSON), when the bundle was signed: the caller
    /// writes it beside the bundle too.
    pub signature: Option<Vec<u8>>,
}

/// Writes `contents` to `target` (or to parts beside it). Nothing appears at `target` unless
/// the whole bundle was written.
pub fn write_bundle(
    contents: &BundleContents,
    target: &Path,
    options: &WriteOptions,
) -> Result<WrittenBundle, BundleError> {
    write_bundle_as_ready(contents, target, options, &mut |_| Ok(()))
}

/// Like [`write_bundle`], but calls `ready` before reading each blob, in the order the blobs are
/// written (by digest), and reads the blob only once it returned: a caller still downloading
/// blobs blocks there until that blob's file is complete, so writing overlaps fetching. An
/// error from `ready` aborts the write.
pub fn write_bundle_as_ready(
    contents: &BundleContents,
    target: &Path,
    options: &WriteOptions,
    ready: &mut dyn FnMut(&BlobFile) -> Result<(), BundleError>,
) -> Result<WrittenBundle, BundleError> {
    let version = contents.description.format_version;
    if !version.is_known_major() {
        return Err(BundleError::UnknownWriteVersion {
            found: version,
            supported: SUPPORTED_MAJORS,
        });
    }
    let mtime = u64::try_from(contents.description.created.as_second())
        .map_err(|_| BundleError::CreatedBeforeEpoch(contents.description.created))?;
    let description = contents.description.to_bytes().map_err(BundleError::Json)?;
    let index = index_bytes(&contents.index)?;
    let sbom = spdx_document(&contents.description).map_err(BundleError::Json)?;
    let mut blobs = contents.blobs.clone();
    blobs.sort_by_key(|b| b.digest);
    blobs.dedup_by(|a, b| a.digest == b.digest);
    check_delta(&contents.description, &blobs)?;

    // The header members in their order (SPEC §3.3): `kk-bundle/` files after `index.json`,
    // sorted by path.
    let small: [(&'static str, &[u8]); 4] = [
        (DESCRIPTION_PATH, &description),
        (OCI_LAYOUT_PATH, OCI_LAYOUT),
        (INDEX_PATH, &index),
        (SBOM_PATH, &sbom),
    ];
    let mut list = ChecksumList::new();
    for (path, bytes) in small {
        list.insert(MemberPath::fixed(path), Sha256Digest::of(bytes));
    }
    for blob in &blobs {
        list.insert(MemberPath::blob(&blob.digest), blob.digest);
    }
    let checksums = list.to_bytes();
    // What a reader would refuse is not written at all.
    for (path, bytes) in std::iter::once((CHECKSUMS_PATH, checksums.as_slice())).chain(small) {
        let member = MemberPath::fixed(path);
        if let Some(limit) = member.size_limit().filter(|l| bytes.len() as u64 > *l) {
            return Err(BundleError::TooLarge {
                member,
                size: bytes.len() as u64,
                limit,
            });
        }
    }

    let output = Output::new(target, options.split_size)?;
    let kind = contents.description.format_version.integrity_kind();
    let mut tar = TarFrames::new(
        FrameEncoder::new(output, options.level, options.workers, kind),
        mtime,
        options.verify_blobs,
    );
    if let Some(cache) = &options.frame_cache {
        tar.use_frame_cache(cache.clone(), &blobs)?;
    }
    tar.member_bytes(&MemberPath::fixed(CHECKSUMS_PATH), &checksums)?;
    for (path, bytes) in small {
        tar.member_bytes(&MemberPath::fixed(path), bytes)?;
    }
    for blob in &blobs {
        ready(blob)?;
        tar.member_blob(blob)?;
    }
    let signature = options
        .signing_key
        .as_ref()
        .map(|key| sigstore::sign(key, &checksums));
    if let Some(signature) = &signature {
        tar.member_bytes(&MemberPath::fixed(SIGNATURE_PATH), signature)?;
    }
    let output = tar.finish()?.commit()?;
    Ok(WrittenBundle {
        identity: Sha256Digest::of(&checksums),
        output,
        members: 1 + small.len() + blobs.len() + usize::from(signature.is_some()),
        signature,
    })
}

/// The reader of cached frames said something else than the writer expects for `blob`: a bug.
fn out_of_order(said: &Ahead, blob: &BlobFile) -> BundleError {
    let said = match said {
        Ahead::NotCached { digest, .. } | Ahead::Entry { digest } => format!("blob `{digest}`"),
        Ahead::Piece(..) => "a piece of a frame".into(),
        Ahead::Frame(..) => "a frame".into(),
        Ahead::End(_) => "an entry's end".into(),
    };
    BundleError::Output(io::Error::other(format!(
        "the frame-cache reader sent {said} where the writer is at blob `{}`",
        blob.digest
    )))
}

/// A delta (a description with a `base`) must say a delta's format (4, or 2 before it), and a
/// full bundle a full one (3, or 1), since that is what makes a reader of full bundles refuse a
/// delta; no blob is both carried and taken from the base.
fn check_delta(description: &Description, blobs: &[BlobFile]) -> Result<(), BundleError> {
    let delta = description.format_version.is_delta();
    let reason = match &description.base {
        Some(_) if !delta => Some(format!(
            "a delta bundle must be written as format {DELTA_FORMAT_VERSION}"
        )),
        None if delta => Some(format!(
            "a bundle of format {} is a delta, and must name the bundle it builds on",
            description.format_version
        )),
        Some(base) => base
            .blobs
            .iter()
            .find(|b| blobs.binary_search_by_key(&b.digest, |f| f.digest).is_ok())
            .map(|b| {
                format!(
                    "blob `{}` is both carried and taken from the base",
                    b.digest
                )
            }),
        None => None,
    };
    reason.map_or(Ok(()), |reason| Err(BundleError::DeltaBase { reason }))
}

/// The tar stream, each member starting a new frame.
struct TarFrames {
    frames: FrameEncoder<Output>,
    mtime: u64,
    verify: bool,
    frame_cache: Option<FrameCache>,
    /// The frame cache's entries, read ahead (with `frame_cache`).
    cached: Option<CachedFrames>,
}

impl TarFrames {
    fn new(frames: FrameEncoder<Output>, mtime: u64, verify: bool) -> Self {
        Self {
            frames,
            mtime,
            verify,
            frame_cache: None,
            cached: None,
        }
    }

    /// Copies the frames of large blobs from `cache` when it has them, and stores them there
    /// when it does not; `blobs` are every blob this write will write, in order. A bundle of a
    /// format whose integrity frame hashes every byte in order (1 or 2, which only re-signing
    /// an old bundle writes) does not use the cache: its entries keep the frames' sha256s for
    /// the frame list, which such a bundle cannot use.
    fn use_frame_cache(
        &mut self,
        cache: FrameCache,
        blobs: &[BlobFile],
    ) -> Result<(), BundleError> {
        if self.frames.integrity_kind() != IntegrityKind::FrameList {
            return Ok(());
        }
        let level = self.frames.level();
        self.cached =
            Some(CachedFrames::start(cache.clone(), level, blobs).map_err(BundleError::Output)?);
        self.frame_cache = Some(cache);
        Ok(())
    }

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

    /// A blob member. From [`CACHED_BLOB_SIZE`] on, the header gets a frame of its own and the
    /// content frames come from (or go to) the frame cache.
    fn member_blob(&mut self, blob: &BlobFile) -> Result<(), BundleError> {
        if blob.size < CACHED_BLOB_SIZE {
            self.start(&MemberPath::blob(&blob.digest), blob.size)?;
            return self.blob_content(blob);
        }
        self.start(&MemberPath::blob(&blob.digest), blob.size)?;
        self.frames.end_frame()?;
        let level = self.frames.level();
        if let (Some(cache), Some(cached)) = (self.frame_cache.clone(), &mut self.cached) {
            match cached.next()? {
                Ahead::Entry { digest } if digest == blob.digest => {
                    return self.copy_cached(&cache, blob);
                }
                // An entry whose size table is damaged is gone now. A caller that does not
                // have blobs re-hashed may not have read this one in this run, counting on the
                // entry: it is told, as for a damaged frame, and writes again verifying every
                // blob.
                Ahead::NotCached { digest, damaged } if digest == blob.digest => {
                    if damaged && !self.verify {
                        return Err(frame_cache::damaged(&cache, blob.digest, level));
                    }
                }
                other => return Err(out_of_order(&other, blob)),
            }
            if let Ok(entry) = cache.create(&blob.digest, level, blob.size) {
                self.frames.record(entry);
            }
        }
        self.blob_content(blob)?;
        self.frames.end_frame()?;
        self.frames.seal_recording();
        Ok(())
    }

    /// Copies the frames of `blob`'s entry as the reader sends them (see `cached`): a frame
    /// that fails its check fails the write (whose output is then removed) before this blob
    /// counts as written.
    fn copy_cached(&mut self, cache: &FrameCache, blob: &BlobFile) -> Result<(), BundleError> {
        let cached = self.cached.as_mut().expect("entries come from the reader");
        loop {
            match cached.next()? {
                Ahead::Piece(piece) => cached.recycle(self.frames.copy_piece(piece)?),
                Ahead::Frame(frame, decompressed, sha256) => {
                    let spare = self.frames.copy_frame(frame, decompressed, Some(sha256))?;
                    cached.recycle(spare);
                }
                Ahead::End(true) => return Ok(()),
                Ahead::End(false) => {
                    return Err(frame_cache::damaged(
                        cache,
                        blob.digest,
                        self.frames.level(),
                    ));
                }
                other => return Err(out_of_order(&other, blob)),
            }
        }
    }

    /// The content of `blob` and its padding, read from its file straight into the frames. A
    /// large blob's frames start with its content (see [`Self::member_blob`]); each of them whose
    /// samples do not compress is laid out as a stored frame straight from the file, in pieces
    /// (see [`FrameEncoder::store_from`]), the others are read into the frame and compressed.
    fn blob_content(&mut self, blob: &BlobFile) -> Result<(), BundleError> {
        let read_error = |source| BundleError::BlobRead {
            path: blob.path.clone(),
            source,
        };
        let mut file = File::open(&blob.path).map_err(read_error)?;
        let mut hasher = self.verify.then(Sha256::new);
        let mut inspect = |bytes: &[u8]| {
            if let Some(hasher) = &mut hasher {
                hasher.update(bytes);
            }
        };
        let (mut size, mut padded) = (0, false);
        while size < blob.size {
            if blob.size >= CACHED_BLOB_SIZE && self.frames.at_frame_start() {
                let (left, tail) = (blob.size - size, padding(blob.size) as usize);
                let stored =
                    self.frames
                        .store_from(&mut file, left, tail, &mut inspect, &read_error)?;
                if let Some(stored) = stored {
                    size += stored.read;
                    padded = size == blob.size;
                    if stored.short {
                        break;
                    }
                    continue;
                }
            }
            let limit = usize::try_from(blob.size - size).unwrap_or(usize::MAX);
            let n = self
                .frames
                .read_from(&mut file, limit, &mut inspect, &read_error)?;
            if n == 0 {
                break;
            }
            size += n as u64;
        }
        // A file longer than its blob is not that blob either.
        if size == blob.size && file.read(&mut [0u8; 1]).map_err(read_error)? > 0 {
            size = file.metadata().map_err(read_error)?.len();
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
        if padded { Ok(()) } else { self.pad(blob.size) }
    }

    fn finish(mut self) -> Result<Output, BundleError> {
        // The end-of-archive marker, two zero blocks, in a frame of its own.
        self.frames.end_frame()?;
        self.write(&[0u8; 2 * BLOCK as usize])?;
        self.frames.finish()
    }
}

//! The frames of frame-cache entries, read and checked ahead of the writer on a thread of their
//! own.
//!
//! A rebuild copies most of its bundle from the frame cache. Each frame costs a read (from the
//! entry, or for a stored frame from the blob file), a check and a write; its sha256, which the
//! integrity frame lists, comes with it from the entry, checked below (see `frame_cache`). Done
//! one after the other on the writer thread, the writes waited for the reads, and a third of
//! both cores stayed idle; a reader per entry still left the writer waiting for each entry's
//! first frame. [`CachedFrames`] is one reader for the whole write: it goes through the large
//! blobs in the writer's order, and while the writer writes one frame (or compresses a blob that
//! has no entry) it reads and checks the next ones.
//!
//! A stored frame goes to the writer in pieces of [`PIECE_SIZE`](super::PIECE_SIZE) as it is
//! read, its check with the last piece. The writer counts a frame only once its check passed;
//! a damaged one fails the write when the writer reaches it, and the output file, pieces and
//! all, is removed with the failed write. The buffers go round: reader, writer, and back.
//!
//! The check is the one decoding a frame makes, without the copy decoding costs where it can be
//! avoided: a compressed frame is decoded (its size and zstd's content checksum); a stored frame
//! is built from the blob file with the XXH64 the entry recorded, and that XXH64 is computed over
//! the blob's bytes as they are read, which is what decoding the frame would compare.
//!
//! The sha256 the entry recorded for a frame must also be that of the bytes the writer copies,
//! or the bundle's integrity frame would not match them. A stored frame's bytes depend on
//! nothing but its content, which its XXH64 vouches for, so its sha256 is taken as recorded. A
//! compressed frame's entropy-coded blocks have bits a decoder ignores, so its bytes are hashed
//! here, on this thread, beside the decoding: a frame whose sha256 differs is a damaged entry,
//! like one that does not decode. Compressed frames are the few (most of a bundle is layers,
//! stored), so a rebuild still hashes little more than what it compresses.
//!
//! The reader opens a blob's file only if its entry has stored frames. A caller must therefore
//! have a blob file complete from the start of the write when its entry has stored frames; a
//! build fetches no blob whose entry it uses, and one it fetches is renamed into place whole.

use std::fs::File;
use std::io::{self, Seek as _, SeekFrom};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use super::frame_cache::{Entry, FrameCache, FrameEntry};
use super::{BlobFile, CACHED_BLOB_SIZE, MAX_FRAME_SIZE, stored};
use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;

/// How many messages wait for the writer: with pieces, the reader stays up to about 16 MiB
/// ahead.
const AHEAD: usize = 3;

/// What the reader says of the large blobs, in the writer's order: for each, either
/// [`Ahead::NotCached`], or [`Ahead::Entry`] followed by its frames and [`Ahead::End`].
#[derive(Debug)]
pub(super) enum Ahead {
    /// No usable entry: the writer compresses the blob (and records a new entry). `damaged`
    /// when there was one whose size table did not hold; it is removed.
    NotCached { digest: Sha256Digest, damaged: bool },
    /// The blob's entry is used: its frames follow.
    Entry { digest: Sha256Digest },
    /// The next bytes of the entry's next frame, not its last: not checked yet.
    Piece(Vec<u8>),
    /// The next frame of the entry (or its last bytes, after its pieces), checked, its
    /// decompressed size and the sha256 of the whole frame the entry recorded.
    Frame(Vec<u8>, u32, Sha256Digest),
    /// The entry's frames ended: all of them whole (`true`), or the next one was damaged.
    End(bool),
}

/// The reader thread of a write, and what it sends.
#[derive(Debug)]
pub(super) struct CachedFrames {
    /// `None` once dropped, which stops the reader.
    ahead: Option<Receiver<Ahead>>,
    recycle: Sender<Vec<u8>>,
    reader: Option<JoinHandle<()>>,
}

impl CachedFrames {
    /// Starts reading the entries of the blobs of `blobs` that are large enough to have one,
    /// in that order, which must be the order the writer writes them in.
    pub(super) fn start(cache: FrameCache, level: i32, blobs: &[BlobFile]) -> io::Result<Self> {
        let large: Vec<BlobFile> = blobs
            .iter()
            .filter(|b| b.size >= CACHED_BLOB_SIZE)
            .cloned()
            .collect();
        let (sender, ahead) = mpsc::sync_channel(AHEAD);
        let (recycle, recycled) = mpsc::channel();
        let reader = std::thread::Builder::new()
            .name("kk-frame-cache".into())
            .spawn(move || read_ahead(&cache, level, &large, &sender, &recycled))?;
        Ok(Self {
            ahead: Some(ahead),
            recycle,
            reader: Some(reader),
        })
    }

    /// What the reader says next. If it stopped without saying it, it panicked, and so does
    /// this.
    pub(super) fn next(&mut self) -> Result<Ahead, BundleError> {
        if let Some(message) = self.ahead.as_ref().and_then(|ahead| ahead.recv().ok()) {
            return Ok(message);
        }
        if let Some(Err(panic)) = self.reader.take().map(JoinHandle::join) {
            std::panic::resume_unwind(panic);
        }
        Err(BundleError::Output(io::Error::other(
            "the frame-cache reader stopped before the write ended",
        )))
    }

    /// Hands a buffer back for a later frame.
    pub(super) fn recycle(&self, buffer: Vec<u8>) {
        if buffer.capacity() > 0 {
            // The reader may be done; then the buffer is simply freed.
            let _ = self.recycle.send(buffer);
        }
    }
}

impl Drop for CachedFrames {
    fn drop(&mut self) {
        // A reader waiting to send finds the channel closed and ends.
        drop(self.ahead.take());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The reader thread: says for each blob of `blobs` whether its entry is used, and sends its
/// checked frames. Stops after a damaged frame, or when the writer is gone.
fn read_ahead(
    cache: &FrameCache,
    level: i32,
    blobs: &[BlobFile],
    ahead: &SyncSender<Ahead>,
    recycled: &Receiver<Vec<u8>>,
) {
    let mut buffers = Buffers::new(recycled);
    let Ok(mut decoder) = zstd::bulk::Decompressor::new() else {
        return;
    };
    for blob in blobs {
        let digest = blob.digest;
        let contained = cache.contains(&digest, level);
        let Some(entry) = cache.open(&digest, level, blob.size) else {
            let damaged = contained;
            if ahead.send(Ahead::NotCached { digest, damaged }).is_err() {
                return;
            }
            continue;
        };
        if ahead.send(Ahead::Entry { digest }).is_err() {
            return;
        }
        let Some(intact) = send_checked(entry, blob, &mut buffers, &mut decoder, ahead) else {
            return;
        };
        if ahead.send(Ahead::End(intact)).is_err() || !intact {
            return;
        }
    }
}

/// Frame buffers for the reader: those the writer is done with first.
struct Buffers<'a> {
    recycled: &'a Receiver<Vec<u8>>,
    /// Where compressed frames decode to while they are checked; one for the whole write.
    content: Vec<u8>,
}

impl<'a> Buffers<'a> {
    fn new(recycled: &'a Receiver<Vec<u8>>) -> Self {
        Self {
            recycled,
            content: Vec::new(),
        }
    }

    /// A buffer for the next frame or piece: a recycled one if the writer gave one back.
    fn frame(&self) -> Vec<u8> {
        let mut buffer = self.recycled.try_recv().unwrap_or_default();
        buffer.clear();
        buffer
    }
}

/// Reads each frame of `entry` (the frames of `blob`'s content and padding), checks it, and
/// sends it to `ahead`. Whether every frame was whole and matched its check (it stops at the
/// first that did not); `None` when the writer stopped receiving.
fn send_checked(
    mut entry: Entry,
    blob: &BlobFile,
    buffers: &mut Buffers<'_>,
    decoder: &mut zstd::bulk::Decompressor<'_>,
    ahead: &SyncSender<Ahead>,
) -> Option<bool> {
    let rows = std::mem::take(&mut entry.frames);
    let mut blob_file = None;
    let mut offset = 0;
    for row in rows {
        let checked = if row.is_stored() {
            let mut send_piece = |piece| match ahead.send(Ahead::Piece(piece)) {
                Ok(()) => Ok(buffers.frame()),
                Err(_) => Err(io::ErrorKind::BrokenPipe.into()),
            };
            let stored = StoredFrame { blob, offset, row };
            stored.rebuild(&mut blob_file, buffers.frame(), &mut send_piece)
        } else {
            let mut frame = buffers.frame();
            let intact = entry.read_frame(row.compressed, &mut frame).is_ok()
                && decodes_to(decoder, &frame, row, &mut buffers.content)
                && Sha256Digest::of(&frame) == row.sha256;
            intact.then_some(frame)
        };
        offset += u64::from(row.decompressed);
        let Some(frame) = checked else {
            return Some(false);
        };
        ahead
            .send(Ahead::Frame(frame, row.decompressed, row.sha256))
            .ok()?;
    }
    Some(true)
}

/// Whether `frame` is one whole zstd frame that decodes to `row.decompressed` bytes with a
/// matching content checksum.
fn decodes_to(
    decoder: &mut zstd::bulk::Decompressor<'_>,
    frame: &[u8],
    row: FrameEntry,
    content: &mut Vec<u8>,
) -> bool {
    content.clear();
    content.reserve(MAX_FRAME_SIZE);
    zstd::zstd_safe::find_frame_compressed_size(frame) == Ok(frame.len())
        && decoder
            .decompress_to_buffer(frame, content)
            .is_ok_and(|n| n == row.decompressed as usize)
}

/// A stored frame of a frame-cache entry: the `row.decompressed` bytes of `blob`'s content and
/// padding from `offset` on.
struct StoredFrame<'a> {
    blob: &'a BlobFile,
    offset: u64,
    row: FrameEntry,
}

impl StoredFrame<'_> {
    /// Builds the frame in `piece` (and those `send_piece` gives back), its content read from
    /// the blob file (opened into `file` on first use) straight into its blocks, and returns its
    /// last piece if the blob file had every byte and their XXH64 is the one the entry recorded.
    /// Each full piece goes to `send_piece`, which gives an empty buffer for the rest (an error
    /// once the writer is gone, which ends the frame as not rebuilt).
    fn rebuild(
        &self,
        file: &mut Option<File>,
        piece: Vec<u8>,
        send_piece: &mut dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>>,
    ) -> Option<Vec<u8>> {
        let file = match file {
            Some(file) => file,
            None => file.insert(File::open(&self.blob.path).ok()?),
        };
        file.seek(SeekFrom::Start(self.offset)).ok()?;
        // The last frame ends with the tar padding, which the blob file does not hold.
        let mut in_file = self.blob.size.saturating_sub(self.offset);
        let size = self.row.decompressed as usize;
        let (last, checksum) = stored::stored_frame_pieces(
            size,
            piece,
            &mut |out, len| stored::read_block(file, &mut in_file, out, len).map(drop),
            send_piece,
        )
        .ok()?;
        (checksum == self.row.stored_checksum).then_some(last)
    }
}

//! Compression into independent zstd frames, logged in a seek table.
//!
//! Each frame is compressed whole from a buffer of at most [`MAX_FRAME_SIZE`] bytes, with its
//! content size and an XXH64 content checksum in the frame header, and a window at least as
//! large as the frame so the frame is "single segment". Those three properties are part of the
//! format: the reader refuses frames without them, which leaves no byte in a frame header that
//! could change without changing what the frame decodes to.
//!
//! zstd's entropy-coded blocks still have bits a decoder may ignore, so a last, skippable
//! *integrity frame* holds the sha256 of every compressed byte before it: a flipped bit that
//! zstd would decode to the very same content is still a changed file.

use std::io::{self, Read, Write};

use zeekstd::SeekTable;
use zstd::zstd_safe::CParameter;

use super::frame_cache::EntryWriter;
use super::{MAX_FRAME_SIZE, PIECE_SIZE, WRITE_CHUNK};
use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;

/// Magic number of the integrity frame, a zstd skippable frame (range `0x184D2A5?`) other than
/// the seek table's `0x184D2A5E`.
pub(crate) const INTEGRITY_MAGIC: u32 = 0x184D_2A5B;
/// The integrity frame's payload starts with these four bytes.
pub(crate) const INTEGRITY_TAG: &[u8; 4] = b"KKFD";
/// Size of the integrity frame: magic, size field, tag, sha256.
pub(crate) const INTEGRITY_FRAME_SIZE: usize = 4 + 4 + 4 + 32;

/// Frames whose samples shrink less than this (in percent) at level 1 are stored: they hold
/// already-compressed data (gzip layers, tarballs), where compressing only costs time.
const INCOMPRESSIBLE_PERCENT: usize = 95;
/// How many samples of a frame decide whether it is worth compressing, and their size.
const SAMPLES: usize = 4;
const SAMPLE_SIZE: usize = 64 << 10;
/// zstd job size in multithreaded mode: small enough that both cores work on one frame.
const JOB_SIZE: i32 = 4 << 20;

/// Where frames go: a writer that hashes what it was given, so the integrity frame takes the
/// sha256 of the file so far from the hash the output computes anyway (one pass, not two).
pub(crate) trait HashedWrite: Write {
    /// The sha256 of every byte written so far.
    fn sha256_so_far(&self) -> io::Result<Sha256Digest>;

    /// Writes all of `bytes`, taking the buffer itself where the hash can use it without a
    /// copy, and returns a buffer for the caller to reuse (emptied or not: overwrite it).
    fn write_owned(&mut self, bytes: Vec<u8>) -> io::Result<Vec<u8>> {
        write_in_chunks(self, bytes)
    }
}

/// Writes all of `bytes` to `out` in [`WRITE_CHUNK`] pieces and gives the buffer back: what
/// [`HashedWrite::write_owned`] does where the buffer cannot be handed on.
pub(crate) fn write_in_chunks(
    out: &mut (impl Write + ?Sized),
    bytes: Vec<u8>,
) -> io::Result<Vec<u8>> {
    for chunk in bytes.chunks(WRITE_CHUNK) {
        out.write_all(chunk)?;
    }
    Ok(bytes)
}

impl HashedWrite for Vec<u8> {
    fn sha256_so_far(&self) -> io::Result<Sha256Digest> {
        Ok(Sha256Digest::of(self))
    }
}

/// Buffers bytes into frames and writes each frame compressed to `out`.
pub(crate) struct FrameEncoder<W: HashedWrite> {
    out: W,
    /// [`MAX_FRAME_SIZE`] long from the first byte on; the frame is its first `filled` bytes.
    /// Being full length, it can be read into straight from a file (see [`Self::read_from`]).
    frame: Vec<u8>,
    filled: usize,
    compressed: Vec<u8>,
    table: SeekTable,
    level: i32,
    workers: u32,
    /// The compression context, kept from frame to frame: a new one per frame started zstd's
    /// worker threads and faulted in their buffers again for every 32 MiB. Every parameter is
    /// set again for each frame, so a frame's bytes never depend on the one before.
    compressor: Option<zstd::bulk::Compressor<'static>>,
    /// The level-1 context that samples each frame, kept for the same reason.
    probe: Option<zstd::bulk::Compressor<'static>>,
    /// A frame-cache entry the frames are copied into while they are written, if one is open.
    recording: Option<EntryWriter>,
    /// How many bytes of a copied frame its pieces wrote so far (see [`Self::copy_piece`]).
    copied: u32,
}

impl<W: HashedWrite> FrameEncoder<W> {
    pub(crate) fn new(out: W, level: i32, workers: u32) -> Self {
        Self {
            out,
            frame: Vec::new(),
            filled: 0,
            compressed: Vec::new(),
            table: SeekTable::new(),
            level,
            workers: workers.max(1),
            compressor: None,
            probe: None,
            recording: None,
            copied: 0,
        }
    }

    /// The configured level for compressible frames.
    pub(crate) fn level(&self) -> i32 {
        self.level
    }

    /// Copies every frame ended from now on into `entry`, until [`Self::stop_recording`].
    pub(crate) fn record(&mut self, entry: EntryWriter) {
        self.recording = Some(entry);
    }

    /// The entry being recorded, if recording did not fail on the way.
    pub(crate) fn stop_recording(&mut self) -> Option<EntryWriter> {
        self.recording.take()
    }

    /// Writes the first bytes of an already compressed frame, ahead of the rest: the frame
    /// counts only once [`Self::copy_frame`] ends it. Returns a buffer to reuse.
    pub(crate) fn copy_piece(&mut self, piece: Vec<u8>) -> Result<Vec<u8>, BundleError> {
        debug_assert!(self.filled == 0, "a copied frame would split a pending one");
        self.copied += piece.len() as u32;
        self.out.write_owned(piece).map_err(BundleError::Output)
    }

    /// Writes an already compressed frame of `decompressed` bytes (or its last bytes, after
    /// its pieces), which the caller checked is one whole frame, and returns a buffer to reuse
    /// for the next one (the output may keep `compressed` to hash it). The current frame must
    /// be empty.
    pub(crate) fn copy_frame(
        &mut self,
        compressed: Vec<u8>,
        decompressed: u32,
    ) -> Result<Vec<u8>, BundleError> {
        debug_assert!(self.filled == 0, "a copied frame would split a pending one");
        let size = std::mem::take(&mut self.copied) + compressed.len() as u32;
        let spare = self
            .out
            .write_owned(compressed)
            .map_err(BundleError::Output)?;
        self.table
            .log_frame(size, decompressed)
            .map_err(|e| BundleError::Compress(io::Error::other(e)))?;
        Ok(spare)
    }

    /// Reads at most `limit` bytes of `reader` straight into the frame (a blob's bytes are not
    /// copied through a buffer of their own first), ending the frame if that filled it.
    /// `inspect` sees the bytes read before they are compressed; returns how many were read,
    /// 0 at the reader's end. A read error is returned as `read_error` makes it.
    pub(crate) fn read_from(
        &mut self,
        reader: &mut impl Read,
        limit: usize,
        inspect: &mut dyn FnMut(&[u8]),
        read_error: &dyn Fn(io::Error) -> BundleError,
    ) -> Result<usize, BundleError> {
        let start = self.filled;
        // Whole frames in one call would go to the kernel as 32 MiB copies; see WRITE_CHUNK.
        // A read may return fewer bytes than asked (a network or FUSE file system may), so the
        // rest of a frame can be shorter than a chunk.
        let room = self.room();
        let len = room.len().min(limit).min(WRITE_CHUNK);
        let room = &mut room[..len];
        let n = reader.read(room).map_err(read_error)?;
        inspect(&self.frame[start..start + n]);
        self.filled += n;
        if self.filled == MAX_FRAME_SIZE {
            self.end_frame()?;
        }
        Ok(n)
    }

    /// The free part of the frame, allocated (zeroed, by the allocator) on first use.
    fn room(&mut self) -> &mut [u8] {
        if self.frame.is_empty() {
            self.frame = vec![0; MAX_FRAME_SIZE];
        }
        &mut self.frame[self.filled..]
    }

    /// Ends the current frame, so the next byte starts a new one.
    ///
    /// A frame that compresses goes through zstd's multithreaded mode, always, even with one
    /// worker: its output then depends only on the parameters, never on the worker count, so
    /// every machine writes the same bytes. One that does not (gzip layers, tarballs) is
    /// stored: written as raw blocks (see [`Self::write_stored`]), which depends on nothing but
    /// the content.
    pub(crate) fn end_frame(&mut self) -> Result<(), BundleError> {
        if self.filled == 0 {
            return Ok(());
        }
        let content = self.filled;
        let stored = is_incompressible(&self.frame[..content], &mut self.probe)?;
        let size = if stored {
            let checksum = xxhash_rust::xxh64::xxh64(&self.frame[..content], 0);
            self.record_frame(|entry| entry.stored(content, checksum));
            self.write_stored(checksum)?
        } else {
            self.compress()?;
            let compressed = std::mem::take(&mut self.compressed);
            self.record_frame(|entry| entry.frame(&compressed, content));
            let size = compressed.len();
            // The output hashes the frame's own buffer and hands back another for the next one.
            self.compressed = self
                .out
                .write_owned(compressed)
                .map_err(BundleError::Output)?;
            size
        };
        self.table
            .log_frame(size as u32, content as u32)
            .map_err(|e| BundleError::Compress(io::Error::other(e)))?;
        self.filled = 0;
        Ok(())
    }

    /// Compresses the current frame into `self.compressed`.
    fn compress(&mut self) -> Result<(), BundleError> {
        let frame = &self.frame[..self.filled];
        let compressor = match &mut self.compressor {
            Some(compressor) => compressor,
            None => self
                .compressor
                .insert(zstd::bulk::Compressor::new(self.level).map_err(BundleError::Compress)?),
        };
        configure(compressor, self.level, self.workers, frame.len())?;
        self.compressed.clear();
        self.compressed
            .reserve(zstd::zstd_safe::compress_bound(frame.len()));
        compressor
            .compress_to_buffer(frame, &mut self.compressed)
            .map_err(BundleError::Compress)?;
        Ok(())
    }

    /// Lets the frame-cache entry being recorded, if any, record a frame; an entry that cannot
    /// is given up, since the cache only saves time.
    fn record_frame(&mut self, frame: impl FnOnce(&mut EntryWriter) -> io::Result<()>) {
        if let Some(entry) = &mut self.recording
            && frame(entry).is_err()
        {
            self.recording = None;
        }
    }

    /// Writes the current frame, whose content's XXH64 is `checksum`, as one zstd frame of raw
    /// blocks (RFC 8878 §3.1.1): single segment, with its content size and checksum, as every
    /// frame of a bundle. Returns its size.
    ///
    /// Frames of data that does not compress are written this way rather than by zstd's
    /// compressor: at any level, zstd would search every position of those bytes for matches
    /// it does not find and then emit nearly the same raw blocks (the search was a fifth of a
    /// cold build's CPU). The zstd library has no such "store" mode of its own.
    ///
    /// The frame goes out in pieces of [`PIECE_SIZE`], so the output's hash starts on the first
    /// while the next is laid out, instead of waiting for all 32 MiB.
    fn write_stored(&mut self, checksum: u64) -> Result<usize, BundleError> {
        let Self {
            out,
            frame,
            filled,
            compressed,
            ..
        } = self;
        let mut rest = &frame[..*filled];
        let mut written = 0;
        let mut piece = std::mem::take(compressed);
        piece.clear();
        piece.reserve(PIECE_SIZE + STORED_BLOCK);
        stored_frame_with(rest.len(), checksum, &mut piece, &mut |piece, len| {
            if piece.len() >= PIECE_SIZE {
                written += piece.len();
                *piece = out.write_owned(std::mem::take(piece))?;
                piece.clear();
                // The hash may have no spent buffer to give back yet: one piece's worth at
                // once, not grown block by block.
                piece.reserve(PIECE_SIZE + STORED_BLOCK);
            }
            let (block, after) = rest.split_at(len);
            piece.extend_from_slice(block);
            rest = after;
            Ok(())
        })
        .map_err(BundleError::Output)?;
        written += piece.len();
        *compressed = out.write_owned(piece).map_err(BundleError::Output)?;
        Ok(written)
    }

    /// Appends the integrity frame and the seek table, and returns the output.
    pub(crate) fn finish(mut self) -> Result<W, BundleError> {
        self.end_frame()?;
        let digest = self.out.sha256_so_far().map_err(BundleError::Output)?;
        let frame = integrity_frame(digest.as_bytes());
        self.out.write_all(&frame).map_err(BundleError::Output)?;
        self.table
            .log_frame(INTEGRITY_FRAME_SIZE as u32, 0)
            .map_err(|e| BundleError::Compress(io::Error::other(e)))?;
        let mut serializer = self.table.into_serializer();
        io::copy(&mut serializer, &mut self.out).map_err(BundleError::Output)?;
        Ok(self.out)
    }
}

/// Sets every parameter a frame's bytes depend on (none is left from the frame before) for a
/// frame of `size` bytes: its window covers the whole frame, so the frame is single segment.
fn configure(
    compressor: &mut zstd::bulk::Compressor<'static>,
    level: i32,
    workers: u32,
    size: usize,
) -> Result<(), BundleError> {
    let window_log = size.next_power_of_two().trailing_zeros().max(10);
    let parameters = [
        CParameter::CompressionLevel(level),
        CParameter::ChecksumFlag(true),
        CParameter::ContentSizeFlag(true),
        CParameter::WindowLog(window_log),
        CParameter::NbWorkers(workers),
        CParameter::JobSize(JOB_SIZE as u32),
    ];
    for parameter in parameters {
        compressor
            .set_parameter(parameter)
            .map_err(BundleError::Compress)?;
    }
    Ok(())
}

/// The largest block zstd allows (RFC 8878, `Block_Maximum_Size`): a stored frame is cut into
/// blocks of this size.
pub(crate) const STORED_BLOCK: usize = 128 << 10;

/// Appends to `out` the stored frame of `size` content bytes whose content `fill` appends, a
/// block of `len` bytes per call, in order, and whose content checksum is `checksum`: what a
/// frame-cache entry recorded, for a frame rebuilt from its blob file. The frame is then only
/// as right as its content, which decoding it checks. `fill` may take what `out` holds so far
/// away (the frame then goes on in the emptied `out`), to pass a large frame on in pieces.
pub(crate) fn stored_frame_with(
    size: usize,
    checksum: u64,
    out: &mut Vec<u8>,
    fill: &mut dyn FnMut(&mut Vec<u8>, usize) -> io::Result<()>,
) -> io::Result<()> {
    const SINGLE_SEGMENT: u8 = 1 << 5;
    const CHECKSUM: u8 = 1 << 2;
    let wide = size as u64;
    // Frame_Content_Size's field: 1, 2 (minus 256), 4 or 8 bytes, as zstd itself chooses.
    let (code, field): (u8, Vec<u8>) = match wide {
        0..=255 => (0, vec![wide as u8]),
        256..=65_791 => (1, ((wide - 256) as u16).to_le_bytes().to_vec()),
        65_792..=0xFFFF_FFFF => (2, (wide as u32).to_le_bytes().to_vec()),
        _ => (3, wide.to_le_bytes().to_vec()),
    };
    out.extend_from_slice(&zstd::zstd_safe::MAGICNUMBER.to_le_bytes());
    out.push(code << 6 | SINGLE_SEGMENT | CHECKSUM);
    out.extend_from_slice(&field);
    if size == 0 {
        // An empty frame is one empty last block.
        out.extend_from_slice(&[1, 0, 0]);
    }
    let mut done = 0;
    while done < size {
        let len = STORED_BLOCK.min(size - done);
        done += len;
        // Block_Header: Last_Block (bit 0), Block_Type 0 = raw (bits 1-2), Block_Size.
        let header = (len as u32) << 3 | u32::from(done == size);
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        fill(out, len)?;
    }
    out.extend_from_slice(&(checksum as u32).to_le_bytes());
    Ok(())
}

/// Whether `frame` holds already-compressed data: each of [`SAMPLES`] samples, spread over the
/// frame, shrinks less than [`INCOMPRESSIBLE_PERCENT`] at level 1 in `probe` (created on first
/// use). A frame with a part that compresses is compressed, since storing it would give up all
/// of that part. Frames too small to sample count as compressible.
fn is_incompressible(
    frame: &[u8],
    probe: &mut Option<zstd::bulk::Compressor<'static>>,
) -> Result<bool, BundleError> {
    if frame.len() < 4096 {
        return Ok(false);
    }
    let probe = match probe {
        Some(probe) => probe,
        None => probe.insert(zstd::bulk::Compressor::new(1).map_err(BundleError::Compress)?),
    };
    for n in 0..SAMPLES {
        let start = frame.len() / SAMPLES * n;
        let sample = &frame[start..frame.len().min(start + SAMPLE_SIZE)];
        let compressed = probe.compress(sample).map_err(BundleError::Compress)?;
        if compressed.len() * 100 < sample.len() * INCOMPRESSIBLE_PERCENT {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The skippable frame holding the sha256 of every byte before it.
pub(crate) fn integrity_frame(digest: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(INTEGRITY_FRAME_SIZE);
    frame.extend_from_slice(&INTEGRITY_MAGIC.to_le_bytes());
    frame.extend_from_slice(&((INTEGRITY_FRAME_SIZE - 8) as u32).to_le_bytes());
    frame.extend_from_slice(INTEGRITY_TAG);
    frame.extend_from_slice(digest);
    frame
}

impl<W: HashedWrite> Write for FrameEncoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.room();
        let n = buf.len().min(room.len());
        room[..n].copy_from_slice(&buf[..n]);
        self.filled += n;
        if self.filled == MAX_FRAME_SIZE {
            self.end_frame().map_err(io::Error::other)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::incompressible;

    /// `content` as one stored frame, as the writer writes it, and its XXH64.
    fn stored_frame(content: &[u8], out: &mut Vec<u8>) -> u64 {
        let checksum = xxhash_rust::xxh64::xxh64(content, 0);
        let mut rest = content;
        stored_frame_with(content.len(), checksum, out, &mut |out, len| {
            let (block, after) = rest.split_at(len);
            out.extend_from_slice(block);
            rest = after;
            Ok(())
        })
        .expect("copying from a slice into a Vec cannot fail");
        checksum
    }

    /// Words drawn at random: text that compresses, differently at each level (a repeated
    /// phrase would not tell levels apart), larger than the sample so it gets the configured
    /// level.
    fn compressible() -> Vec<u8> {
        const WORDS: [&[u8]; 8] = [
            b"kubelet ",
            b"containerd ",
            b"etcd ",
            b"runc ",
            b"pause ",
            b"coredns ",
            b"cni ",
            b"proxy ",
        ];
        incompressible(100_000, 0)
            .iter()
            .flat_map(|b| WORDS[usize::from(b % 8)])
            .copied()
            .collect()
    }

    /// The compressed frame `content` becomes in an encoder of its own.
    fn alone(content: &[u8], level: i32) -> Vec<u8> {
        let mut encoder = FrameEncoder::new(Vec::new(), level, 2);
        encoder.write_all(content).expect("write");
        encoder.end_frame().expect("frame");
        encoder.out
    }

    #[test]
    fn a_frame_is_the_same_whatever_frames_the_encoder_compressed_before() {
        for level in [3, 9] {
            let (text, noise) = (compressible(), incompressible(600_000, 0));
            let mut encoder = FrameEncoder::new(Vec::new(), level, 2);
            let mut expected = Vec::new();
            for content in [&noise, &text, &noise[..5000], &text, &noise] {
                encoder.write_all(content).expect("write");
                encoder.end_frame().expect("frame");
                expected.extend(alone(content, level));
            }
            assert_eq!(encoder.out, expected, "level {level}");
        }
    }

    /// Sizes around each width of the content size field and each block boundary.
    #[test]
    fn a_stored_frame_is_one_whole_zstd_frame_of_its_content() {
        let noise = incompressible(3 * STORED_BLOCK + 7, 3);
        for size in [
            1,
            255,
            256,
            65_791,
            65_792,
            STORED_BLOCK - 1,
            STORED_BLOCK,
            STORED_BLOCK + 1,
            3 * STORED_BLOCK + 7,
        ] {
            let content = &noise[..size];
            let mut frame = Vec::new();
            stored_frame(content, &mut frame);
            assert_eq!(
                zstd::zstd_safe::find_frame_compressed_size(&frame),
                Ok(frame.len()),
                "{size}"
            );
            assert_eq!(
                zstd::zstd_safe::get_frame_content_size(&frame).ok(),
                Some(Some(size as u64)),
                "{size}"
            );
            let decoded = zstd::bulk::decompress(&frame, size).expect("decodes");
            assert_eq!(decoded, content, "{size}");
            // The content checksum is checked: a changed byte of content is refused.
            let mut flipped = frame.clone();
            flipped[frame.len() / 2] ^= 1;
            assert!(zstd::bulk::decompress(&flipped, size).is_err(), "{size}");
        }
    }

    #[test]
    fn a_frame_that_does_not_compress_is_stored_and_one_that_does_is_not() {
        // One piece, and several: a stored frame goes out in pieces, whose bytes together are
        // the frame's.
        for size in [600_000, 2 * PIECE_SIZE + 5] {
            let noise = incompressible(size, 4);
            let mut stored = Vec::new();
            stored_frame(&noise, &mut stored);
            assert!(alone(&noise, 6) == stored, "{size} bytes");
        }
        let noise = incompressible(600_000, 4);
        let text = compressible();
        assert!(alone(&text, 6).len() < text.len() / 2);
        // Half noise, half text: the text half is worth compressing.
        let mixed = [noise.as_slice(), &text].concat();
        assert!(alone(&mixed, 6).len() < noise.len() + text.len() / 2);
    }

    #[test]
    fn frames_are_the_same_bytes_whatever_the_worker_count() {
        let (text, noise) = (compressible(), incompressible(600_000, 1));
        let frames = |workers: u32| {
            let mut encoder = FrameEncoder::new(Vec::new(), 9, workers);
            for content in [&noise, &text] {
                encoder.write_all(content).expect("write");
                encoder.end_frame().expect("frame");
            }
            encoder.out
        };
        let one = frames(1);
        assert_eq!(frames(2), one);
        assert_eq!(frames(3), one);
    }

    #[test]
    fn reading_into_the_frame_gives_the_bytes_writing_does() {
        let content = [compressible(), incompressible(MAX_FRAME_SIZE, 2)].concat();
        let mut written = FrameEncoder::new(Vec::new(), 3, 2);
        written.write_all(&content).expect("write");
        written.end_frame().expect("frame");
        // Whole chunks, and short reads that leave less than a chunk before the frame's end
        // (which sliced past the frame's end and panicked).
        for most in [usize::MAX, 700_001] {
            let mut read = FrameEncoder::new(Vec::new(), 3, 2);
            let (mut reader, mut seen) = (Trickle(&content[..], most), Vec::new());
            let read_error = |e| BundleError::Compress(e);
            while read
                .read_from(
                    &mut reader,
                    usize::MAX,
                    &mut |b| seen.extend_from_slice(b),
                    &read_error,
                )
                .expect("read")
                > 0
            {}
            read.end_frame().expect("frame");
            assert_eq!(seen, content, "every byte inspected once, in order");
            assert_eq!(read.out, written.out);
            assert_eq!(read.table.num_frames(), 2, "one frame filled, one more");
        }
    }

    /// A reader giving at most `.1` bytes per read.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1);
            let mut head = &self.0[..n.min(self.0.len())];
            let n = head.read(buf)?;
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
}

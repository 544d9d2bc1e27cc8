//! Compression into independent zstd frames, logged in a seek table.
//!
//! Each frame holds at most [`MAX_FRAME_SIZE`] bytes, with its content size and an XXH64
//! content checksum in the frame header, and a window at least as large as the frame so the
//! frame is "single segment". Those three properties are part of the format: the reader refuses
//! frames without them, which leaves no byte in a frame header that could change without
//! changing what the frame decodes to. A frame that compresses is compressed whole from a
//! buffer; one that does not is stored (see [`super::stored`]), laid out from the buffer or, for
//! a large blob, straight from its file.
//!
//! zstd's entropy-coded blocks still have bits a decoder may ignore, so a last, skippable
//! *integrity frame* holds a sha256 over every compressed byte before it (see
//! [`crate::integrity`]): a flipped bit that zstd would decode to the very same content is
//! still a changed file. The encoder feeds that hash as it writes each frame; a frame copied
//! from the frame cache brings its recorded sha256 instead, where the kind allows it.

use std::collections::VecDeque;
use std::io::{self, Read, Seek, Write};
use std::ops::Range;

use zeekstd::SeekTable;
use zstd::zstd_safe::CParameter;

use super::frame_cache::EntryWriter;
use super::stored::{
    StoredRead, is_incompressible, read_block, read_samples, samples_incompressible,
    stored_frame_pieces,
};
use super::{MAX_FRAME_SIZE, WRITE_CHUNK};
use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;
use crate::format_version::IntegrityKind;
use crate::integrity::{INTEGRITY_FRAME_SIZE, IntegrityHash, integrity_frame};

/// zstd job size in multithreaded mode: small enough that both cores work on one frame.
const JOB_SIZE: i32 = 4 << 20;

/// Writes all of `bytes` to `out` in [`WRITE_CHUNK`] pieces and gives the buffer back.
pub(crate) fn write_in_chunks(
    out: &mut (impl Write + ?Sized),
    bytes: Vec<u8>,
) -> io::Result<Vec<u8>> {
    for chunk in bytes.chunks(WRITE_CHUNK) {
        out.write_all(chunk)?;
    }
    Ok(bytes)
}

/// Buffers bytes into frames and writes each frame compressed to `out`.
pub(crate) struct FrameEncoder<W: Write> {
    out: W,
    /// The integrity frame's hash, fed every frame as it is written.
    integrity: IntegrityHash,
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
    /// A frame-cache entry the frames are copied into while they are written, if one is open,
    /// and the number of its first frame.
    recording: Option<(EntryWriter, usize)>,
    /// Recorded entries waiting for the sha256s of their frames (numbered by `Range`), which
    /// the integrity hash reports once it is done with them: then they are put in place.
    sealing: VecDeque<(EntryWriter, Range<usize>)>,
    /// How many bytes of a copied frame its pieces wrote so far (see [`Self::copy_piece`]).
    copied: u32,
    /// Whether those pieces went by unhashed, counting on the frame's recorded sha256.
    copied_unhashed: bool,
}

impl<W: Write> FrameEncoder<W> {
    /// An encoder writing to `out`, ending with an integrity frame of `kind`.
    pub(crate) fn new(out: W, level: i32, workers: u32, kind: IntegrityKind) -> Self {
        Self {
            out,
            integrity: IntegrityHash::new(kind),
            frame: Vec::new(),
            filled: 0,
            compressed: Vec::new(),
            table: SeekTable::new(),
            level,
            workers: workers.max(1),
            compressor: None,
            probe: None,
            recording: None,
            sealing: VecDeque::new(),
            copied: 0,
            copied_unhashed: false,
        }
    }

    /// The kind of integrity frame the encoder ends with.
    pub(crate) fn integrity_kind(&self) -> IntegrityKind {
        self.integrity.kind()
    }

    /// Writes all of `bytes` and hands them to the integrity hash, which takes the buffer;
    /// returns a spent buffer to reuse (overwrite it).
    fn write_hashed(&mut self, bytes: Vec<u8>) -> io::Result<Vec<u8>> {
        let bytes = write_in_chunks(&mut self.out, bytes)?;
        Ok(self.integrity.update_owned(bytes))
    }

    /// Whether the next byte starts a frame.
    pub(crate) fn at_frame_start(&self) -> bool {
        self.filled == 0
    }

    /// The configured level for compressible frames.
    pub(crate) fn level(&self) -> i32 {
        self.level
    }

    /// Copies every frame ended from now on into `entry`, until [`Self::seal_recording`]. Only
    /// an encoder whose integrity frame lists the frames' sha256s records: an entry keeps
    /// each frame's sha256 for the writes that copy it.
    pub(crate) fn record(&mut self, entry: EntryWriter) {
        if self.integrity.kind() == IntegrityKind::FrameList {
            self.recording = Some((entry, self.integrity.frame_count()));
        }
    }

    /// Ends the entry being recorded, if recording did not fail on the way: it is put in
    /// place once the sha256s of its frames are known, without waiting for them here.
    pub(crate) fn seal_recording(&mut self) {
        if let Some((entry, first)) = self.recording.take() {
            let frames = first..self.integrity.frame_count();
            self.sealing.push_back((entry, frames));
            self.seal_ready(false);
        }
    }

    /// Puts in place the waiting entries whose frames' sha256s are known (all of them, waiting
    /// for the hash, with `wait`). An entry that cannot be written is given up: the cache only
    /// saves time.
    fn seal_ready(&mut self, wait: bool) {
        while let Some((_, frames)) = self.sealing.front() {
            match self.integrity.frame_digests(frames.clone(), wait) {
                Ok(Some(digests)) => {
                    if let Some((entry, _)) = self.sealing.pop_front() {
                        let _ = entry.finish(&digests);
                    }
                }
                Ok(None) => return,
                Err(_) => return self.sealing.clear(),
            }
        }
    }

    /// Writes the first bytes of an already compressed frame, ahead of the rest: the frame
    /// counts only once [`Self::copy_frame`] ends it. They are hashed only if the integrity
    /// frame needs every byte; otherwise the frame's recorded sha256 must come with its end.
    /// Returns a buffer to reuse.
    pub(crate) fn copy_piece(&mut self, piece: Vec<u8>) -> Result<Vec<u8>, BundleError> {
        debug_assert!(self.filled == 0, "a copied frame would split a pending one");
        self.copied += piece.len() as u32;
        if self.integrity.kind() == IntegrityKind::WholeFile {
            return self.write_hashed(piece).map_err(BundleError::Output);
        }
        self.copied_unhashed = true;
        write_in_chunks(&mut self.out, piece).map_err(BundleError::Output)
    }

    /// Writes an already compressed frame of `decompressed` bytes (or its last bytes, after
    /// its pieces), which the caller checked is one whole frame, and returns a buffer to reuse
    /// for the next one. `sha256` is the whole frame's, if the caller has it recorded: the
    /// integrity frame then takes it instead of hashing the bytes, where its kind allows. The
    /// current frame must be empty.
    pub(crate) fn copy_frame(
        &mut self,
        compressed: Vec<u8>,
        decompressed: u32,
        sha256: Option<Sha256Digest>,
    ) -> Result<Vec<u8>, BundleError> {
        debug_assert!(self.filled == 0, "a copied frame would split a pending one");
        let size = std::mem::take(&mut self.copied) + compressed.len() as u32;
        let unhashed = std::mem::take(&mut self.copied_unhashed);
        let spare = match sha256 {
            Some(sha256) if self.integrity.known_frame(sha256) => {
                write_in_chunks(&mut self.out, compressed).map_err(BundleError::Output)?
            }
            _ if unhashed => {
                return Err(BundleError::Output(io::Error::other(
                    "a copied frame's first pieces went unhashed, and its sha256 is not known",
                )));
            }
            _ => {
                let spare = self.write_hashed(compressed).map_err(BundleError::Output)?;
                self.integrity.end_frame().map_err(BundleError::Output)?;
                spare
            }
        };
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
        let content = std::mem::take(&mut self.filled);
        if is_incompressible(&self.frame[..content], &mut self.probe)? {
            // The frame's buffer is lent out while its bytes are laid out, and comes back.
            let frame = std::mem::take(&mut self.frame);
            let mut rest = &frame[..content];
            let written = self.write_stored(content, &mut |out, len| {
                let (block, after) = rest.split_at(len);
                out.extend_from_slice(block);
                rest = after;
                Ok(())
            });
            self.frame = frame;
            return self.log_frame(written.map_err(BundleError::Output)?, content);
        }
        self.compress(content)?;
        let compressed = std::mem::take(&mut self.compressed);
        self.record_frame(|entry| entry.frame(&compressed, content));
        let size = compressed.len();
        // The hash takes the frame's own buffer and hands back another for the next one.
        self.compressed = self.write_hashed(compressed).map_err(BundleError::Output)?;
        self.log_frame(size, content)
    }

    /// Writes a stored frame of `size` content bytes, which `fill` appends a block at a time
    /// (see [`stored_frame_pieces`]), and records it in the frame-cache entry, if one is open;
    /// returns its size, for the caller to log. The current frame must be empty. An error of
    /// `fill` is returned as it gave it.
    ///
    /// Frames of data that does not compress are written this way rather than by zstd's
    /// compressor: at any level, zstd would search every position of those bytes for matches
    /// it does not find and then emit nearly the same raw blocks (the search was a fifth of a
    /// cold build's CPU). The zstd library has no such "store" mode of its own. The frame goes
    /// out in pieces of [`PIECE_SIZE`](super::PIECE_SIZE), so the output's hash starts on the
    /// first while the next is laid out.
    fn write_stored(
        &mut self,
        size: usize,
        fill: &mut dyn FnMut(&mut Vec<u8>, usize) -> io::Result<()>,
    ) -> io::Result<usize> {
        debug_assert!(self.filled == 0, "a stored frame would split a pending one");
        let mut written = 0;
        let (last, checksum) = stored_frame_pieces(
            size,
            std::mem::take(&mut self.compressed),
            fill,
            &mut |piece| {
                written += piece.len();
                let piece = write_in_chunks(&mut self.out, piece)?;
                Ok(self.integrity.update_owned(piece))
            },
        )?;
        written += last.len();
        self.compressed = self.write_hashed(last)?;
        self.record_frame(|entry| entry.stored(size, checksum));
        Ok(written)
    }

    /// Lays out the next frame of `file` as a stored frame read straight from the file into its
    /// pieces, if its samples say it does not compress: then no frame buffer holds it, and the
    /// output's hash starts on its first piece instead of after 32 MiB were read and checked.
    /// The frame is the next [`MAX_FRAME_SIZE`] bytes of the `left` the file still has, then,
    /// if those are all of them, `tail` zeros (the tar padding). `inspect` sees the file's bytes
    /// in order. `None` when the frame compresses: nothing was read then, and [`Self::read_from`]
    /// reads it into the frame, where [`Self::end_frame`] samples the same bytes and compresses
    /// it. The frame must start here.
    pub(crate) fn store_from(
        &mut self,
        file: &mut (impl Read + Seek),
        left: u64,
        tail: usize,
        inspect: &mut dyn FnMut(&[u8]),
        read_error: &dyn Fn(io::Error) -> BundleError,
    ) -> Result<Option<StoredRead>, BundleError> {
        let in_file = left.min(MAX_FRAME_SIZE as u64);
        let len = in_file as usize + if in_file == left { tail } else { 0 };
        let Some(samples) = read_samples(file, in_file, len).map_err(read_error)? else {
            return Ok(None);
        };
        if !samples_incompressible(samples.iter().map(Vec::as_slice), &mut self.probe)? {
            return Ok(None);
        }
        let (mut unread, mut failed) = (in_file, None);
        let written = self.write_stored(len, &mut |out, block| {
            let start = out.len();
            let read = read_block(file, &mut unread, out, block).map_err(|error| {
                let kind = error.kind();
                failed = Some(error);
                io::Error::from(kind)
            })?;
            inspect(&out[start..start + read]);
            Ok(())
        });
        match (written, failed) {
            (Ok(written), _) => {
                self.log_frame(written, len)?;
                Ok(Some(StoredRead {
                    read: in_file,
                    short: false,
                }))
            }
            // The file ended early: what was read of it is told, and the caller finds it short.
            (Err(_), Some(error)) if error.kind() == io::ErrorKind::UnexpectedEof => {
                Ok(Some(StoredRead {
                    read: in_file - unread,
                    short: true,
                }))
            }
            (Err(_), Some(error)) => Err(read_error(error)),
            (Err(error), None) => Err(BundleError::Output(error)),
        }
    }

    /// Ends a frame of `size` bytes holding `content` bytes, all of them hashed: in the
    /// integrity hash and in the seek table.
    fn log_frame(&mut self, size: usize, content: usize) -> Result<(), BundleError> {
        self.integrity.end_frame().map_err(BundleError::Output)?;
        self.table
            .log_frame(size as u32, content as u32)
            .map_err(|e| BundleError::Compress(io::Error::other(e)))?;
        self.seal_ready(false);
        Ok(())
    }

    /// Compresses the first `content` bytes of the frame into `self.compressed`.
    fn compress(&mut self, content: usize) -> Result<(), BundleError> {
        let frame = &self.frame[..content];
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
        if let Some((entry, _)) = &mut self.recording
            && frame(entry).is_err()
        {
            self.recording = None;
        }
    }

    /// Appends the integrity frame and the seek table, and returns the output.
    pub(crate) fn finish(mut self) -> Result<W, BundleError> {
        self.end_frame()?;
        self.seal_ready(true);
        let kind = self.integrity.kind();
        let digest = self.integrity.finish().map_err(BundleError::Output)?;
        let frame = integrity_frame(kind, &digest);
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

impl<W: Write> Write for FrameEncoder<W> {
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
    use crate::write::PIECE_SIZE;
    use crate::write::stored::tests::stored_frame;

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
        let mut encoder = FrameEncoder::new(Vec::new(), level, 2, IntegrityKind::FrameList);
        encoder.write_all(content).expect("write");
        encoder.end_frame().expect("frame");
        encoder.out
    }

    #[test]
    fn a_frame_is_the_same_whatever_frames_the_encoder_compressed_before() {
        for level in [3, 9] {
            let (text, noise) = (compressible(), incompressible(600_000, 0));
            let mut encoder = FrameEncoder::new(Vec::new(), level, 2, IntegrityKind::FrameList);
            let mut expected = Vec::new();
            for content in [&noise, &text, &noise[..5000], &text, &noise] {
                encoder.write_all(content).expect("write");
                encoder.end_frame().expect("frame");
                expected.extend(alone(content, level));
            }
            assert_eq!(encoder.out, expected, "level {level}");
        }
    }

    #[test]
    fn a_frame_that_does_not_compress_is_stored_and_one_that_does_is_not() {
        // One piece, and several: a stored frame goes out in pieces, whose bytes together are
        // the frame's.
        for size in [600_000, 2 * PIECE_SIZE + 5] {
            let noise = incompressible(size, 4);
            assert!(alone(&noise, 6) == stored_frame(&noise), "{size} bytes");
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
            let mut encoder = FrameEncoder::new(Vec::new(), 9, workers, IntegrityKind::FrameList);
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
        let mut written = FrameEncoder::new(Vec::new(), 3, 2, IntegrityKind::FrameList);
        written.write_all(&content).expect("write");
        written.end_frame().expect("frame");
        // Whole chunks, and short reads that leave less than a chunk before the frame's end
        // (which sliced past the frame's end and panicked).
        for most in [usize::MAX, 700_001] {
            let mut read = FrameEncoder::new(Vec::new(), 3, 2, IntegrityKind::FrameList);
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

    /// A blob's frames laid out straight from its file (stored ones) are the bytes the frame
    /// buffer gives them: the same frames, cut at the same places, stored or compressed alike,
    /// the tar padding inside the last one.
    #[test]
    fn frames_stored_from_the_file_are_the_bytes_the_frame_buffer_gives() {
        let tail = 3;
        let cases = [
            // Stored, compressed, then a stored last frame, and one too small to sample.
            [
                incompressible(MAX_FRAME_SIZE, 5),
                compressible(),
                incompressible(PIECE_SIZE + 9, 6),
            ]
            .concat(),
            [incompressible(MAX_FRAME_SIZE, 7), vec![7; 100]].concat(),
            // A last frame whose third sample would lie in the padding.
            incompressible(MAX_FRAME_SIZE + 5000, 8),
        ];
        for content in cases {
            let mut buffered = FrameEncoder::new(Vec::new(), 3, 2, IntegrityKind::FrameList);
            buffered.write_all(&content).expect("write");
            buffered.write_all(&vec![0; tail]).expect("padding");
            buffered.end_frame().expect("frame");

            let mut file = io::Cursor::new(&content);
            let mut streamed = FrameEncoder::new(Vec::new(), 3, 2, IntegrityKind::FrameList);
            let (mut seen, mut read, mut stored, mut padded) = (Vec::new(), 0, 0, false);
            let read_error = |e| BundleError::Compress(e);
            while read < content.len() as u64 {
                let left = content.len() as u64 - read;
                let last_tail = if left <= MAX_FRAME_SIZE as u64 {
                    tail
                } else {
                    0
                };
                let mut inspect = |b: &[u8]| seen.extend_from_slice(b);
                if streamed.at_frame_start()
                    && let Some(done) = streamed
                        .store_from(&mut file, left, last_tail, &mut inspect, &read_error)
                        .expect("store")
                {
                    assert!(!done.short);
                    (read, stored) = (read + done.read, stored + 1);
                    padded = read == content.len() as u64;
                    continue;
                }
                let limit = usize::try_from(left).expect("fits");
                read += streamed
                    .read_from(&mut file, limit, &mut inspect, &read_error)
                    .expect("read") as u64;
            }
            if !padded {
                streamed.write_all(&vec![0; tail]).expect("padding");
            }
            streamed.end_frame().expect("frame");
            assert_eq!(seen, content, "every byte inspected once, in order");
            assert!(stored >= 1, "no frame was stored from the file");
            assert_eq!(streamed.table.num_frames(), buffered.table.num_frames());
            assert!(streamed.out == buffered.out, "{} bytes", content.len());
        }
    }

    /// A file that ends before its frame does is told short, with what it had.
    #[test]
    fn a_file_shorter_than_its_frame_is_told_short() {
        let content = incompressible(PIECE_SIZE * 2, 9);
        let mut file = io::Cursor::new(&content);
        let mut encoder = FrameEncoder::new(Vec::new(), 3, 2, IntegrityKind::FrameList);
        let read_error = |e| BundleError::Compress(e);
        let told = encoder
            .store_from(
                &mut file,
                content.len() as u64 + 1000,
                0,
                &mut |_| {},
                &read_error,
            )
            .expect("no error of its own");
        assert_eq!(
            told,
            Some(StoredRead {
                read: content.len() as u64,
                short: true
            })
        );
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

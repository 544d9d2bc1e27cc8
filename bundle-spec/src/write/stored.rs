//! Stored frames: whether a frame is stored rather than compressed, and how one is laid out.
//!
//! Data that is already compressed (gzip layers, `.tgz` charts, tarballs) gains nothing from
//! zstd, so a frame whose samples do not shrink is *stored*: written as one zstd frame of raw
//! blocks, which any decoder reads (SPEC §2.1). Its bytes depend on nothing but its content, so
//! it can be laid out in pieces as its content is read, from the frame buffer, from a blob
//! file, or again from a blob file for a frame-cache entry, which records only its checksum.

use std::io::{self, Read, Seek, SeekFrom};

use xxhash_rust::xxh64::Xxh64;

use super::PIECE_SIZE;
use crate::bundle_error::BundleError;

/// Frames whose samples shrink less than this (in percent) at level 1 are stored: they hold
/// already-compressed data (gzip layers, tarballs), where compressing only costs time.
const INCOMPRESSIBLE_PERCENT: usize = 95;
/// How many samples of a frame decide whether it is worth compressing, and their size.
const SAMPLES: usize = 4;
const SAMPLE_SIZE: usize = 64 << 10;
/// The largest block zstd allows (RFC 8878, `Block_Maximum_Size`): a stored frame is cut into
/// blocks of this size.
const STORED_BLOCK: usize = 128 << 10;

/// Lays out the stored frame of `size` content bytes in pieces: one zstd frame of raw blocks
/// (RFC 8878 §3.1.1), single segment, with its content size and its content's checksum, as
/// every frame of a bundle. `fill` appends each block's `len` content bytes, in order, to the
/// piece being laid out (`piece` first); each time a piece holds [`PIECE_SIZE`] bytes or more,
/// `send` takes it and gives back an empty buffer for the next. Returns the last piece, which
/// ends the frame, and the content's XXH64, computed over what `fill` appended.
///
/// A frame-cache entry of a stored frame records only that checksum: the frame is built again
/// from the blob file this way, and is then only as right as its content, which the checksum
/// checks.
pub(crate) fn stored_frame_pieces(
    size: usize,
    mut piece: Vec<u8>,
    fill: &mut dyn FnMut(&mut Vec<u8>, usize) -> io::Result<()>,
    send: &mut dyn FnMut(Vec<u8>) -> io::Result<Vec<u8>>,
) -> io::Result<(Vec<u8>, u64)> {
    const SINGLE_SEGMENT: u8 = 1 << 5;
    const CHECKSUM: u8 = 1 << 2;
    // A piece's worth of room at once: a fresh buffer is not grown block by block.
    let room = |piece: &mut Vec<u8>| {
        piece.clear();
        piece.reserve(PIECE_SIZE + STORED_BLOCK);
    };
    room(&mut piece);
    let wide = size as u64;
    // Frame_Content_Size's field: 1, 2 (minus 256), 4 or 8 bytes, as zstd itself chooses.
    let (code, field): (u8, Vec<u8>) = match wide {
        0..=255 => (0, vec![wide as u8]),
        256..=65_791 => (1, ((wide - 256) as u16).to_le_bytes().to_vec()),
        65_792..=0xFFFF_FFFF => (2, (wide as u32).to_le_bytes().to_vec()),
        _ => (3, wide.to_le_bytes().to_vec()),
    };
    piece.extend_from_slice(&zstd::zstd_safe::MAGICNUMBER.to_le_bytes());
    piece.push(code << 6 | SINGLE_SEGMENT | CHECKSUM);
    piece.extend_from_slice(&field);
    if size == 0 {
        // An empty frame is one empty last block.
        piece.extend_from_slice(&[1, 0, 0]);
    }
    let mut checksum = Xxh64::new(0);
    let mut done = 0;
    while done < size {
        if piece.len() >= PIECE_SIZE {
            piece = send(piece)?;
            room(&mut piece);
        }
        let len = STORED_BLOCK.min(size - done);
        done += len;
        // Block_Header: Last_Block (bit 0), Block_Type 0 = raw (bits 1-2), Block_Size.
        let header = (len as u32) << 3 | u32::from(done == size);
        piece.extend_from_slice(&header.to_le_bytes()[..3]);
        let start = piece.len();
        fill(&mut piece, len)?;
        if piece.len() != start + len {
            return Err(io::Error::other(
                "a stored block was not filled to its size",
            ));
        }
        checksum.update(&piece[start..]);
    }
    let checksum = checksum.digest();
    piece.extend_from_slice(&(checksum as u32).to_le_bytes());
    Ok((piece, checksum))
}

/// Appends the `len` bytes of a stored block to `out`: what is left of the `in_file` bytes
/// `file` still has for the frame (read straight into `out`), then zeros (the tar padding that
/// ends a blob's last frame, which its file does not hold). Returns how many came from the
/// file. A file that ends early is `UnexpectedEof`.
pub(crate) fn read_block(
    file: &mut impl Read,
    in_file: &mut u64,
    out: &mut Vec<u8>,
    len: usize,
) -> io::Result<usize> {
    let from_file = (*in_file).min(len as u64);
    let start = out.len();
    file.take(from_file).read_to_end(out)?;
    let read = out.len() - start;
    if read as u64 != from_file {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    *in_file -= from_file;
    out.resize(start + len, 0);
    Ok(read)
}

/// What [`FrameEncoder::store_from`](super::frames::FrameEncoder::store_from) read of its file:
/// how many bytes, and whether the file ended before the frame did (the frame is then
/// incomplete, and the write must fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoredRead {
    pub(crate) read: u64,
    pub(crate) short: bool,
}

/// The samples of a frame of `len` bytes starting at `file`'s position, whose first `in_file`
/// bytes are the file's and the rest zeros, that decide whether it is stored (see
/// [`sample_ranges`]); `None` for a frame too small to sample, or a file that ends early
/// (reading the frame then finds that). The file is left where it was.
pub(super) fn read_samples(
    file: &mut (impl Read + Seek),
    in_file: u64,
    len: usize,
) -> io::Result<Option<Vec<Vec<u8>>>> {
    let Some(ranges) = sample_ranges(len) else {
        return Ok(None);
    };
    let start = file.stream_position()?;
    let mut samples = Vec::with_capacity(ranges.len());
    for range in ranges {
        let mut sample = vec![0; range.len()];
        let from_file = in_file
            .saturating_sub(range.start as u64)
            .min(range.len() as u64);
        file.seek(SeekFrom::Start(start + range.start as u64))?;
        match file.read_exact(&mut sample[..from_file as usize]) {
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                file.seek(SeekFrom::Start(start))?;
                return Ok(None);
            }
            result => result?,
        }
        samples.push(sample);
    }
    file.seek(SeekFrom::Start(start))?;
    Ok(Some(samples))
}

/// Where a frame of `len` bytes is sampled to decide whether it is stored (see
/// [`is_incompressible`]); `None` for a frame too small to sample, which is compressed.
fn sample_ranges(len: usize) -> Option<[std::ops::Range<usize>; SAMPLES]> {
    (len >= 4096).then(|| {
        std::array::from_fn(|n| {
            let start = len / SAMPLES * n;
            start..len.min(start + SAMPLE_SIZE)
        })
    })
}

/// Whether `frame` holds already-compressed data: each of [`SAMPLES`] samples, spread over the
/// frame, shrinks less than [`INCOMPRESSIBLE_PERCENT`] at level 1. A frame with a part that
/// compresses is compressed, since storing it would give up all of that part. Frames too small
/// to sample count as compressible.
pub(super) fn is_incompressible(
    frame: &[u8],
    probe: &mut Option<zstd::bulk::Compressor<'static>>,
) -> Result<bool, BundleError> {
    match sample_ranges(frame.len()) {
        Some(ranges) => samples_incompressible(ranges.into_iter().map(|r| &frame[r]), probe),
        None => Ok(false),
    }
}

/// Whether every one of `samples` shrinks less than [`INCOMPRESSIBLE_PERCENT`] at level 1 in
/// `probe` (created on first use).
pub(super) fn samples_incompressible<'a>(
    samples: impl Iterator<Item = &'a [u8]>,
    probe: &mut Option<zstd::bulk::Compressor<'static>>,
) -> Result<bool, BundleError> {
    let probe = match probe {
        Some(probe) => probe,
        None => probe.insert(zstd::bulk::Compressor::new(1).map_err(BundleError::Compress)?),
    };
    for sample in samples {
        let compressed = probe.compress(sample).map_err(BundleError::Compress)?;
        if compressed.len() * 100 < sample.len() * INCOMPRESSIBLE_PERCENT {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::test_support::incompressible;

    /// `content` as one stored frame, its pieces joined, as the writer writes it.
    pub(crate) fn stored_frame(content: &[u8]) -> Vec<u8> {
        let (mut rest, mut frame) = (content, Vec::new());
        let (last, checksum) = stored_frame_pieces(
            content.len(),
            Vec::new(),
            &mut |out, len| {
                let (block, after) = rest.split_at(len);
                out.extend_from_slice(block);
                rest = after;
                Ok(())
            },
            &mut |piece| {
                assert!(piece.len() >= PIECE_SIZE, "a piece is sent only once full");
                frame.extend_from_slice(&piece);
                Ok(Vec::new())
            },
        )
        .expect("copying from a slice into a Vec cannot fail");
        assert_eq!(checksum, xxhash_rust::xxh64::xxh64(content, 0));
        frame.extend_from_slice(&last);
        frame
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
            let frame = stored_frame(content);
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
}

//! The seek table, and decoding the frames it lists one at a time with every check the format
//! requires of a frame.

use std::io::{self, Read, Seek, SeekFrom};

use zeekstd::SeekTable;

use super::MemberHeader;
use crate::bundle_error::{BundleError, FrameProblem};
use crate::digest::Sha256Digest;
use crate::format_version::IntegrityKind;
use crate::integrity::{INTEGRITY_FRAME_SIZE, IntegrityHash, integrity_frame, tag_of};
use crate::member::{BLOCK, MAX_MEMBERS, padding};
use crate::write::MAX_FRAME_SIZE;

/// The zstd frame magic number, little-endian on disk.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// No frame holding the whole frame limit is smaller than this: zstd blocks hold at most
/// 128 KiB, and the cheapest block (a run of one byte) takes 4 bytes, so 256 of them.
const MIN_FULL_FRAME_SIZE: u64 = 1024;
/// The seek table's last 9 bytes: frame count, descriptor, magic.
const SEEK_FOOTER_SIZE: usize = 9;
/// The seekable format's magic number, at the very end.
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;

/// The most frames a valid bundle of `len` bytes lists (SPEC §2.3): within a member every frame
/// but the first and the last holds the whole frame limit, so at most `len / 1024` frames are
/// full, and at most two per member (of at most [`MAX_MEMBERS`]) plus the end marker are not.
pub(crate) fn max_frames(len: u64) -> u64 {
    len / MIN_FULL_FRAME_SIZE + 2 * MAX_MEMBERS + 2
}

/// Refuses a seek table that lists more frames than the file can hold, from its footer alone,
/// before anything is allocated for the frames: a crafted count would otherwise cost memory many
/// times the file's size.
fn check_frame_count<S: Read + Seek>(source: &mut S, len: u64) -> Result<(), BundleError> {
    let Some(start) = len.checked_sub(SEEK_FOOTER_SIZE as u64) else {
        // Too short to hold a seek table; the parser says so.
        return Ok(());
    };
    let mut footer = [0u8; SEEK_FOOTER_SIZE];
    source
        .seek(SeekFrom::Start(start))
        .map_err(BundleError::Read)?;
    source.read_exact(&mut footer).map_err(BundleError::Read)?;
    let magic = u32::from_le_bytes([footer[5], footer[6], footer[7], footer[8]]);
    let count = u64::from(u32::from_le_bytes([
        footer[0], footer[1], footer[2], footer[3],
    ]));
    if magic == SEEKABLE_MAGIC && count > max_frames(len) {
        return Err(BundleError::SeekTable(format!(
            "it lists {count} frames, more than a bundle of {len} bytes can hold ({})",
            max_frames(len)
        )));
    }
    Ok(())
}

/// One frame as the seek table places it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    /// Offset of the compressed frame in the bundle.
    pub(crate) compressed_offset: u64,
    /// Compressed size.
    pub(crate) compressed_size: u64,
    /// Offset of the frame's content in the tar stream.
    pub(crate) offset: u64,
    /// Decompressed size.
    pub(crate) size: u64,
}

/// The frames of a bundle, read from and checked against its trailing seek table.
#[derive(Debug, Clone)]
pub(crate) struct FrameTable {
    /// The data frames; the integrity frame that follows them is not among them.
    pub(crate) frames: Vec<Frame>,
    /// Where the integrity frame starts, i.e. the size of all data frames.
    pub(crate) integrity_offset: u64,
    /// The kind of integrity frame its tag names (checked against the format version once the
    /// description is read).
    pub(crate) integrity_kind: IntegrityKind,
    /// Where the seek table starts in the bundle, i.e. the size of all frames.
    pub(crate) table_offset: u64,
    /// The seek table's bytes as a writer would produce them for these frames.
    pub(crate) table_bytes: Vec<u8>,
}

impl FrameTable {
    /// Reads the seek table at the end of `source`, and checks that it is exactly the table a
    /// writer produces for its frames, that the frames fill the bundle up to it, and that no
    /// frame exceeds the size limits.
    pub(crate) fn read<S: Read + Seek>(source: &mut S) -> Result<Self, BundleError> {
        let len = source.seek(SeekFrom::End(0)).map_err(BundleError::Read)?;
        check_frame_count(source, len)?;
        let table = SeekTable::from_seekable(source)
            .map_err(|e| BundleError::SeekTable(format!("no valid seek table at the end ({e})")))?;
        let table_bytes = serialize(&table);
        let table_offset = len.checked_sub(table_bytes.len() as u64).ok_or_else(|| {
            BundleError::SeekTable("the seek table is larger than the file".into())
        })?;
        let count = table.num_frames();
        let integrity = count
            .checked_sub(1)
            .ok_or_else(|| BundleError::SeekTable("it lists no frame".into()))?;
        let integrity_entry = (
            table
                .frame_size_comp(integrity)
                .map_err(|e| seek_error(&e))?,
            table
                .frame_size_decomp(integrity)
                .map_err(|e| seek_error(&e))?,
        );
        if integrity_entry != (INTEGRITY_FRAME_SIZE as u64, 0) {
            return Err(BundleError::SeekTable(format!(
                "its last frame is {integrity_entry:?} (compressed, decompressed) bytes, not the integrity frame"
            )));
        }
        let mut frames = Vec::with_capacity(count as usize);
        let (mut compressed_offset, mut offset) = (0, 0);
        for i in 0..integrity {
            let compressed_size = table.frame_size_comp(i).map_err(|e| seek_error(&e))?;
            let size = table.frame_size_decomp(i).map_err(|e| seek_error(&e))?;
            if size == 0 || size > MAX_FRAME_SIZE as u64 {
                return Err(BundleError::SeekTable(format!(
                    "frame {i} holds {size} bytes; frames hold 1 to {MAX_FRAME_SIZE}"
                )));
            }
            if compressed_size > zstd::zstd_safe::compress_bound(size as usize) as u64 {
                return Err(BundleError::SeekTable(format!(
                    "frame {i} is {compressed_size} bytes compressed, more than zstd can produce"
                )));
            }
            frames.push(Frame {
                compressed_offset,
                compressed_size,
                offset,
                size,
            });
            compressed_offset += compressed_size;
            offset += size;
        }
        let integrity_offset = compressed_offset;
        if integrity_offset + INTEGRITY_FRAME_SIZE as u64 != table_offset {
            return Err(BundleError::SeekTable(format!(
                "the frames end at byte {}, but the seek table starts at byte {table_offset}",
                integrity_offset + INTEGRITY_FRAME_SIZE as u64
            )));
        }
        let integrity_kind = read_integrity_kind(source, integrity_offset)?;
        let mut tail = vec![0; table_bytes.len()];
        source
            .seek(SeekFrom::Start(table_offset))
            .map_err(BundleError::Read)?;
        source.read_exact(&mut tail).map_err(BundleError::Read)?;
        if tail != table_bytes {
            return Err(BundleError::SeekTable(
                "the seek table is not in canonical form".into(),
            ));
        }
        Ok(Self {
            frames,
            integrity_offset,
            integrity_kind,
            table_offset,
            table_bytes,
        })
    }

    /// Reads the integrity frame and checks it against `digest`, the hash of its kind over the
    /// data frames.
    pub(crate) fn check_integrity<S: Read + Seek>(
        &self,
        source: &mut S,
        digest: Sha256Digest,
    ) -> Result<(), BundleError> {
        let mut frame = [0u8; INTEGRITY_FRAME_SIZE];
        source
            .seek(SeekFrom::Start(self.integrity_offset))
            .map_err(BundleError::Read)?;
        source
            .read_exact(&mut frame)
            .map_err(|e| crate::bundle_error::from_io(e, BundleError::Read))?;
        if frame[..] != integrity_frame(self.integrity_kind, &digest)[..] {
            return Err(BundleError::Integrity {
                offset: self.integrity_offset,
            });
        }
        Ok(())
    }

    /// The size of the tar stream the frames hold.
    pub(crate) fn content_size(&self) -> u64 {
        self.frames.last().map_or(0, |f| f.offset + f.size)
    }

    /// Where `member` (header, content, padding) ends in the tar stream, if the stream holds it:
    /// the size comes from the file, so it is checked before any offset is computed from it.
    pub(crate) fn member_end(&self, member: &MemberHeader) -> Result<u64, BundleError> {
        let available = self
            .content_size()
            .saturating_sub(member.offset.saturating_add(BLOCK));
        let padded = member.size.checked_add(padding(member.size));
        match padded.filter(|padded| *padded <= available) {
            Some(padded) => Ok(member.offset + BLOCK + padded),
            None => Err(BundleError::MemberTooLong {
                member: member.path.clone(),
                size: member.size,
                available,
            }),
        }
    }

    /// The index of the frame that starts at tar offset `offset`, if one does.
    pub(crate) fn frame_starting_at(&self, offset: u64) -> Option<usize> {
        self.frames.binary_search_by_key(&offset, |f| f.offset).ok()
    }
}

/// The kind of the integrity frame at `offset`, from its tag.
fn read_integrity_kind<S: Read + Seek>(
    source: &mut S,
    offset: u64,
) -> Result<IntegrityKind, BundleError> {
    let mut frame = [0u8; INTEGRITY_FRAME_SIZE];
    source
        .seek(SeekFrom::Start(offset))
        .map_err(BundleError::Read)?;
    source
        .read_exact(&mut frame)
        .map_err(|e| crate::bundle_error::from_io(e, BundleError::Read))?;
    let tag = tag_of(&frame).unwrap_or_default();
    IntegrityKind::from_tag(tag).ok_or_else(|| BundleError::IntegrityTag {
        offset,
        tag: tag.escape_ascii().to_string(),
    })
}

fn serialize(table: &SeekTable) -> Vec<u8> {
    let mut bytes = Vec::new();
    table
        .clone()
        .into_serializer()
        .read_to_end(&mut bytes)
        .expect("serialising into memory cannot fail");
    bytes
}

fn seek_error(error: &zeekstd::Error) -> BundleError {
    BundleError::SeekTable(error.to_string())
}

/// Checks the frame header rules of the format: single segment, content size present in its
/// shortest encoding and equal to `size`, content checksum present, no dictionary.
fn check_frame_header(bytes: &[u8], size: u64) -> Result<(), FrameProblem> {
    if bytes.get(..4) != Some(&ZSTD_MAGIC[..]) {
        return Err(FrameProblem::NoMagic);
    }
    let descriptor = *bytes.get(4).ok_or(FrameProblem::TooShort)?;
    // Bits: 7-6 content size field size, 5 single segment, 4 unused, 3 reserved,
    // 2 content checksum, 1-0 dictionary id size.
    let expected_flag: u8 = match size {
        0..=255 => 0,
        256..=65_791 => 1,
        65_792..=0xffff_ffff => 2,
        _ => 3,
    };
    let expected = (expected_flag << 6) | 0b0010_0100;
    if descriptor != expected {
        return Err(FrameProblem::Descriptor {
            found: descriptor,
            expected,
        });
    }
    let field = match expected_flag {
        0 => bytes.get(5..6).map(|b| u64::from(b[0])),
        1 => bytes
            .get(5..7)
            .map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])) + 256),
        2 => bytes
            .get(5..9)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        _ => bytes
            .get(5..13)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())),
    };
    match field {
        Some(value) if value == size => Ok(()),
        Some(value) => Err(FrameProblem::ContentSize {
            header: value,
            table: size,
        }),
        None => Err(FrameProblem::TooShort),
    }
}

/// Decodes frames in order and serves their content as one stream.
pub(crate) struct FrameReader<'a, S> {
    source: &'a mut S,
    table: &'a FrameTable,
    next: usize,
    compressed: Vec<u8>,
    content: Vec<u8>,
    position: usize,
    decompressor: zstd::bulk::Decompressor<'static>,
    /// The integrity frame's hash of the frames read so far, when reading started at frame 0.
    file_hash: Option<IntegrityHash>,
}

impl<'a, S: Read + Seek> FrameReader<'a, S> {
    /// A reader starting at frame `first`.
    pub(crate) fn new(
        source: &'a mut S,
        table: &'a FrameTable,
        first: usize,
    ) -> Result<Self, BundleError> {
        Ok(Self {
            source,
            table,
            next: first,
            compressed: Vec::new(),
            content: Vec::new(),
            position: 0,
            decompressor: zstd::bulk::Decompressor::new().map_err(BundleError::Read)?,
            file_hash: (first == 0).then(|| IntegrityHash::new(table.integrity_kind)),
        })
    }

    /// The tar offset of the next byte `read` returns.
    pub(crate) fn offset(&self) -> u64 {
        match self.next.checked_sub(1) {
            Some(current) => self.table.frames[current].offset + self.position as u64,
            None => 0,
        }
    }

    /// The frames being read.
    pub(crate) fn table(&self) -> &FrameTable {
        self.table
    }

    /// Whether the next byte is the first of a frame.
    pub(crate) fn at_frame_start(&self) -> bool {
        let current_done = self.position == self.content.len();
        (self.position == 0 && !self.content.is_empty())
            || (current_done && self.next < self.table.frames.len())
    }

    /// Whether every frame has been read to its end.
    pub(crate) fn at_end(&self) -> bool {
        self.position == self.content.len() && self.next == self.table.frames.len()
    }

    /// The integrity frame's hash of all data frames, once they were all read from the first
    /// (asked once).
    pub(crate) fn file_digest(&mut self) -> Option<Sha256Digest> {
        let done = self.next == self.table.frames.len();
        self.file_hash.take().filter(|_| done)?.finish().ok()
    }

    /// The first tar block of the frame that failed to load, decoded as far as it goes: when a
    /// frame is damaged after its start, this still names the member it holds.
    pub(crate) fn salvage_first_block(&mut self) -> Option<[u8; 512]> {
        let frame = self.table.frames.get(self.next)?;
        // A frame whose header is damaged has no readable start; a corrupt later block still
        // leaves the first ones decodable.
        let compressed = self
            .compressed
            .get(..usize::try_from(frame.compressed_size).ok()?)?;
        let mut decoder = zstd::stream::read::Decoder::new(compressed).ok()?;
        let mut block = [0u8; 512];
        decoder.read_exact(&mut block).ok()?;
        Some(block)
    }

    fn load_next(&mut self) -> Result<bool, BundleError> {
        let Some(frame) = self.table.frames.get(self.next).copied() else {
            return Ok(false);
        };
        let index = self.next;
        let corrupt = |reason: FrameProblem| BundleError::Frame {
            index,
            offset: frame.compressed_offset,
            reason,
        };
        self.compressed.resize(frame.compressed_size as usize, 0);
        self.source
            .seek(SeekFrom::Start(frame.compressed_offset))
            .and_then(|_| self.source.read_exact(&mut self.compressed))
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => corrupt(FrameProblem::EndsInside),
                _ => crate::bundle_error::from_io(e, BundleError::Read),
            })?;
        check_frame_header(&self.compressed, frame.size).map_err(corrupt)?;
        let length = zstd::zstd_safe::find_frame_compressed_size(&self.compressed)
            .map_err(|code| corrupt(FrameProblem::Zstd(zstd::zstd_safe::get_error_name(code))))?;
        if length as u64 != frame.compressed_size {
            return Err(corrupt(FrameProblem::CompressedSize {
                length: length as u64,
                table: frame.compressed_size,
            }));
        }
        self.content.clear();
        self.content.reserve_exact(frame.size as usize);
        let n = self
            .decompressor
            .decompress_to_buffer(&self.compressed[..], &mut self.content)
            .map_err(|e| corrupt(FrameProblem::Decode(e)))?;
        if n as u64 != frame.size {
            return Err(corrupt(FrameProblem::DecodedSize {
                decoded: n as u64,
                table: frame.size,
            }));
        }
        // Hashed once decoded (a frame that fails refuses the bundle anyway, and its bytes stay
        // here for `salvage_first_block`); handed over whole rather than copied.
        if let Some(hash) = &mut self.file_hash {
            let spare = hash.update_owned(std::mem::take(&mut self.compressed));
            self.compressed = spare;
            hash.end_frame().map_err(BundleError::Read)?;
        }
        self.next += 1;
        self.position = 0;
        Ok(true)
    }
}

impl<S: Read + Seek> Read for FrameReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.position == self.content.len() && !self.load_next().map_err(io::Error::other)? {
            return Ok(0);
        }
        let n = buf.len().min(self.content.len() - self.position);
        buf[..n].copy_from_slice(&self.content[self.position..self.position + n]);
        self.position += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_header_rules() {
        let mut frame = zstd::bulk::Compressor::new(3).unwrap();
        frame
            .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
            .unwrap();
        let bytes = frame.compress(b"hello hello hello").unwrap();
        assert!(check_frame_header(&bytes, 17).is_ok());
        assert!(
            check_frame_header(&bytes, 18)
                .unwrap_err()
                .to_string()
                .contains("seek table 18")
        );
        let plain = zstd::bulk::compress(b"hello hello hello", 3).unwrap();
        assert!(
            check_frame_header(&plain, 17)
                .unwrap_err()
                .to_string()
                .contains("descriptor")
        );
        assert!(
            check_frame_header(&bytes[..5], 17)
                .unwrap_err()
                .to_string()
                .contains("too short")
        );
        assert!(
            check_frame_header(b"PK\x03\x04\x00", 17)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
    }
}

//! A cache of the compressed frames of large blobs, keyed by blob digest and zstd level.
//!
//! A blob of at least [`CACHED_BLOB_SIZE`] bytes is written as its header block in a frame of
//! its own, then its content (and padding) in frames that depend on nothing but the content and
//! the level. Those frames are what a rebuild after one changed image would compress again for
//! every unchanged blob; with a frame cache the writer copies them instead, and the bundle is
//! byte for byte the one compressing would give, because zstd's output depends only on the
//! content and the parameters (see `frames`).
//!
//! An entry is a file `zstd-<level>/<hex>`: the compressed frames as they go into the bundle,
//! then a table of one [`FrameEntry`] per frame (compressed size and decompressed size as
//! little-endian `u32`, a checksum as `u64`, the sha256 of the frame as it goes into the bundle),
//! the frame count as `u32`, the blob's size as `u64`,
//! the first eight bytes of the sha256 of all of that (the table on), and the magic
//! [`ENTRY_MAGIC`]. The blob's exact size is there because the frames hold its content and
//! padding, which do not tell a blob's last bytes from zeros: with it, a build can take a cached
//! blob's size from its entry alone and leave the blob unread (see [`FrameCache::blob_size`]).
//! The checksum covers what the sums of the table cannot: a changed blob size within the same
//! padded length.
//!
//! Each frame's sha256 is what the bundle's integrity frame lists for it (SPEC.md §2.2), so a
//! write that copies a stored frame does not hash it again: its bytes follow from its content,
//! which is checked. It is taken from the bundle's own integrity hash when the entry is recorded
//! (no second pass). A compressed frame is hashed again when it is copied (see `cached`), since
//! its bytes may change where a decoder does not look.
//!
//! A *stored* frame (data that does not compress, see `frames::stored_frame`) is not in the
//! entry: it is the blob's own bytes in raw blocks, so the blob cache already holds it, and
//! writing it a second time cost a cold build a tenth of its time. Its row says compressed size
//! 0 and gives the XXH64 of the frame's content; a write rebuilds the frame from the blob file
//! with that checksum in it, and checks the XXH64 of the blob's bytes as it reads them, which is
//! what decoding the frame would check (see `cached`).
//!
//! An entry is written to a temporary file and renamed into place, without an fsync: an entry a
//! power cut damaged is found out when it is used, since every frame is checked before it is
//! copied (a compressed one decoded: its size and zstd's content checksum). A damaged entry is
//! removed and the write fails with [`BundleError::FrameCacheDamaged`]; the next write
//! compresses that blob again.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use sha2::{Digest as _, Sha256};
use tempfile::NamedTempFile;

use super::{MAX_FRAME_SIZE, WRITE_CHUNK};
use crate::bundle_error::BundleError;
use crate::digest::Sha256Digest;
use crate::member::padding;

/// Blobs from this size on have their content frames cached (and their header in a frame of its
/// own, cached or not, so the bundle's bytes do not depend on whether a cache was used).
pub const CACHED_BLOB_SIZE: u64 = 1 << 20;

/// The last eight bytes of an entry. Entries of earlier formats are not recognised, so they are
/// removed when used and compressed again: `KKFRAME1` had no blob size, `KKFRAME2` and
/// `KKFRAME3` hold the frames that do not compress as zstd's compressor wrote them, where the
/// writer now stores them (other bytes, and not in the entry), and `KKFRAME4` had no frame
/// sha256s.
const ENTRY_MAGIC: &[u8; 8] = b"KKFRAME5";

/// The size of one row of an entry's table.
const ROW: usize = 4 + 4 + 8 + 32;

/// The bytes after an entry's table: frame count, blob size, checksum, magic.
const TAIL: usize = 4 + 8 + 8 + 8;

/// Temporary entries carry this prefix.
const TEMP_PREFIX: &str = ".partial-";

/// A directory of frame-cache entries.
#[derive(Debug, Clone)]
pub struct FrameCache {
    dir: PathBuf,
}

impl FrameCache {
    /// The cache in `dir` (created when the first entry is stored).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn entry_path(&self, digest: &Sha256Digest, level: i32) -> PathBuf {
        self.dir.join(format!("zstd-{level}")).join(digest.hex())
    }

    /// Whether an entry for `digest` at `level` exists, whole or not.
    pub(crate) fn contains(&self, digest: &Sha256Digest, level: i32) -> bool {
        self.entry_path(digest, level).is_file()
    }

    /// The size of the blob `digest` if the entry for it at `level` is whole: its table
    /// agrees with the blob size it records and with the entry's length. The frames themselves
    /// are checked only when a write copies them. A damaged entry is left for that write.
    pub fn blob_size(&self, digest: &Sha256Digest, level: i32) -> Option<u64> {
        let file = File::open(self.entry_path(digest, level)).ok()?;
        Entry::read_table(file).ok().map(|entry| entry.blob_size)
    }

    /// The entry for `digest` at `level`, if there is one for a blob of `size` bytes whose size
    /// table covers it and the file's length; an entry that does not is removed.
    pub(crate) fn open(&self, digest: &Sha256Digest, level: i32, size: u64) -> Option<Entry> {
        let path = self.entry_path(digest, level);
        let file = File::open(&path).ok()?;
        let entry = Entry::read_table(file)
            .ok()
            .filter(|entry| entry.blob_size == size);
        if entry.is_none() {
            let _ = fs::remove_file(&path);
        }
        entry
    }

    /// Starts recording a new entry for the blob `digest` of `size` bytes at `level`.
    pub(crate) fn create(
        &self,
        digest: &Sha256Digest,
        level: i32,
        size: u64,
    ) -> io::Result<EntryWriter> {
        let path = self.entry_path(digest, level);
        let dir = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(dir)?;
        let temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(dir)?;
        Ok(EntryWriter {
            out: BufWriter::with_capacity(1 << 20, temp),
            frames: Vec::new(),
            blob_size: size,
            path,
        })
    }

    /// Removes the entry for `digest` at `level` after it proved damaged.
    pub(crate) fn remove(&self, digest: &Sha256Digest, level: i32) -> PathBuf {
        let path = self.entry_path(digest, level);
        let _ = fs::remove_file(&path);
        path
    }
}

/// One frame of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameEntry {
    /// The frame's size in the entry; 0 for a stored frame, which is not in it.
    pub(crate) compressed: u32,
    /// The size of the frame's content.
    pub(crate) decompressed: u32,
    /// A stored frame's content checksum (XXH64); 0 for a compressed frame, whose checksum is
    /// in the frame.
    pub(crate) stored_checksum: u64,
    /// The sha256 of the frame as it goes into the bundle (of the stored frame as laid out, for
    /// a stored one).
    pub(crate) sha256: Sha256Digest,
}

impl FrameEntry {
    /// Whether the frame is stored: rebuilt from the blob file, not read from the entry.
    pub(crate) fn is_stored(&self) -> bool {
        self.compressed == 0
    }
}

/// An entry being read: its frames, and the file positioned at the first frame.
pub(crate) struct Entry {
    file: File,
    /// Each frame, in order.
    pub(crate) frames: Vec<FrameEntry>,
    /// The size of the blob whose content (and padding) the frames hold.
    blob_size: u64,
}

impl Entry {
    fn read_table(mut file: File) -> io::Result<Self> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
        let length = file.metadata()?.len();
        let mut tail = [0u8; TAIL];
        let tail_start = length
            .checked_sub(TAIL as u64)
            .ok_or_else(|| invalid("shorter than an entry's tail"))?;
        file.seek(SeekFrom::Start(tail_start))?;
        file.read_exact(&mut tail)?;
        let (count, rest) = tail.split_at(4);
        let (blob_size, rest) = rest.split_at(8);
        let (check, magic) = rest.split_at(8);
        if magic != ENTRY_MAGIC {
            return Err(invalid("no entry magic"));
        }
        let count = u64::from(u32::from_le_bytes(
            count.try_into().map_err(io::Error::other)?,
        ));
        let blob_size = u64::from_le_bytes(blob_size.try_into().map_err(io::Error::other)?);
        let frames_end = length
            .checked_sub(TAIL as u64 + count * ROW as u64)
            .ok_or_else(|| invalid("table larger than the file"))?;
        let table_size = count * ROW as u64;
        let mut table = vec![0u8; usize::try_from(table_size).map_err(|_| invalid("table"))?];
        file.seek(SeekFrom::Start(frames_end))?;
        file.read_exact(&mut table)?;
        if check != table_check(&table, &tail[..12]) {
            return Err(invalid("table checksum"));
        }
        let frames: Vec<FrameEntry> = table
            .chunks_exact(ROW)
            .map(|row| FrameEntry {
                compressed: u32::from_le_bytes([row[0], row[1], row[2], row[3]]),
                decompressed: u32::from_le_bytes([row[4], row[5], row[6], row[7]]),
                stored_checksum: u64::from_le_bytes(row[8..16].try_into().unwrap_or_default()),
                sha256: Sha256Digest::from_bytes(row[16..].try_into().unwrap_or_default()),
            })
            .collect();
        let compressed: u64 = frames.iter().map(|f| u64::from(f.compressed)).sum();
        let decompressed: u64 = frames.iter().map(|f| u64::from(f.decompressed)).sum();
        let frames_fit = frames
            .iter()
            .all(|f| f.decompressed > 0 && f.decompressed as usize <= MAX_FRAME_SIZE);
        let content = blob_size.checked_add(padding(blob_size));
        if compressed != frames_end || Some(decompressed) != content || !frames_fit {
            return Err(invalid("size table does not match"));
        }
        file.seek(SeekFrom::Start(0))?;
        Ok(Self {
            file,
            frames,
            blob_size,
        })
    }

    /// Reads the next frame's compressed bytes into `buf`, replacing what it held. The buffer's
    /// capacity is reused without being zeroed first: a rebuild reads most of its bundle here.
    pub(crate) fn read_frame(&mut self, size: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        (&mut self.file).take(u64::from(size)).read_to_end(buf)?;
        if buf.len() == size as usize {
            Ok(())
        } else {
            Err(io::ErrorKind::UnexpectedEof.into())
        }
    }
}

/// An entry being recorded while its frames are compressed for the bundle.
pub(crate) struct EntryWriter {
    out: BufWriter<NamedTempFile>,
    frames: Vec<FrameEntry>,
    blob_size: u64,
    path: PathBuf,
}

impl EntryWriter {
    /// Appends one compressed frame of `decompressed` bytes.
    pub(crate) fn frame(&mut self, compressed: &[u8], decompressed: usize) -> io::Result<()> {
        for chunk in compressed.chunks(WRITE_CHUNK) {
            self.out.write_all(chunk)?;
        }
        self.frames.push(FrameEntry {
            compressed: u32::try_from(compressed.len()).map_err(io::Error::other)?,
            decompressed: u32::try_from(decompressed).map_err(io::Error::other)?,
            stored_checksum: 0,
            sha256: UNKNOWN,
        });
        Ok(())
    }

    /// Notes one stored frame of `decompressed` bytes whose content has the XXH64 `checksum`;
    /// its bytes are not written (the blob file has them).
    pub(crate) fn stored(&mut self, decompressed: usize, checksum: u64) -> io::Result<()> {
        self.frames.push(FrameEntry {
            compressed: 0,
            decompressed: u32::try_from(decompressed).map_err(io::Error::other)?,
            stored_checksum: checksum,
            sha256: UNKNOWN,
        });
        Ok(())
    }

    /// Appends the table, with `sha256s`, the sha256 of each frame in order, the blob's size
    /// and their checksum, and renames the entry into place.
    pub(crate) fn finish(mut self, sha256s: &[Sha256Digest]) -> io::Result<()> {
        if sha256s.len() != self.frames.len() {
            return Err(io::Error::other("a sha256 for each frame"));
        }
        let mut table = Vec::with_capacity(self.frames.len() * ROW);
        for (frame, sha256) in self.frames.iter().zip(sha256s) {
            table.extend_from_slice(&frame.compressed.to_le_bytes());
            table.extend_from_slice(&frame.decompressed.to_le_bytes());
            table.extend_from_slice(&frame.stored_checksum.to_le_bytes());
            table.extend_from_slice(sha256.as_bytes());
        }
        let count = u32::try_from(self.frames.len()).map_err(io::Error::other)?;
        let mut counts = [0u8; 12];
        counts[..4].copy_from_slice(&count.to_le_bytes());
        counts[4..].copy_from_slice(&self.blob_size.to_le_bytes());
        self.out.write_all(&table)?;
        self.out.write_all(&counts)?;
        self.out.write_all(&table_check(&table, &counts))?;
        self.out.write_all(ENTRY_MAGIC)?;
        let temp = self
            .out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        temp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// The sha256 a row holds until the entry is finished with the frames' sha256s.
const UNKNOWN: Sha256Digest = Sha256Digest::from_bytes([0; 32]);

/// The checksum of an entry's table and of `counts`, its frame count and blob size.
fn table_check(table: &[u8], counts: &[u8]) -> [u8; 8] {
    let digest = Sha256::new()
        .chain_update(table)
        .chain_update(counts)
        .finalize();
    let mut check = [0; 8];
    check.copy_from_slice(&digest[..8]);
    check
}

/// Where a damaged entry was, for the error.
pub(crate) fn damaged(cache: &FrameCache, digest: Sha256Digest, level: i32) -> BundleError {
    BundleError::FrameCacheDamaged {
        digest,
        path: cache.remove(&digest, level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry for the blob `digest` of `size` bytes (a 500-byte blob fills one 512-byte
    /// block), with made-up compressed bytes for its content and padding, and one stored frame.
    fn entry(cache: &FrameCache, digest: &Sha256Digest, size: u64) {
        let mut writer = cache.create(digest, 3, size).expect("create");
        writer.frame(b"abc", 200).expect("frame");
        writer.stored(100, 7).expect("stored");
        writer.frame(b"de", 212).expect("frame");
        assert!(writer.finish(&[sha(0)]).is_err(), "a sha256 for each frame");
        let mut writer = cache.create(digest, 3, size).expect("create");
        writer.frame(b"abc", 200).expect("frame");
        writer.stored(100, 7).expect("stored");
        writer.frame(b"de", 212).expect("frame");
        writer.finish(&[sha(0), sha(1), sha(2)]).expect("finish");
    }

    /// The made-up sha256 of frame `n`.
    fn sha(n: u8) -> Sha256Digest {
        Sha256Digest::of(&[n])
    }

    /// A compressed frame's row.
    fn compressed(compressed: u32, decompressed: u32, sha256: Sha256Digest) -> FrameEntry {
        FrameEntry {
            compressed,
            decompressed,
            stored_checksum: 0,
            sha256,
        }
    }

    #[test]
    fn an_entry_round_trips_and_a_wrong_one_is_removed() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = FrameCache::new(dir.path());
        let digest = Sha256Digest::of(b"blob");
        assert!(!cache.entry_path(&digest, 3).exists());
        entry(&cache, &digest, 500);
        assert!(cache.entry_path(&digest, 3).is_file());
        let mut entry = cache.open(&digest, 3, 500).expect("entry");
        let stored = FrameEntry {
            compressed: 0,
            decompressed: 100,
            stored_checksum: 7,
            sha256: sha(1),
        };
        assert_eq!(
            entry.frames,
            [
                compressed(3, 200, sha(0)),
                stored,
                compressed(2, 212, sha(2))
            ]
        );
        assert!(stored.is_stored() && !entry.frames[0].is_stored());
        // A buffer reused from a longer frame holds exactly the frame read into it.
        let mut buf = b"a longer frame before".to_vec();
        entry.read_frame(3, &mut buf).expect("read");
        assert_eq!(buf, b"abc");
        entry.read_frame(2, &mut buf).expect("read");
        assert_eq!(buf, b"de");
        // Past the frames, the size table is not a frame: a short read is an error.
        assert!(entry.read_frame(1000, &mut buf).is_err());
        // The frames of a 500-byte blob are those of a 501-byte one padded, but the entry
        // records 500: it is not used for another size, and removed.
        assert!(cache.open(&digest, 3, 501).is_none());
        assert!(!cache.entry_path(&digest, 3).exists());
    }

    #[test]
    fn an_entry_tells_its_blob_size_while_it_is_whole() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = FrameCache::new(dir.path());
        let digest = Sha256Digest::of(b"blob");
        assert_eq!(cache.blob_size(&digest, 3), None, "no entry yet");
        entry(&cache, &digest, 500);
        assert_eq!(cache.blob_size(&digest, 3), Some(500));
        assert_eq!(cache.blob_size(&digest, 9), None, "another level");
        assert_eq!(cache.blob_size(&Sha256Digest::of(b"other"), 3), None);
        // A truncated entry tells nothing, and is left for the write that uses it to find.
        let path = cache.entry_path(&digest, 3);
        let bytes = fs::read(&path).expect("entry");
        fs::write(&path, &bytes[..bytes.len() - 1]).expect("cut");
        assert_eq!(cache.blob_size(&digest, 3), None);
        assert!(path.is_file());
    }

    /// A change to an entry's bytes.
    type Damage = fn(&mut Vec<u8>);

    #[test]
    fn a_damaged_entry_is_not_used() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = FrameCache::new(dir.path());
        let digest = Sha256Digest::of(b"blob");
        let path = dir.path().join("zstd-3").join(digest.hex());
        let cases: [(&str, Damage); 7] = [
            ("cut short", |bytes| bytes.truncate(bytes.len() - 1)),
            ("a frame lost", |bytes| {
                bytes.remove(0);
            }),
            // 500 ^ 64 = 436 is a blob of the same padded length.
            ("another blob size", |bytes| {
                let at = bytes.len() - 24;
                bytes[at] ^= 0x40;
            }),
            ("the first format", |bytes| {
                let at = bytes.len() - 1;
                bytes[at] = b'1';
            }),
            ("the second format", |bytes| {
                let at = bytes.len() - 1;
                bytes[at] = b'2';
            }),
            ("the fourth format", |bytes| {
                let at = bytes.len() - 1;
                bytes[at] = b'4';
            }),
            ("a frame's sha256", |bytes| {
                let at = bytes.len() - 28 - 1;
                bytes[at] ^= 1;
            }),
        ];
        for (what, damage) in cases {
            entry(&cache, &digest, 500);
            let mut bytes = fs::read(&path).expect("entry");
            damage(&mut bytes);
            fs::write(&path, &bytes).expect("damage");
            assert_eq!(cache.blob_size(&digest, 3), None, "{what}");
            assert!(cache.open(&digest, 3, 500).is_none(), "{what}");
            assert!(!path.exists(), "{what}: removed");
        }
    }
}

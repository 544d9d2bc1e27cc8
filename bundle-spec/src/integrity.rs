//! The integrity frame (SPEC.md §2.2): its bytes, and the hash it carries, computed while a
//! bundle's frames are written or read.
//!
//! Formats 1 and 2 hash every byte before the frame (`KKFD`); formats 3 and 4 hash the list of
//! each data frame's own sha256 (`KKFL`). The list is what lets a writer skip the bytes it did
//! not produce: a frame copied from the frame cache brings the sha256 recorded with it, so a
//! rebuild hashes only the header and the blobs that changed, where one sha256 over the file
//! had to go through every byte in order (it was most of what a rebuild spent above the cost
//! of writing its output; BENCHMARKS.md, 2026-12-06). Either way the hashing runs on a thread
//! of its own ([`BackgroundHasher`]), each frame ending a *part* of its stream.

use std::collections::VecDeque;
use std::io;
use std::ops::Range;

use sha2::{Digest as _, Sha256};

use crate::digest::{BackgroundHasher, Sha256Digest};
use crate::format_version::IntegrityKind;

/// Magic number of the integrity frame, a zstd skippable frame (range `0x184D2A5?`) other than
/// the seek table's `0x184D2A5E`.
const INTEGRITY_MAGIC: u32 = 0x184D_2A5B;
/// Size of the integrity frame: magic, size field, tag, sha256.
pub(crate) const INTEGRITY_FRAME_SIZE: usize = 4 + 4 + 4 + 32;

/// The integrity frame of `kind` holding `digest`.
pub(crate) fn integrity_frame(kind: IntegrityKind, digest: &Sha256Digest) -> Vec<u8> {
    let mut frame = Vec::with_capacity(INTEGRITY_FRAME_SIZE);
    frame.extend_from_slice(&INTEGRITY_MAGIC.to_le_bytes());
    frame.extend_from_slice(&((INTEGRITY_FRAME_SIZE - 8) as u32).to_le_bytes());
    frame.extend_from_slice(kind.tag());
    frame.extend_from_slice(digest.as_bytes());
    frame
}

/// The tag of an integrity frame's bytes, if they are long enough to hold one.
pub(crate) fn tag_of(frame: &[u8]) -> Option<&[u8]> {
    frame.get(8..12)
}

/// The hash an integrity frame of one kind carries, fed the data frames in file order.
#[derive(Debug)]
pub(crate) struct IntegrityHash {
    kind: IntegrityKind,
    hasher: BackgroundHasher,
    /// With [`IntegrityKind::FrameList`]: each data frame's sha256 so far, `None` while the
    /// hasher is still at it.
    frames: Vec<Option<Sha256Digest>>,
    /// The frames whose sha256 the hasher will report, oldest first.
    hashing: VecDeque<usize>,
}

impl IntegrityHash {
    /// A hash for an integrity frame of `kind`.
    pub(crate) fn new(kind: IntegrityKind) -> Self {
        Self {
            kind,
            hasher: BackgroundHasher::new(),
            frames: Vec::new(),
            hashing: VecDeque::new(),
        }
    }

    /// The kind of frame this hash is for.
    pub(crate) fn kind(&self) -> IntegrityKind {
        self.kind
    }

    /// Hashes the current frame's next bytes, taking the buffer, and returns a spent one to
    /// reuse (see [`BackgroundHasher::update_owned`]).
    pub(crate) fn update_owned(&self, bytes: Vec<u8>) -> Vec<u8> {
        self.hasher.update_owned(bytes)
    }

    /// Ends the current data frame, all of whose bytes were hashed.
    pub(crate) fn end_frame(&mut self) -> io::Result<()> {
        if self.kind == IntegrityKind::FrameList {
            self.hasher.end_part().ok_or_else(stopped)?;
            self.hashing.push_back(self.frames.len());
            self.frames.push(None);
        }
        Ok(())
    }

    /// Counts a data frame by the sha256 of its bytes, which are not hashed again; `false`,
    /// and nothing counted, for a kind that needs every byte (the caller then hashes them).
    pub(crate) fn known_frame(&mut self, digest: Sha256Digest) -> bool {
        if self.kind == IntegrityKind::FrameList {
            self.frames.push(Some(digest));
        }
        self.kind == IntegrityKind::FrameList
    }

    /// How many data frames were counted so far (none for [`IntegrityKind::WholeFile`]).
    pub(crate) fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The sha256s of the frames `range`, if the hasher is done with all of them: waiting for
    /// it with `wait`, else taking only what it reported already.
    pub(crate) fn frame_digests(
        &mut self,
        range: Range<usize>,
        wait: bool,
    ) -> io::Result<Option<Vec<Sha256Digest>>> {
        while let Some(&index) = self.hashing.front().filter(|&&i| i < range.end) {
            let reported = if wait {
                Some(self.hasher.next_digest().ok_or_else(stopped)?)
            } else {
                self.hasher.try_digest()
            };
            let Some((digest, _)) = reported else { break };
            self.frames[index] = Some(digest);
            self.hashing.pop_front();
        }
        Ok(self
            .frames
            .get(range)
            .and_then(|frames| frames.iter().copied().collect()))
    }

    /// The digest the integrity frame carries.
    pub(crate) fn finish(mut self) -> io::Result<Sha256Digest> {
        match self.kind {
            IntegrityKind::WholeFile => Ok(self.hasher.finish().ok_or_else(stopped)?.0),
            IntegrityKind::FrameList => {
                let all = self
                    .frame_digests(0..self.frames.len(), true)?
                    .ok_or_else(stopped)?;
                let mut list = Sha256::new();
                for digest in &all {
                    list.update(digest.as_bytes());
                }
                Ok(Sha256Digest::from_hasher(list))
            }
        }
    }
}

fn stopped() -> io::Error {
    io::Error::other("the hashing thread stopped")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames, hashed one way or the other, give what SPEC.md §2.2 says.
    #[test]
    fn each_kind_hashes_what_the_spec_says() {
        let frames: [&[u8]; 3] = [b"first frame", b"", b"third"];
        let whole = Sha256Digest::of(&frames.concat());
        let list: Vec<u8> = frames
            .iter()
            .flat_map(|f| *Sha256Digest::of(f).as_bytes())
            .collect();
        for (kind, expected) in [
            (IntegrityKind::WholeFile, whole),
            (IntegrityKind::FrameList, Sha256Digest::of(&list)),
        ] {
            let mut hash = IntegrityHash::new(kind);
            for frame in frames {
                hash.update_owned(frame.to_vec());
                hash.end_frame().expect("hasher");
            }
            assert_eq!(hash.finish().expect("hasher"), expected, "{kind:?}");
        }
    }

    /// A frame counted by its known sha256 is in the list as if it had been hashed, and its
    /// neighbours' sha256s are told in order, once hashed.
    #[test]
    fn a_known_frame_counts_as_hashed() {
        let mut hashed = IntegrityHash::new(IntegrityKind::FrameList);
        let mut known = IntegrityHash::new(IntegrityKind::FrameList);
        for (i, frame) in [&b"a"[..], b"bb", b"ccc"].into_iter().enumerate() {
            hashed.update_owned(frame.to_vec());
            hashed.end_frame().expect("hasher");
            if i == 1 {
                assert!(known.known_frame(Sha256Digest::of(frame)));
            } else {
                known.update_owned(frame.to_vec());
                known.end_frame().expect("hasher");
            }
        }
        assert_eq!(known.frame_count(), 3);
        assert_eq!(
            known.frame_digests(1..3, true).expect("hasher"),
            Some(vec![Sha256Digest::of(b"bb"), Sha256Digest::of(b"ccc")])
        );
        assert_eq!(
            known.finish().expect("hasher"),
            hashed.finish().expect("hasher")
        );
        let mut whole = IntegrityHash::new(IntegrityKind::WholeFile);
        assert!(
            !whole.known_frame(Sha256Digest::of(b"a")),
            "needs every byte"
        );
    }

    #[test]
    fn a_frame_carries_its_kind_tag_and_digest() {
        let digest = Sha256Digest::of(b"x");
        let frame = integrity_frame(IntegrityKind::FrameList, &digest);
        assert_eq!(frame.len(), INTEGRITY_FRAME_SIZE);
        assert_eq!(tag_of(&frame), Some(&b"KKFL"[..]));
        assert_eq!(&frame[12..], digest.as_bytes());
        assert_eq!(&frame[..8], [0x5b, 0x2a, 0x4d, 0x18, 36, 0, 0, 0]);
    }
}

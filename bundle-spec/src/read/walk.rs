//! Walking the tar stream member by member, checking every header against the canonical one
//! and every member's content against the checksum list.
//!
//! What happens to a member's bytes is up to a [`MemberVisitor`]: it receives them while they
//! are hashed, and only when the digest matched is the visit accepted. An unpack visitor writes
//! a temporary file in `receive` and renames it in `accept`, so nothing unverified is ever
//! visible under a member's name.

use std::collections::HashSet;
use std::io::{self, Read, Seek};

use super::MemberHeader;
use super::frames::FrameReader;
use crate::bundle_error::{BundleError, from_io};
use crate::checksums::ChecksumList;
use crate::digest::{BackgroundHasher, HashedReader, Sha256Digest};
use crate::member::{BLOCK, CHECKSUMS_PATH, MemberPath, SIGNATURE_PATH, canonical_header, padding};

/// What to do with members' bytes during [`Bundle::walk`](crate::Bundle::walk).
///
/// `receive` sees a member's bytes while the walker hashes them; `accept` is called only after
/// the digest matched the checksum list. Whatever `receive` produced for a member that fails is
/// dropped, so a visitor that writes files should write temporary ones in `receive` (dropping
/// deletes them) and give them their names in `accept`.
pub trait MemberVisitor {
    /// The result of receiving a member, held until its digest is checked.
    type Pending;

    /// Consumes `data` (exactly the member's bytes; reading stops at its end).
    fn receive(
        &mut self,
        member: &MemberHeader,
        data: &mut dyn Read,
    ) -> Result<Self::Pending, BundleError>;

    /// The member's digest matched the checksum list.
    fn accept(
        &mut self,
        member: &MemberHeader,
        pending: Self::Pending,
        digest: Sha256Digest,
    ) -> Result<(), BundleError>;
}

/// The outcome of one step of the walk.
#[derive(Debug)]
pub(crate) enum Step {
    /// A member was visited and verified.
    Member(MemberHeader),
    /// The end-of-archive marker was reached and checked.
    End,
}

/// Walks the members of a tar stream held in frames.
pub(crate) struct Walker<'a, S> {
    frames: FrameReader<'a, S>,
    /// Hashes member content beside the decoding (one worker for the whole walk).
    hasher: BackgroundHasher,
    mtime: Option<u64>,
    seen: HashSet<MemberPath>,
    last: Option<MemberPath>,
    /// The signature member's bytes, once the walk passed it.
    signature: Option<Vec<u8>>,
}

impl<'a, S: Read + Seek> Walker<'a, S> {
    pub(crate) fn new(frames: FrameReader<'a, S>, mtime: Option<u64>) -> Self {
        Self {
            frames,
            hasher: BackgroundHasher::new(),
            mtime,
            seen: HashSet::new(),
            last: None,
            signature: None,
        }
    }

    /// Visits the next member. `list` is `None` only for the very first member, the checksum
    /// list itself, whose digest is the identity rather than something to check.
    pub(crate) fn step<V: MemberVisitor>(
        &mut self,
        list: Option<&ChecksumList>,
        visitor: &mut V,
    ) -> Result<Step, BundleError> {
        let offset = self.frames.offset();
        let at_start = self.frames.at_frame_start();
        // Every member starts a frame, so one that ends inside a frame has a wrong size. Said
        // before the next block is read: it is only content, whatever it looks like as a header.
        if let (false, false, Some(last)) = (at_start, self.frames.at_end(), &self.last) {
            return Err(BundleError::EndsInsideFrame {
                member: last.clone(),
                end: offset,
            });
        }
        let mut block = [0u8; BLOCK as usize];
        let read =
            read_full(&mut self.frames, &mut block).map_err(|error| self.name_damaged(error))?;
        if read < block.len() {
            return Err(BundleError::Truncated {
                after: self.last.clone(),
            });
        }
        if block.iter().all(|b| *b == 0) {
            return self.end_marker(at_start).map(|()| Step::End);
        }
        let member = self.header(&block, offset, list)?;
        if list.is_some() && member.path.as_str() == SIGNATURE_PATH {
            return self.signature_member(member).map(|()| Step::End);
        }
        // The size comes from the file: checked against the stream before anything is read.
        self.frames.table().member_end(&member)?;
        let expected = list.map(|l| *l.get(&member.path).expect("checked in header"));
        let mut data = HashedReader::new(Read::take(&mut self.frames, member.size), &self.hasher);
        let in_member = |error: BundleError| match error {
            // A damaged frame inside a member: say which member it damaged.
            BundleError::Frame { .. } => BundleError::Damaged {
                member: member.path.clone(),
                source: Box::new(error),
            },
            other => other,
        };
        let pending = visitor.receive(&member, &mut data).map_err(in_member)?;
        io::copy(&mut data, &mut io::sink())
            .map_err(|e| in_member(from_io(e, BundleError::Read)))?;
        let (digest, size) = self
            .hasher
            .finish()
            .ok_or_else(|| BundleError::Read(io::Error::other("the hashing thread stopped")))?;
        if size != member.size {
            return Err(BundleError::Truncated {
                after: Some(member.path),
            });
        }
        self.check_padding(&member)?;
        if let Some(expected) = expected
            && expected != digest
        {
            return Err(BundleError::DigestMismatch {
                member: member.path,
                expected,
                actual: digest,
            });
        }
        visitor.accept(&member, pending, digest)?;
        self.last = Some(member.path.clone());
        Ok(Step::Member(member))
    }

    /// Checks a header block: entry type, path, listing, size limit, canonical bytes.
    fn header(
        &mut self,
        block: &[u8; BLOCK as usize],
        offset: u64,
        list: Option<&ChecksumList>,
    ) -> Result<MemberHeader, BundleError> {
        let header = tar::Header::from_byte_slice(block);
        let name = String::from_utf8_lossy(&header.path_bytes()).into_owned();
        let shown = printable(&name);
        check_entry_type(header.entry_type(), &shown)?;
        if name.starts_with('/') || name.split('/').any(|c| c == "..") {
            return Err(BundleError::UnsafePath { member: shown });
        }
        if list.is_none() && name != CHECKSUMS_PATH {
            return Err(BundleError::NotABundle { first: shown });
        }
        let path = MemberPath::parse(&name).ok_or(BundleError::UnknownMember { member: shown })?;
        if list.is_some_and(|list| list.get(&path).is_none()) && name != SIGNATURE_PATH {
            return Err(BundleError::NotListed { member: path });
        }
        if !self.seen.insert(path.clone()) {
            return Err(BundleError::Duplicate { member: path });
        }
        let size = header.entry_size().map_err(|_| BundleError::NonCanonical {
            member: path.clone(),
            what: "size field".into(),
        })?;
        if let Some(limit) = path.size_limit().filter(|limit| size > *limit) {
            return Err(BundleError::TooLarge {
                member: path,
                size,
                limit,
            });
        }
        let mtime = header.mtime().map_err(|_| BundleError::NonCanonical {
            member: path.clone(),
            what: "mtime field".into(),
        })?;
        if *self.mtime.get_or_insert(mtime) != mtime {
            return Err(BundleError::NonCanonical {
                member: path,
                what: format!("mtime {mtime}"),
            });
        }
        if canonical_header(&path, size, mtime).as_bytes() != block {
            return Err(BundleError::NonCanonical {
                member: path,
                what: "header".into(),
            });
        }
        Ok(MemberHeader { path, size, offset })
    }

    fn check_padding(&mut self, member: &MemberHeader) -> Result<(), BundleError> {
        let mut pad = [0u8; BLOCK as usize];
        let pad = &mut pad[..padding(member.size) as usize];
        if read_full(&mut self.frames, pad)? != pad.len() {
            return Err(BundleError::Truncated {
                after: Some(member.path.clone()),
            });
        }
        if pad.iter().any(|b| *b != 0) {
            return Err(BundleError::NonCanonical {
                member: member.path.clone(),
                what: "padding".into(),
            });
        }
        Ok(())
    }

    /// The signature member, which the checksum list does not cover (SPEC §3.6): kept for
    /// [`Self::signature`], never handed to a visitor, and only valid as the last member. The
    /// integrity frame still covers its bytes.
    fn signature_member(&mut self, member: MemberHeader) -> Result<(), BundleError> {
        self.frames.table().member_end(&member)?;
        let mut bytes = Vec::with_capacity(member.size as usize);
        Read::take(&mut self.frames, member.size)
            .read_to_end(&mut bytes)
            .map_err(|e| from_io(e, BundleError::Read))?;
        if bytes.len() as u64 != member.size {
            return Err(BundleError::Truncated {
                after: Some(member.path),
            });
        }
        self.check_padding(&member)?;
        self.last = Some(member.path);
        self.signature = Some(bytes);
        let at_start = self.frames.at_frame_start();
        let mut block = [0u8; BLOCK as usize];
        let read = read_full(&mut self.frames, &mut block)?;
        if read < block.len() || block.iter().any(|b| *b != 0) {
            return Err(BundleError::SignatureMember {
                reason: "is not the last member",
            });
        }
        self.end_marker(at_start)
    }

    /// The signature member's bytes, if the walk passed one.
    pub(crate) fn signature(&mut self) -> Option<Vec<u8>> {
        self.signature.take()
    }

    /// The end-of-archive marker: two zero blocks that form the last frame, then nothing.
    fn end_marker(&mut self, at_start: bool) -> Result<(), BundleError> {
        let mut second = [0u8; BLOCK as usize];
        let complete = read_full(&mut self.frames, &mut second)? == second.len();
        if !at_start || !complete || second.iter().any(|b| *b != 0) || !self.frames.at_end() {
            return Err(BundleError::EndMarker);
        }
        Ok(())
    }

    /// A frame that failed while a header was being read: name the member it starts, if its
    /// first block can still be decoded.
    fn name_damaged(&mut self, error: BundleError) -> BundleError {
        if !matches!(error, BundleError::Frame { .. }) {
            return error;
        }
        let Some(block) = self.frames.salvage_first_block() else {
            return error;
        };
        let header = tar::Header::from_byte_slice(&block);
        match MemberPath::parse(&String::from_utf8_lossy(&header.path_bytes())) {
            Some(member) => BundleError::Damaged {
                member,
                source: Box::new(error),
            },
            None => error,
        }
    }

    /// The mtime every member has, once the first header was read.
    pub(crate) fn mtime(&self) -> Option<u64> {
        self.mtime
    }

    /// The sha256 of every data frame, once the walk read them all from the first.
    pub(crate) fn file_digest(&mut self) -> Option<Sha256Digest> {
        self.frames.file_digest()
    }

    /// Every member this walk has seen.
    pub(crate) fn seen(&self) -> &HashSet<MemberPath> {
        &self.seen
    }
}

/// A member name read from the file as it can be shown in a message: control characters (a
/// crafted name could hold terminal escapes) and quotes escaped.
pub(crate) fn printable(name: &str) -> String {
    name.escape_debug().to_string()
}

fn check_entry_type(entry: tar::EntryType, name: &str) -> Result<(), BundleError> {
    let kind = match entry {
        tar::EntryType::Regular => return Ok(()),
        tar::EntryType::Symlink => "a symbolic link",
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Char => "a character device",
        tar::EntryType::Block => "a block device",
        tar::EntryType::Fifo => "a fifo",
        tar::EntryType::Directory => "a directory",
        _ => "an entry type format v1 does not use",
    };
    Err(BundleError::NotAFile {
        member: name.to_owned(),
        kind: kind.into(),
    })
}

/// Reads until `buf` is full or the stream ends; returns how much was read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize, BundleError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(from_io(e, BundleError::Read)),
        }
    }
    Ok(filled)
}

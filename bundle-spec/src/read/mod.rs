//! Reading a bundle: open (seek table and header), then verify, walk (the installer's store
//! unpacks through [`MemberVisitor`]) or read single members.
//!
//! [`Bundle::open`] reads only the seek table and the first two members, so inspecting a
//! bundle of any size costs two small frames. Everything after that streams the frames in order
//! and checks each member as it passes (see the `walk` module); nothing is trusted before the checksum
//! list, and the checksum list is trusted only as far as its own sha256, the identity a signature
//! or an operator compares.

mod frames;
mod source;
#[cfg(test)]
mod tests;
mod walk;

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use walk::MemberVisitor;

use crate::bundle_error::{BundleError, FrameProblem, from_io};
use crate::checksums::ChecksumList;
use crate::description::{DELTA_FORMAT_VERSION, DeltaBase, Description, FormatVersion};
use crate::digest::Sha256Digest;
use crate::format_version::{IntegrityKind, SUPPORTED_MAJORS};
use crate::member::{
    BLOCK, CHECKSUMS_PATH, DESCRIPTION_PATH, MemberPath, SIGNATURE_PATH, canonical_header,
};
use crate::sbom::SBOM_PATH;
use frames::{FrameReader, FrameTable};
use source::Source;
use walk::{Step, Walker};

/// A member about to be visited (declared here, as both the walker and the frame reader use it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberHeader {
    /// Its path.
    pub path: MemberPath,
    /// Its size.
    pub size: u64,
    /// The offset of its header in the tar stream.
    pub offset: u64,
}

/// An opened bundle whose header has been verified.
#[derive(Debug)]
pub struct Bundle {
    path: PathBuf,
    source: Source,
    table: FrameTable,
    checksums: ChecksumList,
    identity: Sha256Digest,
    description: Description,
    mtime: u64,
}

/// What a full pass over a bundle saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Members checked, the header included.
    pub members: usize,
    /// Bytes of member content checked.
    pub bytes: u64,
}

impl Bundle {
    /// [`open`](Self::open), then lists every member header through the seek table (see
    /// [`members`](Self::members)): what reads no content but acts on the bundle's header
    /// (inspect, the install's plan) then refuses a bundle whose member sizes lie, in time and
    /// memory bounded by its frames, rather than describe it.
    pub fn open_listed(path: &Path) -> Result<Self, BundleError> {
        let mut bundle = Self::open(path)?;
        bundle.members()?;
        Ok(bundle)
    }

    /// Opens the bundle at `path` (a single file, a parts index, or a first part), reads its
    /// seek table and verifies its header: the checksum list and the description.
    pub fn open(path: &Path) -> Result<Self, BundleError> {
        let mut source = Source::open(path)?;
        let table = FrameTable::read(&mut source)?;
        let mut walker = Walker::new(FrameReader::new(&mut source, &table, 0)?, None);
        let mut collect = Collect::default();
        let Step::Member(_) = walker.step(None, &mut collect)? else {
            return Err(BundleError::Truncated { after: None });
        };
        let checksum_bytes = std::mem::take(&mut collect.bytes);
        let checksums = ChecksumList::parse(&checksum_bytes)?;
        if checksums.get(&MemberPath::fixed(SIGNATURE_PATH)).is_some() {
            // A listed signature would be checked by digest, and could then never be added.
            return Err(BundleError::SignatureMember {
                reason: "is named by the checksum list, which it signs",
            });
        }
        let second = match walker.step(Some(&checksums), &mut collect)? {
            Step::Member(member) => member.path,
            Step::End => {
                return Err(BundleError::Missing {
                    member: MemberPath::fixed(DESCRIPTION_PATH),
                });
            }
        };
        if second.as_str() != DESCRIPTION_PATH {
            return Err(BundleError::HeaderOrder { found: second });
        }
        let mtime = walker.mtime().unwrap_or_default();
        drop(walker);
        let description = parse_description(&collect.bytes, mtime)?;
        check_integrity_kind(&description, &table)?;
        check_base(&description, &checksums)?;
        Ok(Self {
            path: path.to_owned(),
            source,
            table,
            identity: Sha256Digest::of(&checksum_bytes),
            checksums,
            description,
            mtime,
        })
    }

    /// The path the bundle was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sha256 of the checksum list: what identifies this bundle and what a signature covers.
    pub fn identity(&self) -> Sha256Digest {
        self.identity
    }

    /// The verified description.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// The verified checksum list.
    pub fn checksums(&self) -> &ChecksumList {
        &self.checksums
    }

    /// The bundle's size on disk.
    pub fn size(&self) -> u64 {
        self.table.table_offset + self.table.table_bytes.len() as u64
    }

    /// The size of the tar stream inside.
    pub fn content_size(&self) -> u64 {
        self.table.content_size()
    }

    /// How many zstd frames the bundle has.
    pub fn frame_count(&self) -> usize {
        self.table.frames.len()
    }

    /// Whether the bundle was written by a newer minor version of the format, which may hold
    /// information this reader does not show (it is verified all the same).
    pub fn is_newer_minor(&self) -> bool {
        let version = self.description.format_version;
        version
            .newest_known()
            .is_some_and(|known| version.minor > known.minor)
    }

    /// For a delta bundle, the bundle it builds on and the blobs it takes from it.
    pub fn base(&self) -> Option<&DeltaBase> {
        self.description.base.as_ref()
    }

    /// Reads every member and checks it against the checksum list, every part against the parts
    /// index, and every frame against the seek table.
    pub fn verify(&mut self) -> Result<Verified, BundleError> {
        self.walk_all(&mut Discard)
    }

    /// Like [`verify`](Self::verify), calling `progress` with the number of member bytes read
    /// as the walk goes (for a progress bar).
    pub fn verify_with_progress(
        &mut self,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Verified, BundleError> {
        self.walk_all(&mut Counting(progress))
    }

    /// Verifies the whole bundle like [`verify`](Self::verify), handing every member to
    /// `visitor` as it passes (the checksum list first, then the description, and so on).
    pub fn walk<V: MemberVisitor>(&mut self, visitor: &mut V) -> Result<Verified, BundleError> {
        self.walk_all(visitor)
    }

    fn walk_all<V: MemberVisitor>(&mut self, visitor: &mut V) -> Result<Verified, BundleError> {
        let Self {
            source,
            table,
            checksums,
            identity,
            mtime,
            ..
        } = self;
        let mut walker = Walker::new(FrameReader::new(source, table, 0)?, Some(*mtime));
        let mut header = Digests {
            inner: visitor,
            first: None,
        };
        walker.step(None, &mut header)?;
        if header.first != Some(*identity) {
            return Err(BundleError::Read(std::io::Error::other(
                "the checksum list changed while the bundle was read",
            )));
        }
        let mut verified = Verified {
            members: 1,
            bytes: 0,
        };
        while let Step::Member(member) = walker.step(Some(checksums), visitor)? {
            verified.members += 1;
            verified.bytes += member.size;
        }
        if let Some((missing, _)) = checksums
            .iter()
            .find(|(path, _)| !walker.seen().contains(*path))
        {
            return Err(BundleError::Missing {
                member: missing.clone(),
            });
        }
        let digest = walker.file_digest().ok_or(BundleError::EndMarker)?;
        drop(walker);
        self.table.check_integrity(&mut self.source, digest)?;
        self.verify_tail()?;
        Ok(verified)
    }

    /// Reads the seek table once more, in order after the integrity frame, so that the last
    /// part's hash covers it.
    fn verify_tail(&mut self) -> Result<(), BundleError> {
        let mut tail = vec![0; self.table.table_bytes.len()];
        self.source
            .seek(SeekFrom::Start(self.table.table_offset))
            .map_err(BundleError::Read)?;
        self.source
            .read_exact(&mut tail)
            .map_err(|e| from_io(e, BundleError::Read))?;
        if tail != self.table.table_bytes {
            return Err(BundleError::SeekTable(
                "the seek table changed while the bundle was read".into(),
            ));
        }
        match self.source.unverified_parts().first() {
            Some(part) => Err(BundleError::PartsIndex {
                path: part.clone(),
                reason: "this part was not read in full".into(),
            }),
            None => Ok(()),
        }
    }

    /// Lists the members by reading only their headers, jumping from frame to frame through
    /// the seek table. Contents are not verified; [`verify`](Self::verify) does that.
    pub fn members(&mut self) -> Result<Vec<MemberHeader>, BundleError> {
        self.headers_until(|_| false)
    }

    /// The member headers from the first on, up to and including the first for which `stop`
    /// holds (or all of them): finding a header member need not visit every blob.
    fn headers_until(
        &mut self,
        stop: impl Fn(&MemberHeader) -> bool,
    ) -> Result<Vec<MemberHeader>, BundleError> {
        let mut members = Vec::with_capacity(self.checksums.len() + 1);
        let mut offset = 0;
        loop {
            let index = self.table.frame_starting_at(offset).ok_or_else(|| {
                let last = members.last().map(|m: &MemberHeader| m.path.clone());
                match last {
                    Some(member) if offset < self.content_size() => BundleError::EndsInsideFrame {
                        member,
                        end: offset,
                    },
                    after => BundleError::Truncated { after },
                }
            })?;
            let block = self.first_block(index)?;
            if block.iter().all(|b| *b == 0) {
                return Ok(members);
            }
            let member = parse_header(&block, offset, self.mtime)?;
            offset = self.table.member_end(&member)?;
            let done = stop(&member);
            members.push(member);
            if done {
                return Ok(members);
            }
        }
    }

    /// The first tar block of frame `index`, decoding no more of the frame than needed.
    fn first_block(&mut self, index: usize) -> Result<[u8; BLOCK as usize], BundleError> {
        let frame = self.table.frames[index];
        self.source
            .seek(SeekFrom::Start(frame.compressed_offset))
            .map_err(BundleError::Read)?;
        let limited = (&mut self.source).take(frame.compressed_size);
        let mut decoder = zstd::stream::read::Decoder::new(limited).map_err(BundleError::Read)?;
        let mut block = [0u8; BLOCK as usize];
        decoder
            .read_exact(&mut block)
            .map_err(|e| BundleError::Frame {
                index,
                offset: frame.compressed_offset,
                reason: FrameProblem::Decode(e),
            })?;
        Ok(block)
    }

    /// Writes the content of member `path` to `out`, verifying it against the checksum list.
    /// Only the frames that hold the member are decoded. Bytes reach `out` as they are decoded:
    /// if this returns an error, discard what was written.
    pub fn copy_member(&mut self, path: &str, out: &mut dyn Write) -> Result<u64, BundleError> {
        let member = self
            .headers_until(|m| m.path.as_str() == path)?
            .pop()
            .filter(|m| m.path.as_str() == path)
            .ok_or_else(|| BundleError::NoSuchMember(path.to_owned()))?;
        let index = self.table.frame_starting_at(member.offset).ok_or_else(|| {
            BundleError::NonCanonical {
                member: member.path.clone(),
                what: "frame boundary (the member does not start a frame)".into(),
            }
        })?;
        let Self {
            source,
            table,
            checksums,
            mtime,
            ..
        } = self;
        let mut walker = Walker::new(FrameReader::new(source, table, index)?, Some(*mtime));
        let list = (path != CHECKSUMS_PATH).then_some(&*checksums);
        walker.step(list, &mut CopyTo(out))?;
        Ok(member.size)
    }

    /// The embedded signature (the member [`SIGNATURE_PATH`], a Sigstore bundle JSON), if the
    /// bundle has one. The member headers are walked as [`members`](Self::members) does (one
    /// small partial decode per member, no content), then only the signature's frame and the
    /// end marker's are decoded. Its bytes are as stored: the checksum list does not cover
    /// them, checking the signature is what vouches for them.
    pub fn signature(&mut self) -> Result<Option<Vec<u8>>, BundleError> {
        let Some(index) = self.signature_frame()? else {
            return Ok(None);
        };
        let Self {
            source,
            table,
            checksums,
            mtime,
            ..
        } = self;
        let mut walker = Walker::new(FrameReader::new(source, table, index)?, Some(*mtime));
        walker.step(Some(&*checksums), &mut Discard)?;
        Ok(walker.signature())
    }

    /// Whether the bundle is split into parts.
    pub fn is_split(&self) -> bool {
        matches!(self.source, Source::Parts(_))
    }

    /// The mtime of every member.
    pub(crate) fn mtime(&self) -> u64 {
        self.mtime
    }

    /// The data frames up to the end marker, but for the signature member's: what a signed
    /// copy of the bundle keeps verbatim. Each is `(compressed offset, compressed size,
    /// decompressed size)`.
    pub(crate) fn unsigned_frames(&mut self) -> Result<Vec<(u64, u64, u64)>, BundleError> {
        let end = match self.signature_frame()? {
            Some(index) => index,
            None => self.table.frames.len().saturating_sub(1),
        };
        Ok(self.table.frames[..end]
            .iter()
            .map(|f| (f.compressed_offset, f.compressed_size, f.size))
            .collect())
    }

    /// The frame the signature member starts, found by walking the member headers: a frame
    /// that merely starts with bytes like its header (inside a blob) is not mistaken for it.
    fn signature_frame(&mut self) -> Result<Option<usize>, BundleError> {
        let headers = self.headers_until(|m| m.path.as_str() == SIGNATURE_PATH)?;
        Ok(headers
            .last()
            .filter(|m| m.path.as_str() == SIGNATURE_PATH)
            .and_then(|m| self.table.frame_starting_at(m.offset)))
    }

    /// The SBOM `kk-bundle/sbom.spdx.json` (SPDX 2.3 JSON, as stored), verified against the
    /// checksum list; `None` if the checksum list names none, as in a bundle of format 1.0.
    /// Only the SBOM's frames and the member headers before it are decoded.
    pub fn sbom(&mut self) -> Result<Option<Vec<u8>>, BundleError> {
        let path = MemberPath::fixed(SBOM_PATH);
        if self.checksums.get(&path).is_none() {
            return Ok(None);
        }
        let mut sbom = Vec::new();
        self.copy_member(SBOM_PATH, &mut sbom)
            .map_err(|error| match error {
                BundleError::NoSuchMember(_) => BundleError::Missing { member: path },
                other => other,
            })?;
        Ok(Some(sbom))
    }
}

/// Parses the description, refusing an unknown major version before anything else, since a
/// different major version may have a different shape altogether.
fn parse_description(bytes: &[u8], mtime: u64) -> Result<Description, BundleError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct VersionOnly {
        format_version: FormatVersion,
    }
    let version: VersionOnly = serde_json::from_slice(bytes).map_err(BundleError::Description)?;
    let found = version.format_version;
    if !found.is_known_major() {
        return Err(BundleError::UnsupportedVersion {
            found,
            supported: SUPPORTED_MAJORS,
        });
    }
    let description: Description =
        serde_json::from_slice(bytes).map_err(BundleError::Description)?;
    let delta = found.is_delta();
    if delta != description.base.is_some() {
        let reason = if delta {
            format!(
                "format {found} is a delta bundle, and its description must name the bundle it builds on"
            )
        } else {
            format!(
                "only a delta bundle (format {DELTA_FORMAT_VERSION}, or 2.x) builds on another; a reader of format {found} would take this one for a full bundle"
            )
        };
        return Err(BundleError::DeltaBase { reason });
    }
    if u64::try_from(description.created.as_second()).ok() != Some(mtime) {
        return Err(BundleError::CreatedMismatch {
            created: description.created,
            mtime,
        });
    }
    Ok(description)
}

/// Refuses an integrity frame of another kind than the format version requires (SPEC.md §2.2):
/// the frame alone would let a bundle be checked against the weaker of the two, or a 3.0
/// bundle be passed off as a 1.2 one to a reader of both.
fn check_integrity_kind(description: &Description, table: &FrameTable) -> Result<(), BundleError> {
    let version = description.format_version;
    let expected = version.integrity_kind();
    if table.integrity_kind == expected {
        return Ok(());
    }
    let tag = |kind: IntegrityKind| String::from_utf8_lossy(kind.tag()).into_owned();
    Err(BundleError::IntegrityKindMismatch {
        version,
        expected: tag(expected),
        found: tag(table.integrity_kind),
    })
}

/// Checks that a delta's base blobs are sorted, each listed once, and none of them also a member:
/// every blob the index reaches is then in exactly one of the two lists.
fn check_base(description: &Description, checksums: &ChecksumList) -> Result<(), BundleError> {
    let Some(base) = &description.base else {
        return Ok(());
    };
    let invalid = |reason: String| Err(BundleError::DeltaBase { reason });
    if let Some(pair) = base.blobs.windows(2).find(|p| p[0].digest >= p[1].digest) {
        return invalid(format!(
            "blob `{}` is listed out of order or twice",
            pair[1].digest
        ));
    }
    match base
        .blobs
        .iter()
        .find(|b| checksums.get(&MemberPath::blob(&b.digest)).is_some())
    {
        Some(blob) => invalid(format!(
            "blob `{}` is both carried and taken from the base",
            blob.digest
        )),
        None => Ok(()),
    }
}

/// Parses a header block for listing; the canonical comparison is the same as in a full walk.
fn parse_header(
    block: &[u8; BLOCK as usize],
    offset: u64,
    mtime: u64,
) -> Result<MemberHeader, BundleError> {
    let header = tar::Header::from_byte_slice(block);
    let name = String::from_utf8_lossy(&header.path_bytes()).into_owned();
    let path = MemberPath::parse(&name).ok_or_else(|| BundleError::UnknownMember {
        member: walk::printable(&name),
    })?;
    let size = header.entry_size().unwrap_or(u64::MAX);
    if size == u64::MAX || canonical_header(&path, size, mtime).as_bytes() != block {
        return Err(BundleError::NonCanonical {
            member: path,
            what: "header".into(),
        });
    }
    Ok(MemberHeader { path, size, offset })
}

/// Collects a header member's bytes (header members are bounded by the size limits).
#[derive(Debug, Default)]
struct Collect {
    bytes: Vec<u8>,
}

impl MemberVisitor for Collect {
    type Pending = Vec<u8>;

    fn receive(&mut self, _: &MemberHeader, data: &mut dyn Read) -> Result<Vec<u8>, BundleError> {
        let mut bytes = Vec::new();
        data.read_to_end(&mut bytes)
            .map_err(|e| from_io(e, BundleError::Read))?;
        Ok(bytes)
    }

    fn accept(
        &mut self,
        _: &MemberHeader,
        bytes: Vec<u8>,
        _: Sha256Digest,
    ) -> Result<(), BundleError> {
        self.bytes = bytes;
        Ok(())
    }
}

/// Reads and drops.
struct Discard;

impl MemberVisitor for Discard {
    type Pending = ();

    fn receive(&mut self, _: &MemberHeader, _: &mut dyn Read) -> Result<(), BundleError> {
        Ok(())
    }

    fn accept(&mut self, _: &MemberHeader, (): (), _: Sha256Digest) -> Result<(), BundleError> {
        Ok(())
    }
}

/// Reads and drops, telling the bytes read.
struct Counting<'a>(&'a mut dyn FnMut(u64));

impl MemberVisitor for Counting<'_> {
    type Pending = ();

    fn receive(&mut self, _: &MemberHeader, data: &mut dyn Read) -> Result<(), BundleError> {
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            match data.read(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(n) => (self.0)(n as u64),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(BundleError::from_read_error(e)),
            }
        }
    }

    fn accept(&mut self, _: &MemberHeader, (): (), _: Sha256Digest) -> Result<(), BundleError> {
        Ok(())
    }
}

/// Passes member bytes on to a writer.
struct CopyTo<'a>(&'a mut dyn Write);

impl MemberVisitor for CopyTo<'_> {
    type Pending = ();

    fn receive(&mut self, _: &MemberHeader, data: &mut dyn Read) -> Result<(), BundleError> {
        std::io::copy(data, self.0).map_err(|e| from_io(e, BundleError::Output))?;
        Ok(())
    }

    fn accept(&mut self, _: &MemberHeader, (): (), _: Sha256Digest) -> Result<(), BundleError> {
        Ok(())
    }
}

/// Records the digest of the first member while passing everything to the inner visitor.
struct Digests<'a, V> {
    inner: &'a mut V,
    first: Option<Sha256Digest>,
}

impl<V: MemberVisitor> MemberVisitor for Digests<'_, V> {
    type Pending = V::Pending;

    fn receive(
        &mut self,
        member: &MemberHeader,
        data: &mut dyn Read,
    ) -> Result<V::Pending, BundleError> {
        self.inner.receive(member, data)
    }

    fn accept(
        &mut self,
        member: &MemberHeader,
        pending: V::Pending,
        digest: Sha256Digest,
    ) -> Result<(), BundleError> {
        self.first.get_or_insert(digest);
        self.inner.accept(member, pending, digest)
    }
}

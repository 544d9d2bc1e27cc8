//! The error of writing, opening, verifying and unpacking a bundle.
//!
//! Messages are lowercase, name the value at fault in backticks, and end with a hint where one
//! helps. Causes are chained through `#[source]`, never flattened into the message.

use std::io;
use std::path::PathBuf;

use crate::diagnostics::cut;
use crate::digest::Sha256Digest;
use crate::format_version::FormatVersion;
use crate::member::MemberPath;

/// Why a bundle could not be written, opened, verified or unpacked.
///
/// Every error about a bundle's content names the member (or part, or frame) at fault; the
/// bundle's own path is added by the caller, which knows how the user named it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// A file could not be opened.
    #[error("cannot open `{}`", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Reading the bundle failed.
    #[error("cannot read the bundle")]
    Read(#[source] io::Error),
    /// Writing a file failed.
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Writing the bundle stream failed.
    #[error("cannot write the bundle")]
    Output(#[source] io::Error),
    /// zstd refused to compress.
    #[error("cannot compress the bundle")]
    Compress(#[source] io::Error),
    /// A JSON document could not be serialised.
    #[error("cannot serialise a header file")]
    Json(#[source] serde_json::Error),
    /// The description's time cannot be a tar mtime.
    #[error(
        "the bundle's creation time `{0}` is before 1970; set SOURCE_DATE_EPOCH or fix the lock"
    )]
    CreatedBeforeEpoch(jiff::Timestamp),
    /// `SOURCE_DATE_EPOCH` is not a number of seconds.
    #[error(
        "SOURCE_DATE_EPOCH=`{0}` is not a whole number of seconds since 1970; unset it or fix it"
    )]
    SourceDateEpoch(String),
    /// A blob file given to the writer could not be read.
    #[error("cannot read blob file `{}`", path.display())]
    BlobRead {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A blob file given to the writer is not what it claims to be.
    #[error(
        "blob file `{}` holds {actual_size} bytes with digest `{actual}`, expected {expected_size} bytes with `{expected}`; hint: the cache entry is corrupt, delete it and rebuild",
        path.display()
    )]
    BlobMismatch {
        /// The file.
        path: PathBuf,
        /// The digest it should have.
        expected: Sha256Digest,
        /// The size it should have.
        expected_size: u64,
        /// The digest it has.
        actual: Sha256Digest,
        /// The size it has.
        actual_size: u64,
    },
    /// A name or version cannot name an artifact in `index.json`.
    #[error("`{value}` cannot name an artifact: expected {reason}")]
    ArtifactName {
        /// The name or version.
        value: String,
        /// What is expected.
        reason: String,
    },
    /// The split size is out of range.
    #[error("split size {size} is out of range; parts hold 1 to {max} bytes (FAT32's limit)")]
    PartSizeInvalid {
        /// The requested size.
        size: u64,
        /// The largest part.
        max: u64,
    },
    /// The parts index is malformed.
    #[error("parts index `{}` is invalid: {reason}", path.display())]
    PartsIndex {
        /// The index file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A part listed in the parts index does not exist.
    #[error("part `{}` is missing; hint: copy every part next to the parts index", path.display())]
    PartMissing {
        /// The part.
        path: PathBuf,
    },
    /// A part has the wrong size.
    #[error("part `{}` is {actual} bytes, the parts index says {expected}; it is truncated or was copied incompletely", path.display())]
    PartSize {
        /// The part.
        path: PathBuf,
        /// The size the index gives.
        expected: u64,
        /// The size found.
        actual: u64,
    },
    /// A part has the wrong content.
    #[error("part `{}` has digest `{actual}`, the parts index says `{expected}`", path.display())]
    PartDigest {
        /// The part.
        path: PathBuf,
        /// The digest the index gives.
        expected: Sha256Digest,
        /// The digest found.
        actual: Sha256Digest,
    },
    /// The seek table at the end of the bundle is missing or wrong.
    #[error("the bundle is truncated or not a kk bundle: {0}")]
    SeekTable(String),
    /// A zstd frame breaks the format's rules or does not decode.
    #[error("zstd frame {index} at byte {offset} is corrupt: {reason}")]
    Frame {
        /// The frame's number, from 0.
        index: usize,
        /// Its offset in the bundle.
        offset: u64,
        /// What is wrong.
        reason: FrameProblem,
    },
    /// The file's bytes differ from those the integrity frame vouches for.
    #[error(
        "the integrity frame at byte {offset} does not match the bundle's bytes: the file was changed or damaged after it was written"
    )]
    Integrity {
        /// The integrity frame's offset.
        offset: u64,
    },
    /// The integrity frame's tag names no kind this reader knows.
    #[error(
        "the integrity frame at byte {offset} has the tag `{tag}`, which is neither `KKFD` nor `KKFL`: the file was damaged, or written by a newer kk-bundle"
    )]
    IntegrityTag {
        /// The integrity frame's offset.
        offset: u64,
        /// The four bytes, printable.
        tag: String,
    },
    /// The integrity frame is not of the kind the bundle's format version requires.
    #[error(
        "the bundle says format version `{version}`, whose integrity frame is tagged `{expected}`, but it has one tagged `{found}`; the file was changed after it was written"
    )]
    IntegrityKindMismatch {
        /// The bundle's version.
        version: FormatVersion,
        /// The tag that version requires.
        expected: String,
        /// The tag found.
        found: String,
    },
    /// The checksum list is not in its one valid spelling.
    #[error("checksum list `kk-bundle/SHA256SUMS` is malformed{}: {reason}", if *line > 0 { format!(" at line {line}") } else { String::new() })]
    ChecksumList {
        /// The line at fault, from 1; 0 for the list as a whole.
        line: usize,
        /// What is wrong.
        reason: ChecksumListProblem,
    },
    /// The tar stream ends early.
    #[error("the bundle is truncated{}", after.as_ref().map(|m| format!(" after member `{m}`")).unwrap_or_default())]
    Truncated {
        /// The last complete member.
        after: Option<MemberPath>,
    },
    /// The end-of-archive marker is wrong, or something follows it.
    #[error(
        "the end of the tar stream is malformed: expected two zero blocks forming the last zstd frame"
    )]
    EndMarker,
    /// The first member is not the checksum list.
    #[error(
        "the first member is `{first}`, not `kk-bundle/SHA256SUMS`: this is not a kk bundle of format 1"
    )]
    NotABundle {
        /// The first member's name.
        first: String,
    },
    /// The second member is not the description.
    #[error("the second member is `{found}`, not `kk-bundle/bundle.json`")]
    HeaderOrder {
        /// The second member's name.
        found: MemberPath,
    },
    /// A member's path is not one format v1 allows.
    #[error("member `{member}` has a path format v1 does not allow")]
    UnknownMember {
        /// The member's name.
        member: String,
    },
    /// A member is not in the checksum list.
    #[error("member `{member}` is not in the checksum list")]
    NotListed {
        /// The member.
        member: MemberPath,
    },
    /// The signature member is misplaced: not the last member, or named by the checksum list.
    #[error("the signature member `{}` {reason}", crate::member::SIGNATURE_PATH)]
    SignatureMember {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A member in the checksum list is not in the bundle.
    #[error("member `{member}` is in the checksum list but not in the bundle")]
    Missing {
        /// The member.
        member: MemberPath,
    },
    /// A member occurs twice.
    #[error("member `{member}` occurs twice")]
    Duplicate {
        /// The member.
        member: MemberPath,
    },
    /// A zstd frame holding part of a member is damaged.
    #[error("member `{member}` is damaged")]
    Damaged {
        /// The member.
        member: MemberPath,
        /// The frame's error.
        #[source]
        source: Box<BundleError>,
    },
    /// A member's content does not match the checksum list.
    #[error("member `{member}` has digest `{actual}`, the checksum list says `{expected}`")]
    DigestMismatch {
        /// The member.
        member: MemberPath,
        /// The listed digest.
        expected: Sha256Digest,
        /// The digest of the content.
        actual: Sha256Digest,
    },
    /// A member's path is absolute or climbs out with `..`.
    #[error("member `{member}` has an absolute path or one containing `..`")]
    UnsafePath {
        /// The member's name.
        member: String,
    },
    /// A member is a link, device, directory or other non-file.
    #[error("member `{member}` is {kind}; bundles hold regular files only")]
    NotAFile {
        /// The member's name.
        member: String,
        /// What it is.
        kind: String,
    },
    /// A header member is larger than a reader accepts.
    #[error("member `{member}` is {size} bytes, more than the {limit} bytes allowed")]
    TooLarge {
        /// The member.
        member: MemberPath,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A member's tar header or padding differs from the canonical one.
    #[error("member `{member}` is not in canonical form: {what}")]
    NonCanonical {
        /// The member.
        member: MemberPath,
        /// Which part differs.
        what: String,
    },
    /// The description is not valid JSON of the expected shape.
    #[error("the description `kk-bundle/bundle.json` is invalid")]
    Description(#[source] serde_json::Error),
    /// The format's major version is not one this reader knows.
    #[error(
        "the bundle has format version `{found}`; this reader reads formats {supported}; hint: use a kk-install at least as new as the kk-bundle that built it"
    )]
    UnsupportedVersion {
        /// The bundle's version.
        found: FormatVersion,
        /// The major versions this reader reads, for the message (`1.x to 4.x`).
        supported: &'static str,
    },
    /// The description to write states a format version whose major this writer does not know:
    /// every reader of the formats it knows would refuse the bundle.
    #[error(
        "cannot write format version `{found}`: this writer writes formats {supported}; hint: a new bundle says `{}` (`{}` for a delta)",
        crate::format_version::FORMAT_VERSION,
        crate::format_version::DELTA_FORMAT_VERSION
    )]
    UnknownWriteVersion {
        /// The version the description states.
        found: FormatVersion,
        /// The major versions this writer knows, for the message.
        supported: &'static str,
    },
    /// A delta bundle's `base` (or its absence) does not fit the format version or the
    /// checksum list.
    #[error("the description's `base` is invalid: {reason}")]
    DeltaBase {
        /// What is wrong.
        reason: String,
    },
    /// A blob a delta bundle takes from its base is not in the store it is unpacked into.
    #[error(
        "blob `{digest}` is not in the store `{}`: this delta bundle builds on bundle `{base}`, which carries it; hint: unpack that bundle into the store first (and the bundles it builds on, if it is a delta itself)",
        store.display()
    )]
    BaseBlobMissing {
        /// The missing blob.
        digest: Sha256Digest,
        /// The identity of the bundle the delta builds on.
        base: Sha256Digest,
        /// The store.
        store: PathBuf,
    },
    /// The description's creation time is not the members' mtime.
    #[error(
        "the description says the bundle was created at `{created}`, but its members are dated {mtime}"
    )]
    CreatedMismatch {
        /// The description's time.
        created: jiff::Timestamp,
        /// The members' mtime.
        mtime: u64,
    },
    /// Unpacking would go through something that is not a plain directory.
    #[error("`{}` is not a plain directory (a symbolic link or a file is in the way); unpacking never writes through links", path.display())]
    UnsafeDestination {
        /// The path in the way.
        path: PathBuf,
    },
    /// A frame-cache entry did not decode to what its table says; it was removed.
    #[error(
        "the frame cache entry `{}` for blob `{digest}` is damaged and was removed; hint: run the build again, which compresses the blob anew",
        path.display()
    )]
    FrameCacheDamaged {
        /// The blob.
        digest: Sha256Digest,
        /// The entry.
        path: PathBuf,
    },
    /// The caller could not provide a blob the writer was about to read.
    #[error("blob `{digest}` could not be provided: {reason}")]
    BlobNotReady {
        /// The blob.
        digest: Sha256Digest,
        /// Why.
        reason: String,
    },
    /// A member's header claims more bytes than the tar stream holds after it.
    #[error(
        "member `{member}` claims {size} bytes, more than the {available} the bundle holds after its header; the bundle is damaged or was crafted"
    )]
    MemberTooLong {
        /// The member.
        member: MemberPath,
        /// The size its header gives.
        size: u64,
        /// The bytes of tar stream after its header.
        available: u64,
    },
    /// A member ends inside a frame, where no member can start: its size is wrong.
    #[error(
        "member `{member}` ends at byte {end} of the tar stream, inside a zstd frame, where no member can start; its size is wrong: the bundle is damaged or was crafted"
    )]
    EndsInsideFrame {
        /// The member.
        member: MemberPath,
        /// The tar offset where it ends.
        end: u64,
    },
    /// A member the caller asked for is not in the bundle.
    #[error("the bundle has no member `{0}`")]
    NoSuchMember(String),
    /// The bundle carries no SBOM: it predates format 1.1.
    #[error(
        "the bundle has format version `{version}` and no SBOM `kk-bundle/sbom.spdx.json`; hint: bundles of format 1.1 and later carry one, rebuild it with a current kk-bundle"
    )]
    NoSbom {
        /// The bundle's format version.
        version: FormatVersion,
    },
}

/// What is wrong with a zstd frame of a bundle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameProblem {
    /// The frame does not start with zstd's magic number.
    #[error("it does not start with the zstd magic number")]
    NoMagic,
    /// The frame ends before its header does.
    #[error("it is too short")]
    TooShort,
    /// The header's flags are not those the format requires.
    #[error("its header descriptor is {found:#04x}, not {expected:#04x}")]
    Descriptor {
        /// The descriptor byte found.
        found: u8,
        /// The one the format requires for this frame's size.
        expected: u8,
    },
    /// The header's content size differs from the seek table's.
    #[error("its header says {header} bytes, the seek table {table}")]
    ContentSize {
        /// The size in the frame header.
        header: u64,
        /// The size in the seek table.
        table: u64,
    },
    /// The file ends inside the frame.
    #[error("the bundle ends inside it")]
    EndsInside,
    /// zstd cannot find where the frame ends.
    #[error("{0}")]
    Zstd(&'static str),
    /// The frame's compressed length differs from the seek table's.
    #[error("it is {length} bytes long, the seek table says {table}")]
    CompressedSize {
        /// The length zstd found.
        length: u64,
        /// The length in the seek table.
        table: u64,
    },
    /// zstd could not decode the frame (its own message, since it is the whole explanation).
    #[error("{0}")]
    Decode(io::Error),
    /// The frame decodes to another size than the seek table's.
    #[error("it decodes to {decoded} bytes, not {table}")]
    DecodedSize {
        /// The bytes decoded.
        decoded: u64,
        /// The size in the seek table.
        table: u64,
    },
}

/// What is wrong with the checksum list `kk-bundle/SHA256SUMS`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChecksumListProblem {
    /// The list is not UTF-8.
    #[error("is not UTF-8")]
    NotUtf8,
    /// The last line has no newline.
    #[error("must end with a newline")]
    NoFinalNewline,
    /// A line is too short to hold a digest.
    #[error("`{}` is not `<64 hex>  <path>`", cut(.line))]
    NotALine {
        /// The line.
        line: String,
    },
    /// The digest is not 64 lowercase hex digits.
    #[error("`{}` is not 64 lowercase hex digits", cut(.hex))]
    Digest {
        /// The first 64 characters of the line.
        hex: String,
    },
    /// The digest is not followed by two spaces.
    #[error("expected two spaces after the digest in `{}`", cut(.line))]
    Separator {
        /// The line.
        line: String,
    },
    /// The path is not a member path.
    #[error("`{}` is not a member path", cut(.path))]
    Path {
        /// The path as written.
        path: String,
    },
    /// The list lists itself.
    #[error("the list must not list itself")]
    ListsItself,
    /// A blob is listed with a digest other than its name.
    #[error("`{path}` is listed with another digest, {digest}")]
    OtherDigest {
        /// The blob's path.
        path: MemberPath,
        /// The digest listed.
        digest: Sha256Digest,
    },
    /// The lines are not sorted by path, or a path repeats.
    #[error("`{path}` is out of order or repeated")]
    Order {
        /// The path out of order.
        path: MemberPath,
    },
    /// A member every bundle has is not listed.
    #[error("does not list `{path}`")]
    Unlisted {
        /// The member's path.
        path: &'static str,
    },
}

impl BundleError {
    /// The error behind a failed read of a member's data during [`crate::Bundle::walk`]: the
    /// bundle's own error (a corrupt frame, a truncated part) when it carried one, else an I/O error.
    pub fn from_read_error(error: io::Error) -> Self {
        from_io(error, Self::Read)
    }
}

/// Takes a [`BundleError`] back out of an `io::Error` that carried it through a `Read` or
/// `Write` implementation, or wraps a plain I/O error with `wrap`.
pub(crate) fn from_io(
    error: io::Error,
    wrap: impl FnOnce(io::Error) -> BundleError,
) -> BundleError {
    let carries_ours = error
        .get_ref()
        .is_some_and(<dyn std::error::Error + Send + Sync>::is::<BundleError>);
    if !carries_ours {
        return wrap(error);
    }
    let kind = error.kind();
    match error
        .into_inner()
        .map(<dyn std::error::Error + Send + Sync>::downcast::<BundleError>)
    {
        Some(Ok(inner)) => *inner,
        Some(Err(other)) => wrap(io::Error::new(kind, other)),
        None => wrap(io::Error::from(kind)),
    }
}

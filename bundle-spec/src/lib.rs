//! The kk bundle format: what `kk-bundle` writes and `kk-install` reads.
//!
//! `SPEC.md` beside this crate is the normative description of format v1; this crate is its
//! reference implementation, and both binaries of the project depend on it (it depends on
//! neither).
//!
//! # How the types fit
//!
//! A [`manifest::Manifest`] is what a user asks for. The builder resolves it into a [`Lock`]
//! (exact URLs, digests) and fetches blobs; it then describes the result in a [`Description`]
//! (format version, builder, creation time, the manifest's text, the lock, one [`Artifact`] per
//! artifact and platform) and hands that, an OCI image index and the blob files to
//! [`write_bundle`] as [`BundleContents`].
//!
//! The writer produces one tar, inside one seekable zstd stream: first the checksum list
//! ([`ChecksumList`], `kk-bundle/SHA256SUMS`), then the description, then an OCI image layout
//! (`oci-layout`, `index.json`, `blobs/sha256/…`), with the SBOM (`kk-bundle/sbom.spdx.json`,
//! SPDX 2.3, derived from the description by [`sbom`]) between `index.json` and the blobs.
//! [`member`] holds the member grammar and the canonical tar header; [`parts`] the splitting
//! into FAT32-sized parts.
//!
//! A reader starts with [`Bundle::open`], which reads only the seek table and the two header
//! members. [`Bundle::verify`], [`Bundle::walk`] (which the installer's store unpacks
//! through) and [`Bundle::copy_member`] then stream frames and check every member against the
//! checksum list as it passes; [`Bundle::sbom`] reads just the SBOM.
//!
//! # Why it is built this way
//!
//! - **The checksum list is the root of trust.** It comes first so a reader can check each member
//!   the moment it arrives, without buffering or a second pass. Its spelling is unique, so its
//!   sha256 ([`Bundle::identity`]) identifies the content; a signature will cover exactly that.
//! - **Canonical bytes everywhere.** Tar headers, the list, the frame headers and the seek table
//!   each have one valid form, and the reader compares bytes instead of interpreting fields.
//!   Together with the integrity frame this makes every changed byte of a bundle an error, which
//!   the tests check exhaustively on a small bundle.
//! - **Determinism.** Nothing the writer emits depends on the clock, the machine or the thread
//!   count: the creation time comes from `SOURCE_DATE_EPOCH` or the lock
//!   ([`description::creation_time`]), members are sorted, and zstd runs in its multithreaded
//!   mode, whose output does not depend on the number of workers, or (for frames that do not
//!   compress) single-threaded.
//! - **Standard tools keep working.** The stream is plain zstd (the seek table and integrity
//!   frame are skippable frames) holding a plain ustar archive holding a plain OCI layout:
//!   `zstd -d | tar -x` and then skopeo, oras or helm need nothing from kk.

mod bundle_error;
pub mod charts;
pub mod checksums;
pub mod description;
pub mod diagnostics;
pub mod digest;
pub mod durable;
pub mod error;
pub mod format_version;
pub mod inspect;
mod integrity;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod member;
pub mod oci;
pub mod packages;
pub mod parts;
pub mod platform;
pub mod read;
pub mod sbom;
pub mod sign;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod write;

pub use bundle_error::BundleError;
pub use checksums::ChecksumList;
pub use description::{
    Artifact, ArtifactKind, BaseBlob, DELTA_FORMAT_VERSION, DeltaBase, Description, FORMAT_VERSION,
    FormatVersion,
};
pub use digest::Sha256Digest;
pub use lock::Lock;
pub use manifest::ManifestError;
pub use read::{Bundle, MemberHeader, Verified};
pub use write::{
    BlobFile, BundleContents, WriteOptions, WrittenBundle, write_bundle, write_bundle_as_ready,
};

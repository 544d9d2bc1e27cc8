//! The kk bundle format.
//!
//! (crate documentation is written once the modules settle)

pub mod checksums;
pub mod description;
pub mod digest;
mod error;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod member;
pub mod parts;
pub mod platform;
pub mod read;
pub mod write;

pub use checksums::ChecksumList;
pub use description::{Artifact, ArtifactKind, Description, FORMAT_VERSION, FormatVersion};
pub use digest::Sha256Digest;
pub use error::{BundleError, ManifestError};
pub use lock::Lock;
pub use read::{Bundle, MemberHeader, Verified};
pub use write::{BlobFile, BundleContents, WriteOptions, WrittenBundle, write_bundle};

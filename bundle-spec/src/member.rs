//! Member paths and the canonical tar header of format v1.
//!
//! The tar inside a bundle is canonical: for a given path, size and mtime there is exactly one
//! valid 512-byte header. The reader rebuilds that header and compares bytes instead of
//! interpreting fields one by one, so a flipped mode bit, a stray owner name or a PAX record can
//! never slip through as "probably harmless".

use std::fmt;

use crate::digest::Sha256Digest;
use crate::oci::{BLOBS_DIR, INDEX_PATH, OCI_LAYOUT_PATH};

/// Path of the checksum list, always the first member.
pub const CHECKSUMS_PATH: &str = "kk-bundle/SHA256SUMS";
/// Path of the bundle description, always the second member.
pub const DESCRIPTION_PATH: &str = "kk-bundle/bundle.json";

/// Path of the signature over the checksum list (a Sigstore bundle JSON), the one member the
/// checksum list does not name: it is the last member, after every listed one.
pub const SIGNATURE_PATH: &str = "kk-bundle/SHA256SUMS.sigstore.json";
/// Largest signature member a reader accepts (a key-only Sigstore bundle is about 500 bytes).
pub const MAX_SIGNATURE_SIZE: u64 = 64 << 10;

/// Largest checksum list a reader accepts (it is held in memory to verify everything else).
pub const MAX_CHECKSUMS_SIZE: u64 = 16 << 20;
/// The most members a bundle can have: a checksum list of [`MAX_CHECKSUMS_SIZE`] bytes names at
/// most this many (its shortest line, for `oci-layout`, is 77 bytes), plus the list itself.
pub const MAX_MEMBERS: u64 = MAX_CHECKSUMS_SIZE / 77 + 1;

/// Largest header file a reader accepts, but for the checksum list, the description and the
/// index.
pub const MAX_HEADER_FILE_SIZE: u64 = 64 << 20;
/// Largest description or `index.json` a reader accepts. Both are parsed into memory, and JSON
/// made of the smallest values (`"",` repeated) costs a parser about ten times its size: a
/// 7 KB crafted bundle with a 64 MiB description took 616 MiB (BENCHMARKS.md).
pub const MAX_PARSED_HEADER_SIZE: u64 = 8 << 20;

/// The mode of every member.
pub(crate) const MEMBER_MODE: u32 = 0o644;
/// The size of a tar block.
pub(crate) const BLOCK: u64 = 512;

/// A validated member path: one of the fixed layout files, a `kk-bundle/` header file, or a blob.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemberPath(String);

/// What a member holds, derived from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// `kk-bundle/SHA256SUMS`.
    Checksums,
    /// `kk-bundle/bundle.json`.
    Description,
    /// Another `kk-bundle/` file (added by a later minor version).
    HeaderFile,
    /// `oci-layout`.
    OciLayout,
    /// `index.json`.
    Index,
    /// `blobs/sha256/<hex>`, with the digest its name promises.
    Blob(Sha256Digest),
}

impl MemberPath {
    /// Validates `path` against the member grammar of format v1 (see SPEC.md, "Members").
    pub fn parse(path: &str) -> Option<Self> {
        Self::kind_of(path).map(|_| Self(path.to_owned()))
    }

    /// The path of the blob with `digest`.
    pub fn blob(digest: &Sha256Digest) -> Self {
        Self(format!("{BLOBS_DIR}/{}", digest.hex()))
    }

    pub(crate) fn fixed(path: &'static str) -> Self {
        Self(path.to_owned())
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What this member holds.
    pub fn kind(&self) -> MemberKind {
        Self::kind_of(&self.0).unwrap_or(MemberKind::HeaderFile)
    }

    fn kind_of(path: &str) -> Option<MemberKind> {
        match path {
            CHECKSUMS_PATH => return Some(MemberKind::Checksums),
            DESCRIPTION_PATH => return Some(MemberKind::Description),
            OCI_LAYOUT_PATH => return Some(MemberKind::OciLayout),
            INDEX_PATH => return Some(MemberKind::Index),
            _ => {}
        }
        if let Some(hex) = path
            .strip_prefix(BLOBS_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
        {
            return Sha256Digest::from_hex(hex).map(MemberKind::Blob);
        }
        let name = path.strip_prefix("kk-bundle/")?;
        let valid = (1..=64).contains(&name.len())
            && name.as_bytes()[0].is_ascii_alphanumeric()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        valid.then_some(MemberKind::HeaderFile)
    }

    /// The largest size a reader accepts for this member, if it is bounded.
    pub fn size_limit(&self) -> Option<u64> {
        match self.kind() {
            MemberKind::Checksums => Some(MAX_CHECKSUMS_SIZE),
            MemberKind::Description | MemberKind::Index => Some(MAX_PARSED_HEADER_SIZE),
            MemberKind::Blob(_) => None,
            _ if self.0 == SIGNATURE_PATH => Some(MAX_SIGNATURE_SIZE),
            _ => Some(MAX_HEADER_FILE_SIZE),
        }
    }
}

impl fmt::Display for MemberPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for MemberPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.0)
    }
}

/// The one valid header for a member: ustar, mode 0644, owner 0:0, no user or group names.
pub(crate) fn canonical_header(path: &MemberPath, size: u64, mtime: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    // Member paths are at most 77 bytes of ASCII, so they always fit the 100-byte name field.
    let name = path.as_str().as_bytes();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(MEMBER_MODE);
    header.set_uid(0);
    header.set_gid(0);
    header.set_size(size);
    header.set_mtime(mtime);
    header.set_cksum();
    header
}

/// The number of zero bytes that pad a member of `size` bytes to a whole block.
pub(crate) fn padding(size: u64) -> u64 {
    (BLOCK - size % BLOCK) % BLOCK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_grammar() {
        let hex = "a".repeat(64);
        let cases: &[(&str, bool)] = &[
            ("kk-bundle/SHA256SUMS", true),
            ("kk-bundle/bundle.json", true),
            ("kk-bundle/signature-v2.json", true),
            ("oci-layout", true),
            ("index.json", true),
            (&format!("blobs/sha256/{hex}"), true),
            (&format!("blobs/sha256/{}", "A".repeat(64)), false),
            (&format!("blobs/sha512/{hex}"), false),
            (&format!("/blobs/sha256/{hex}"), false),
            (&format!("blobs/sha256/../{hex}"), false),
            ("kk-bundle/../etc/passwd", false),
            ("kk-bundle/.hidden", false),
            ("kk-bundle/", false),
            ("kk-bundle/a/b", false),
            ("blobs/", false),
            ("other", false),
            ("./index.json", false),
        ];
        for (path, ok) in cases {
            assert_eq!(MemberPath::parse(path).is_some(), *ok, "{path}");
        }
    }

    #[test]
    fn canonical_header_fields() {
        let path = MemberPath::fixed(INDEX_PATH);
        let h = canonical_header(&path, 1234, 1_700_000_000);
        let bytes = h.as_bytes();
        assert_eq!(&bytes[..10], b"index.json");
        assert_eq!(&bytes[100..108], b"0000644\0");
        assert_eq!(&bytes[124..136], b"00000002322\0");
        assert_eq!(bytes[156], b'0');
        assert_eq!(&bytes[257..265], b"ustar\x0000");
        assert_eq!(h.mtime().unwrap(), 1_700_000_000);
        assert_eq!(
            h.cksum().unwrap(),
            h.as_bytes()
                .iter()
                .enumerate()
                .map(|(i, b)| if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(*b)
                })
                .sum::<u32>()
        );
    }

    #[test]
    fn padding_to_blocks() {
        assert_eq!(padding(0), 0);
        assert_eq!(padding(1), 511);
        assert_eq!(padding(512), 0);
        assert_eq!(padding(513), 511);
    }
}

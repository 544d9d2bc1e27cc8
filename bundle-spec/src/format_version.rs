//! The bundle format's version, `MAJOR.MINOR`, and the versions this crate writes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::diagnostics::cut;

/// The format version this crate writes for a full bundle.
///
/// 1.1 added the SBOM member `kk-bundle/sbom.spdx.json` (see [`crate::sbom`]); a 1.0 reader
/// verifies it like any member and otherwise ignores it. 1.2 added operating-system packages:
/// the artifact kind `package` and the description's `packages` (see [`crate::packages`]).
/// 3.0 is 1.2 with the integrity frame over the list of the frames' sha256s (`KKFL`, see
/// [`IntegrityKind`]) instead of one sha256 over the whole file: a rebuild then hashes only the
/// frames it did not copy from its frame cache. It is a major version because a reader of 1.x
/// would check the frame as `KKFD` and call a sound bundle damaged; by its version rule it
/// refuses the bundle by name instead.
pub const FORMAT_VERSION: FormatVersion = FormatVersion { major: 3, minor: 0 };

/// The format version of a delta bundle (SPEC.md §8): a bundle that leaves out the blobs of the
/// bundle it builds on. It is a major version of its own so that a reader of full bundles,
/// which would take the missing blobs for a damaged bundle, refuses it by its version instead.
/// 4.0 is to 2.1 what 3.0 is to 1.2.
pub const DELTA_FORMAT_VERSION: FormatVersion = FormatVersion { major: 4, minor: 0 };

/// The newest minor version of each major version this crate reads: 1 and 3 are full
/// bundles, 2 and 4 deltas; 1 and 2 carry the whole-file integrity frame, 3 and 4 the list.
const KNOWN: [FormatVersion; 4] = [
    FormatVersion { major: 1, minor: 2 },
    FormatVersion { major: 2, minor: 1 },
    FORMAT_VERSION,
    DELTA_FORMAT_VERSION,
];

/// The major versions this crate reads and writes, as its messages name them.
pub const SUPPORTED_MAJORS: &str = "1.x to 4.x";

/// What a bundle's integrity frame (SPEC.md §2.2) holds the sha256 of; its four-byte tag says
/// which, and the bundle's major version says which it must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegrityKind {
    /// `KKFD`: every byte of the file before the integrity frame (formats 1 and 2).
    WholeFile,
    /// `KKFL`: the 32-byte sha256 of each data frame, concatenated in file order (formats 3
    /// and 4).
    FrameList,
}

impl IntegrityKind {
    /// The tag the frame carries.
    pub fn tag(self) -> &'static [u8; 4] {
        match self {
            Self::WholeFile => b"KKFD",
            Self::FrameList => b"KKFL",
        }
    }

    /// The kind `tag` names, if any.
    pub fn from_tag(tag: &[u8]) -> Option<Self> {
        [Self::WholeFile, Self::FrameList]
            .into_iter()
            .find(|kind| kind.tag() == tag)
    }
}

/// A bundle format version, `MAJOR.MINOR`.
///
/// A reader refuses a major version it does not know: the layout or the checksum list may have
/// changed in ways it cannot check. A newer minor version only adds optional fields and
/// `kk-bundle/` files, all covered by the checksum list, so an older reader still verifies
/// and unpacks it and reports that it may not understand everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FormatVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Additive changes.
    pub minor: u32,
}

impl FormatVersion {
    /// Whether this crate reads bundles of this major version.
    pub fn is_known_major(self) -> bool {
        KNOWN.iter().any(|known| known.major == self.major)
    }

    /// The newest minor version of this major version this crate knows, if it knows the major.
    pub fn newest_known(self) -> Option<FormatVersion> {
        KNOWN.into_iter().find(|known| known.major == self.major)
    }

    /// Whether this is a delta bundle's version (major 2 or 4).
    pub fn is_delta(self) -> bool {
        matches!(self.major, 2 | 4)
    }

    /// The integrity frame a bundle of this version carries.
    pub fn integrity_kind(self) -> IntegrityKind {
        if self.major <= 2 {
            IntegrityKind::WholeFile
        } else {
            IntegrityKind::FrameList
        }
    }
}

impl fmt::Display for FormatVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Text that is not a format version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{}` is not a format version like `1.0`", cut(.text))]
pub struct FormatVersionError {
    /// The text given.
    pub text: String,
}

impl FromStr for FormatVersion {
    type Err = FormatVersionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || FormatVersionError {
            text: text.to_owned(),
        };
        let (major, minor) = text.split_once('.').ok_or_else(invalid)?;
        let number = |s: &str| {
            let canonical = !s.is_empty() && (s == "0" || !s.starts_with('0'));
            canonical
                .then(|| s.parse::<u32>().ok())
                .flatten()
                .ok_or_else(invalid)
        };
        Ok(Self {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl Serialize for FormatVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FormatVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_major_version_has_its_kind_and_integrity_frame() {
        let version = |major, minor| FormatVersion { major, minor };
        let cases = [
            (version(1, 2), false, Some(IntegrityKind::WholeFile)),
            (version(2, 1), true, Some(IntegrityKind::WholeFile)),
            (version(3, 0), false, Some(IntegrityKind::FrameList)),
            (version(4, 0), true, Some(IntegrityKind::FrameList)),
            (version(5, 0), false, None),
            (version(0, 9), false, None),
        ];
        for (version, delta, kind) in cases {
            assert_eq!(version.is_known_major(), kind.is_some(), "{version}");
            if let Some(kind) = kind {
                assert_eq!(version.is_delta(), delta, "{version}");
                assert_eq!(version.integrity_kind(), kind, "{version}");
                assert_eq!(IntegrityKind::from_tag(kind.tag()), Some(kind));
            }
        }
        assert_eq!(IntegrityKind::from_tag(b"KKFX"), None);
        assert!(FORMAT_VERSION.is_known_major() && !FORMAT_VERSION.is_delta());
        assert!(DELTA_FORMAT_VERSION.is_delta());
        assert_eq!(
            version(3, 7).newest_known(),
            Some(FORMAT_VERSION),
            "a newer minor is told by the newest known one"
        );
    }
}

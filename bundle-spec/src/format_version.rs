//! The bundle format's version, `MAJOR.MINOR`, and the versions this crate writes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::diagnostics::cut;

/// The format version this crate writes for a full bundle, and the first major version it reads.
///
/// 1.1 added the SBOM member `kk-bundle/sbom.spdx.json` (see [`crate::sbom`]); a 1.0 reader
/// verifies it like any member and otherwise ignores it. 1.2 added operating-system packages:
/// the artifact kind `package` and the description's `packages` (see [`crate::packages`]).
pub const FORMAT_VERSION: FormatVersion = FormatVersion { major: 1, minor: 2 };

/// The format version of a delta bundle (SPEC.md §7): a bundle that leaves out the blobs of the
/// bundle it builds on. It is a major version of its own so that a reader of format 1, which
/// would take the missing blobs for a damaged bundle, refuses it by its version instead.
/// 2.1 added what 1.2 added.
pub const DELTA_FORMAT_VERSION: FormatVersion = FormatVersion { major: 2, minor: 1 };

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

//! Split bundles: parts below 4 GiB so a bundle fits FAT32 media, and the index that lists them.
//!
//! A bundle `cluster.tar.zst` split into parts is `cluster.tar.zst.part001`, `.part002`, …
//! (the first part is the one ending in `001`) plus `cluster.tar.zst.split.json`, a JSON index with
//! each part's size and sha256 and those of the whole. Concatenating the parts in order gives
//! exactly the single-file bundle, so `cat cluster.tar.zst.part* | zstd -d | tar -x` works.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bundle_error::BundleError;
use crate::description::canonical_json;
use crate::digest::Sha256Digest;
use crate::durable;

/// The `format` field of a parts index.
pub const PARTS_FORMAT: &str = "kk-bundle-parts";
/// The parts index version this crate writes and reads.
pub const PARTS_VERSION: u32 = 1;
/// The largest parts index a reader accepts.
const MAX_PARTS_INDEX_SIZE: u64 = 1 << 20;

/// The content of `<bundle>.split.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartsIndex {
    /// Always [`PARTS_FORMAT`].
    pub format: String,
    /// Always [`PARTS_VERSION`].
    pub version: u32,
    /// The file name of the bundle the parts make up.
    pub bundle: String,
    /// The size of the whole bundle.
    pub size: u64,
    /// The sha256 of the whole bundle.
    pub sha256: Sha256Digest,
    /// The parts, in order.
    pub parts: Vec<PartEntry>,
}

/// One part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartEntry {
    /// The part's file name, in the directory of the index.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its sha256.
    pub sha256: Sha256Digest,
}

impl PartEntry {
    pub(crate) fn new(path: &Path, size: u64, sha256: Sha256Digest) -> Self {
        Self {
            name: file_name(path),
            size,
            sha256,
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `<bundle>.partNNN`.
pub fn part_path(bundle: &Path, number: usize) -> PathBuf {
    let mut name = bundle.as_os_str().to_owned();
    name.push(format!(".part{number:03}"));
    PathBuf::from(name)
}

/// `<bundle>.split.json`.
pub fn parts_index_path(bundle: &Path) -> PathBuf {
    let mut name = bundle.as_os_str().to_owned();
    name.push(".split.json");
    PathBuf::from(name)
}

/// The parts index for a path a user gave: the index itself, the first part, or the bundle
/// name when only its parts exist. `None` means `path` is a single-file bundle.
pub fn find_parts_index(path: &Path) -> Option<PathBuf> {
    let text = path.as_os_str().to_string_lossy();
    if text.ends_with(".split.json") {
        return Some(path.to_owned());
    }
    if let Some(stem) = text.strip_suffix(".part001") {
        return Some(parts_index_path(Path::new(stem)));
    }
    let index = parts_index_path(path);
    (!path.exists() && index.exists()).then_some(index)
}

impl PartsIndex {
    pub(crate) fn new(bundle: &Path, size: u64, sha256: Sha256Digest) -> Self {
        Self {
            format: PARTS_FORMAT.to_owned(),
            version: PARTS_VERSION,
            bundle: file_name(bundle),
            size,
            sha256,
            parts: Vec::new(),
        }
    }

    pub(crate) fn write(&self, path: &Path) -> Result<(), BundleError> {
        let write_error = |source| BundleError::Write {
            path: path.to_owned(),
            source,
        };
        let mut bytes = canonical_json(self).map_err(BundleError::Json)?;
        bytes.push(b'\n');
        // 0600, as the parts themselves (and a whole bundle) are written.
        durable::write(path, &bytes, 0o600, ".kk-bundle-").map_err(write_error)
    }

    /// Reads and checks an index: its format and version, part names that stay in its
    /// directory, sizes that add up.
    pub fn read(path: &Path) -> Result<Self, BundleError> {
        let invalid = |reason: String| BundleError::PartsIndex {
            path: path.to_owned(),
            reason,
        };
        let meta = fs::metadata(path).map_err(|e| BundleError::Open {
            path: path.to_owned(),
            source: e,
        })?;
        if meta.len() > MAX_PARTS_INDEX_SIZE {
            return Err(invalid(format!(
                "it is larger than {MAX_PARTS_INDEX_SIZE} bytes"
            )));
        }
        let bytes = fs::read(path).map_err(|e| BundleError::Open {
            path: path.to_owned(),
            source: e,
        })?;
        let index: Self = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        if index.format != PARTS_FORMAT || index.version != PARTS_VERSION {
            return Err(invalid(format!(
                "format `{} {}` is not `{PARTS_FORMAT} {PARTS_VERSION}`",
                index.format, index.version
            )));
        }
        if index.parts.is_empty() {
            return Err(invalid("it lists no part".into()));
        }
        for part in &index.parts {
            let plain = !part.name.is_empty()
                && !part.name.starts_with('.')
                && !part.name.contains(['/', '\\', '\0']);
            if !plain {
                return Err(invalid(format!(
                    "part name `{}` is not a plain file name",
                    part.name
                )));
            }
        }
        // The sizes come from the file: added with a check, so a crafted index is refused
        // instead of overflowing.
        let total = index
            .parts
            .iter()
            .try_fold(0u64, |sum, p| sum.checked_add(p.size))
            .ok_or_else(|| invalid("its part sizes add up to more than 2^64 bytes".into()))?;
        if total != index.size {
            return Err(invalid(format!(
                "its parts add up to {total} bytes, not {}",
                index.size
            )));
        }
        Ok(index)
    }

    /// The paths of the parts, in order.
    pub fn part_paths(&self, index_path: &Path) -> Vec<PathBuf> {
        let dir = index_path.parent().unwrap_or(Path::new(""));
        self.parts.iter().map(|p| dir.join(&p.name)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let b = Path::new("/media/usb/cluster.tar.zst");
        assert_eq!(
            part_path(b, 1),
            Path::new("/media/usb/cluster.tar.zst.part001")
        );
        assert_eq!(
            part_path(b, 12),
            Path::new("/media/usb/cluster.tar.zst.part012")
        );
        assert_eq!(
            parts_index_path(b),
            Path::new("/media/usb/cluster.tar.zst.split.json")
        );
        assert_eq!(
            find_parts_index(Path::new("/x/c.tar.zst.part001")).unwrap(),
            Path::new("/x/c.tar.zst.split.json")
        );
        assert_eq!(
            find_parts_index(Path::new("/x/c.tar.zst.split.json")).unwrap(),
            Path::new("/x/c.tar.zst.split.json")
        );
        assert_eq!(find_parts_index(Path::new("/nonexistent/c.tar.zst")), None);
    }

    /// Regression (fuzzing, issue 14): part sizes whose sum overflows were added unchecked
    /// (a panic in debug builds, a wrapped sum in release).
    #[test]
    fn part_sizes_that_overflow_are_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("b.tar.zst.split.json");
        let part = |name: &str, size: u64| {
            format!(
                r#"{{"name":"{name}","size":{size},"sha256":"sha256:{}"}}"#,
                "a".repeat(64)
            )
        };
        let index = format!(
            r#"{{"format":"{PARTS_FORMAT}","version":{PARTS_VERSION},"bundle":"b.tar.zst","size":1,"sha256":"sha256:{}","parts":[{},{}]}}"#,
            "a".repeat(64),
            part("b.tar.zst.part001", u64::MAX),
            part("b.tar.zst.part002", 2)
        );
        fs::write(&path, index).expect("index");
        let err = PartsIndex::read(&path).expect_err("refused");
        assert!(err.to_string().contains("more than 2^64"), "{err}");
    }
}

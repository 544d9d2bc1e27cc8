//! A Debian repository's `Release` file (the text its `InRelease` signs): which index files the
//! repository has, with their sizes and sha256, so that every downloaded index is checked
//! against the signature.

use std::io::Read;

use bundle_spec::digest::Sha256Digest;

/// The parts of a `Release` file the build reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Release {
    /// `Suite` (`stable`; empty when absent).
    pub(crate) suite: String,
    /// `Codename` (`bookworm`; empty when absent).
    pub(crate) codename: String,
    /// The `SHA256` field's files.
    pub(crate) entries: Vec<ReleaseEntry>,
}

/// One file the `Release` lists: its path below the suite's directory, size and sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReleaseEntry {
    /// The path below `dists/SUITE/` (`main/binary-amd64/Packages.xz`).
    pub(crate) path: String,
    /// The size in bytes.
    pub(crate) size: u64,
    /// The sha256.
    pub(crate) sha256: Sha256Digest,
}

/// How an index file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    /// Plain text.
    None,
    /// `.gz`.
    Gzip,
    /// `.xz`.
    Xz,
}

/// Why a `Release` file or an index it lists is not usable.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The `Release` has no `SHA256` field.
    #[error(
        "the `Release` has no `SHA256` field; hint: kk checks the indexes by sha256, which every current Debian repository gives"
    )]
    NoSha256,
    /// A line of the `SHA256` field is not `SHA256 SIZE PATH`.
    #[error("the `Release`'s `SHA256` line `{line}` is not `SHA256 SIZE PATH`")]
    BadLine {
        /// The line.
        line: String,
    },
    /// A downloaded index differs from what the `Release` says.
    #[error(
        "`{path}` is {found}, but the signed `Release` says {expected}; hint: the mirror may be mid-update, retry later"
    )]
    Mismatch {
        /// The index's path.
        path: String,
        /// The sha256 and size the `Release` gives.
        expected: String,
        /// The sha256 and size of the download.
        found: String,
    },
    /// A compressed index does not decompress.
    #[error("`{path}` does not decompress")]
    Decompress {
        /// The index's path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An index is not UTF-8 text.
    #[error("`{path}` is not UTF-8 text")]
    NotUtf8 {
        /// The index's path.
        path: String,
    },
}

/// Parses a `Release` file: `Suite`, `Codename` and the `SHA256` field's lines.
pub(crate) fn parse_release(text: &str) -> Result<Release, ReleaseError> {
    let mut suite = String::new();
    let mut codename = String::new();
    let mut entries = None;
    let mut in_sha256 = false;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            if in_sha256 {
                entries.get_or_insert_with(Vec::new).push(entry(line)?);
            }
            continue;
        }
        in_sha256 = false;
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        // Field names are case-insensitive (Debian Policy 5.1).
        match name.to_ascii_lowercase().as_str() {
            "suite" => value.clone_into(&mut suite),
            "codename" => value.clone_into(&mut codename),
            "sha256" => {
                in_sha256 = true;
                entries.get_or_insert_with(Vec::new);
            }
            _ => {}
        }
    }
    Ok(Release {
        suite,
        codename,
        entries: entries.ok_or(ReleaseError::NoSha256)?,
    })
}

/// One line of the `SHA256` field: ` SHA256 SIZE PATH`.
fn entry(line: &str) -> Result<ReleaseEntry, ReleaseError> {
    let bad = || ReleaseError::BadLine {
        line: line.trim().to_owned(),
    };
    let mut parts = line.split_whitespace();
    let (Some(sha256), Some(size), Some(path), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    Ok(ReleaseEntry {
        path: path.to_owned(),
        size: size.parse().map_err(|_| bad())?,
        sha256: Sha256Digest::from_hex(sha256).ok_or_else(bad)?,
    })
}

impl Release {
    /// The `Packages` index of `component` for `arch`: `Packages.xz`, else `.gz`, else plain, as
    /// listed.
    pub(crate) fn packages_index(
        &self,
        component: &str,
        arch: &str,
    ) -> Option<(&ReleaseEntry, Compression)> {
        let base = format!("{component}/binary-{arch}/Packages");
        [
            (".xz", Compression::Xz),
            (".gz", Compression::Gzip),
            ("", Compression::None),
        ]
        .into_iter()
        .find_map(|(suffix, compression)| {
            let path = format!("{base}{suffix}");
            let entry = self.entries.iter().find(|entry| entry.path == path)?;
            Some((entry, compression))
        })
    }
}

/// `bytes` checked against `entry` (size and sha256), then decompressed to text.
pub(crate) fn index_text(
    bytes: &[u8],
    entry: &ReleaseEntry,
    compression: Compression,
) -> Result<String, ReleaseError> {
    let found = Sha256Digest::of(bytes);
    if found != entry.sha256 || bytes.len() as u64 != entry.size {
        return Err(ReleaseError::Mismatch {
            path: entry.path.clone(),
            expected: format!("`{}` ({} bytes)", entry.sha256, entry.size),
            found: format!("`{found}` ({} bytes)", bytes.len()),
        });
    }
    let mut text = Vec::new();
    let read = match compression {
        Compression::None => {
            text.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        // Multi-member, as `gzip` may write a stream in several members.
        Compression::Gzip => flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut text),
        Compression::Xz => lzma_rust2::XzReader::new(bytes, true).read_to_end(&mut text),
    };
    read.map_err(|source| ReleaseError::Decompress {
        path: entry.path.clone(),
        source,
    })?;
    String::from_utf8(text).map_err(|_| ReleaseError::NotUtf8 {
        path: entry.path.clone(),
    })
}

//! The checksum list `kk-bundle/SHA256SUMS`, the root of trust of a bundle.
//!
//! It uses the text format of coreutils' `sha256sum` (`<hex>  <path>\n`), so an unpacked
//! bundle can be checked with `sha256sum -c kk-bundle/SHA256SUMS` on any machine. Parsing is
//! strict: there is exactly one byte sequence for a given set of members, which makes the
//! list's own sha256 a stable identity for the whole bundle.

use std::collections::BTreeMap;

use crate::bundle_error::{BundleError, ChecksumListProblem};
use crate::digest::Sha256Digest;
use crate::member::{DESCRIPTION_PATH, MemberKind, MemberPath};
use crate::oci::{INDEX_PATH, OCI_LAYOUT_PATH};

/// The sha256 of every member but the list itself, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChecksumList {
    entries: BTreeMap<MemberPath, Sha256Digest>,
}

impl ChecksumList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `digest` for `path`, replacing an earlier entry.
    pub fn insert(&mut self, path: MemberPath, digest: Sha256Digest) {
        self.entries.insert(path, digest);
    }

    /// The digest listed for `path`.
    pub fn get(&self, path: &MemberPath) -> Option<&Sha256Digest> {
        self.entries.get(path)
    }

    /// Every entry, sorted by path.
    pub fn iter(&self) -> impl Iterator<Item = (&MemberPath, &Sha256Digest)> {
        self.entries.iter()
    }

    /// How many members the list names.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list names no member.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The list in its one valid spelling.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * 144);
        for (path, digest) in &self.entries {
            out.extend_from_slice(digest.hex().as_bytes());
            out.extend_from_slice(b"  ");
            out.extend_from_slice(path.as_str().as_bytes());
            out.push(b'\n');
        }
        out
    }

    /// Parses a list, refusing anything but the spelling [`to_bytes`](Self::to_bytes) writes.
    pub fn parse(bytes: &[u8]) -> Result<Self, BundleError> {
        let text =
            std::str::from_utf8(bytes).map_err(|_| list_error(0, ChecksumListProblem::NotUtf8))?;
        let Some(body) = text.strip_suffix('\n') else {
            return Err(list_error(0, ChecksumListProblem::NoFinalNewline));
        };
        let mut list = Self::new();
        let mut previous: Option<MemberPath> = None;
        for (i, line) in body.split('\n').enumerate() {
            let (digest, path) = parse_line(line).map_err(|reason| list_error(i + 1, reason))?;
            if previous.as_ref().is_some_and(|p| p >= &path) {
                return Err(list_error(i + 1, ChecksumListProblem::Order { path }));
            }
            previous = Some(path.clone());
            list.entries.insert(path, digest);
        }
        for required in [DESCRIPTION_PATH, OCI_LAYOUT_PATH, INDEX_PATH] {
            if !list.entries.contains_key(&MemberPath::fixed(required)) {
                return Err(list_error(
                    0,
                    ChecksumListProblem::Unlisted { path: required },
                ));
            }
        }
        Ok(list)
    }
}

fn parse_line(line: &str) -> Result<(Sha256Digest, MemberPath), ChecksumListProblem> {
    let (hex, path) = line
        .split_at_checked(64)
        .ok_or_else(|| ChecksumListProblem::NotALine {
            line: line.to_owned(),
        })?;
    let digest = Sha256Digest::from_hex(hex).ok_or_else(|| ChecksumListProblem::Digest {
        hex: hex.to_owned(),
    })?;
    let path = path
        .strip_prefix("  ")
        .ok_or_else(|| ChecksumListProblem::Separator {
            line: line.to_owned(),
        })?;
    let member = MemberPath::parse(path).ok_or_else(|| ChecksumListProblem::Path {
        path: path.to_owned(),
    })?;
    match member.kind() {
        MemberKind::Checksums => return Err(ChecksumListProblem::ListsItself),
        MemberKind::Blob(named) if named != digest => {
            return Err(ChecksumListProblem::OtherDigest {
                path: member,
                digest,
            });
        }
        _ => {}
    }
    Ok((digest, member))
}

fn list_error(line: usize, reason: ChecksumListProblem) -> BundleError {
    BundleError::ChecksumList { line, reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ChecksumList {
        let mut list = ChecksumList::new();
        for (path, content) in [
            (DESCRIPTION_PATH, &b"{}"[..]),
            (OCI_LAYOUT_PATH, b"layout"),
            (INDEX_PATH, b"index"),
        ] {
            list.insert(MemberPath::fixed(path), Sha256Digest::of(content));
        }
        let blob = Sha256Digest::of(b"blob");
        list.insert(MemberPath::blob(&blob), blob);
        list
    }

    #[test]
    fn round_trips_sorted() {
        let list = sample();
        let bytes = list.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let paths: Vec<_> = text.lines().map(|l| &l[66..]).collect();
        assert_eq!(
            paths[1..],
            ["index.json", "kk-bundle/bundle.json", "oci-layout"]
        );
        assert!(paths[0].starts_with("blobs/sha256/"));
        assert_eq!(ChecksumList::parse(&bytes).unwrap(), list);
    }

    #[test]
    fn refuses_every_other_spelling() {
        let good = String::from_utf8(sample().to_bytes()).unwrap();
        let first = good.lines().next().unwrap().to_owned();
        let blob_path = &first[66..];
        let cases: Vec<(String, &str)> = vec![
            (good.trim_end().to_owned(), "newline"),
            (good.replacen("  ", " ", 1), "two spaces"),
            (good.replacen("  ", " *", 1), "two spaces"),
            (good.replacen('\n', "\r\n", 1), "not a member path"),
            (format!("{good}\n"), "not `<64 hex>  <path>`"),
            (good.to_uppercase(), "lowercase"),
            (format!("{first}\n{good}"), "out of order"),
            (
                good.replace("index.json", "zindex.json"),
                "not a member path",
            ),
            (
                good.replace(blob_path, &format!("blobs/sha256/{}", "b".repeat(64))),
                "another digest",
            ),
            (good.replace("oci-layout", "kk-bundle/SHA256SUMS"), "itself"),
            (
                good.lines()
                    .filter(|l| !l.ends_with("oci-layout"))
                    .flat_map(|l| [l, "\n"])
                    .collect(),
                "does not list `oci-layout`",
            ),
            (
                good.replacen(&first[..4], "\u{e9}\u{e9}", 1),
                "64 lowercase hex",
            ),
        ];
        for (text, fragment) in cases {
            let err = ChecksumList::parse(text.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(fragment),
                "{err:?} should mention {fragment:?} for {text:?}"
            );
        }
        assert!(
            ChecksumList::parse(&[0xff, b'\n'])
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
    }
}

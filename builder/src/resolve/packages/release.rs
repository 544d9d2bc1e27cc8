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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const B: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn entry(path: &str, size: u64, sha256: &str) -> ReleaseEntry {
        ReleaseEntry {
            path: path.to_owned(),
            size,
            sha256: Sha256Digest::from_hex(sha256).unwrap(),
        }
    }

    #[test]
    fn release_files_parse() {
        let text = format!(
            "Origin: Debian\nSuite: stable\nCodename: bookworm\n\
             MD5Sum:\n 0123 10 main/binary-amd64/Packages\n\
             SHA256:\n {A}   10 main/binary-amd64/Packages\n {B} 20 main/binary-amd64/Packages.gz\n\
             Acquire-By-Hash: yes\n"
        );
        let cases = [
            (
                text.clone(),
                Release {
                    suite: "stable".to_owned(),
                    codename: "bookworm".to_owned(),
                    entries: vec![
                        entry("main/binary-amd64/Packages", 10, A),
                        entry("main/binary-amd64/Packages.gz", 20, B),
                    ],
                },
            ),
            (
                "suite: testing\nsha256:\n".to_owned(),
                Release {
                    suite: "testing".to_owned(),
                    codename: String::new(),
                    entries: Vec::new(),
                },
            ),
            (
                // The real `gpg` fixture's signed text.
                include_str!("testdata/Release").to_owned(),
                Release {
                    suite: "stable".to_owned(),
                    codename: "bookworm".to_owned(),
                    entries: vec![
                        entry("main/binary-amd64/Packages", 1234, A),
                        entry("main/binary-amd64/Packages.gz", 20, B),
                    ],
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_release(&text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn bad_release_files_fail() {
        let cases = [
            ("Suite: stable\nMD5Sum:\n 00 1 a\n", "has no `SHA256` field"),
            (
                "SHA256:\n 00 1 main/Packages\n",
                "`00 1 main/Packages` is not `SHA256 SIZE PATH`",
            ),
            ("SHA256:\n nothing\n", "`nothing` is not"),
        ];
        for (text, expected) in cases {
            let message = parse_release(text).unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
        let text = format!("SHA256:\n {A} big main/Packages\n {A} 1 x y\n");
        assert!(
            parse_release(&text)
                .unwrap_err()
                .to_string()
                .contains("big")
        );
    }

    /// The listed paths, the architecture, and the index chosen.
    type IndexCase<'a> = (&'a [&'a str], &'a str, Option<(&'a str, Compression)>);

    #[test]
    fn the_packages_index_prefers_xz_then_gz_then_plain() {
        let release = |paths: &[&str]| Release {
            suite: String::new(),
            codename: String::new(),
            entries: paths.iter().map(|path| entry(path, 1, A)).collect(),
        };
        let plain = "main/binary-amd64/Packages";
        let cases: [IndexCase; 5] = [
            (
                &[
                    plain,
                    "main/binary-amd64/Packages.gz",
                    "main/binary-amd64/Packages.xz",
                ],
                "amd64",
                Some(("main/binary-amd64/Packages.xz", Compression::Xz)),
            ),
            (
                &[plain, "main/binary-amd64/Packages.gz"],
                "amd64",
                Some(("main/binary-amd64/Packages.gz", Compression::Gzip)),
            ),
            (&[plain], "amd64", Some((plain, Compression::None))),
            (&[plain], "arm64", None),
            (&["contrib/binary-amd64/Packages.xz"], "amd64", None),
        ];
        for (paths, arch, expected) in cases {
            let release = release(paths);
            let found = release
                .packages_index("main", arch)
                .map(|(entry, compression)| (entry.path.as_str(), compression));
            assert_eq!(found, expected, "{paths:?} {arch}");
        }
    }

    const INDEX: &str = "Package: socat\nVersion: 1.7.4.4-2\n";

    fn entry_of(path: &str, bytes: &[u8]) -> ReleaseEntry {
        entry(path, bytes.len() as u64, &Sha256Digest::of(bytes).hex())
    }

    #[test]
    fn indexes_round_trip_through_each_compression() {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(INDEX.as_bytes()).unwrap();
        let gzip = gzip.finish().unwrap();
        let mut xz =
            lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
        xz.write_all(INDEX.as_bytes()).unwrap();
        let xz = xz.finish().unwrap();
        for (bytes, compression) in [
            (INDEX.as_bytes().to_vec(), Compression::None),
            (gzip, Compression::Gzip),
            (xz, Compression::Xz),
        ] {
            let entry = entry_of("main/binary-amd64/Packages", &bytes);
            assert_eq!(index_text(&bytes, &entry, compression).unwrap(), INDEX);
        }
    }

    #[test]
    fn an_index_unlike_the_release_fails_naming_path_and_digests() {
        let bytes = INDEX.as_bytes();
        let good = entry_of("main/binary-amd64/Packages", bytes);
        let found = Sha256Digest::of(bytes);
        let wrong_sha = entry("main/binary-amd64/Packages", good.size, A);
        let wrong_size = entry("main/binary-amd64/Packages", good.size + 1, &found.hex());
        for expected in [wrong_sha, wrong_size] {
            let message = index_text(bytes, &expected, Compression::None)
                .unwrap_err()
                .to_string();
            assert!(
                message.starts_with("`main/binary-amd64/Packages` is "),
                "{message}"
            );
            assert!(
                message.contains(&format!("`{found}` ({} bytes)", bytes.len())),
                "{message}"
            );
            let said = format!("says `{}` ({} bytes)", expected.sha256, expected.size);
            assert!(message.contains(&said), "{message}");
        }
    }

    #[test]
    fn undecodable_indexes_fail() {
        let garbage = b"not compressed at all";
        for compression in [Compression::Gzip, Compression::Xz] {
            let entry = entry_of("main/binary-amd64/Packages.x", garbage);
            let error = index_text(garbage, &entry, compression).unwrap_err();
            assert!(
                matches!(error, ReleaseError::Decompress { .. }),
                "{error:?}"
            );
        }
        let latin1 = b"Package: caf\xe9\n";
        let entry = entry_of("main/binary-amd64/Packages", latin1);
        let error = index_text(latin1, &entry, Compression::None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`main/binary-amd64/Packages` is not UTF-8 text"
        );
    }

    /// A real Debian `Release` (the signed text of the fixture `InRelease.debian-security`).
    #[test]
    fn a_debian_release_gives_its_packages_index() {
        let inrelease = include_str!("testdata/InRelease.debian-security");
        let text = inrelease
            .split_once("\n\n")
            .and_then(|(_, rest)| rest.split_once("-----BEGIN PGP SIGNATURE-----"))
            .unwrap()
            .0;
        let release = parse_release(text).unwrap();
        assert_eq!(release.codename, "bookworm-security");
        assert!(release.entries.len() > 10);
        let (entry, compression) = release.packages_index("main", "amd64").unwrap();
        assert_eq!(entry.path, "main/binary-amd64/Packages.xz");
        assert_eq!(compression, Compression::Xz);
    }
}

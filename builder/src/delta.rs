//! `kk-bundle build --since PREVIOUS`: a delta bundle, holding only the blobs the previous
//! bundle lacks (SPEC.md §7).
//!
//! The previous bundle is named by the bundle itself, not by its lock: a lock names images by
//! their manifest digests, not the blobs they reach, and carries no bundle identity, while the
//! bundle's verified checksum list names every blob it carries and its identity is what the
//! delta records as its base. A delta on a delta takes the union: the previous bundle's blobs
//! and those it takes from its own base are all in a store that holds it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bundle_spec::member::MemberKind;
use bundle_spec::{BaseBlob, BlobFile, Bundle, DeltaBase, Sha256Digest};

/// The bundle a delta builds on: its identity and every blob a store holding it has.
#[derive(Debug, Clone)]
pub struct Base {
    identity: Sha256Digest,
    blobs: BTreeSet<Sha256Digest>,
}

impl Base {
    /// Reads the header of the bundle at `path` (the seek table and two small members; the
    /// blobs are not read).
    pub fn open(path: &Path) -> Result<Self, SinceError> {
        let bundle = Bundle::open(path).map_err(|source| SinceError {
            path: path.to_owned(),
            source: Box::new(source),
        })?;
        let mut blobs: BTreeSet<Sha256Digest> = bundle
            .checksums()
            .iter()
            .filter_map(|(member, _)| match member.kind() {
                MemberKind::Blob(digest) => Some(digest),
                _ => None,
            })
            .collect();
        if let Some(base) = bundle.base() {
            blobs.extend(base.blobs.iter().map(|b| b.digest));
        }
        Ok(Self {
            identity: bundle.identity(),
            blobs,
        })
    }

    /// Whether a store holding the base has the blob `digest`.
    pub fn has(&self, digest: &Sha256Digest) -> bool {
        self.blobs.contains(digest)
    }

    /// Splits `blobs` into those the delta carries and the description's `base`.
    pub fn split(&self, blobs: Vec<BlobFile>) -> (Vec<BlobFile>, DeltaBase) {
        let (taken, carried): (Vec<BlobFile>, Vec<BlobFile>) =
            blobs.into_iter().partition(|b| self.has(&b.digest));
        let mut taken: Vec<BaseBlob> = taken
            .iter()
            .map(|b| BaseBlob {
                digest: b.digest,
                size: b.size,
            })
            .collect();
        taken.sort_by_key(|b| b.digest);
        taken.dedup();
        let base = DeltaBase {
            identity: self.identity,
            blobs: taken,
        };
        (carried, base)
    }
}

/// The bundle a delta builds on cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the previous bundle `{}` given with `--since`; hint: pass the bundle file (or its `.split.json`) the delta builds on", path.display())]
pub struct SinceError {
    /// The bundle.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: Box<bundle_spec::BundleError>,
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn blob(byte: u8) -> BlobFile {
        BlobFile {
            digest: Sha256Digest::of(&[byte]),
            size: 1,
            path: PathBuf::from(format!("/cache/{byte}")),
        }
    }

    #[test]
    fn split_keeps_what_the_base_lacks() {
        let base = Base {
            identity: Sha256Digest::of(b"base"),
            blobs: [1, 2].iter().map(|b| Sha256Digest::of(&[*b])).collect(),
        };
        let (carried, delta) = base.split(vec![blob(1), blob(3), blob(2)]);
        assert_eq!(carried, [blob(3)]);
        let mut expected: Vec<_> = [1u8, 2].iter().map(|b| Sha256Digest::of(&[*b])).collect();
        expected.sort();
        assert_eq!(
            delta.blobs.iter().map(|b| b.digest).collect::<Vec<_>>(),
            expected
        );
        assert_eq!(delta.identity, Sha256Digest::of(b"base"));
    }
}

//! `registry revisions`: a store's revisions with what each holds, as a table or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use bundle_spec::Sha256Digest;
use jiff::Timestamp;
use serde::Serialize;

use super::RevisionError;
use super::store::{list, stored_blobs};

/// One revision as `registry revisions` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RevisionSummary {
    /// The bundle's identity.
    pub identity: Sha256Digest,
    /// `installed` (the newest), `previous` (the one before), else empty.
    pub role: &'static str,
    /// When it was unpacked (for a derived revision, its header's modification time).
    pub unpacked: Timestamp,
    /// Recorded before revisions were: derived from its header files.
    pub derived: bool,
    /// The Kubernetes version, else the bundle's manifest name.
    pub version: String,
    /// For a delta, its base's identity.
    pub base: Option<Sha256Digest>,
    /// The blobs it needs.
    pub blobs: usize,
    /// Of those, the ones missing from the store.
    pub missing: usize,
    /// The bytes of the blobs no other revision needs: what dropping it frees.
    pub unique_bytes: u64,
}

/// The revisions of the store `dir`, oldest first.
pub fn summarize(dir: &Path) -> Result<Vec<RevisionSummary>, RevisionError> {
    let revisions = list(dir)?;
    let sizes: BTreeMap<Sha256Digest, u64> = stored_blobs(dir)?.into_iter().collect();
    let mut users: BTreeMap<Sha256Digest, usize> = BTreeMap::new();
    for blob in revisions.iter().flat_map(|r| &r.blobs) {
        *users.entry(*blob).or_default() += 1;
    }
    let newest = revisions.len();
    Ok(revisions
        .iter()
        .enumerate()
        .map(|(i, revision)| RevisionSummary {
            identity: revision.identity,
            role: match newest - i {
                1 => "installed",
                2 => "previous",
                _ => "",
            },
            unpacked: revision.unpacked,
            derived: revision.derived(),
            version: revision.version.clone(),
            base: revision.base,
            blobs: revision.blobs.len(),
            missing: revision
                .blobs
                .iter()
                .filter(|b| !sizes.contains_key(b))
                .count(),
            unique_bytes: revision
                .blobs
                .iter()
                .filter(|b| users.get(b) == Some(&1))
                .filter_map(|b| sizes.get(b))
                .sum(),
        })
        .collect())
}

/// The table `registry revisions` prints, oldest first.
pub fn table(revisions: &[RevisionSummary]) -> String {
    if revisions.is_empty() {
        return "no revisions: unpack a bundle into the store with `kk-install unpack`\n"
            .to_owned();
    }
    let rows: Vec<[String; 7]> = revisions
        .iter()
        .map(|r| {
            let hex = r.identity.hex();
            let mut time = r.unpacked.strftime("%Y-%m-%d %H:%M:%SZ").to_string();
            if r.derived {
                time.push_str(" (derived)");
            }
            let blobs = match r.missing {
                0 => r.blobs.to_string(),
                missing => format!("{} ({missing} missing)", r.blobs),
            };
            [
                hex[..12].to_owned(),
                r.role.to_owned(),
                time,
                r.version.clone(),
                r.base
                    .map_or_else(|| "-".to_owned(), |b| b.hex()[..12].to_owned()),
                blobs,
                bytesize::ByteSize(r.unique_bytes).to_string(),
            ]
        })
        .collect();
    let header = [
        "REVISION", "ROLE", "UNPACKED", "VERSION", "BASE", "BLOBS", "UNIQUE",
    ];
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|row| row[c].len())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let header = header.map(str::to_owned);
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(line, "{cell:<width$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if revisions.iter().any(|r| r.derived) {
        out.push_str(
            "derived: unpacked before kk recorded revisions; its time is its header's, and tags a later bundle took over are not known\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Sha256Digest {
        Sha256Digest::of(&[n])
    }

    #[test]
    fn the_table_names_roles_bases_and_derived_revisions() {
        let at = |s: &str| s.parse::<Timestamp>().expect("time");
        let revisions = [
            RevisionSummary {
                identity: digest(1),
                role: "",
                unpacked: at("2026-11-01T10:00:00Z"),
                derived: true,
                version: "v1.32.4".to_owned(),
                base: None,
                blobs: 120,
                missing: 0,
                unique_bytes: 3_000_000,
            },
            RevisionSummary {
                identity: digest(2),
                role: "previous",
                unpacked: at("2026-11-20T08:30:00Z"),
                derived: false,
                version: "v1.33.0".to_owned(),
                base: None,
                blobs: 130,
                missing: 2,
                unique_bytes: 250_000_000,
            },
            RevisionSummary {
                identity: digest(3),
                role: "installed",
                unpacked: at("2026-11-26T17:05:09Z"),
                derived: false,
                version: "v1.34.1".to_owned(),
                base: Some(digest(2)),
                blobs: 131,
                missing: 0,
                unique_bytes: 310_500_000,
            },
        ];
        insta::assert_snapshot!(table(&revisions));
        assert!(table(&[]).contains("kk-install unpack"));
    }
}

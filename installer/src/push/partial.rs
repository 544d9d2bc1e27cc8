//! Partial indexes: what a push does with an index the store has only some platforms of.
//!
//! A bundle built for some platforms of a multi-platform image keeps upstream's index whole
//! (its digest is what digest pins name), so the index lists platforms whose manifests the
//! store lacks. A registry that checks every entry of an index (distribution, and so Harbor)
//! refuses it. Then the push:
//!
//! 1. has pushed every platform manifest the store has, by digest (always, before the index);
//! 2. points each tag of the index at the manifest of the first preferred platform the store
//!    has ([`super::PushTarget::platforms`], else the first platform it has), so a pull by
//!    original name resolves on nodes of that platform;
//! 3. leaves the index's own digest unresolvable there: a pin on it
//!    (`registry.k8s.io/pause@sha256:<index>`) fails, a pin on a platform manifest works.
//!
//! A registry that accepts the index gets it unchanged, digest kept. [`preview`] says all this
//! before anything is pushed.

use std::fmt::Write as _;

use bundle_spec::Sha256Digest;

use super::PushError;
use super::plan::plan;
use crate::registry::Store;

/// An index of the store that lacks some of its platforms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialIndex {
    /// The repository (`registry.k8s.io/pause`).
    pub repository: String,
    /// Its tags in the store (none: it is named by digest only).
    pub tags: Vec<String>,
    /// The index's digest.
    pub digest: Sha256Digest,
    /// The platforms the store lacks.
    pub missing: Vec<String>,
    /// Where its tags point when the registry refuses it: a platform and its manifest.
    pub fallback: Option<(String, Sha256Digest)>,
}

/// The incomplete indexes of `store` and, for each, where its tags point if the registry
/// refuses it, with `platforms` preferred.
pub fn preview(store: &Store, platforms: &[String]) -> Result<Vec<PartialIndex>, PushError> {
    let mut partial = Vec::new();
    for repository in plan(store)? {
        for manifest in &repository.manifests {
            if manifest.missing.is_empty() {
                continue;
            }
            partial.push(PartialIndex {
                repository: repository.name.clone(),
                tags: manifest.tags.clone(),
                digest: manifest.digest,
                missing: manifest.missing.clone(),
                fallback: choose(&manifest.present, platforms),
            });
        }
    }
    Ok(partial)
}

/// The summary of `partial` for the operator, said before anything is pushed; empty when
/// every index is complete.
pub fn summary(partial: &[PartialIndex]) -> String {
    if partial.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "{} image indexes lack platforms the bundle omitted; each is pushed as it is, and where the registry refuses it, its tags point at one platform's manifest and a pin on the index digest will not resolve there:\n",
        partial.len()
    );
    for index in partial {
        let name = match index.tags.as_slice() {
            [] => format!("{}@{}", index.repository, index.digest),
            tags => format!("{}:{}", index.repository, tags.join(",")),
        };
        let fallback = index.fallback.as_ref().map_or_else(
            || "no platform to fall back to".to_owned(),
            |(platform, digest)| format!("else {platform} ({digest})"),
        );
        let _ = writeln!(
            text,
            "  {name}: lacks {}; {fallback}",
            index.missing.join(", ")
        );
    }
    text
}

/// What became of the partial indexes in `report`, for the operator; empty when the registry
/// took every index as it is.
pub fn outcome(report: &super::PushReport) -> String {
    let mut text = String::new();
    for tag in &report.retargeted {
        let _ = writeln!(
            text,
            "{} refused as an incomplete index: the tag names the {} manifest {}",
            tag.reference, tag.platform, tag.manifest
        );
    }
    for index in &report.unresolvable {
        let _ = writeln!(text, "does not resolve in this registry: {index}");
    }
    text
}

/// The platform the tags of a refused index point at: the first of `preferred` the store has,
/// else the first it has.
pub(super) fn choose(
    present: &[(String, Sha256Digest)],
    preferred: &[String],
) -> Option<(String, Sha256Digest)> {
    preferred
        .iter()
        .find_map(|want| present.iter().find(|(platform, _)| platform == want))
        .or_else(|| present.first())
        .cloned()
}

/// `a`, `b` in backticks, comma-separated.
pub(super) fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|m| format!("`{m}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::{PartialIndex, choose, summary};
    use bundle_spec::Sha256Digest;

    fn digest(byte: u8) -> Sha256Digest {
        Sha256Digest::of(&[byte])
    }

    #[test]
    fn the_tags_of_a_refused_index_go_to_the_preferred_platform_the_store_has() {
        let amd64 = ("linux/amd64".to_owned(), digest(1));
        let arm64 = ("linux/arm64".to_owned(), digest(2));
        let both = vec![amd64.clone(), arm64.clone()];
        let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // (present, preferred, chosen)
        let cases = [
            (both.clone(), owned(&["linux/arm64"]), Some(arm64.clone())),
            (both.clone(), owned(&["linux/amd64"]), Some(amd64.clone())),
            (both.clone(), owned(&[]), Some(amd64.clone())),
            (
                vec![arm64.clone()],
                owned(&["linux/amd64"]),
                Some(arm64.clone()),
            ),
            (
                both.clone(),
                owned(&["linux/s390x", "linux/arm64"]),
                Some(arm64.clone()),
            ),
            (Vec::new(), owned(&["linux/amd64"]), None),
        ];
        for (present, preferred, chosen) in cases {
            assert_eq!(
                choose(&present, &preferred),
                chosen,
                "{present:?} {preferred:?}"
            );
        }
    }

    #[test]
    fn the_summary_names_each_partial_index_its_gaps_and_its_fallback() {
        assert_eq!(summary(&[]), "");
        let index = PartialIndex {
            repository: "registry.k8s.io/pause".into(),
            tags: vec!["3.10".into()],
            digest: digest(3),
            missing: vec!["linux/arm64".into(), "linux/s390x".into()],
            fallback: Some(("linux/amd64".into(), digest(1))),
        };
        let pinned = PartialIndex {
            tags: Vec::new(),
            fallback: None,
            ..index.clone()
        };
        let text = summary(&[index, pinned]);
        for words in [
            "2 image indexes",
            "registry.k8s.io/pause:3.10: lacks linux/arm64, linux/s390x; else linux/amd64",
            &format!("registry.k8s.io/pause@{}", digest(3)),
            "no platform to fall back to",
            "will not resolve",
        ] {
            assert!(text.contains(words), "{text} lacks {words}");
        }
    }
}

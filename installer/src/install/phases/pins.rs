//! `addons.pins`: the node's images in containerd's `k8s.io` namespace listed with `ctr`, and
//! the labels [`PinPlan::changes`] decides written with `ctr images label` (only those that
//! differ, so a rerun writes nothing). Why images are pinned and not pulled: [`PinPlan`].

use std::collections::BTreeMap;

use super::{Cx, Outcome, StepResult, sh};
use crate::install::error::StepError;
use crate::install::plan::{ListedImage, PinChange, PinPlan};
use crate::ssh::{Node, quote};

/// The bundle's `ctr` (the runtime phase puts it there).
const CTR: &str = "/usr/local/bin/ctr -n k8s.io";

/// Pins the bundle's images on `node` and unpins kk's pins of others.
pub(super) async fn reconcile(cx: &Cx<'_>, node: &Node) -> StepResult {
    let pins = cx
        .plan
        .pins
        .as_ref()
        .ok_or_else(|| StepError::not_in_plan("the plan pins no images (docker runtime)"))?;
    let listing = sh(node, &format!("{CTR} images ls")).await?;
    let listed = parse_images(&listing).map_err(|line| StepError::CtrImages {
        node: node.name().to_owned(),
        line,
    })?;
    let changes = pins.changes(&listed);
    for change in &changes {
        sh(node, &label_command(pins, change)).await?;
    }
    Ok(Outcome {
        changed: !changes.is_empty(),
        notes: summary(&changes).into_iter().collect(),
        ..Outcome::default()
    })
}

/// `ctr images label NAME LABEL=VALUE…` for `change`.
fn label_command(pins: &PinPlan, change: &PinChange) -> String {
    let [cri, kk] = change.labels(&pins.owner);
    format!(
        "{CTR} images label {} {} {} >/dev/null",
        quote(change.name()),
        quote(&cri),
        quote(&kk)
    )
}

/// A line for the operator when something changed: how many names were pinned and unpinned.
fn summary(changes: &[PinChange]) -> Option<String> {
    let pinned = changes
        .iter()
        .filter(|change| matches!(change, PinChange::Pin(_)))
        .count();
    let unpinned = changes.len() - pinned;
    (!changes.is_empty()).then(|| {
        format!(
            "pinned {pinned} image names, unpinned {unpinned} that kk pinned for another bundle"
        )
    })
}

/// The images of `ctr images ls` (columns `REF TYPE DIGEST SIZE PLATFORMS LABELS`, the size
/// two words, labels `k=v` joined by commas or `-`); the first line that is none is the error.
fn parse_images(listing: &str) -> Result<Vec<ListedImage>, String> {
    listing
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("REF "))
        .map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [name, _kind, digest, _, _, _, .., labels] if digest.starts_with("sha256:") => {
                    Ok(ListedImage {
                        name: (*name).to_owned(),
                        labels: parse_labels(labels),
                    })
                }
                _ => Err(line.to_owned()),
            }
        })
        .collect()
}

/// `k=v,k2=v2` (or `-`, none). A piece without `=` continues the previous value: ctr joins
/// the pairs with commas without escaping a comma inside a value.
fn parse_labels(column: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    if column == "-" {
        return labels;
    }
    let mut last: Option<String> = None;
    for piece in column.split(',') {
        match (piece.split_once('='), &last) {
            (Some((key, value)), _) => {
                labels.insert(key.to_owned(), value.to_owned());
                last = Some(key.to_owned());
            }
            (None, Some(key)) => {
                if let Some(value) = labels.get_mut(key) {
                    value.push(',');
                    value.push_str(piece);
                }
            }
            (None, None) => {}
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ctr -n k8s.io images ls` of containerd 1.7 on a lab node (digests shortened).
    const LISTING: &str = "\
REF                                          TYPE                                                 DIGEST                  SIZE      PLATFORMS                             LABELS
registry.k8s.io/pause:3.10                   application/vnd.oci.image.index.v1+json              sha256:ee6521f290b2168b 311.0 KiB linux/amd64,linux/arm64               io.cri-containerd.image=managed,io.cri-containerd.pinned=pinned,io.kubekey.pinned=sha256:11
docker.io/library/busybox@sha256:ab12        application/vnd.docker.distribution.manifest.v2+json sha256:ab12            2.1 MiB   linux/amd64                           -
example.org/app:1                            application/vnd.oci.image.manifest.v1+json           sha256:cd34            1.0 MiB   -                                     note=a,b,io.cri-containerd.pinned=pinned
";

    #[test]
    fn the_listing_gives_each_name_and_its_labels() {
        let images = parse_images(LISTING).expect("parses");
        let names: Vec<&str> = images.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "registry.k8s.io/pause:3.10",
                "docker.io/library/busybox@sha256:ab12",
                "example.org/app:1"
            ]
        );
        assert_eq!(images[0].labels["io.cri-containerd.pinned"], "pinned");
        assert_eq!(images[0].labels["io.kubekey.pinned"], "sha256:11");
        assert_eq!(images[0].labels.len(), 3);
        assert!(images[1].labels.is_empty());
        // A comma inside a value stays in it.
        assert_eq!(images[2].labels["note"], "a,b");
        assert_eq!(images[2].labels["io.cri-containerd.pinned"], "pinned");
    }

    #[test]
    fn labels_parse_as_ctr_joins_them() {
        let table: [(&str, &[(&str, &str)]); 5] = [
            ("-", &[]),
            ("a=1", &[("a", "1")]),
            ("a=1,b=2", &[("a", "1"), ("b", "2")]),
            ("a=,b=x=y", &[("a", ""), ("b", "x=y")]),
            ("a=1,2,b=3", &[("a", "1,2"), ("b", "3")]),
        ];
        for (column, expected) in table {
            let expected: BTreeMap<String, String> = expected
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            assert_eq!(parse_labels(column), expected, "{column}");
        }
    }

    #[test]
    fn an_empty_namespace_lists_nothing_and_a_foreign_line_is_an_error() {
        assert_eq!(
            parse_images("REF TYPE DIGEST SIZE PLATFORMS LABELS\n"),
            Ok(Vec::new())
        );
        assert_eq!(
            parse_images("ctr: failed to dial \"/run/containerd/containerd.sock\"\n"),
            Err("ctr: failed to dial \"/run/containerd/containerd.sock\"".to_owned())
        );
    }

    #[test]
    fn a_pin_and_an_unpin_are_one_ctr_label_each() {
        let pins = PinPlan {
            owner: "sha256:11".to_owned(),
            names: std::collections::BTreeSet::new(),
        };
        assert_eq!(
            label_command(
                &pins,
                &PinChange::Pin("registry.k8s.io/pause:3.10".to_owned())
            ),
            "/usr/local/bin/ctr -n k8s.io images label registry.k8s.io/pause:3.10 'io.cri-containerd.pinned=pinned' 'io.kubekey.pinned=sha256:11' >/dev/null"
        );
        assert_eq!(
            label_command(&pins, &PinChange::Unpin("example.org/app:1".to_owned())),
            "/usr/local/bin/ctr -n k8s.io images label example.org/app:1 'io.cri-containerd.pinned=' 'io.kubekey.pinned=' >/dev/null"
        );
    }
}

//! Pinned images: which images of the bundle containerd keeps from kubelet's image garbage
//! collection, and what the `addons.pins` step changes on a node to get there.
//!
//! containerd's CRI plugin (1.7.3 and later, 2.x) reports an image as pinned when one of its
//! names carries the label `io.cri-containerd.pinned=pinned`, and kubelet's image GC never
//! removes a pinned image. kk puts that label on every name of the bundle's images a node
//! holds in the `k8s.io` namespace, and a second label of its own, `io.kubekey.pinned=<bundle
//! identity>`, so that it only ever unpins what it pinned itself: a name pinned by someone
//! else (the operator, containerd's own pin of the sandbox image) is left as it is.
//!
//! The decision is a function of the plan's bundle and the node's listing only, never of the
//! install's history: the upgrade runs the same step with the next bundle's plan, which pins
//! the new revision's images and unpins those only the old one named.
//!
//! The step does not pull the images a node lacks. kk never copies images to every node:
//! containerd pulls them through the `certs.d` mirror of kk's registry when a pod first needs
//! them, and the registry keeps serving the installed revision. An image that is not on a node
//! cannot be garbage collected there, so pinning what is present once the cluster's own images
//! are running covers every image the cluster runs, without filling every node's disk with
//! images it never runs; the next run (or the upgrade) pins what arrived since.
//!
//! The CRI plugin's own pulls (kubelet's) keep an image's pinned label, but `ctr images pull`
//! of a name already present replaces that name's labels: after such a manual pull, the next
//! run pins the name again.

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::{ArtifactKind, Description, Sha256Digest};
use serde::Serialize;

/// The label containerd's CRI plugin reads (`PinnedImageLabelKey`).
pub const CRI_PINNED_LABEL: &str = "io.cri-containerd.pinned";
/// The value that makes an image pinned (`PinnedImageLabelValue`).
pub const CRI_PINNED_VALUE: &str = "pinned";
/// kk's own label on what it pinned; its value is the identity of the bundle that pinned it.
pub const KK_PINNED_LABEL: &str = "io.kubekey.pinned";

/// The pins of a containerd cluster: every name the bundle's images are known by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PinPlan {
    /// The value of kk's label: the identity of the bundle (`sha256:…`).
    pub owner: String,
    /// The names containerd lists the bundle's images by, sorted: each original reference
    /// (`registry.k8s.io/pause:3.10`, or `…@sha256:…` for a digest-pinned one) and each
    /// `repository@digest` of a manifest or index the bundle holds (the name of a pull by
    /// digest, and the CRI plugin's repo digest).
    pub names: BTreeSet<String>,
}

/// An image of a node's `k8s.io` namespace as `ctr images ls` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedImage {
    /// Its name (`registry.k8s.io/pause:3.10`).
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

/// A change of one image's labels on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinChange {
    /// Pinned by kk: the CRI label and kk's, with this bundle's identity.
    Pin(String),
    /// kk's pin of an image the bundle no longer names, removed: both labels.
    Unpin(String),
}

impl PinChange {
    /// The image's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Pin(name) | Self::Unpin(name) => name,
        }
    }

    /// The `label=value` arguments of `ctr images label` (an empty value removes a label).
    pub fn labels(&self, owner: &str) -> [String; 2] {
        match self {
            Self::Pin(_) => [
                format!("{CRI_PINNED_LABEL}={CRI_PINNED_VALUE}"),
                format!("{KK_PINNED_LABEL}={owner}"),
            ],
            Self::Unpin(_) => [
                format!("{CRI_PINNED_LABEL}="),
                format!("{KK_PINNED_LABEL}="),
            ],
        }
    }
}

impl PinPlan {
    /// The pins of the bundle `identity` described by `description`.
    pub fn new(identity: &Sha256Digest, description: &Description) -> Self {
        let names = description
            .artifacts
            .iter()
            .filter(|artifact| artifact.kind == ArtifactKind::Image)
            .flat_map(|artifact| {
                [
                    artifact.reference.clone(),
                    format!("{}@{}", artifact.name, artifact.digest),
                ]
            })
            .collect();
        Self {
            owner: identity.to_string(),
            names,
        }
    }

    /// What makes `listed` (a node's images) pinned as this bundle wants, in listing order:
    /// a name the bundle names is pinned unless it is pinned already (by kk for this bundle,
    /// or by someone else); a name kk pinned that the bundle no longer names is unpinned;
    /// anything else is left alone.
    pub fn changes(&self, listed: &[ListedImage]) -> Vec<PinChange> {
        listed
            .iter()
            .filter_map(|image| {
                let label = |key: &str| image.labels.get(key).map(String::as_str);
                let cri_pinned = label(CRI_PINNED_LABEL) == Some(CRI_PINNED_VALUE);
                let kk_owner = label(KK_PINNED_LABEL);
                if self.names.contains(&image.name) {
                    let pinned = match kk_owner {
                        Some(owner) => cri_pinned && owner == self.owner,
                        // Someone else's pin: kk does not claim it, so it never unpins it.
                        None => cri_pinned,
                    };
                    (!pinned).then(|| PinChange::Pin(image.name.clone()))
                } else {
                    kk_owner.map(|_| PinChange::Unpin(image.name.clone()))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    fn plan() -> PinPlan {
        PinPlan {
            owner: OWNER.to_owned(),
            names: [
                "registry.k8s.io/pause:3.10",
                "docker.io/library/busybox@sha256:ab",
            ]
            .map(str::to_owned)
            .into(),
        }
    }

    fn image(name: &str, labels: &[(&str, &str)]) -> ListedImage {
        ListedImage {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    /// A case of the reconcile table: its name, an image's name and labels, the change expected.
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a [(&'a str, &'a str)],
        Option<PinChange>,
    );

    #[test]
    fn the_reconcile_pins_what_the_bundle_names_and_unpins_only_kks_own() {
        let pause = "registry.k8s.io/pause:3.10";
        let by_digest = "docker.io/library/busybox@sha256:ab";
        let other = "example.org/app:1";
        let cri = (CRI_PINNED_LABEL, CRI_PINNED_VALUE);
        let kk = (KK_PINNED_LABEL, OWNER);
        let old = (KK_PINNED_LABEL, "sha256:0000");
        let pin = |name: &str| Some(PinChange::Pin(name.to_owned()));
        let unpin = |name: &str| Some(PinChange::Unpin(name.to_owned()));
        let table: [Case<'_>; 12] = [
            ("named, unlabelled", pause, &[], pin(pause)),
            (
                "named by digest, unlabelled",
                by_digest,
                &[],
                pin(by_digest),
            ),
            (
                "named, pinned by kk for this bundle",
                pause,
                &[cri, kk],
                None,
            ),
            ("named, pinned by someone else", pause, &[cri], None),
            (
                "named, kk's label of an older bundle",
                pause,
                &[cri, old],
                pin(pause),
            ),
            ("named, kk's label but unpinned", pause, &[kk], pin(pause)),
            (
                "named, the CRI label set to another value",
                pause,
                &[(CRI_PINNED_LABEL, "unpinned")],
                pin(pause),
            ),
            ("not named, pinned by kk", other, &[cri, kk], unpin(other)),
            (
                "not named, kk's label of an older bundle",
                other,
                &[cri, old],
                unpin(other),
            ),
            ("not named, kk's label only", other, &[kk], unpin(other)),
            ("not named, pinned by someone else", other, &[cri], None),
            ("not named, unlabelled", other, &[("app", "x")], None),
        ];
        for (case, name, labels, expected) in table {
            assert_eq!(
                plan().changes(&[image(name, labels)]),
                Vec::from_iter(expected),
                "{case}"
            );
        }
    }

    #[test]
    fn a_pin_sets_both_labels_and_an_unpin_removes_both() {
        let name = "registry.k8s.io/pause:3.10".to_owned();
        assert_eq!(
            PinChange::Pin(name.clone()).labels(OWNER),
            [
                "io.cri-containerd.pinned=pinned".to_owned(),
                format!("io.kubekey.pinned={OWNER}")
            ]
        );
        assert_eq!(
            PinChange::Unpin(name).labels(OWNER),
            [
                "io.cri-containerd.pinned=".to_owned(),
                "io.kubekey.pinned=".to_owned()
            ]
        );
    }

    #[test]
    fn a_reconciled_listing_changes_nothing_more() {
        let plan = plan();
        let listed = [
            image("registry.k8s.io/pause:3.10", &[]),
            image("example.org/app:1", &[(KK_PINNED_LABEL, OWNER)]),
        ];
        let changes = plan.changes(&listed);
        assert_eq!(changes.len(), 2);
        // The node after the changes: the pin applied, the unpin applied.
        let after = [
            image(
                "registry.k8s.io/pause:3.10",
                &[
                    (CRI_PINNED_LABEL, CRI_PINNED_VALUE),
                    (KK_PINNED_LABEL, OWNER),
                ],
            ),
            image("example.org/app:1", &[]),
        ];
        assert_eq!(plan.changes(&after), Vec::new());
    }
}

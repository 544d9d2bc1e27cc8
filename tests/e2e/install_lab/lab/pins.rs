//! Pinned images on the install lab's nodes (`addons.pins`): the labels as `ctr` lists them,
//! and what containerd's CRI plugin reports over its gRPC API (`ImageService/ImageStatus`,
//! asked by `scripts/lab/cri-image-status.py` from the host through the node's socket), which
//! is what kubelet's image garbage collection goes by.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{Cluster, images};
use crate::support::{run_ok, workspace_root};

/// containerd's CRI label of a pinned image, and kk's own mark on what it pinned.
const CRI_PINNED: &str = "io.cri-containerd.pinned";
const KK_PINNED: &str = "io.kubekey.pinned";

/// A name kk pinned for an earlier bundle that this one does not name, and a name someone else
/// pinned: images of their own (distinct image ids), imported on the node.
const STALE: &str = "example.org/kk-stale:1";
const THEIRS: &str = "example.org/theirs:1";

/// The labels of every image name in the node's `k8s.io` namespace (`ctr images ls`).
pub(crate) fn labels(cluster: &Cluster, node: usize) -> BTreeMap<String, BTreeMap<String, String>> {
    cluster
        .on(node, "ctr -n k8s.io images ls")
        .lines()
        .skip(1)
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let labels = words
                .last()
                .filter(|_| words.len() >= 7)?
                .split(',')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            Some((words[0].to_owned(), labels))
        })
        .collect()
}

/// Whether `name` carries the CRI plugin's pinned label, and whether it carries kk's mark.
fn pin_of(labels: &BTreeMap<String, BTreeMap<String, String>>, name: &str) -> (bool, bool) {
    labels.get(name).map_or((false, false), |l| {
        (
            l.get(CRI_PINNED).map(String::as_str) == Some("pinned"),
            l.contains_key(KK_PINNED),
        )
    })
}

/// After the install, the pause image its probe pulled is pinned on every node: by kk, or by
/// containerd's CRI plugin, which pins the sandbox image it pulls itself (kk then leaves it).
pub(crate) fn assert_the_install_pinned_the_pause_image(cluster: &Cluster) {
    for node in 0..3 {
        let labels = labels(cluster, node);
        assert!(
            pin_of(&labels, "registry.k8s.io/pause:3.10").0,
            "node{}: {labels:#?}",
            node + 1
        );
    }
}

/// What the CRI plugin of `node` reports for `names`: `name → pinned`, `None` for an image it
/// does not know.
fn cri_pinned(cluster: &Cluster, node: usize, names: &[String]) -> BTreeMap<String, Option<bool>> {
    let socket = format!(
        "/proc/{}/root/run/containerd/containerd.sock",
        leader(cluster.nodes.pids()[node])
    );
    // Debian's python3, which has python3-grpcio (scripts/setup.sh), whatever `python3` is first
    // on PATH.
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(workspace_root().join("scripts/lab/cri-image-status.py"))
        .arg(&socket)
        .args(names);
    let (out, _) = run_ok(&mut cmd);
    let statuses: BTreeMap<String, Value> = serde_json::from_str(&out).expect("json");
    statuses
        .into_iter()
        .map(|(name, status)| (name, status["pinned"].as_bool()))
        .collect()
}

/// [`cri_pinned`] once it holds `expected` for every name, or as it is after a while: the
/// CRI plugin learns of a label change from containerd's events, asynchronously.
fn cri_pinned_once(
    cluster: &Cluster,
    node: usize,
    names: &[String],
    expected: Option<bool>,
) -> BTreeMap<String, Option<bool>> {
    let mut reported = cri_pinned(cluster, node, names);
    for _ in 0..50 {
        if reported.values().all(|pinned| *pinned == expected) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        reported = cri_pinned(cluster, node, names);
    }
    reported
}

/// The node's PID 1: the child of its systemd-nspawn, whose PID the lab recorded.
fn leader(nspawn: u32) -> u32 {
    let children = fs::read_to_string(format!("/proc/{nspawn}/task/{nspawn}/children"))
        .expect("the node's systemd-nspawn");
    children
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("systemd-nspawn {nspawn} has no child: `{children}`"))
}

/// Two images of their own (distinct ids) imported on `node` as [`STALE`], labelled as kk's
/// pin for an older bundle, and [`THEIRS`], pinned by someone else.
fn import_foreign_pins(cluster: &Cluster, node: usize, tmp: &Path) {
    let root = format!("/proc/{}/root/tmp", leader(cluster.nodes.pids()[node]));
    for (name, label) in [(STALE, "stale"), (THEIRS, "theirs")] {
        let layout = tmp.join(format!("oci-{label}"));
        let image = format!("{}:1", layout.display());
        run_ok(
            Command::new("umoci")
                .args(["init", "--layout"])
                .arg(&layout),
        );
        run_ok(Command::new("umoci").args(["new", "--image", &image]));
        run_ok(Command::new("umoci").args([
            "config",
            "--image",
            &image,
            "--config.label",
            &format!("kk.test={label}"),
        ]));
        let archive = format!("{root}/kk-{label}.tar");
        run_ok(
            Command::new("tar")
                .args(["-C"])
                .arg(&layout)
                .args(["-cf", &archive, "."]),
        );
        let base = name.trim_end_matches(":1");
        let pins = if name == STALE {
            format!("{CRI_PINNED}=pinned {KK_PINNED}=sha256:0000")
        } else {
            format!("{CRI_PINNED}=pinned")
        };
        cluster.on(
            node,
            &format!(
                "set -e; ctr -n k8s.io images import --base-name {base} /tmp/kk-{label}.tar >/dev/null; \
                 rm /tmp/kk-{label}.tar; ctr -n k8s.io images label {name} {pins} >/dev/null"
            ),
        );
    }
}

/// After the images were pulled on every node: `--phase addons` pins every name of the
/// bundle's images there, unpins the name kk pinned for another bundle, leaves someone
/// else's pin; the CRI plugin reports each accordingly.
pub(crate) fn assert_the_bundle_s_images_are_pinned(cluster: &Cluster, tmp: &Path) {
    let names: Vec<String> = images(&cluster.bundle)
        .into_iter()
        .flat_map(|(reference, by_digest)| [reference, by_digest])
        .collect();
    import_foreign_pins(cluster, 1, tmp);
    let foreign = [STALE.to_owned(), THEIRS.to_owned()];
    assert_eq!(
        cri_pinned(cluster, 1, &foreign),
        BTreeMap::from([
            (STALE.to_owned(), Some(true)),
            (THEIRS.to_owned(), Some(true))
        ]),
        "both foreign images start pinned"
    );

    run_ok(&mut cluster.kk_install(&["--phase", "addons"]));
    for node in 0..3 {
        let labels = labels(cluster, node);
        // Every name pinned: by kk, or already by someone else (containerd's CRI plugin pins
        // the sandbox image it pulled itself, and kk leaves that pin as it is).
        for name in &names {
            assert!(
                pin_of(&labels, name).0,
                "node{}: {name} is not pinned: {labels:#?}",
                node + 1
            );
        }
        assert!(
            names
                .iter()
                .any(|name| pin_of(&labels, name) == (true, true)),
            "node{}: kk pinned nothing: {labels:#?}",
            node + 1
        );
        let reported = cri_pinned_once(cluster, node, &names, Some(true));
        assert!(
            reported.values().all(|pinned| *pinned == Some(true)),
            "node{}: the CRI plugin reports {reported:#?}",
            node + 1
        );
    }
    let labels = labels(cluster, 1);
    assert!(
        !labels[STALE].contains_key(CRI_PINNED) && !labels[STALE].contains_key(KK_PINNED),
        "kk's stale pin stays: {labels:#?}"
    );
    assert_eq!(
        labels[THEIRS].get(CRI_PINNED).map(String::as_str),
        Some("pinned"),
        "someone else's pin went: {labels:#?}"
    );
    assert!(!labels[THEIRS].contains_key(KK_PINNED), "{labels:#?}");
    assert_eq!(
        cri_pinned(cluster, 1, &foreign),
        BTreeMap::from([
            (STALE.to_owned(), Some(false)),
            (THEIRS.to_owned(), Some(true))
        ]),
        "the CRI plugin sees the unpin"
    );
}

//! `kk-install plan --upgrade` and the refusals of `kk-install upgrade`, through the binary,
//! with no node to reach: the steps of an upgrade from an installed bundle A (v1.32) to a bundle
//! B (v1.33), and a skipped minor (v1.34) refused before any connection.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use bundle_spec::ArtifactKind;
use bundle_spec::description::Artifact;
use bundle_spec::test_support::{artifact, description};
use bundle_spec::write::{BundleContents, WriteOptions};
use serde_json::Value;

use crate::support::{binary, run_failing, run_ok};

/// The artifacts the catalog lists for Kubernetes `version` (only the description is read by
/// the plan, so they need no blobs).
fn artifacts(version: &str) -> Vec<Artifact> {
    let binary = |name: &str, version: &str| {
        let reference = format!("kk.internal/binaries/{name}:{version}");
        artifact(
            ArtifactKind::Binary,
            name,
            version,
            Some("linux/amd64"),
            reference,
        )
    };
    let image = |reference: String| {
        let (name, tag) = reference.rsplit_once(':').expect("tag");
        artifact(
            ArtifactKind::Image,
            name,
            tag,
            Some("linux/amd64"),
            reference.clone(),
        )
    };
    let mut all = vec![
        binary("kubeadm", version),
        binary("kubelet", version),
        binary("kubectl", version),
        binary("containerd", "1.7.30"),
        binary("runc", "v1.3.3"),
        binary("cni-plugins", "v1.7.1"),
        binary("crictl", "v1.33.0"),
        binary("etcd", "v3.5.21"),
        binary("helm", "v3.18.6"),
        artifact(
            ArtifactKind::Chart,
            "tigera-operator",
            "v3.30.5",
            None,
            "kk.internal/charts/tigera-operator:v3.30.5".to_owned(),
        ),
    ];
    let images = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
    ]
    .map(|name| format!("registry.k8s.io/{name}:{version}"))
    .into_iter()
    .chain(
        [
            "registry.k8s.io/pause:3.10",
            "registry.k8s.io/coredns/coredns:v1.12.0",
            "registry.k8s.io/etcd:3.5.21-0",
            "quay.io/calico/node:v3.30.5",
        ]
        .map(str::to_owned),
    );
    all.extend(images.map(image));
    all
}

/// A bundle of Kubernetes `version`: its file and identity.
fn write_bundle(dir: &Path, version: &str) -> (PathBuf, String) {
    let created = "2026-11-22T00:00:00Z".parse().expect("time");
    let index = serde_json::from_value(serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [],
    }))
    .expect("index");
    let contents = BundleContents {
        description: description(created, artifacts(version)),
        index,
        blobs: Vec::new(),
    };
    let target = dir.join(format!("k8s-{version}.tar.zst"));
    let written = bundle_spec::write_bundle(&contents, &target, &WriteOptions::default())
        .expect("write bundle");
    (
        written.output.paths[0].clone(),
        written.identity.to_string(),
    )
}

/// A control plane and a worker reached over SSH at `127.0.0.1:port`, stacked etcd; and the
/// install state an install of the bundle `installed` of v1.32.3 leaves in `work`.
fn write_cluster(dir: &Path, port: u16, installed: &str) {
    fs::write(
        dir.join("inventory.yaml"),
        format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {{name: t}}\nspec:\n  hosts:\n    cp1:\n      connector: {{host: 127.0.0.1, port: {port}, user: root}}\n      internal_ipv4: 10.0.0.1\n    w1:\n      connector: {{host: 127.0.0.1, port: {port}, user: root}}\n      internal_ipv4: 10.0.0.2\n  groups:\n    kube_control_plane: {{hosts: [cp1]}}\n    kube_worker: {{hosts: [w1]}}\n"
        ),
    )
    .expect("inventory");
    fs::write(
        dir.join("config.yaml"),
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: t}\nspec:\n  etcd: {deployment_type: internal}\n",
    )
    .expect("config");
    let versions: serde_json::Map<String, Value> = artifacts("v1.32.3")
        .into_iter()
        .filter(|a| a.kind == ArtifactKind::Binary)
        .map(|a| (a.name, Value::from(a.version)))
        .collect();
    let state = serde_json::json!({
        "bundle": installed,
        "done": {"cp1": {"kubernetes.init": 1.0}, "w1": {"kubernetes.join-worker": 1.0}},
        "files": {},
        "versions": versions,
    });
    fs::create_dir_all(dir.join("work")).expect("work dir");
    fs::write(dir.join("work/install-state.json"), state.to_string()).expect("state");
}

/// `kk-install ARGS --bundle B -i INVENTORY -c CONFIG --work-dir DIR/work`.
fn kk_install(args: &[&str], bundle: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(binary("kk-install"));
    cmd.args(args)
        .arg("--bundle")
        .arg(bundle)
        .arg("-i")
        .arg(dir.join("inventory.yaml"))
        .arg("-c")
        .arg(dir.join("config.yaml"))
        .arg("--work-dir")
        .arg(dir.join("work"))
        .arg("--known-hosts")
        .arg(dir.join("known_hosts"));
    cmd
}

#[test]
fn plan_upgrade_prints_kubeadms_order_and_refuses_a_skipped_minor_before_any_connection() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // The nodes' SSH port: a listener that would queue any connection a command made.
    let node = TcpListener::bind("127.0.0.1:0").expect("listen");
    node.set_nonblocking(true).expect("nonblocking");
    let port = node.local_addr().expect("address").port();
    let (_, a) = write_bundle(dir, "v1.32.3");
    write_cluster(dir, port, &a);
    let (b, b_identity) = write_bundle(dir, "v1.33.1");

    let (json, _) = run_ok(&mut kk_install(
        &["plan", "--upgrade", "--output", "json"],
        &b,
        dir,
    ));
    let plan: Value = serde_json::from_str(&json).expect("plan json");
    assert_eq!(plan["from"]["bundle"], a.as_str());
    assert_eq!(plan["to"], b_identity.as_str());
    assert_eq!(
        (&plan["from_version"], &plan["to_version"]),
        (&"v1.32.3".into(), &"v1.33.1".into())
    );
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        [
            "upgrade.precheck",
            // Clusters installed before the node agent existed get it before anything is fetched.
            "upgrade.os.agent",
            "upgrade.unpack",
            "upgrade.kubeadm",
            "upgrade.apply",
            "upgrade.node",
            "upgrade.kubelet",
            "upgrade.network.helm",
            "upgrade.network.cni",
            "upgrade.addons.pins",
            "upgrade.record",
        ]
    );
    let (text, _) = run_ok(&mut kk_install(&["plan", "--upgrade"], &b, dir));
    assert!(text.contains("(kubernetes v1.32.3) to bundle"), "{text}");
    assert!(text.contains("upgrade.apply"), "{text}");
    assert!(
        text.contains("kubeadm upgrade apply v1.33.1 --yes"),
        "{text}"
    );

    let (c, _) = write_bundle(dir, "v1.34.0");
    for command in [&["plan", "--upgrade"][..], &["upgrade"]] {
        let error = run_failing(&mut kk_install(command, &c, dir));
        assert!(
            error.contains("v1.34.0 skips a minor version from the installed v1.32.3")
                && error.contains("hint: "),
            "{command:?}: {error}"
        );
    }
    match node.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a refused upgrade contacted a node: {other:?}"),
    }
}

/// An upgrade to a bundle not signed by a trusted key is refused before any node is contacted,
/// and the install state is left as it was.
#[test]
fn upgrade_to_an_untrusted_bundle_is_refused_before_any_connection() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let node = TcpListener::bind("127.0.0.1:0").expect("listen");
    node.set_nonblocking(true).expect("nonblocking");
    let port = node.local_addr().expect("address").port();
    let (_, a) = write_bundle(dir, "v1.32.3");
    write_cluster(dir, port, &a);
    let state = fs::read(dir.join("work/install-state.json")).expect("state");
    let (b, _) = write_bundle(dir, "v1.33.1");
    let (_, public) = crate::signing::key_pair(dir, "cosign");

    let error = run_failing(
        kk_install(&["upgrade"], &b, dir)
            .arg("--trusted-key")
            .arg(&public),
    );
    assert!(error.contains("is not signed"), "{error}");
    assert_eq!(
        fs::read(dir.join("work/install-state.json")).expect("state"),
        state
    );
    match node.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the upgrade contacted a node: {other:?}"),
    }
}

//! `kk-install plan` and the install's planning, through the binary, with no node to reach: the
//! plan shows every decision (CNI values, kubeadm's input, the addons' values files), and what
//! used to fail on a node after the cluster was up fails while planning, before any connection.

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

/// The artifacts of a Kubernetes bundle as the catalog lists them, less those named in `skip`.
/// Only the description is read by the plan, so the artifacts need no blobs.
fn artifacts(skip: &[&str]) -> Vec<Artifact> {
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
    let image = |reference: &str| {
        let (name, tag) = reference.rsplit_once(':').expect("tag");
        let platform = Some("linux/amd64");
        artifact(
            ArtifactKind::Image,
            name,
            tag,
            platform,
            reference.to_owned(),
        )
    };
    let chart = |name: &str, version: &str| {
        let reference = format!("kk.internal/charts/{name}:{version}");
        artifact(ArtifactKind::Chart, name, version, None, reference)
    };
    let all = vec![
        binary("kubeadm", "v1.33.0"),
        binary("kubelet", "v1.33.0"),
        binary("kubectl", "v1.33.0"),
        binary("containerd", "1.7.30"),
        binary("runc", "v1.3.3"),
        binary("cni-plugins", "v1.7.1"),
        binary("crictl", "v1.33.0"),
        binary("etcd", "v3.5.21"),
        binary("helm", "v3.18.6"),
        image("registry.k8s.io/pause:3.10"),
        image("quay.io/calico/node:v3.30.5"),
        chart("tigera-operator", "v3.30.5"),
        chart("metrics-server", "3.12.2"),
    ];
    all.into_iter()
        .filter(|a| !skip.iter().any(|s| a.name.ends_with(s)))
        .collect()
}

/// A bundle whose description lists [`artifacts`] but `skip`.
fn write_bundle(dir: &Path, skip: &[&str]) -> PathBuf {
    let created = "2026-11-22T00:00:00Z".parse().expect("time");
    let index = serde_json::from_value(serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [],
    }))
    .expect("index");
    let contents = BundleContents {
        description: description(created, artifacts(skip)),
        index,
        blobs: Vec::new(),
    };
    let target = dir.join(format!("k8s-{}.tar.zst", skip.len()));
    let written = bundle_spec::write_bundle(&contents, &target, &WriteOptions::default())
        .expect("write bundle");
    written.output.paths[0].clone()
}

/// An inventory of one node reached over SSH at `127.0.0.1:port`, and a config installing the
/// `metrics` addon with `values.yaml` (relative: beside the config).
fn write_cluster(dir: &Path, port: u16) -> (PathBuf, PathBuf) {
    let inventory = dir.join("inventory.yaml");
    fs::write(
        &inventory,
        format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {{name: t}}\nspec:\n  hosts:\n    cp1:\n      connector: {{host: 127.0.0.1, port: {port}, user: root}}\n      internal_ipv4: 10.0.0.1\n  groups:\n    kube_control_plane: {{hosts: [cp1]}}\n    etcd: {{hosts: [cp1]}}\n"
        ),
    )
    .expect("inventory");
    let config = dir.join("config.yaml");
    fs::write(
        &config,
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: t}\nspec:\n  kubernetes:\n    control_plane_endpoint: {port: 8443}\n  addons:\n  - {name: metrics, sources: {chart: {name: metrics-server, valuesFile: values.yaml}}}\n",
    )
    .expect("config");
    (inventory, config)
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

/// The step `id` of a plan's JSON.
fn step<'a>(plan: &'a Value, id: &str) -> &'a Value {
    plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {plan:#}"))
}

#[test]
fn plan_json_shows_the_cni_values_kubeadms_input_and_the_values_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let bundle = write_bundle(dir, &[]);
    write_cluster(dir, 22);
    fs::write(dir.join("values.yaml"), "replicas: 2\n").expect("values");

    let (out, _) = run_ok(&mut kk_install(&["plan", "--output", "json"], &bundle, dir));
    let plan: Value = serde_json::from_str(&out).expect("plan json");
    assert_eq!(plan["cluster_domain"], "cluster.local");
    let cluster = &plan["kubernetes"]["cluster"];
    assert_eq!(cluster["node_name"], "cp1", "{cluster:#}");
    assert_eq!(cluster["endpoint"], "lb.kubesphere.local:8443");
    assert_eq!(cluster["dns_domain"], "cluster.local");
    assert_eq!(cluster["etcd"]["kind"], "external");
    assert_eq!(
        cluster["etcd"]["endpoints"],
        serde_json::json!(["https://10.0.0.1:2379"])
    );
    let cni = step(&plan, "network.cni")["action"]["chart"]["values"]["yaml"]
        .as_str()
        .expect("cni values");
    assert!(
        cni.contains("quay.io/") && cni.contains("10.233.64.0/18"),
        "{cni}"
    );
    let addon = &step(&plan, "addons.metrics")["action"]["chart"]["values"];
    assert_eq!(addon["yaml"], "replicas: 2\n", "{addon:#}");

    let (text, _) = run_ok(&mut kk_install(&["plan"], &bundle, dir));
    let addon_line = format!(
        "chart metrics-server as addons.metrics: values from `{}` (1 line)\n",
        dir.join("values.yaml").display()
    );
    for line in [
        "chart tigera-operator as network.cni: values rendered from the config (",
        "cluster domain cluster.local\n",
        "kubeadm init on cp1, endpoint lb.kubesphere.local:8443, pods 10.233.64.0/18, services 10.233.0.0/18, etcd external (1 member)\n",
        addon_line.as_str(),
    ] {
        assert!(text.contains(line), "`plan` lacks {line:?}:\n{text}");
    }
}

#[test]
fn a_missing_values_file_or_cni_image_fails_the_install_before_any_node_is_contacted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // The node's SSH port: a listener that would queue any connection the install made.
    let node = TcpListener::bind("127.0.0.1:0").expect("listen");
    node.set_nonblocking(true).expect("nonblocking");
    let port = node.local_addr().expect("address").port();
    write_cluster(dir, port);
    let values = dir.join("values.yaml");

    let bundle = write_bundle(dir, &[]);
    let error = run_failing(&mut kk_install(&[], &bundle, dir));
    assert!(
        error.contains(&format!("`{}`", values.display())) && error.contains("addon `metrics`"),
        "{error}"
    );

    fs::write(&values, "{}\n").expect("values");
    let without_calico = write_bundle(dir, &["calico/node"]);
    let error = run_failing(&mut kk_install(&[], &without_calico, dir));
    assert!(
        error.contains("no `calico/node` image, which `spec.cni.type: calico` needs"),
        "{error}"
    );

    match node.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the install contacted the node: {other:?}"),
    }
}

/// A bundle not signed by a trusted key (`--trusted-key` or the config's `trusted_keys`) is
/// refused before the install reads further or reaches any node, and records nothing.
#[test]
fn an_untrusted_bundle_is_refused_before_any_node_is_contacted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let node = TcpListener::bind("127.0.0.1:0").expect("listen");
    node.set_nonblocking(true).expect("nonblocking");
    write_cluster(dir, node.local_addr().expect("address").port());
    fs::write(dir.join("values.yaml"), "{}\n").expect("values");
    let (_, public) = crate::signing::key_pair(dir, "cosign");
    let bundle = write_bundle(dir, &[]);

    let error = run_failing(
        kk_install(&[], &bundle, dir)
            .arg("--trusted-key")
            .arg(&public),
    );
    assert!(error.contains("is not signed"), "{error}");

    let config = dir.join("config.yaml");
    let text = fs::read_to_string(&config).expect("config");
    fs::write(&config, format!("{text}  trusted_keys: [cosign.pub]\n")).expect("config");
    let error = run_failing(&mut kk_install(&[], &bundle, dir));
    assert!(error.contains("is not signed"), "{error}");

    assert!(
        !dir.join("work").exists(),
        "the refused install recorded state"
    );
    match node.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the install contacted the node: {other:?}"),
    }
}

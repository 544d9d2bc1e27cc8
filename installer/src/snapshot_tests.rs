//! Snapshots of what `kk-install` prints from the library: the plan (`kk-install plan`), a plan
//! error about what the bundle lacks, and the final table of an install. A change to any of them
//! shows as a snapshot diff in review.

use std::collections::BTreeMap;

use bundle_spec::ArtifactKind;
use bundle_spec::description::{Artifact, Description};
use bundle_spec::test_support::artifact;

use crate::install::{Phase, Plan, Summary};
use crate::inventory::{Config, Inventory};

const INVENTORY: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    w1: {internal_ipv4: 10.0.0.2}\n    w2: {internal_ipv4: 10.0.0.3}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    kube_worker: {hosts: [w1, w2]}\n    etcd: {hosts: [cp1]}\n";

/// What the catalog puts in a bundle for v1.33.0, less the artifacts named in `skip`.
fn description(skip: &[&str]) -> Description {
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
        let (name, tag) = reference.rsplit_once(':').expect("a tag");
        artifact(
            ArtifactKind::Image,
            name,
            tag,
            Some("linux/amd64"),
            reference.to_owned(),
        )
    };
    let chart = |name: &str, version: &str| {
        let reference = format!("kk.internal/charts/{name}:{version}");
        artifact(ArtifactKind::Chart, name, version, None, reference)
    };
    let mut artifacts: Vec<Artifact> = vec![
        binary("kubeadm", "v1.33.0"),
        binary("containerd", "1.7.30"),
        binary("runc", "v1.3.3"),
        binary("cni-plugins", "v1.7.1"),
        binary("crictl", "v1.33.0"),
        binary("etcd", "v3.5.21"),
        binary("kubelet", "v1.33.0"),
        binary("kubectl", "v1.33.0"),
        binary("helm", "v3.18.6"),
        image("registry.k8s.io/pause:3.10"),
        image("registry.k8s.io/kube-apiserver:v1.33.0"),
        image("quay.io/calico/node:v3.30.5"),
        chart("tigera-operator", "v3.30.5"),
    ];
    artifacts.retain(|a| !skip.iter().any(|s| a.name.ends_with(s)));
    bundle_spec::test_support::description(jiff::Timestamp::UNIX_EPOCH, artifacts)
}

fn inventory() -> Inventory {
    Inventory::from_str_named(INVENTORY, "inventory.yaml").expect("inventory")
}

fn plan(skip: &[&str]) -> Result<Plan, crate::error::PlanError> {
    Plan::new(
        &inventory(),
        &Config::default(),
        bundle_spec::Sha256Digest::of(b"bundle"),
        &description(skip),
    )
}

#[test]
fn plan_text() {
    let plan = plan(&[]).expect("plan");
    insta::assert_snapshot!(plan.render(&inventory()));
}

#[test]
fn plan_text_with_packages_and_nfs() {
    let plan = crate::install::plan::tests_support::packages_plan();
    let inventory = Inventory::from_str_named(
        crate::install::plan::tests_support::NFS_INVENTORY,
        "inventory.yaml",
    )
    .expect("inventory");
    insta::assert_snapshot!(plan.render(&inventory));
}

#[test]
fn plan_error_names_the_image_the_bundle_lacks() {
    let error = plan(&["pause"]).expect_err("a bundle without the pause image");
    insta::assert_snapshot!(error.to_string());
}

#[test]
fn install_table_with_the_duration_redacted() {
    let cell = |phases: &[(&str, &str)]| {
        phases
            .iter()
            .map(|(phase, status)| ((*phase).to_owned(), (*status).to_owned()))
            .collect::<BTreeMap<_, _>>()
    };
    let summary = Summary {
        nodes: BTreeMap::from([
            (
                "cp1".to_owned(),
                cell(&[("precheck", "done"), ("os", "changed"), ("etcd", "changed")]),
            ),
            (
                "w1".to_owned(),
                cell(&[("precheck", "done"), ("os", "done")]),
            ),
        ]),
        sent: BTreeMap::from([("cp1".to_owned(), 3 << 20), ("w1".to_owned(), 4096)]),
        seconds: 12.345,
    };
    // The phases of a plan with kk's registry: every one but `push`.
    let phases: Vec<Phase> = Phase::ALL
        .into_iter()
        .filter(|phase| *phase != Phase::Push)
        .collect();
    let table = summary.render(&inventory(), &phases);
    insta::with_settings!({filters => vec![(r"finished in [0-9.]+s", "finished in [DURATION]s")]}, {
        insta::assert_snapshot!(table);
    });
}

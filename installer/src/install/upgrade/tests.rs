//! The upgrade plan: step order and nodes for the usual topologies, and each refusal.

use std::collections::BTreeMap;

use bundle_spec::ArtifactKind;
use bundle_spec::Sha256Digest;
use bundle_spec::description::{Artifact, Description};
use bundle_spec::test_support::artifact;

use super::error::UpgradePlanError;
use super::plan::{Installed, UpgradeAction, UpgradePlan};
use super::version::KubeVersion;
use crate::install::Plan;
use crate::inventory::{Config, Inventory};

/// 1 control plane + 1 worker.
const SMALL: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    w1: {internal_ipv4: 10.0.0.2}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    kube_worker: {hosts: [w1]}\n    etcd: {hosts: [cp1]}\n";

/// 3 control planes (the external etcd members too) + 1 worker.
const HA: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    cp2: {internal_ipv4: 10.0.0.2}\n    cp3: {internal_ipv4: 10.0.0.3}\n    w1: {internal_ipv4: 10.0.0.4}\n  groups:\n    kube_control_plane: {hosts: [cp1, cp2, cp3]}\n    kube_worker: {hosts: [w1]}\n    etcd: {hosts: [cp1, cp2, cp3]}\n";

const EXTERNAL: &str = "  etcd: {deployment_type: external}\n";
const STACKED: &str = "  etcd: {deployment_type: internal}\n";

/// What the catalog puts in a bundle of Kubernetes `kubernetes`, with `containerd` and `etcd`,
/// less the images whose names end with one of `skip`.
fn description(kubernetes: &str, containerd: &str, etcd: &str, skip: &[&str]) -> Description {
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
        let (name, tag) = reference.rsplit_once(':').expect("a tag");
        artifact(
            ArtifactKind::Image,
            name,
            tag,
            Some("linux/amd64"),
            reference.clone(),
        )
    };
    let chart = |name: &str, version: &str| {
        let reference = format!("kk.internal/charts/{name}:{version}");
        artifact(ArtifactKind::Chart, name, version, None, reference)
    };
    let mut artifacts: Vec<Artifact> = vec![
        binary("kubeadm", kubernetes),
        binary("kubelet", kubernetes),
        binary("kubectl", kubernetes),
        binary("containerd", containerd),
        binary("runc", "v1.3.3"),
        binary("cni-plugins", "v1.7.1"),
        binary("crictl", "v1.33.0"),
        binary("etcd", etcd),
        binary("helm", "v3.18.6"),
        chart("tigera-operator", "v3.30.5"),
    ];
    let images = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kube-proxy",
    ]
    .map(|name| format!("registry.k8s.io/{name}:{kubernetes}"))
    .into_iter()
    .chain(
        [
            "registry.k8s.io/pause:3.10",
            "registry.k8s.io/coredns/coredns:v1.12.0",
            "registry.k8s.io/etcd:3.5.21-0",
            "quay.io/calico/node:v3.30.5",
        ]
        .map(str::to_owned),
    )
    .filter(|reference| !skip.iter().any(|s| reference.contains(s)));
    artifacts.extend(images.map(image));
    bundle_spec::test_support::description(jiff::Timestamp::UNIX_EPOCH, artifacts)
}

fn target(inventory: &str, etcd: &str, description: &Description) -> Plan {
    let inventory = Inventory::from_str_named(inventory, "inventory.yaml").expect("inventory");
    let config = Config::from_str_named(
        &format!("apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {{name: t}}\nspec:\n{etcd}"),
        "config.yaml",
    )
    .expect("config");
    Plan::new(&inventory, &config, Sha256Digest::of(b"next"), description).expect("target plan")
}

/// What the install of a bundle of `kubernetes`, `containerd` and `etcd` recorded.
fn installed(kubernetes: &str, containerd: &str, etcd: &str) -> Installed {
    let description = description(kubernetes, containerd, etcd, &[]);
    Installed {
        bundle: "sha256:aa".to_owned(),
        versions: target(SMALL, EXTERNAL, &description).versions,
    }
}

/// Step ids and nodes.
fn steps(plan: &UpgradePlan) -> Vec<(&str, Vec<&str>)> {
    plan.steps
        .iter()
        .map(|s| (s.id.as_str(), s.nodes.iter().map(String::as_str).collect()))
        .collect()
}

#[test]
fn one_control_plane_and_a_worker_upgrade_in_kubeadms_order() {
    let next = target(
        SMALL,
        STACKED,
        &description("v1.33.1", "1.7.30", "v3.5.21", &[]),
    );
    let plan =
        UpgradePlan::new(&installed("v1.32.3", "1.7.30", "v3.5.21"), &next, &[]).expect("plan");
    assert_eq!(
        (plan.from_version.as_str(), plan.to_version.as_str()),
        ("v1.32.3", "v1.33.1")
    );
    assert_eq!(
        steps(&plan),
        [
            ("upgrade.precheck", vec!["cp1", "w1"]),
            ("upgrade.os.agent", vec!["cp1", "w1"]),
            ("upgrade.unpack", vec!["cp1"]),
            ("upgrade.kubeadm", vec!["cp1", "w1"]),
            ("upgrade.apply", vec!["cp1"]),
            ("upgrade.node", vec!["w1"]),
            ("upgrade.kubelet", vec!["cp1", "w1"]),
            ("upgrade.network.helm", vec!["cp1"]),
            ("upgrade.network.cni", vec!["cp1"]),
            ("upgrade.addons.pins", vec!["cp1", "w1"]),
            ("upgrade.record", vec!["cp1", "w1"]),
        ],
        "no runtime step: the next bundle's containerd is the installed one"
    );
    let apply = &plan.steps[4].action;
    assert_eq!(
        apply,
        &UpgradeAction::Apply {
            version: "v1.33.1".to_owned()
        }
    );
    let UpgradeAction::Kubelet { binaries } = &plan.steps[6].action else {
        panic!("{:?}", plan.steps[6]);
    };
    let names: Vec<&str> = binaries.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["kubelet", "kubectl"]);
}

#[test]
fn three_control_planes_with_external_etcd_upgrade_runtime_and_members_first() {
    let next = target(
        HA,
        EXTERNAL,
        &description("v1.33.1", "2.1.4", "v3.6.4", &[]),
    );
    let plan =
        UpgradePlan::new(&installed("v1.32.3", "1.7.30", "v3.5.21"), &next, &[]).expect("plan");
    assert_eq!(
        steps(&plan),
        [
            ("upgrade.precheck", vec!["cp1", "cp2", "cp3", "w1"]),
            ("upgrade.os.agent", vec!["cp1", "cp2", "cp3", "w1"]),
            ("upgrade.unpack", vec!["cp1"]),
            ("upgrade.runtime", vec!["cp1", "cp2", "cp3", "w1"]),
            ("upgrade.etcd", vec!["cp1", "cp2", "cp3"]),
            ("upgrade.kubeadm", vec!["cp1", "cp2", "cp3", "w1"]),
            ("upgrade.apply", vec!["cp1"]),
            ("upgrade.node", vec!["cp2", "cp3", "w1"]),
            ("upgrade.kubelet", vec!["cp1", "cp2", "cp3", "w1"]),
            ("upgrade.network.helm", vec!["cp1"]),
            ("upgrade.network.cni", vec!["cp1"]),
            ("upgrade.addons.pins", vec!["cp1", "cp2", "cp3", "w1"]),
            ("upgrade.record", vec!["cp1", "cp2", "cp3", "w1"]),
        ]
    );
    let drained: Vec<&str> = plan
        .steps
        .iter()
        .filter(|s| s.action.drains())
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(drained, ["upgrade.runtime", "upgrade.kubelet"]);
}

#[test]
fn stacked_etcd_is_upgraded_by_kubeadm_not_by_an_etcd_step() {
    let next = target(
        HA,
        STACKED,
        &description("v1.33.1", "1.7.30", "v3.6.4", &[]),
    );
    let plan =
        UpgradePlan::new(&installed("v1.33.0", "1.7.30", "v3.5.21"), &next, &[]).expect("plan");
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert!(
        !ids.contains(&"upgrade.etcd") && !ids.contains(&"upgrade.runtime"),
        "{ids:?}"
    );
    assert!(ids.contains(&"upgrade.node"), "{ids:?}");
}

/// The next version, the images it lacks, the kubelets, what the refusal says.
type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn each_refusal_kubeadm_would_make_is_made_by_the_plan() {
    let installed = installed("v1.32.3", "1.7.30", "v3.5.21");
    let plan_of = |kubernetes: &str, skip: &[&str], kubelets: &[(&str, &str)]| {
        let next = target(
            SMALL,
            STACKED,
            &description(kubernetes, "1.7.30", "v3.5.21", skip),
        );
        let kubelets: Vec<(String, KubeVersion)> = kubelets
            .iter()
            .map(|(n, v)| ((*n).to_owned(), KubeVersion::parse(v).expect("version")))
            .collect();
        UpgradePlan::new(&installed, &next, &kubelets).map(drop)
    };
    let cases: [Case<'_>; 5] = [
        (
            "v1.34.0",
            &[],
            &[],
            "skips a minor version from the installed v1.32.3",
        ),
        ("v1.31.9", &[], &[], "older than the installed v1.32.3"),
        ("v1.33.1", &["kube-proxy"], &[], "no `kube-proxy:v1.33.1`"),
        ("v1.33.1", &["coredns"], &[], "no `coredns`"),
        (
            "v1.33.1",
            &[],
            &[("w1", "v1.34.2")],
            "kubelet of node `w1` runs v1.34.2",
        ),
    ];
    for (kubernetes, skip, kubelets, expected) in cases {
        let error = plan_of(kubernetes, skip, kubelets).expect_err(expected);
        let message = error.to_string();
        assert!(message.contains(expected), "{kubernetes}: {message}");
        assert!(
            message.contains(kubernetes) && message.contains("; hint: "),
            "{message}"
        );
    }
    assert!(plan_of("v1.33.1", &[], &[("w1", "v1.32.3")]).is_ok());
}

#[test]
fn a_state_without_versions_is_refused_with_a_hint() {
    let next = target(
        SMALL,
        STACKED,
        &description("v1.33.1", "1.7.30", "v3.5.21", &[]),
    );
    let unknown = Installed {
        bundle: "sha256:aa".to_owned(),
        versions: BTreeMap::new(),
    };
    let error = UpgradePlan::new(&unknown, &next, &[]).expect_err("no version");
    assert!(matches!(error, UpgradePlanError::Version { .. }), "{error}");
}

#[test]
fn the_plan_as_json() {
    let next = target(
        SMALL,
        STACKED,
        &description("v1.33.1", "2.1.4", "v3.5.21", &[]),
    );
    let plan =
        UpgradePlan::new(&installed("v1.32.3", "1.7.30", "v3.5.21"), &next, &[]).expect("plan");
    let mut json = serde_json::to_value(&plan).expect("json");
    // The chart's values are the install plan's, pinned by its own snapshots.
    for step in json["steps"].as_array_mut().expect("steps") {
        if let Some(chart) = step.pointer_mut("/action/action/chart/values/yaml") {
            *chart = "…".into();
        }
    }
    insta::assert_snapshot!(serde_json::to_string_pretty(&json).expect("json"));
}

#[test]
fn the_rendered_plan_names_both_versions_and_each_nodes_steps() {
    let inventory = Inventory::from_str_named(SMALL, "inventory.yaml").expect("inventory");
    let next = target(
        SMALL,
        STACKED,
        &description("v1.33.1", "1.7.30", "v3.5.21", &[]),
    );
    let plan =
        UpgradePlan::new(&installed("v1.32.3", "1.7.30", "v3.5.21"), &next, &[]).expect("plan");
    let text = plan.render(&inventory);
    assert!(
        text.starts_with("upgrade from bundle sha256:aa (kubernetes v1.32.3)"),
        "{text}"
    );
    let w1: Vec<&str> = text
        .split("\nw1:\n")
        .nth(1)
        .expect("w1")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        w1,
        [
            "upgrade.precheck",
            "upgrade.os.agent",
            "upgrade.kubeadm",
            "upgrade.node",
            "upgrade.kubelet",
            "upgrade.addons.pins",
            "upgrade.record"
        ]
    );
    assert!(
        text.contains("kubeadm upgrade apply v1.33.1 --yes"),
        "{text}"
    );
}

#[test]
fn an_external_registry_gets_the_next_bundle_pushed_instead_of_unpacked() {
    let external = "  etcd: {deployment_type: internal}\n  image_registry:\n    type: external\n    address: harbor.lab:8443\n    username: pusher\n    password_env: KK_TEST_REGISTRY_PASSWORD\n    ca_file: /etc/kk-test/harbor-ca.crt\n";
    let next = target(
        SMALL,
        external,
        &description("v1.33.1", "1.7.30", "v3.5.21", &[]),
    );
    let plan =
        UpgradePlan::new(&installed("v1.32.3", "1.7.30", "v3.5.21"), &next, &[]).expect("plan");
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids[..6],
        [
            "upgrade.precheck",
            "upgrade.push.login",
            "upgrade.push.store",
            "upgrade.push.bundle",
            "upgrade.os.agent",
            "upgrade.kubeadm",
        ]
    );
    assert!(plan.steps[1..4].iter().all(|s| s.action.is_cluster_wide()));
    let inventory = Inventory::from_str_named(SMALL, "inventory.yaml").expect("inventory");
    let text = plan.render(&inventory);
    assert!(
        text.contains("\non the installer machine:\n  upgrade.push.login"),
        "{text}"
    );
}

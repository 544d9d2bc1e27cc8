//! The pinned images: the plan's pin set with containerd, none with docker, and the step that
//! reconciles them on every Kubernetes node last before the post hooks.

use super::*;

#[test]
fn containerd_pins_every_image_by_original_name_and_by_digest() {
    let plan = sample_plan();
    let pins = plan.pins.as_ref().expect("containerd pins");
    assert_eq!(pins.owner, Sha256Digest::of(b"bundle").to_string());
    for reference in [
        "registry.k8s.io/pause:3.10",
        "quay.io/calico/node:v3.30.5",
        "docker.io/library/haproxy:2.9.6-alpine",
    ] {
        assert!(pins.names.contains(reference), "{reference}: {pins:?}");
        let (repository, _) = reference.rsplit_once(':').expect("tag");
        let by_digest = format!("{repository}@{}", Sha256Digest::of(reference.as_bytes()));
        assert!(pins.names.contains(&by_digest), "{by_digest}: {pins:?}");
    }
    // Images only: no binary or chart is a containerd image.
    assert_eq!(pins.names.len(), 2 * plan.images.len());
    assert!(!pins.names.iter().any(|name| name.contains("kk.internal")));
}

#[test]
fn a_digest_pinned_reference_is_pinned_as_it_is_named() {
    let inventory = Inventory::from_str_named(INVENTORY, "inventory.yaml").expect("inventory");
    let mut description = description(&[]);
    let digest = Sha256Digest::of(b"coredns index");
    let mut coredns = image("registry.k8s.io/coredns/coredns:v1.12.0");
    coredns.version = digest.to_string();
    coredns.reference = format!("registry.k8s.io/coredns/coredns@{digest}");
    coredns.digest = digest;
    description.artifacts.push(coredns);
    let plan = Plan::new(
        &inventory,
        &config("  etcd: {deployment_type: external}\n"),
        Sha256Digest::of(b"bundle"),
        &description,
    )
    .expect("plan");
    let pins = plan.pins.expect("pins");
    let named: Vec<&String> = pins
        .names
        .iter()
        .filter(|name| name.contains("coredns"))
        .collect();
    assert_eq!(
        named,
        [&format!("registry.k8s.io/coredns/coredns@{digest}")]
    );
}

#[test]
fn the_pins_step_runs_on_every_kubernetes_node_last_before_the_post_hooks() {
    let plan = sample_plan();
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids[ids.len() - 2..], ["addons.pins", "post_hook.scripts"]);
    assert_eq!(nodes_of(&plan, "addons.pins"), ["cp1", "w1", "w2"]);
    let step = plan
        .steps
        .iter()
        .find(|s| s.id == "addons.pins")
        .expect("pins");
    assert_eq!(step.action, Action::PinImages);
}

#[test]
fn docker_pins_nothing_and_the_plan_says_why() {
    let inventory = Inventory::from_str_named(INVENTORY, "inventory.yaml").expect("inventory");
    let mut description = description(&["containerd", "runc"]);
    description
        .artifacts
        .extend([binary("docker", "28.5.2"), binary("cri-dockerd", "0.3.26")]);
    let plan = Plan::new(
        &inventory,
        &config("  etcd: {deployment_type: external}\n  cri: {container_manager: docker}\n"),
        Sha256Digest::of(b"bundle"),
        &description,
    )
    .expect("plan");
    assert!(plan.pins.is_none());
    assert!(!plan.steps.iter().any(|s| s.action == Action::PinImages));
    let text = plan.render(&inventory);
    assert!(
        text.contains("pins: none, docker's image store is not containerd's CRI"),
        "{text}"
    );
    assert!(
        sample_plan()
            .render(&inventory)
            .contains("pins: 5 of the bundle's images (10 names) pinned in containerd"),
    );
}

//! `cri.container_manager: docker`: what the plan fetches and writes for docker, and the docker
//! it refuses before any node is touched.

use super::*;

const DOCKER: &str = "  etcd: {deployment_type: external}\n  cri: {container_manager: docker}\n";

/// The catalog's bundle for docker: docker's tarball and cri-dockerd instead of containerd and
/// runc.
fn docker_plan(docker_version: &str) -> Result<Plan, PlanError> {
    docker_plan_with(docker_version, "")
}

/// [`docker_plan`] with `more` in the config's spec.
fn docker_plan_with(docker_version: &str, more: &str) -> Result<Plan, PlanError> {
    let inventory = Inventory::from_str_named(INVENTORY, "inventory.yaml").expect("inventory");
    let mut description = description(&["containerd", "runc"]);
    description.artifacts.extend([
        binary("docker", docker_version),
        binary("cri-dockerd", "0.3.26"),
    ]);
    Plan::new(
        &inventory,
        &config(&format!("{DOCKER}{more}")),
        Sha256Digest::of(b"bundle"),
        &description,
    )
}

#[test]
fn docker_fetches_its_tarball_and_cri_dockerd_and_kubeadm_uses_cri_dockerd() {
    let plan = docker_plan("28.5.2").expect("plan");
    let runtime: Vec<&str> = plan
        .phase(Phase::Runtime)
        .map(|step| step.id.as_str())
        .collect();
    assert_eq!(
        runtime,
        ["runtime.binaries", "runtime.docker", "runtime.pull"]
    );
    let step = plan
        .steps
        .iter()
        .find(|s| s.id == "runtime.binaries")
        .expect("binaries");
    let Action::Fetch { binaries } = &step.action else {
        panic!("{step:?}");
    };
    let names: Vec<&str> = binaries.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["docker", "cri-dockerd", "cni-plugins", "crictl"]);
    for file in ["dockerd", "docker", "containerd", "runc", "docker-init"] {
        assert!(binaries[0].files.iter().any(|f| f == file), "{file}");
    }
    let docker = plan.docker.as_ref().expect("docker plan");
    assert_eq!(docker.version, "28.5.2");
    // docker's containerd is set up by the docker step, not judged as the containerd runtime's.
    assert!(plan.containerd.is_none());
    assert!(
        docker
            .cri_dockerd_flags
            .contains(&format!("--pod-infra-container-image={}", plan.pause_image))
    );
    let kubernetes = plan.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(
        kubernetes.cluster.cri_socket,
        "unix:///run/cri-dockerd.sock"
    );
    assert!(
        kubernetes
            .joins
            .values()
            .all(|join| join.cri_socket == "unix:///run/cri-dockerd.sock")
    );
    // The kubelet starts after the CRI it talks to, not after a containerd it never calls.
    assert_eq!(kubernetes.cri_unit, "cri-docker.service");
    // kk's own registry needs no credentials.
    assert_eq!(docker.mirror_auth, None);
}

#[test]
fn docker_sends_an_external_registrys_credentials_to_it_as_the_mirror() {
    let external = "  image_registry:\n    type: external\n    address: registry.lab:5000\n    username: pusher\n    password_env: KK_TEST_REGISTRY_PASSWORD\n";
    let plan = docker_plan_with("28.5.2", external).expect("plan");
    let docker = plan.docker.as_ref().expect("docker plan");
    assert_eq!(
        docker.mirror_auth,
        Some(RegistryAuth {
            host: "registry.lab:5000".into(),
            username: "pusher".into(),
            password_env: "KK_TEST_REGISTRY_PASSWORD".into(),
        })
    );
    // The plan names the variable, never a password.
    let json = serde_json::to_string(&plan).expect("json");
    assert!(json.contains("KK_TEST_REGISTRY_PASSWORD"), "{json}");

    let open = docker_plan_with(
        "28.5.2",
        "  image_registry: {type: external, address: registry.lab}\n",
    )
    .expect("plan");
    assert_eq!(open.docker.expect("docker").mirror_auth, None);
}

#[test]
fn containerd_keeps_its_own_steps_and_socket() {
    let plan = sample_plan();
    assert!(plan.docker.is_none());
    assert!(plan.steps.iter().any(|s| s.id == "runtime.containerd"));
    assert_eq!(
        plan.kubernetes.as_ref().expect("kubernetes").cri_unit,
        "containerd.service"
    );
    assert_eq!(
        plan.kubernetes.expect("kubernetes").cluster.cri_socket,
        "unix:///run/containerd/containerd.sock"
    );
}

#[test]
fn a_docker_older_than_28_is_refused_at_plan_time() {
    let err = docker_plan("24.0.9").expect_err("docker 24 is refused");
    assert!(
        matches!(&err, PlanError::DockerTooOld { version } if version == "24.0.9"),
        "{err:?}"
    );
    assert!(err.to_string().contains("hint:"), "{err}");
}

#[test]
fn docker_without_cri_dockerd_in_the_bundle_is_a_plan_error() {
    let inventory = Inventory::from_str_named(INVENTORY, "inventory.yaml").expect("inventory");
    let mut description = description(&["containerd", "runc"]);
    description.artifacts.push(binary("docker", "28.5.2"));
    let err = Plan::new(
        &inventory,
        &config(DOCKER),
        Sha256Digest::of(b"bundle"),
        &description,
    )
    .expect_err("no cri-dockerd");
    assert!(
        matches!(&err, PlanError::MissingBinary { name } if name == "cri-dockerd"),
        "{err:?}"
    );
}

use bundle_spec::ArtifactKind;
use bundle_spec::description::Artifact;

use super::*;

mod cni;
mod decisions;
mod docker;
pub(crate) mod packages_nfs;
mod pins;

fn artifact(kind: ArtifactKind, name: &str, version: &str, reference: &str) -> Artifact {
    Artifact {
        kind,
        name: name.to_owned(),
        version: version.to_owned(),
        platform: Some("linux/amd64".to_owned()),
        reference: reference.to_owned(),
        digest: Sha256Digest::of(reference.as_bytes()),
        size: 1,
        omitted_platforms: Vec::new(),
    }
}

fn binary(name: &str, version: &str) -> Artifact {
    artifact(
        ArtifactKind::Binary,
        name,
        version,
        &format!("kk.internal/binaries/{name}:{version}"),
    )
}

fn image(reference: &str) -> Artifact {
    let (name, tag) = reference.rsplit_once(':').expect("tag");
    artifact(ArtifactKind::Image, name, tag, reference)
}

fn chart(name: &str, version: &str) -> Artifact {
    let mut chart = artifact(
        ArtifactKind::Chart,
        name,
        version,
        &format!("kk.internal/charts/{name}:{version}"),
    );
    chart.platform = None;
    chart
}

/// A bundle as the catalog builds it for v1.33.0.
fn description(skip: &[&str]) -> Description {
    let created = jiff::Timestamp::UNIX_EPOCH;
    let mut artifacts = vec![
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
        image("ghcr.io/kube-vip/kube-vip:v0.8.9"),
        image("docker.io/library/haproxy:2.9.6-alpine"),
        chart("tigera-operator", "v3.30.5"),
        chart("metrics-server", "3.12.2"),
    ];
    artifacts.retain(|a| !skip.contains(&a.name.rsplit('/').next().unwrap_or_default()));
    bundle_spec::test_support::description(created, artifacts)
}

const INVENTORY: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    w1: {internal_ipv4: 10.0.0.2}\n    w2: {internal_ipv4: 10.0.0.3}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    kube_worker: {hosts: [w1, w2]}\n    etcd: {hosts: [cp1, w1, w2]}\n";

fn config(spec: &str) -> Config {
    Config::from_str_named(
        &format!("apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {{name: t}}\nspec:\n{spec}"),
        "config.yaml",
    )
    .expect("config")
}

fn plan(inventory: &str, spec: &str, skip: &[&str]) -> Result<Plan, PlanError> {
    let inventory = Inventory::from_str_named(inventory, "inventory.yaml").expect("inventory");
    Plan::new(
        &inventory,
        &config(spec),
        Sha256Digest::of(b"bundle"),
        &description(skip),
    )
}

/// The chart of step `id`.
fn chart_of<'a>(plan: &'a Plan, id: &str) -> &'a ChartInstall {
    let step = plan.steps.iter().find(|s| s.id == id).expect(id);
    let Action::Chart { chart } = &step.action else {
        panic!("{step:?}");
    };
    chart
}

/// The values file of the chart of step `id`, parsed as Helm reads it.
fn chart_values(plan: &Plan, id: &str) -> serde_json::Value {
    let yaml = chart_of(plan, id).values.yaml();
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("not YAML: {e}\n{yaml}"))
}

fn nodes_of(plan: &Plan, id: &str) -> Vec<String> {
    plan.steps
        .iter()
        .find(|s| s.id == id)
        .map_or_else(|| panic!("no step {id}"), |s| s.nodes.clone())
}

/// The plan of [`INVENTORY`] with external etcd.
pub(super) fn sample_plan() -> Plan {
    plan(INVENTORY, "  etcd: {deployment_type: external}\n", &[]).expect("plan")
}

#[test]
fn steps_come_in_phase_order_with_unique_ids() {
    let plan = plan(INVENTORY, "  etcd: {deployment_type: external}\n", &[]).expect("plan");
    let phases: Vec<Phase> = plan.steps.iter().map(|s| s.phase).collect();
    let mut sorted = phases.clone();
    sorted.sort();
    assert_eq!(phases, sorted);
    let mut ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "duplicate step ids");
    assert_eq!(
        plan.steps.first().map(|s| s.id.as_str()),
        Some("pre_hook.scripts")
    );
    assert_eq!(
        plan.steps.last().map(|s| s.id.as_str()),
        Some("post_hook.scripts")
    );
}

#[test]
fn each_step_runs_where_its_role_is() {
    let plan = plan(INVENTORY, "  etcd: {deployment_type: external}\n", &[]).expect("plan");
    let all = vec!["cp1".to_owned(), "w1".to_owned(), "w2".to_owned()];
    let cases: &[(&str, &[&str])] = &[
        ("os.agent", &["cp1", "w1", "w2"]),
        ("os.installer", &["cp1"]),
        ("os.sysctl", &["cp1", "w1", "w2"]),
        ("pki.issue", &[]),
        ("registry.unpack", &["cp1"]),
        ("registry.service", &["cp1"]),
        ("registry.ready", &["cp1", "w1", "w2"]),
        ("runtime.pull", &["cp1", "w1", "w2"]),
        ("etcd.service", &["cp1", "w1", "w2"]),
    ];
    for (id, nodes) in cases {
        assert_eq!(nodes_of(&plan, id), *nodes, "{id}");
    }
    assert_eq!(nodes_of(&plan, "pki.copy"), all);
    assert_eq!(plan.registry.nodes(), ["cp1"]);
    assert_eq!(plan.registry.address, "dockerhub.kubekey.local:5443");
    assert_eq!(plan.pause_image, "registry.k8s.io/pause:3.10");
    assert_eq!(
        plan.image_hosts,
        vec!["docker.io", "ghcr.io", "quay.io", "registry.k8s.io"]
    );
    let containerd = plan
        .containerd
        .as_ref()
        .expect("the containerd runtime's plan");
    assert_eq!(containerd.version, "1.7.30");
    assert_eq!(containerd.major, 1);
    assert_eq!(plan.kubernetes_version.as_deref(), Some("v1.33.0"));
}

#[test]
fn binaries_are_fetched_by_reference_with_the_digests_the_bundle_lists() {
    let plan = plan(INVENTORY, "", &[]).expect("plan");
    let step = plan
        .steps
        .iter()
        .find(|s| s.id == "runtime.binaries")
        .expect("step");
    let Action::Fetch { binaries } = &step.action else {
        panic!("{step:?}");
    };
    let names: Vec<(&str, &str)> = binaries
        .iter()
        .map(|b| (b.name.as_str(), b.into.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("containerd", "/usr/local/bin"),
            ("runc", "/usr/local/sbin"),
            ("cni-plugins", "/opt/cni/bin"),
            ("crictl", "/usr/local/bin"),
        ]
    );
    assert_eq!(
        binaries[0].digests,
        vec![Sha256Digest::of(b"kk.internal/binaries/containerd:1.7.30")]
    );
}

#[test]
fn stacked_etcd_has_no_etcd_phase_and_the_registry_can_be_named() {
    let plan = plan(
        INVENTORY,
        "  etcd: {deployment_type: internal}\n  image_registry: {auth: {registry: \"10.0.0.9:5000\"}}\n",
        &[],
    )
    .expect("plan");
    assert_eq!(plan.phase(Phase::Etcd).count(), 0);
    assert!(plan.etcd_members.is_empty());
    assert_eq!(plan.registry.address, "10.0.0.9:5000");
    assert_eq!(plan.registry.port, 5000);
    assert!(config("  image_registry: {upstream_fallback: true}\n").upstream_fallback);
}

#[test]
fn what_the_bundle_or_inventory_lacks_is_named() {
    let cases: &[(&str, &str, &[&str], &str)] = &[
        (INVENTORY, "", &["etcd"], "no binary `etcd`"),
        (INVENTORY, "", &["crictl"], "no binary `crictl`"),
        (INVENTORY, "", &["pause"], "no pause image"),
        (INVENTORY, "", &["kubelet"], "no binary `kubelet`"),
        (
            INVENTORY,
            "",
            &["tigera-operator"],
            "no chart `tigera-operator`",
        ),
        (INVENTORY, "", &["helm"], "no binary `helm`"),
        (
            INVENTORY,
            "  kubernetes:\n    control_plane_endpoint: {type: kube-vip, kube_vip: {address: 10.0.0.100}}\n",
            &["kube-vip"],
            "no `kube-vip/kube-vip` image",
        ),
        (
            INVENTORY,
            "  addons:\n  - {name: m, sources: {chart: {name: nothere}}}\n",
            &[],
            "no chart `nothere`",
        ),
        (
            INVENTORY,
            "  cni: {type: kube-ovn}\n",
            &[],
            "the bundle has no chart `kube-ovn`",
        ),
        (
            &INVENTORY.replace(
                "w1: {internal_ipv4: 10.0.0.2}",
                "w1: {connector: {host: w1.lan}}",
            ),
            "",
            &[],
            "host `w1` has no `internal_ipv4`",
        ),
    ];
    for (inventory, spec, skip, expected) in cases {
        let error = plan(inventory, spec, skip).expect_err(expected);
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[test]
fn the_rendered_plan_lists_each_nodes_steps() {
    let inventory = Inventory::from_str_named(INVENTORY, "inventory.yaml").expect("inventory");
    let plan = plan(INVENTORY, "", &[]).expect("plan");
    let text = plan.render(&inventory);
    let w1 = text.split("\nw1:\n").nth(1).expect("w1 section");
    let w1 = w1.split("\n\n").next().unwrap_or(w1);
    assert!(w1.contains("runtime.containerd"), "{text}");
    assert!(!w1.contains("registry.unpack"), "{text}");
    assert!(
        text.contains("on the installer machine:\n  pki.issue"),
        "{text}"
    );
}

#[test]
fn phases_are_named_as_the_cli_takes_them() {
    for phase in Phase::ALL {
        assert_eq!(Phase::from_name(phase.name()), Some(phase));
    }
    assert_eq!(Phase::from_name("kubelet"), None);
}

/// The inventory of [`INVENTORY`] with a second control plane.
const HA_INVENTORY: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    cp2: {internal_ipv4: 10.0.0.4}\n    w1: {internal_ipv4: 10.0.0.2}\n    w2: {internal_ipv4: 10.0.0.3}\n  groups:\n    kube_control_plane: {hosts: [cp1, cp2]}\n    kube_worker: {hosts: [w1, w2]}\n    etcd: {hosts: [cp1, w1, w2]}\n";

#[test]
fn kubernetes_steps_init_once_join_the_rest_and_place_the_endpoint() {
    let kube_vip = "  kubernetes:\n    control_plane_endpoint: {type: kube-vip, kube_vip: {address: 10.0.0.100}}\n  addons:\n  - {name: metrics, namespace: monitoring, sources: {chart: {name: metrics-server, values: [a=b]}}}\n";
    let ha = plan(HA_INVENTORY, kube_vip, &[]).expect("plan");
    let cases: &[(&str, &[&str])] = &[
        ("kubernetes.binaries", &["cp1", "cp2", "w1", "w2"]),
        ("kubernetes.kubelet", &["cp1", "cp2", "w1", "w2"]),
        ("kubernetes.token", &["cp1"]),
        ("kubernetes.vip-bootstrap", &["cp1"]),
        ("kubernetes.init", &["cp1"]),
        ("kubernetes.join-control-plane", &["cp2"]),
        ("kubernetes.join-worker", &["w1", "w2"]),
        ("kubernetes.vip", &["cp1", "cp2"]),
        ("network.helm", &["cp1"]),
        ("network.cni", &["cp1"]),
        ("addons.metrics", &["cp1"]),
    ];
    for (id, nodes) in cases {
        assert_eq!(nodes_of(&ha, id), *nodes, "{id}");
    }
    let ids: Vec<&str> = ha.steps.iter().map(|s| s.id.as_str()).collect();
    let at = |id: &str| ids.iter().position(|s| *s == id).expect(id);
    assert!(at("kubernetes.token") < at("kubernetes.vip-bootstrap"));
    assert!(at("kubernetes.vip-bootstrap") < at("kubernetes.init"));
    assert!(at("kubernetes.join-worker") < at("kubernetes.vip"));
    assert!(at("addons.metrics") < at("post_hook.scripts"));
    assert!(!ids.contains(&"kubernetes.haproxy"));
    let kubernetes = ha.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(kubernetes.first_control_plane(), "cp1");
    assert_eq!(kubernetes.endpoint(), "lb.kubesphere.local:6443");
    assert_eq!(
        kubernetes.kube_vip.as_ref().map(|vip| vip.image.as_str()),
        Some("ghcr.io/kube-vip/kube-vip:v0.8.9")
    );
    let cni = chart_values(&ha, "network.cni");
    assert_eq!(cni["installation"]["registry"], "quay.io/", "{cni}");
    let step = ha
        .steps
        .iter()
        .find(|s| s.id == "addons.metrics")
        .expect("addon");
    let Action::Chart { chart } = &step.action else {
        panic!("{step:?}");
    };
    assert_eq!(
        (chart.release.as_str(), chart.namespace.as_str()),
        ("metrics", "monitoring")
    );
    assert_eq!(chart.fetch.files, ["metrics-server-3.12.2.tgz"]);
    assert_eq!(chart.fetch.into, CHARTS_DIR);

    let haproxy = plan(
        HA_INVENTORY,
        "  kubernetes:\n    control_plane_endpoint: {type: haproxy}\n  cni: {type: none}\n",
        &[],
    )
    .expect("plan");
    assert_eq!(nodes_of(&haproxy, "kubernetes.haproxy"), ["w1", "w2"]);
    let ids: Vec<&str> = haproxy.steps.iter().map(|s| s.id.as_str()).collect();
    assert!(
        !ids.iter()
            .any(|id| id.starts_with("network.") || id.contains("vip")),
        "{ids:?}"
    );

    let runtime_only = plan(INVENTORY, "", &["kubeadm"]).expect("plan");
    assert!(runtime_only.kubernetes.is_none());
    assert_eq!(runtime_only.phase(Phase::Kubernetes).count(), 0);
}

#[test]
fn configs_kubeadm_would_refuse_never_reach_a_node() {
    let cases: &[(&str, &str)] = &[
        (
            "  kubernetes: {kube_version: v1.32.4}\n",
            "`spec.kubernetes.kube_version` is `v1.32.4`",
        ),
        (
            "  cni: {service_cidr: 10.0.0.0/8, pod_cidr: 172.16.0.0/16}\n",
            "`spec.cni.service_cidr` is `10.0.0.0/8`",
        ),
        (
            "  cni: {service_cidr: \"10.96.0.0/12,fd00::/64\", pod_cidr: \"10.233.64.0/18,fd01::/56\"}\n",
            "`spec.cni.service_cidr` is `fd00::/64`",
        ),
        (
            "  cni: {pod_cidr: 10.0.0.0/8, service_cidr: 172.20.0.0/16, ipv4_mask_size: 25, max_pods: 100}\n",
            "`spec.cni.ipv4_mask_size` is `25`",
        ),
    ];
    for (spec, expected) in cases {
        let error = plan(INVENTORY, spec, &[]).expect_err(expected);
        assert!(error.to_string().contains(expected), "{error}");
    }
    let error = plan(&INVENTORY.replace("w2", "W2"), "", &[]).expect_err("node name");
    // The inventory's file and the host's line, not a config field.
    assert!(
        error
            .to_string()
            .starts_with("inventory.yaml:8:5: host `W2`"),
        "{error}"
    );
    plan(INVENTORY, "  kubernetes: {kube_version: v1.33.0}\n", &[]).expect("same version");
}

/// Two `image_registry` hosts: both serve (unpack, service, the serving certificate naming
/// both IPs and the name), the name maps to the first, and each node lists both by IP,
/// starting at the host its inventory place picks.
#[test]
fn several_registry_hosts_all_serve_and_each_node_rotates_its_mirrors() {
    let inventory = INVENTORY.replace(
        "    etcd: {hosts: [cp1, w1, w2]}\n",
        "    etcd: {hosts: [cp1, w1, w2]}\n    image_registry: {hosts: [w1, w2]}\n",
    );
    let two = plan(&inventory, "  etcd: {deployment_type: external}\n", &[]).expect("plan");
    assert_eq!(two.registry.nodes(), ["w1", "w2"]);
    for id in ["registry.unpack", "registry.service"] {
        assert_eq!(nodes_of(&two, id), ["w1", "w2"], "{id}");
    }
    let names = two.pki.spec.registry.as_ref().expect("kk's registry");
    assert_eq!(
        names.ips,
        [
            "10.0.0.2".parse::<IpAddr>().expect("ip"),
            "10.0.0.3".parse().expect("ip")
        ]
    );
    assert_eq!(names.dns, ["dockerhub.kubekey.local"]);
    for (node, sets) in &two.pki.nodes {
        let serves = sets.contains(&CertificateSet::Registry);
        assert_eq!(serves, node != "cp1", "{node}");
    }
    let (a, b) = ("10.0.0.2:5443".to_owned(), "10.0.0.3:5443".to_owned());
    assert_eq!(two.registry.mirrors_for("cp1"), [a.clone(), b.clone()]);
    assert_eq!(two.registry.mirrors_for("w1"), [b.clone(), a.clone()]);
    assert_eq!(two.registry.mirrors_for("w2"), [a, b]);
    let mapped = two.etc_hosts["cp1"]
        .iter()
        .find(|entry| entry.names.iter().any(|n| n == "dockerhub.kubekey.local"))
        .expect("the registry's name");
    assert_eq!(mapped.ip.to_string(), "10.0.0.2");
    assert!(
        two.render(&Inventory::from_str_named(&inventory, "i").expect("inventory"))
            .contains("registry dockerhub.kubekey.local:5443 on w1 (10.0.0.2), w2 (10.0.0.3)")
    );

    // One host: one address, the name, for every node.
    let single = plan(INVENTORY, "  etcd: {deployment_type: external}\n", &[]).expect("plan");
    assert!(single.registry.mirrors.is_empty());
    assert_eq!(
        single.registry.mirrors_for("w2"),
        ["dockerhub.kubekey.local:5443"]
    );
}

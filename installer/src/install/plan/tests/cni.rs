//! The network plugins beyond Calico: Kube-OVN's label step and the values of Kube-OVN and
//! hybridnet, with the cluster's pod and service ranges; multus over the primary plugin.

use super::*;

/// [`description`]'s bundle with the Kube-OVN, hybridnet, Cilium and Flannel charts and the
/// images the catalog adds for them, and multus's manifest and image.
fn bundle() -> Description {
    let mut artifacts = description(&[]).artifacts;
    artifacts.extend([
        image("docker.io/kubeovn/kube-ovn:v1.15.24"),
        image("docker.io/kubeovn/vpc-nat-gateway:v1.15.24"),
        image("docker.io/hybridnetdev/hybridnet:v0.8.9"),
        image("ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0"),
        binary("multus", "v4.3.0"),
        chart("kube-ovn", "v1.15.24"),
        chart("hybridnet", "0.6.9"),
        chart("cilium", "1.18.14"),
        chart("flannel", "v0.28.9"),
    ]);
    bundle_spec::test_support::description(jiff::Timestamp::UNIX_EPOCH, artifacts)
}

fn cni_plan(inventory: &str, spec: &str) -> Plan {
    let inventory = Inventory::from_str_named(inventory, "inventory.yaml").expect("inventory");
    Plan::new(
        &inventory,
        &config(spec),
        Sha256Digest::of(b"bundle"),
        &bundle(),
    )
    .expect("plan")
}

fn ids(plan: &Plan) -> Vec<&str> {
    plan.steps.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn kube_ovn_labels_the_control_planes_before_its_chart() {
    let plan = cni_plan(HA_INVENTORY, "  cni: {type: kubeovn}\n");
    let step = plan
        .steps
        .iter()
        .find(|s| s.id == "network.label")
        .expect("label step");
    assert_eq!(
        step.nodes,
        ["cp1"],
        "kubectl runs on the first control plane"
    );
    let Action::LabelNodes { label } = &step.action else {
        panic!("{step:?}");
    };
    assert_eq!(label.label, "kube-ovn/role=master");
    assert_eq!(
        label.nodes,
        ["cp1", "cp2"],
        "every control plane, no worker"
    );
    let ids = ids(&plan);
    let at = |id: &str| ids.iter().position(|s| *s == id).expect(id);
    assert!(at("kubernetes.join-worker") < at("network.label"));
    assert!(at("network.label") < at("network.cni"));
    let chart = chart_of(&plan, "network.cni");
    assert_eq!(
        (chart.release.as_str(), chart.namespace.as_str()),
        ("kube-ovn", "kubeovn-system")
    );
    assert_eq!(chart.fetch.files, ["kube-ovn-v1.15.24.tgz"]);
}

#[test]
fn kube_ovn_values_carry_the_configs_pod_and_service_ranges_and_control_planes() {
    for (spec, pod, gateway, service) in [
        (
            "  cni: {type: kube-ovn}\n",
            "10.233.64.0/18",
            "10.233.64.1",
            "10.233.0.0/18",
        ),
        (
            "  cni: {type: kube-ovn, pod_cidr: 172.16.0.0/16, service_cidr: 172.17.0.0/18}\n",
            "172.16.0.0/16",
            "172.16.0.1",
            "172.17.0.0/18",
        ),
    ] {
        let values = chart_values(&cni_plan(HA_INVENTORY, spec), "network.cni");
        assert_eq!(values["MASTER_NODES"], "10.0.0.1,10.0.0.4", "{values}");
        assert_eq!(values["networking"]["NET_STACK"], "ipv4", "{values}");
        assert_eq!(values["ipv4"]["POD_CIDR"], pod, "{values}");
        assert_eq!(values["ipv4"]["POD_GATEWAY"], gateway, "{values}");
        assert_eq!(values["ipv4"]["SVC_CIDR"], service, "{values}");
    }
}

#[test]
fn hybridnet_runs_its_controllers_on_the_control_planes_over_the_pod_range() {
    let plan = cni_plan(
        HA_INVENTORY,
        "  cni: {type: hybridnet, pod_cidr: 172.16.0.0/16}\n",
    );
    assert!(
        !ids(&plan).contains(&"network.label"),
        "only Kube-OVN labels nodes"
    );
    let chart = chart_of(&plan, "network.cni");
    assert_eq!(
        (chart.release.as_str(), chart.namespace.as_str()),
        ("hybridnet", "kube-system")
    );
    let values = chart_values(&plan, "network.cni");
    assert_eq!(values["init"]["cidr"], "172.16.0.0/16", "{values}");
    assert_eq!(values["init"]["ipVersion"], "4", "{values}");
    assert_eq!(values["manager"]["replicas"], 2, "two control planes");
    assert_eq!(values["webhook"]["replicas"], 2, "two control planes");
    assert_eq!(
        values["typha"]["replicas"], 3,
        "the chart's 3, with 4 nodes"
    );
}

#[test]
fn the_other_plugins_label_nothing() {
    for spec in ["", "  cni: {type: hybridnet}\n", "  cni: {type: none}\n"] {
        let plan = cni_plan(HA_INVENTORY, spec);
        assert!(!ids(&plan).contains(&"network.label"), "{spec}");
    }
}

#[test]
fn hybridnet_refuses_a_dual_stack_pod_range_it_would_give_half_of() {
    let inventory = Inventory::from_str_named(HA_INVENTORY, "inventory.yaml").expect("inventory");
    let spec = "  cni: {type: hybridnet, pod_cidr: \"10.233.64.0/18,fd85:ee78:d8a6:8600::/56\", service_cidr: \"10.233.0.0/18,fd85:ee78:d8a6:9000::/112\"}\n";
    let error = Plan::new(
        &inventory,
        &config(spec),
        Sha256Digest::of(b"bundle"),
        &bundle(),
    )
    .expect_err("dual stack");
    let message = error.to_string();
    assert!(
        message.contains("`spec.cni.type: hybridnet` gives pods one address family")
            && message.contains("10.233.64.0/18,fd85:ee78:d8a6:8600::/56"),
        "{message}"
    );
    // Kube-OVN takes both families.
    let values = chart_values(
        &cni_plan(HA_INVENTORY, &spec.replace("hybridnet", "kube-ovn")),
        "network.cni",
    );
    assert_eq!(values["networking"]["NET_STACK"], "dual_stack", "{values}");
}

#[test]
fn multus_delegates_to_the_primary_plugins_file_after_its_chart() {
    for (kind, file) in [
        ("calico", "10-calico.conflist"),
        ("cilium", "05-cilium.conflist"),
        ("flannel", "10-flannel.conflist"),
        ("kube-ovn", "01-kube-ovn.conflist"),
        ("hybridnet", "06-hybridnet.conflist"),
    ] {
        let plan = cni_plan(
            HA_INVENTORY,
            &format!("  cni: {{type: {kind}, multi_cni: multus}}\n"),
        );
        let step = plan
            .steps
            .iter()
            .find(|s| s.id == "network.multus")
            .unwrap_or_else(|| panic!("{kind}: no multus step"));
        assert_eq!(step.nodes, ["cp1"], "{kind}: on the first control plane");
        let Action::Multus { multus } = &step.action else {
            panic!("{step:?}");
        };
        assert_eq!(multus.delegate, file, "{kind}");
        assert_eq!(
            multus.image, "ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0",
            "{kind}: the bundle's image by original name"
        );
        assert_eq!(multus.fetch.reference, "kk.internal/binaries/multus:v4.3.0");
        assert_eq!(multus.fetch.files, ["multus-daemonset.yml"]);
        let ids = ids(&plan);
        let at = |id: &str| ids.iter().position(|s| *s == id).expect(id);
        assert_eq!(at("network.multus"), at("network.cni") + 1, "{kind}");
    }
}

#[test]
fn without_multi_cni_there_is_no_multus_step() {
    for spec in ["", "  cni: {multi_cni: none}\n", "  cni: {type: none}\n"] {
        let plan = cni_plan(HA_INVENTORY, spec);
        assert!(!ids(&plan).contains(&"network.multus"), "{spec}");
    }
}

#[test]
fn multus_is_refused_without_a_primary_plugin() {
    let inventory = Inventory::from_str_named(HA_INVENTORY, "inventory.yaml").expect("inventory");
    let spec = "  cni: {type: none, multi_cni: multus}\n";
    let error = Plan::new(
        &inventory,
        &config(spec),
        Sha256Digest::of(b"bundle"),
        &bundle(),
    )
    .expect_err("multus needs a primary");
    assert!(matches!(error, PlanError::MultusWithoutCni), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("`spec.cni.type` is `none`"), "{message}");
    assert!(message.contains("hint: set `spec.cni.type`"), "{message}");
}

#[test]
fn multus_is_refused_when_the_bundle_lacks_its_manifest_or_image() {
    let inventory = Inventory::from_str_named(HA_INVENTORY, "inventory.yaml").expect("inventory");
    let spec = "  cni: {multi_cni: multus}\n";
    let without = |lacking: &str| {
        let mut artifacts = bundle().artifacts;
        artifacts.retain(|artifact| !artifact.reference.contains(lacking));
        bundle_spec::test_support::description(jiff::Timestamp::UNIX_EPOCH, artifacts)
    };
    for (lacking, named) in [
        ("binaries/multus:", "binary `multus` (multus's manifest)"),
        ("multus-cni:", "image `k8snetworkplumbingwg/multus-cni`"),
    ] {
        let error = Plan::new(
            &inventory,
            &config(spec),
            Sha256Digest::of(b"bundle"),
            &without(lacking),
        )
        .expect_err(lacking);
        assert!(
            matches!(error, PlanError::MissingMultus { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(named), "{message}");
        assert!(
            message
                .contains("hint: build the bundle again with `spec.kubernetes.multiCni: multus`"),
            "{message}"
        );
    }
}

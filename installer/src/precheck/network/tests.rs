use super::super::Stage::AfterOs;
use super::super::Status::{Fail, Pass, SetByInstall, Skip, Warn};
use super::super::fixtures::{Fixture, config, expect, inventory};

/// Two nodes with both address families.
const DUAL: &str = "\
apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts:
    node1: {internal_ipv4: 10.0.0.1, internal_ipv6: 'fd00::1'}
    node2: {internal_ipv4: 10.0.0.2, internal_ipv6: 'fd00::2'}
  groups:
    kube_control_plane: {hosts: [node1]}
    kube_worker: {hosts: [node2]}
";

#[test]
fn interfaces() {
    let mut fixture = Fixture::three_nodes();
    expect(
        &fixture.on("node1", "network.interface"),
        Pass,
        &["10.0.0.1 on eth0"],
    );
    fixture.node("node1").addresses.clear();
    fixture
        .node("node1")
        .addresses
        .insert("ens3".to_owned(), vec!["192.168.1.5".to_owned()]);
    expect(
        &fixture.on("node1", "network.interface"),
        Fail,
        &["`10.0.0.1`", "`192.168.1.5`", "internal_ipv4"],
    );
    // IPv6 spelled differently by `ip` still matches.
    fixture.inventory = inventory(DUAL);
    fixture.node("node1").addresses.insert(
        "eth0".to_owned(),
        vec!["10.0.0.1".to_owned(), "fd00:0::1".to_owned()],
    );
    expect(
        &fixture.on("node1", "network.interface"),
        Pass,
        &["fd00::1 on eth0"],
    );
}

#[test]
fn cidrs_report_and_refuse_nodes_inside() {
    let mut fixture = Fixture::three_nodes();
    expect(
        &fixture.cluster("network.cidr"),
        Pass,
        &["pods 10.233.64.0/18, services 10.233.0.0/18"],
    );
    fixture.config = config("  cni: {pod_cidr: 10.0.0.0/16, service_cidr: 10.96.0.0/16}\n");
    expect(
        &fixture.cluster("network.cidr"),
        Fail,
        &["`node1` address 10.0.0.1", "10.0.0.0/16"],
    );
    // Overlap is refused when reading the config; the rule still reports it.
    let mut overlapping = config("  cni: {pod_cidr: 10.244.0.0/16}\n");
    overlapping.cni.service_cidr = "10.244.128.0/20".parse().expect("valid");
    fixture.config = overlapping;
    expect(&fixture.cluster("network.cidr"), Fail, &["overlaps"]);
}

#[test]
fn dual_stack_in_both_forms() {
    let mut fixture = Fixture::three_nodes();
    expect(
        &fixture.cluster("network.dual_stack"),
        Skip,
        &["single stack"],
    );
    fixture.inventory = inventory(DUAL);
    fixture.facts.remove("node3");
    for cni in [
        "  cni: {pod_cidr: 10.233.64.0/18/fd85:ee78:d8a6:8600::/56, service_cidr: '10.233.0.0/18,fd86::1000/116'}\n",
        "  cni: {pod_cidr: '10.233.64.0/18,fd85:ee78:d8a6:8600::/56'}\n",
    ] {
        fixture.config = config(cni);
        expect(
            &fixture.cluster("network.dual_stack"),
            Pass,
            &["dual stack"],
        );
        expect(
            &fixture.cluster("network.cidr"),
            Pass,
            &["10.233.64.0/18,fd85"],
        );
    }
    fixture.config = config(
        "  kubernetes: {kube_version: v1.19.16}\n  cni: {pod_cidr: '10.233.64.0/18,fd85::/56'}\n",
    );
    fixture.bundle.kubernetes_version = None;
    expect(
        &fixture.cluster("network.dual_stack"),
        Fail,
        &["v1.20.0", "v1.19.16"],
    );
    fixture.config = config("  cni: {pod_cidr: '10.233.64.0/18,fd85::/56'}\n");
    expect(&fixture.cluster("network.dual_stack"), Warn, &["unknown"]);
    fixture.bundle.kubernetes_version = Some("v1.31.4".to_owned());
    fixture.inventory = inventory(super::super::fixtures::INVENTORY);
    expect(
        &fixture.cluster("network.dual_stack"),
        Fail,
        &["`node1`", "internal_ipv6"],
    );
}

#[test]
fn plugins_need_their_images() {
    let mut fixture = Fixture::three_nodes();
    expect(&fixture.cluster("network.plugin"), Pass, &["calico"]);
    fixture.config = config("  cni: {type: cilium}\n");
    expect(
        &fixture.cluster("network.plugin"),
        Fail,
        &["cilium", "bundle"],
    );
    fixture.config = config("  cni: {type: none}\n");
    expect(&fixture.cluster("network.plugin"), Pass, &["yourself"]);
}

#[test]
fn multus_needs_a_primary_plugin_and_its_image() {
    let mut fixture = Fixture::three_nodes();
    expect(&fixture.cluster("network.multus"), Skip, &["none"]);
    fixture.config = config("  cni: {type: none, multi_cni: multus}\n");
    expect(
        &fixture.cluster("network.multus"),
        Fail,
        &["`cni.type` is none", "fix:"],
    );
    fixture.config = config("  cni: {multi_cni: multus}\n");
    let lacking = [
        "binary `multus`",
        "k8snetworkplumbingwg/multus-cni",
        "multiCni: multus",
    ];
    expect(&fixture.cluster("network.multus"), Fail, &lacking);
    fixture
        .bundle
        .images
        .push("ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0".to_owned());
    expect(&fixture.cluster("network.multus"), Fail, &lacking);
    fixture.bundle.binaries.push("multus".to_owned());
    expect(
        &fixture.cluster("network.multus"),
        Pass,
        &["multus over calico", "multus-cni:v4.3.0"],
    );
}

#[test]
fn address_space_boundaries() {
    let mut fixture = Fixture::three_nodes();
    expect(
        &fixture.cluster("network.address_space"),
        Pass,
        &[
            "/24 per node, 254 pod addresses for 110 pods",
            "64 node ranges for 3 nodes",
        ],
    );
    // A /24 node range holds 254 pods: exactly full passes, one more fails.
    fixture.config.cni.max_pods = 254;
    expect(
        &fixture.cluster("network.address_space"),
        Pass,
        &["254 pod addresses for 254 pods"],
    );
    fixture.config.cni.max_pods = 255;
    expect(
        &fixture.cluster("network.address_space"),
        Fail,
        &["254 pod addresses", "255", "cni.ipv4_mask_size"],
    );
    // Node ranges: a /23 has two /24s, one fewer than the three nodes; a /22 has room.
    fixture.config = config("  cni: {pod_cidr: 10.233.64.0/23}\n");
    expect(
        &fixture.cluster("network.address_space"),
        Fail,
        &["2 node ranges", "3 Kubernetes nodes"],
    );
    fixture.config = config("  cni: {pod_cidr: 10.233.64.0/22}\n");
    expect(
        &fixture.cluster("network.address_space"),
        Pass,
        &["4 node ranges for 3 nodes"],
    );
    // A mask wider than the pod range.
    fixture.config.cni.ipv4_mask_size = 20;
    expect(
        &fixture.cluster("network.address_space"),
        Fail,
        &["does not fit"],
    );
    // IPv6: 2^64 − 2 addresses, never short.
    fixture.config = config("  cni: {pod_cidr: 'fd85::/56', service_cidr: 'fd86::/112'}\n");
    expect(
        &fixture.cluster("network.address_space"),
        Pass,
        &["fd85::/56: /64 per node", "256 node ranges"],
    );
}

#[test]
fn plugins_with_a_minimum_kubernetes_only_with_that_plugin() {
    // (rule, `cni.type`, the oldest version it takes, a version too old)
    for (id, plugin, since, too_old) in [
        ("network.hybridnet", "hybridnet", "v1.16.0", "v1.15.3"),
        ("network.kube-ovn", "kubeovn", "v1.29.0", "v1.28.15"),
    ] {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.cluster(id), Skip, &["calico"]);
        fixture.config = config(&format!("  cni: {{type: {plugin}}}\n"));
        expect(&fixture.cluster(id), Pass, &["v1.31.4", since]);
        for (version, status) in [(since, Pass), (too_old, Fail)] {
            fixture.config = config(&format!(
                "  kubernetes: {{kube_version: {version}}}\n  cni: {{type: {plugin}}}\n"
            ));
            fixture.bundle.kubernetes_version = None;
            let shown: &[&str] = if status == Fail {
                &[since, too_old]
            } else {
                &[version]
            };
            expect(&fixture.cluster(id), status, shown);
        }
        // The other plugin's rule skips.
        let other = if id == "network.hybridnet" {
            "network.kube-ovn"
        } else {
            "network.hybridnet"
        };
        expect(&fixture.cluster(other), Skip, &[]);
    }
}

#[test]
fn bridge_filtering_is_the_installs_to_set() {
    const ID: &str = "network.bridge_nf_call_iptables";
    let mut fixture = Fixture::three_nodes();
    expect(
        &fixture.on("node2", ID),
        Pass,
        &["net.bridge.bridge-nf-call-iptables = 1"],
    );
    // Without br_netfilter the key does not exist.
    fixture
        .node("node2")
        .sysctls
        .remove("net.bridge.bridge-nf-call-iptables");
    expect(
        &fixture.on("node2", ID),
        SetByInstall,
        &["set by the install: now net.bridge.bridge-nf-call-iptables = (absent)"],
    );
    expect(
        &fixture.on_at("node2", ID, AfterOs),
        Fail,
        &["(absent)", "modprobe br_netfilter"],
    );
    // Nodes with IPv6 addresses in a single-stack IPv4 cluster: no IPv6 cluster traffic, and
    // kk's os phase sets no IPv6 sysctl there.
    fixture.inventory = inventory(DUAL);
    fixture.facts.remove("node3");
    fixture.node("node2").sysctls.insert(
        "net.bridge.bridge-nf-call-iptables".to_owned(),
        "1".to_owned(),
    );
    expect(&fixture.on_at("node2", ID, AfterOs), Pass, &[]);
    assert!(
        !fixture
            .on_at("node2", ID, AfterOs)
            .message
            .contains("ip6tables")
    );
    // In a dual-stack cluster, ip6tables too.
    fixture.config = config(
        "  cni: {pod_cidr: '10.233.64.0/18,fd85:ee78:d8a6:8600::/56', service_cidr: '10.233.0.0/18,fd85:ee78:d8a6:8000::/108'}\n",
    );
    expect(
        &fixture.on_at("node2", ID, AfterOs),
        Fail,
        &["net.bridge.bridge-nf-call-ip6tables = (absent)"],
    );
    fixture.node("node2").sysctls.insert(
        "net.bridge.bridge-nf-call-ip6tables".to_owned(),
        "1".to_owned(),
    );
    expect(&fixture.on_at("node2", ID, AfterOs), Pass, &["ip6tables"]);
    // Not on a node that gets no kubelet.
    fixture.inventory = inventory(
        "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {}\n    store: {}\n  groups:\n    kube_control_plane: {hosts: [node1]}\n    nfs: {hosts: [store]}\n",
    );
    fixture
        .facts
        .insert("store".to_owned(), fixture.facts["node1"].clone());
    fixture.node("store").sysctls.clear();
    expect(
        &fixture.on_at("store", ID, AfterOs),
        Skip,
        &["not a Kubernetes node"],
    );
}

//! The decisions the plan makes for the phases: chart values, kubeadm's input, certificates,
//! kube-vip; and the failures it raises before any node is touched.

use std::net::IpAddr;

use super::*;
use crate::install::render::kubernetes::VipMode;

#[test]
fn the_plan_holds_the_cni_values_kubeadms_input_and_the_values_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let values_file = dir.path().join("metrics.yaml");
    std::fs::write(
        &values_file,
        "replicas: 2\nargs: [--kubelet-insecure-tls]\n",
    )
    .expect("write");
    let spec = format!(
        "  etcd: {{deployment_type: external}}\n  kubernetes:\n    control_plane_endpoint: {{type: kube-vip, port: 8443, kube_vip: {{address: 10.0.0.100}}}}\n  addons:\n  - {{name: metrics, sources: {{chart: {{name: metrics-server, valuesFile: {}, values: [a=b]}}}}}}\n",
        values_file.display()
    );
    let plan = plan(HA_INVENTORY, &spec, &[]).expect("plan");
    let json = serde_json::to_value(&plan).expect("json");

    assert_eq!(json["cluster_domain"], "cluster.local");
    let cluster = &json["kubernetes"]["cluster"];
    assert_eq!(cluster["node_name"], "cp1", "{cluster:#}");
    assert_eq!(cluster["advertise_address"], "10.0.0.1");
    assert_eq!(cluster["node_ips"], serde_json::json!(["10.0.0.1"]));
    assert_eq!(cluster["endpoint"], "lb.kubesphere.local:8443");
    assert_eq!(cluster["bind_port"], 8443);
    assert_eq!(
        cluster["cert_sans"],
        serde_json::json!(["lb.kubesphere.local", "10.0.0.100"])
    );
    assert_eq!(cluster["dns_domain"], "cluster.local");
    assert_eq!(cluster["pod_subnet"], "10.233.64.0/18");
    assert_eq!(cluster["etcd"]["kind"], "external");
    assert_eq!(
        cluster["etcd"]["endpoints"],
        serde_json::json!([
            "https://10.0.0.1:2379",
            "https://10.0.0.2:2379",
            "https://10.0.0.3:2379"
        ])
    );
    // The token is made when the install runs: never in the plan.
    assert!(cluster.get("token").is_none(), "{cluster:#}");

    let step = |id: &str| {
        json["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|step| step["id"] == id)
            .unwrap_or_else(|| panic!("no step {id}"))
            .clone()
    };
    let cni = step("network.cni");
    let cni_yaml = cni["action"]["chart"]["values"]["yaml"]
        .as_str()
        .expect("cni values");
    assert!(cni_yaml.contains("10.233.64.0/18"), "{cni_yaml}");
    let addon = &step("addons.metrics")["action"]["chart"]["values"];
    assert_eq!(addon["kind"], "addon");
    assert_eq!(
        addon["yaml"], "replicas: 2\nargs: [--kubelet-insecure-tls]\n",
        "{addon:#}"
    );
    assert_eq!(addon["set"], serde_json::json!(["a=b"]));
    assert_eq!(chart_values(&plan, "addons.metrics")["replicas"], 2);
}

#[test]
fn an_addon_without_a_values_file_gets_empty_values() {
    let spec = "  addons:\n  - {name: metrics, sources: {chart: {name: metrics-server}}}\n";
    let plan = plan(INVENTORY, spec, &[]).expect("plan");
    assert_eq!(chart_of(&plan, "addons.metrics").values.yaml(), "{}\n");
}

#[test]
fn dual_stack_nodes_get_both_addresses() {
    let inventory = INVENTORY
        .replace(
            "cp1: {internal_ipv4: 10.0.0.1}",
            "cp1: {internal_ipv4: 10.0.0.1, internal_ipv6: \"fd00::1\"}",
        )
        .replace(
            "w1: {internal_ipv4: 10.0.0.2}",
            "w1: {internal_ipv4: 10.0.0.2, internal_ipv6: \"fd00::2\"}",
        );
    let dual = "  cni: {service_cidr: \"10.233.0.0/18,fd85::/108\", pod_cidr: \"10.233.64.0/18,fd86::/56\"}\n";
    let dual_stack = plan(&inventory, dual, &[]).expect("plan");
    let kubernetes = dual_stack.kubernetes.as_ref().expect("kubernetes");
    let ips = |name: &str| -> Vec<String> {
        kubernetes.node_ips[name]
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(ips("cp1"), ["10.0.0.1", "fd00::1"]);
    assert_eq!(ips("w1"), ["10.0.0.2", "fd00::2"]);
    assert_eq!(ips("w2"), ["10.0.0.3"]);
    assert_eq!(kubernetes.cluster.node_ips, kubernetes.node_ips["cp1"]);
    // A single-stack cluster uses one address even where the host has two.
    let single = plan(&inventory, "", &[]).expect("plan");
    let single = single.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(
        single.node_ips["cp1"],
        ["10.0.0.1".parse::<IpAddr>().expect("ip")]
    );
}

#[test]
fn late_failures_are_plan_errors() {
    let missing = std::env::temp_dir().join("kk-no-such-dir/values.yaml");
    let spec = format!(
        "  addons:\n  - {{name: metrics, sources: {{chart: {{name: metrics-server, valuesFile: {}}}}}}}\n",
        missing.display()
    );
    let error = plan(INVENTORY, &spec, &[]).expect_err("missing values file");
    let text = error.to_string();
    assert!(
        text.contains(&format!("`{}`", missing.display())) && text.contains("addon `metrics`"),
        "{text}"
    );
    assert!(matches!(error, PlanError::ValuesFile { .. }), "{error:?}");
    assert!(std::error::Error::source(&error).is_some(), "{error:?}");

    let error = plan(INVENTORY, "", &["node"]).expect_err("no calico/node");
    assert!(
        error
            .to_string()
            .contains("no `calico/node` image, which `spec.cni.type: calico` needs"),
        "{error}"
    );
    // Without the CNI's chart the image is not needed.
    plan(INVENTORY, "  cni: {type: none}\n", &["node"]).expect("no CNI");
}

#[test]
fn the_pki_plan_names_the_cluster_and_gives_each_node_its_certificates() {
    use CertificateSet::{ControlPlane, EtcdMember, Registry, StackedEtcd, Trust};
    let kube_vip = "  kubernetes:\n    control_plane_endpoint: {type: kube-vip, kube_vip: {address: 10.0.0.100}}\n";
    let external = plan(
        INVENTORY,
        &format!("  etcd: {{deployment_type: external}}\n{kube_vip}"),
        &[],
    )
    .expect("plan");
    let pki = &external.pki;
    assert_eq!(
        pki.nodes["cp1"],
        [Trust, Registry, ControlPlane, EtcdMember]
    );
    assert_eq!(pki.nodes["w1"], [Trust, EtcdMember]);
    let spec = &pki.spec;
    assert_eq!(spec.cluster_domain, "cluster.local");
    let names = |members: &[crate::pki::Member]| -> Vec<String> {
        members.iter().map(|m| m.name.clone()).collect()
    };
    assert_eq!(names(&spec.control_planes), ["cp1"]);
    assert_eq!(names(&spec.etcd_members), ["cp1", "w1", "w2"]);
    assert_eq!(
        spec.service_ips,
        ["10.233.0.1".parse::<IpAddr>().expect("ip")]
    );
    assert_eq!(spec.extra_apiserver_sans, ["10.0.0.100"]);
    assert_eq!(spec.endpoint_host, "lb.kubesphere.local");
    let registry = spec.registry.as_ref().expect("kk's registry certificate");
    assert_eq!(registry.dns, ["dockerhub.kubekey.local"]);
    assert_eq!(registry.ips, ["10.0.0.1".parse::<IpAddr>().expect("ip")]);

    let stacked = plan(INVENTORY, "  etcd: {deployment_type: internal}\n", &[]).expect("plan");
    assert_eq!(
        stacked.pki.nodes["cp1"],
        [Trust, Registry, ControlPlane, StackedEtcd]
    );
    assert_eq!(stacked.pki.nodes["w2"], [Trust]);
    assert!(stacked.pki.spec.etcd_members.is_empty());
    assert!(stacked.pki.spec.extra_apiserver_sans.is_empty());
}

#[test]
fn kube_vip_announces_by_arp_on_the_nodes_interface_or_by_bgp_from_lo() {
    let spec = |mode: &str| {
        format!(
            "  kubernetes:\n    control_plane_endpoint: {{type: kube-vip, port: 8443, kube_vip: {{address: 10.0.0.100, mode: {mode}}}}}\n"
        )
    };
    let ip = |text: &str| text.parse::<IpAddr>().expect("ip");
    let arp = plan(HA_INVENTORY, &spec("ARP"), &[]).expect("plan");
    let vip = arp
        .kubernetes
        .as_ref()
        .and_then(|k| k.kube_vip.clone())
        .expect("kube-vip");
    assert_eq!((vip.address, vip.port), (ip("10.0.0.100"), 8443));
    assert_eq!(vip.bootstrap_kubeconfig, "/etc/kubernetes/super-admin.conf");
    assert_eq!(vip.nodes.keys().collect::<Vec<_>>(), ["cp1", "cp2"]);
    assert_eq!(
        vip.nodes["cp2"],
        VipAnnounce {
            interface: VipInterface::Holding {
                address: ip("10.0.0.4")
            },
            mode: VipMode::Arp,
        }
    );
    let bgp = plan(HA_INVENTORY, &spec("BGP"), &[]).expect("plan");
    let vip = bgp
        .kubernetes
        .as_ref()
        .and_then(|k| k.kube_vip.clone())
        .expect("kube-vip");
    assert_eq!(
        vip.nodes["cp1"],
        VipAnnounce {
            interface: VipInterface::Named {
                name: "lo".to_owned()
            },
            mode: VipMode::Bgp {
                router_id: ip("10.0.0.1"),
                peers: vec![ip("10.0.0.4")],
                asn: 65000,
            },
        }
    );
}

#[test]
fn every_node_but_the_first_control_plane_joins_as_the_plan_says() {
    let ha = plan(
        HA_INVENTORY,
        "  kubernetes:\n    control_plane_endpoint: {type: haproxy}\n",
        &[],
    )
    .expect("plan");
    let kubernetes = ha.kubernetes.as_ref().expect("kubernetes");
    assert_eq!(
        kubernetes.joins.keys().collect::<Vec<_>>(),
        ["cp2", "w1", "w2"]
    );
    let cp2 = &kubernetes.joins["cp2"];
    assert_eq!(
        cp2.control_plane,
        Some(("10.0.0.4".parse().expect("ip"), 6443))
    );
    assert!(cp2.ignore_preflight_errors.is_empty());
    assert_eq!(cp2.endpoint, "lb.kubesphere.local:6443");
    let w1 = &kubernetes.joins["w1"];
    assert_eq!(w1.control_plane, None);
    assert_eq!(w1.node_ips, ["10.0.0.2".parse::<IpAddr>().expect("ip")]);
    // haproxy's static pod is in the manifests directory before a worker joins.
    assert_eq!(
        w1.ignore_preflight_errors,
        ["DirAvailable--etc-kubernetes-manifests"]
    );
    let local = plan(HA_INVENTORY, "", &[]).expect("plan");
    let kubernetes = local.kubernetes.as_ref().expect("kubernetes");
    assert!(kubernetes.joins["w1"].ignore_preflight_errors.is_empty());
}

#[test]
fn each_nodes_etc_hosts_and_the_mirrors_fallback_are_decided_by_the_plan() {
    let names = |plan: &Plan, node: &str| -> Vec<(String, Vec<String>)> {
        plan.etc_hosts[node]
            .iter()
            .map(|entry| (entry.ip.to_string(), entry.names.clone()))
            .collect()
    };
    let entry = |ip: &str, names: &[&str]| {
        (
            ip.to_owned(),
            names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>(),
        )
    };
    let haproxy = plan(
        HA_INVENTORY,
        "  kubernetes:\n    control_plane_endpoint: {type: haproxy}\n",
        &[],
    )
    .expect("plan");
    // Every node by name; the registry's name on its host (cp1); the endpoint's name at the
    // first control plane, or at a worker's own haproxy.
    assert_eq!(
        names(&haproxy, "cp2"),
        [
            entry(
                "10.0.0.1",
                &["cp1", "dockerhub.kubekey.local", "lb.kubesphere.local"]
            ),
            entry("10.0.0.4", &["cp2"]),
            entry("10.0.0.2", &["w1"]),
            entry("10.0.0.3", &["w2"]),
        ]
    );
    assert_eq!(
        names(&haproxy, "w1").last(),
        Some(&entry("127.0.0.1", &["lb.kubesphere.local"]))
    );
    assert!(
        !haproxy.registry.upstream_fallback,
        "an airgap falls back to nothing"
    );

    let vip = plan(
        HA_INVENTORY,
        "  kubernetes:\n    control_plane_endpoint: {type: kube-vip, kube_vip: {address: 10.0.0.100}}\n  image_registry: {upstream_fallback: true}\n",
        &[],
    )
    .expect("plan");
    for node in ["cp1", "w2"] {
        assert_eq!(
            names(&vip, node).last(),
            Some(&entry("10.0.0.100", &["lb.kubesphere.local"])),
            "{node}"
        );
    }
    assert!(vip.registry.upstream_fallback);
    let json = serde_json::to_value(&vip).expect("json");
    assert_eq!(
        json["etc_hosts"]["w2"][0]["names"],
        serde_json::json!(["cp1", "dockerhub.kubekey.local"])
    );
}

#[test]
fn an_external_registry_is_pushed_to_first_and_nothing_of_kks_registry_is_installed() {
    let external = "  image_registry:\n    type: external\n    address: harbor.lab:8443\n    username: pusher\n    password_env: KK_TEST_REGISTRY_PASSWORD\n    ca_file: /etc/kk-test/harbor-ca.crt\n    harbor: true\n";
    let plan = plan(INVENTORY, external, &[]).expect("plan");
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    // The push runs first, on the installer machine: no node is touched before it.
    assert_eq!(
        ids[..4],
        [
            "push.login",
            "push.store",
            "push.bundle",
            "pre_hook.scripts"
        ]
    );
    for id in ["push.login", "push.store", "push.bundle"] {
        assert!(nodes_of(&plan, id).is_empty(), "{id}");
    }
    // No node serves, so none gets kk-install; every node fetches with the agent.
    for gone in ["registry.unpack", "registry.service", "os.installer"] {
        assert!(!ids.contains(&gone), "{gone} in {ids:?}");
    }
    assert_eq!(nodes_of(&plan, "os.agent"), ["cp1", "w1", "w2"]);
    // Every node still proves it reaches and trusts the registry.
    assert_eq!(nodes_of(&plan, "registry.ready"), ["cp1", "w1", "w2"]);
    assert_eq!(plan.registry.address, "harbor.lab:8443");
    assert!(plan.registry.nodes().is_empty());
    assert_eq!(plan.registry.ca, EXTERNAL_REGISTRY_CA);
    let external = plan.registry.external().expect("external");
    assert!(external.harbor);
    assert_eq!(
        external.projects,
        [
            "docker.io",
            "ghcr.io",
            "kk.internal",
            "quay.io",
            "registry.k8s.io"
        ]
    );
    assert_eq!(external.platforms, ["linux/amd64"]);
    assert_eq!(
        plan.registry_auth,
        [RegistryAuth {
            host: "harbor.lab:8443".into(),
            username: "pusher".into(),
            password_env: "KK_TEST_REGISTRY_PASSWORD".into(),
        }]
    );
    // No /etc/hosts name and no certificate for a registry kk does not run.
    for (node, entries) in &plan.etc_hosts {
        assert!(
            entries.iter().all(|e| !e
                .names
                .iter()
                .any(|n| n.contains("harbor") || n.contains("kubekey"))),
            "{node}: {entries:?}"
        );
    }
    for sets in plan.pki.nodes.values() {
        assert!(!sets.contains(&CertificateSet::Registry), "{sets:?}");
    }
    assert!(plan.pki.spec.registry.is_none());
    // The plan names the password's variable, never a password.
    let json = serde_json::to_string(&plan).expect("json");
    assert!(json.contains("KK_TEST_REGISTRY_PASSWORD"));

    // Without credentials or a CA: nothing to log in with, the system's CAs, port 443.
    let open = plan_of_registry("  image_registry: {type: external, address: registry.lab}\n");
    assert!(open.registry_auth.is_empty());
    assert_eq!(open.registry.ca, SYSTEM_CA_BUNDLE);
    assert_eq!(open.registry.port, 443);
    assert!(!open.registry.external().expect("external").harbor);
    // kk's own registry: no push phase, its CA the cluster's.
    let own = plan_of_registry("");
    assert!(own.steps.iter().all(|s| s.phase != Phase::Push));
    assert!(own.registry_auth.is_empty());
    assert_eq!(own.registry.ca, crate::install::render::paths::TRUST_CA);
}

#[test]
fn external_addresses_split_into_host_and_port() {
    // (address, host, port)
    let cases = [
        ("harbor.lab", "harbor.lab", 443),
        ("harbor.lab:8443", "harbor.lab", 8443),
        ("10.0.0.9:5000", "10.0.0.9", 5000),
        ("[fd00::9]:5000", "fd00::9", 5000),
        ("[fd00::9]", "fd00::9", 443),
    ];
    for (address, host, port) in cases {
        assert_eq!(
            registry::split_host_port(address),
            (host.to_owned(), port),
            "{address}"
        );
    }
}

fn plan_of_registry(spec: &str) -> Plan {
    plan(INVENTORY, spec, &[]).expect("plan")
}

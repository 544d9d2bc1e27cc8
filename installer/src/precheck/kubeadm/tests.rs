use super::super::Status::{Fail, Pass, Skip, Warn};
use super::super::fixtures::{Fixture, config, expect};
use crate::facts::Listener;

fn listen(fixture: &mut Fixture, node: &str, port: u16) {
    fixture.node(node).listening.push(Listener {
        address: "0.0.0.0".to_owned(),
        port,
    });
}

#[test]
fn root_cpu_and_memory() {
    let mut fixture = Fixture::three_nodes();
    expect(&fixture.on("node1", "kubeadm.root"), Pass, &["root"]);
    fixture.node("node1").uid = 1000;
    expect(
        &fixture.on("node1", "kubeadm.root"),
        Fail,
        &["uid 1000", "sudo"],
    );
    expect(&fixture.on("node1", "kubeadm.cpu"), Pass, &["2 CPUs"]);
    fixture.node("node1").cpus = 1;
    expect(&fixture.on("node1", "kubeadm.cpu"), Fail, &["1 CPU", "2"]);
    expect(
        &fixture.on("node2", "kubeadm.cpu"),
        Skip,
        &["not a control-plane node"],
    );
    fixture.node("node1").memory_bytes = 1699 << 20;
    expect(
        &fixture.on("node1", "kubeadm.memory"),
        Fail,
        &["1699 MiB", "1700 MiB"],
    );
    fixture.node("node1").memory_bytes = 1700 << 20;
    expect(&fixture.on("node1", "kubeadm.memory"), Pass, &["1700 MiB"]);
    // kubeadm's minimum holds even when the config lowers its own.
    fixture.config = config("  cluster_require: {minimal_master_memory_mb: 1000}\n");
    fixture.node("node1").memory_bytes = 1500 << 20;
    expect(&fixture.on("node1", "os.memory"), Pass, &[]);
    expect(&fixture.on("node1", "kubeadm.memory"), Fail, &["1500 MiB"]);
    expect(&fixture.on("node3", "kubeadm.memory"), Skip, &[]);
}

#[test]
fn ports_by_role() {
    let mut fixture = Fixture::three_nodes();
    for port in [6443, 10250, 10257, 10259, 2379, 2380] {
        let id = format!("kubeadm.port.{port}");
        expect(&fixture.on("node1", &id), Pass, &[&port.to_string()]);
        listen(&mut fixture, "node1", port);
        expect(
            &fixture.on("node1", &id),
            Fail,
            &["in use", "0.0.0.0", "ss -ltnp"],
        );
    }
    // A worker: only the kubelet's port is checked.
    for port in [6443, 10257, 10259, 2379, 2380] {
        listen(&mut fixture, "node3", port);
    }
    for (port, reason) in [
        (6443, "not a control-plane node"),
        (10257, "not a control-plane node"),
        (10259, "not a control-plane node"),
        (2379, "not an etcd member"),
        (2380, "not an etcd member"),
    ] {
        expect(
            &fixture.on("node3", &format!("kubeadm.port.{port}")),
            Skip,
            &[reason],
        );
    }
    expect(&fixture.on("node3", "kubeadm.port.10250"), Pass, &[]);
}

#[test]
fn leftovers_swap_and_forwarding() {
    let mut fixture = Fixture::three_nodes();
    expect(&fixture.on("node2", "kubeadm.manifests"), Pass, &[]);
    fixture.node("node2").static_pods = vec!["kube-apiserver.yaml".to_owned()];
    expect(
        &fixture.on("node2", "kubeadm.manifests"),
        Fail,
        &["`kube-apiserver.yaml`", "kubeadm reset"],
    );
    expect(&fixture.on("node2", "kubeadm.swap"), Pass, &["off"]);
    fixture.node("node2").swap_bytes = 2 << 30;
    expect(
        &fixture.on("node2", "kubeadm.swap"),
        Fail,
        &["2048 MiB", "swapoff -a"],
    );
    expect(&fixture.on("node2", "kubeadm.ip_forward"), Pass, &[]);
    fixture
        .node("node2")
        .sysctls
        .insert("net.ipv4.ip_forward".to_owned(), "0\n".to_owned());
    expect(
        &fixture.on("node2", "kubeadm.ip_forward"),
        Fail,
        &["net.ipv4.ip_forward = 0", "sysctl"],
    );
    fixture.node("node2").sysctls.clear();
    expect(
        &fixture.on("node2", "kubeadm.ip_forward"),
        Fail,
        &["(absent)"],
    );
}

#[test]
fn missing_commands_are_named() {
    let mut fixture = Fixture::three_nodes();
    expect(&fixture.on("node2", "kubeadm.commands"), Pass, &[]);
    fixture
        .node("node2")
        .commands
        .retain(|c| c != "socat" && c != "conntrack");
    let result = fixture.on("node2", "kubeadm.commands");
    expect(&result, Fail, &["missing `socat`, `conntrack`"]);
    assert!(!result.message.contains("`ip`"), "{}", result.message);
}

#[test]
fn cgroups_and_hostname() {
    let mut fixture = Fixture::three_nodes();
    for (fs, status) in [
        ("cgroup2fs", Pass),
        ("tmpfs", Pass),
        ("", Fail),
        ("ext4", Fail),
    ] {
        fixture.node("node2").cgroup_fs = fs.to_owned();
        assert_eq!(
            fixture.on("node2", "kubeadm.cgroups").status,
            status,
            "{fs}"
        );
    }
    expect(&fixture.on("node2", "kubeadm.hostname_resolves"), Pass, &[]);
    fixture.node("node2").hostname_resolves = false;
    expect(
        &fixture.on("node2", "kubeadm.hostname_resolves"),
        Warn,
        &["/etc/hosts"],
    );
}

#[test]
fn etcd_data_dir_with_stacked_etcd() {
    let mut fixture = Fixture::three_nodes();
    fixture.node("node1").etcd_data_present = true;
    expect(
        &fixture.on("node1", "kubeadm.etcd_data_dir"),
        Skip,
        &["external"],
    );
    fixture.config = config("  etcd: {deployment_type: internal}\n");
    expect(
        &fixture.on("node1", "kubeadm.etcd_data_dir"),
        Fail,
        &["/var/lib/etcd is not empty"],
    );
    expect(
        &fixture.on("node2", "kubeadm.etcd_data_dir"),
        Skip,
        &["not an etcd member"],
    );
    fixture.node("node1").etcd_data_present = false;
    expect(&fixture.on("node1", "kubeadm.etcd_data_dir"), Pass, &[]);
}

#[test]
fn ipvs_modules_only_in_ipvs_mode() {
    let mut fixture = Fixture::three_nodes();
    expect(
        &fixture.on("node2", "kubeadm.ipvs_modules"),
        Skip,
        &["iptables"],
    );
    fixture.config = config("  kubernetes: {kube_proxy: {mode: ipvs}}\n");
    expect(
        &fixture.on("node2", "kubeadm.ipvs_modules"),
        Warn,
        &["`ip_vs`, `ip_vs_rr`, `ip_vs_wrr`, `ip_vs_sh`, `nf_conntrack`"],
    );
    let modules = &mut fixture.node("node2").modules;
    modules
        .extend(["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack"].map(str::to_owned));
    expect(&fixture.on("node2", "kubeadm.ipvs_modules"), Pass, &[]);
}

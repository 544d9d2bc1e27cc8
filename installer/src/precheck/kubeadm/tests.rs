use super::super::Stage::AfterOs;
use super::super::Status::{Fail, Pass, SetByInstall, Skip, Warn};
use super::super::fixtures::{Fixture, config, expect, inventory};
use super::super::version::Version;
use super::{COMMANDS, Need, in_path_checks};
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

/// The API server listens on `control_plane_endpoint.port`, not a fixed 6443: that port is
/// the one checked, on the control plane, and with `type: haproxy` on the workers too.
#[test]
fn the_api_server_port_is_the_configured_one() {
    let ids = |fixture: &Fixture, node: &str| -> Vec<String> {
        fixture.evaluate(&std::collections::BTreeSet::new()).nodes[node]
            .iter()
            .map(|r| r.id.clone())
            .filter(|id| id.starts_with("kubeadm.port."))
            .collect()
    };
    let mut fixture = Fixture::three_nodes();
    fixture.config = config("  kubernetes: {control_plane_endpoint: {port: 8443}}\n");
    assert_eq!(
        ids(&fixture, "node1"),
        [
            "kubeadm.port.8443",
            "kubeadm.port.10250",
            "kubeadm.port.10257",
            "kubeadm.port.10259",
            "kubeadm.port.2379",
            "kubeadm.port.2380"
        ]
    );
    // 6443 in use no longer matters; 8443 does.
    listen(&mut fixture, "node1", 6443);
    expect(
        &fixture.on("node1", "kubeadm.port.8443"),
        Pass,
        &["8443 free for kube-apiserver"],
    );
    listen(&mut fixture, "node1", 8443);
    expect(
        &fixture.on("node1", "kubeadm.port.8443"),
        Fail,
        &[
            "node `node1`",
            "port `8443` (`control_plane_endpoint.port`)",
            "kube-apiserver",
            "in use",
            "fix: ",
        ],
    );
    // A worker has no API server...
    listen(&mut fixture, "node2", 8443);
    expect(
        &fixture.on("node2", "kubeadm.port.8443"),
        Skip,
        &["not a control-plane node"],
    );
    // ...but with `type: haproxy` its local haproxy listens on the endpoint's port.
    fixture.config =
        config("  kubernetes: {control_plane_endpoint: {port: 8443, type: haproxy}}\n");
    expect(
        &fixture.on("node2", "kubeadm.port.8443"),
        Fail,
        &["haproxy", "in use"],
    );
    expect(
        &fixture.on("node3", "kubeadm.port.8443"),
        Pass,
        &["haproxy"],
    );
    // A port another component needs clashes, reported once under its id.
    let mut fixture = Fixture::three_nodes();
    fixture.config = config("  kubernetes: {control_plane_endpoint: {port: 10250}}\n");
    let node1 = ids(&fixture, "node1");
    assert_eq!(
        node1
            .iter()
            .filter(|id| *id == "kubeadm.port.10250")
            .count(),
        1,
        "{node1:?}"
    );
    expect(
        &fixture.on("node1", "kubeadm.port.10250"),
        Fail,
        &[
            "port `10250`",
            "also the port of the kubelet",
            "control_plane_endpoint.port",
        ],
    );
    // On a worker, 10250 is still the kubelet's.
    expect(
        &fixture.on("node2", "kubeadm.port.10250"),
        Pass,
        &["the kubelet"],
    );
    fixture.config = config("  kubernetes: {control_plane_endpoint: {port: 2379}}\n");
    expect(
        &fixture.on("node1", "kubeadm.port.2379"),
        Fail,
        &["also the port of etcd clients"],
    );
    expect(
        &fixture.on("node2", "kubeadm.port.2379"),
        Skip,
        &["not an etcd member"],
    );
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
    // The os phase turns swap off: before the install that is the install's to do; after the
    // phase, swap still on fails.
    expect(
        &fixture.on("node2", "kubeadm.swap"),
        SetByInstall,
        &["set by the install: now swap is on (2048 MiB)"],
    );
    expect(
        &fixture.on_at("node2", "kubeadm.swap", AfterOs),
        Fail,
        &["2048 MiB", "os phase", "swapoff -a"],
    );
    expect(&fixture.on("node2", "kubeadm.ip_forward"), Pass, &[]);
    fixture
        .node("node2")
        .sysctls
        .insert("net.ipv4.ip_forward".to_owned(), "0\n".to_owned());
    expect(
        &fixture.on("node2", "kubeadm.ip_forward"),
        SetByInstall,
        &["now net.ipv4.ip_forward = 0"],
    );
    expect(
        &fixture.on_at("node2", "kubeadm.ip_forward", AfterOs),
        Fail,
        &["net.ipv4.ip_forward = 0", "sysctl"],
    );
    fixture.node("node2").sysctls.clear();
    expect(
        &fixture.on_at("node2", "kubeadm.ip_forward", AfterOs),
        Fail,
        &["(absent)"],
    );
}

/// IPv6 forwarding is checked where IPv6 is used: a node with an IPv6 address, or any node of
/// a dual-stack cluster; kubeadm reads `conf/default`, routing goes by `conf/all`.
#[test]
fn ipv6_forwarding_where_ipv6_is_used() {
    let mut fixture = Fixture::three_nodes();
    let on = |f: &Fixture| f.on_at("node2", "kubeadm.ip_forward", AfterOs);
    expect(&on(&fixture), Pass, &["net.ipv4.ip_forward = 1"]);
    assert!(!on(&fixture).message.contains("ipv6"));
    fixture.config = config("  cni: {pod_cidr: '10.233.64.0/18,fd85:ee78:d8a6:8600::/56'}\n");
    expect(
        &on(&fixture),
        Fail,
        &[
            "net.ipv6.conf.all.forwarding = (absent)",
            "net.ipv6.conf.default.forwarding = (absent)",
        ],
    );
    for key in [
        "net.ipv6.conf.all.forwarding",
        "net.ipv6.conf.default.forwarding",
    ] {
        fixture
            .node("node2")
            .sysctls
            .insert(key.to_owned(), "1".to_owned());
    }
    expect(&on(&fixture), Pass, &["net.ipv6.conf.default.forwarding"]);
    // Single-stack IPv4, and node2 has an IPv6 address beside its IPv4 one: kubeadm advertises
    // the IPv4 one, no cluster traffic is IPv6, and kk's os phase sets no IPv6 sysctl, so
    // none is asked for (asking would fail `os.verify` on what the phase never sets).
    let mut fixture = Fixture::three_nodes();
    fixture.inventory = inventory(
        "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {internal_ipv4: 10.0.0.1}\n    node2: {internal_ipv4: 10.0.0.2, internal_ipv6: 'fd00::2'}\n    node3: {internal_ipv6: 'fd00::3'}\n  groups:\n    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2, node3]}\n",
    );
    expect(&on(&fixture), Pass, &["net.ipv4.ip_forward = 1"]);
    assert!(!on(&fixture).message.contains("ipv6"));
    // A node whose only address is IPv6: kubeadm advertises it and checks IPv6 forwarding.
    expect(
        &fixture.on_at("node3", "kubeadm.ip_forward", AfterOs),
        Fail,
        &["net.ipv6.conf.default.forwarding = (absent)"],
    );
    expect(
        &fixture.on_at("node1", "kubeadm.ip_forward", AfterOs),
        Pass,
        &[],
    );
}

/// kubeadm's `InPathCheck`s by release (`addExecChecks` of `checks_linux.go`).
#[test]
fn in_path_checks_follow_kubeadm_by_version() {
    use Need::{Mandatory, Optional};
    let always = [
        ("ip", Mandatory),
        ("iptables", Mandatory),
        ("mount", Mandatory),
        ("nsenter", Mandatory),
        ("ebtables", Optional),
        ("ethtool", Optional),
        ("socat", Optional),
        ("tc", Optional),
        ("touch", Optional),
    ];
    let with = |extra: &[(&'static str, Need)]| -> Vec<(&'static str, Need)> {
        extra.iter().copied().chain(always).collect()
    };
    for (version, expected) in [
        (
            Version::new(1, 29, 0),
            with(&[("crictl", Mandatory), ("conntrack", Mandatory)]),
        ),
        (
            Version::new(1, 30, 9),
            with(&[("crictl", Mandatory), ("conntrack", Mandatory)]),
        ),
        (
            Version::new(1, 31, 0),
            with(&[("crictl", Optional), ("conntrack", Mandatory)]),
        ),
        (
            Version::new(1, 31, 14),
            with(&[("crictl", Optional), ("conntrack", Mandatory)]),
        ),
        (Version::new(1, 32, 0), with(&[])),
        (Version::new(1, 33, 5), with(&[])),
    ] {
        assert_eq!(in_path_checks(version), expected, "{version}");
    }
    // The fixture's (and the fact script's) list covers every version.
    let mut named: Vec<&str> = [29, 31, 32]
        .into_iter()
        .flat_map(|minor| in_path_checks(Version::new(1, minor, 0)))
        .map(|(command, _)| command)
        .collect();
    named.sort_unstable();
    named.dedup();
    let mut listed = COMMANDS.to_vec();
    listed.sort_unstable();
    assert_eq!(named, listed);
}

/// `kubeadm.commands` on a node lacking `missing`, per Kubernetes version: the status, and
/// the words of its message.
#[test]
fn missing_commands_are_judged_as_the_versions_kubeadm_does() {
    let table: &[(&str, &[&str], crate::precheck::Status, &[&str])] = &[
        ("v1.31.4", &[], Pass, &["kubeadm v1.31.4"]),
        // Optional everywhere: a warning naming each.
        (
            "v1.31.4",
            &["socat", "ebtables", "ethtool", "tc", "touch"],
            Warn,
            &["`ebtables`, `ethtool`, `socat`, `tc`, `touch`", "warns"],
        ),
        // Mandatory everywhere: a failure naming each (and the optional ones).
        (
            "v1.33.1",
            &["nsenter", "ip", "socat"],
            Fail,
            &[
                "`ip`, `nsenter`, which kubeadm v1.33.1 requires",
                "and `socat`",
            ],
        ),
        ("v1.29.3", &["iptables"], Fail, &["`iptables`"]),
        ("v1.32.0", &["mount"], Fail, &["`mount`"]),
        // conntrack: mandatory below v1.32, not looked for from v1.32.
        ("v1.29.3", &["conntrack"], Fail, &["`conntrack`"]),
        ("v1.31.4", &["conntrack"], Fail, &["`conntrack`", "v1.31.4"]),
        ("v1.32.0", &["conntrack"], Pass, &[]),
        ("v1.33.1", &["conntrack"], Pass, &[]),
        // crictl: the bundle of the fixture carries none here, see below.
        ("v1.30.2", &["crictl"], Fail, &["`crictl`"]),
        ("v1.31.4", &["crictl"], Warn, &["`crictl`"]),
        ("v1.32.0", &["crictl"], Pass, &[]),
    ];
    for (version, missing, status, words) in table {
        let mut fixture = Fixture::three_nodes();
        fixture.bundle.kubernetes_version = Some((*version).to_owned());
        fixture
            .node("node2")
            .commands
            .retain(|c| !missing.contains(&c.as_str()));
        let result = fixture.on("node2", "kubeadm.commands");
        assert_eq!(result.status, *status, "{version} {missing:?}: {result:?}");
        for word in *words {
            assert!(
                result.message.contains(word),
                "{version}: `{}` lacks `{word}`",
                result.message
            );
        }
        // Judged the same after the os phase: commands are not the os phase's to install.
        assert_eq!(
            fixture.on_at("node2", "kubeadm.commands", AfterOs),
            result,
            "{version}"
        );
    }
    // A bundle carrying crictl installs it: not missing, whatever the version.
    let mut fixture = Fixture::three_nodes();
    fixture.bundle.kubernetes_version = Some("v1.30.2".to_owned());
    fixture.bundle.binaries.push("crictl".to_owned());
    fixture.node("node2").commands.retain(|c| c != "crictl");
    expect(&fixture.on("node2", "kubeadm.commands"), Pass, &[]);
    // An unknown version is judged as the strictest kubeadm kk installs, v1.29.
    fixture.bundle.kubernetes_version = None;
    fixture.node("node2").commands.retain(|c| c != "conntrack");
    expect(
        &fixture.on("node2", "kubeadm.commands"),
        Fail,
        &["`conntrack`", "v1.29.0 (the version to install is unknown)"],
    );
    // `kube_version` of the config decides over the bundle's.
    fixture.config = config("  kubernetes: {kube_version: v1.32.1}\n");
    expect(&fixture.on("node2", "kubeadm.commands"), Pass, &["v1.32.1"]);
}

/// cgroup v1 by the version to install: fine before v1.31, a warning from v1.31, a failure
/// from v1.35; cgroup v2 always passes; no cgroup file system fails.
#[test]
fn cgroups_by_version() {
    let table: &[(Option<&str>, &str, crate::precheck::Status, &[&str])] = &[
        (Some("v1.35.0"), "cgroup2fs", Pass, &["cgroup v2"]),
        (Some("v1.29.3"), "tmpfs", Pass, &["cgroup v1", "v1.29.3"]),
        (Some("v1.30.9"), "tmpfs", Pass, &[]),
        (
            Some("v1.31.0"),
            "tmpfs",
            Warn,
            &[
                "node `node2` runs cgroup v1",
                "`tmpfs`",
                "maintenance mode",
                "v1.31.0 kubelet warns",
                "fix: ",
            ],
        ),
        (Some("v1.34.2"), "tmpfs", Warn, &["from v1.35.0 refuses"]),
        (
            Some("v1.35.0"),
            "tmpfs",
            Fail,
            &[
                "node `node2`",
                "v1.35.0 kubelet refuses",
                "`failCgroupV1`",
                "unified_cgroup_hierarchy",
            ],
        ),
        (Some("v1.36.1"), "tmpfs", Fail, &[]),
        (None, "tmpfs", Warn, &["unknown", "refuses it from v1.35.0"]),
        (None, "cgroup2fs", Pass, &[]),
        (
            Some("v1.31.4"),
            "",
            Fail,
            &["`/sys/fs/cgroup` is ``", "not a cgroup file system"],
        ),
        (Some("v1.31.4"), "ext4", Fail, &["`ext4`"]),
    ];
    for (version, fs, status, words) in table {
        let mut fixture = Fixture::three_nodes();
        fixture.bundle.kubernetes_version = version.map(str::to_owned);
        fixture.node("node2").cgroup_fs = (*fs).to_owned();
        expect(&fixture.on("node2", "kubeadm.cgroups"), *status, words);
    }
}

/// The node name that must resolve is the inventory name, not the current host name; the os
/// phase maps it in /etc/hosts, so before the install an unresolved name is the install's to
/// set, and after the os phase it warns, as kubeadm does.
#[test]
fn the_inventory_name_resolves() {
    let mut fixture = Fixture::three_nodes();
    // The fixture's current host name is `debian`; the name looked up is the inventory name.
    expect(
        &fixture.on("node2", "kubeadm.hostname_resolves"),
        Pass,
        &["`node2` resolves"],
    );
    fixture.node("node2").name_resolves = false;
    expect(
        &fixture.on("node2", "kubeadm.hostname_resolves"),
        SetByInstall,
        &["set by the install: now node name `node2` does not resolve"],
    );
    expect(
        &fixture.on_at("node2", "kubeadm.hostname_resolves", AfterOs),
        Warn,
        &["`node2` does not resolve", "os phase", "/etc/hosts"],
    );
    // Facts recorded before the inventory name was looked up looked up the current host name:
    // that says nothing about `node2`, unless it is `node2`.
    fixture.node("node2").name_resolves = true;
    fixture.node("node2").resolved_name.clear();
    expect(
        &fixture.on("node2", "kubeadm.hostname_resolves"),
        SetByInstall,
        &["`node2` was not looked up (only `debian` was)"],
    );
    fixture.node("node2").hostname = "node2".to_owned();
    expect(&fixture.on("node2", "kubeadm.hostname_resolves"), Pass, &[]);
    // Not a Kubernetes node: no kubeadm runs there.
    let mut fixture = Fixture::three_nodes();
    fixture.inventory = inventory(
        "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {}\n    store: {}\n  groups:\n    kube_control_plane: {hosts: [node1]}\n    nfs: {hosts: [store]}\n",
    );
    fixture
        .facts
        .insert("store".to_owned(), fixture.facts["node1"].clone());
    fixture.node("store").name_resolves = false;
    expect(&fixture.on("store", "kubeadm.hostname_resolves"), Skip, &[]);
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

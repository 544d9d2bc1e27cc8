use super::*;

/// A TOML document parsed into a value, so tests read what containerd reads.
fn toml(text: &str) -> toml::Table {
    text.parse::<toml::Table>()
        .unwrap_or_else(|e| panic!("not TOML: {e}\n{text}"))
}

fn at<'a>(table: &'a toml::Table, path: &[&str]) -> &'a toml::Value {
    let (first, rest) = path.split_first().expect("path");
    let mut value = table.get(*first).unwrap_or_else(|| panic!("no {first}"));
    for key in rest {
        value = value
            .get(*key)
            .unwrap_or_else(|| panic!("no {key} in {path:?}"));
    }
    value
}

#[test]
fn containerd_config_follows_the_bundled_containerd_version() {
    for (version, config_version) in [("1.6.20", 2), ("1.7.30", 2), ("v2.0.4", 3), ("2.1.0", 3)] {
        let major = containerd_major(version).expect("version");
        let config = toml(&containerd_config(major, "registry.k8s.io/pause:3.10"));
        assert_eq!(
            at(&config, &["version"]).as_integer(),
            Some(config_version),
            "{version}"
        );
        // Other tools' drop-ins are merged, and the merged result is what the install checks.
        assert_eq!(
            at(&config, &["imports"]).as_array().map(Vec::as_slice),
            Some(&["/etc/containerd/conf.d/*.toml".into()][..]),
            "{version}"
        );
        let (cri_images, cri_runtime) = if config_version == 2 {
            let cri = ["plugins", "io.containerd.grpc.v1.cri"];
            assert_eq!(
                at(&config, &[cri[0], cri[1], "sandbox_image"]).as_str(),
                Some("registry.k8s.io/pause:3.10")
            );
            (cri.to_vec(), vec![cri[0], cri[1], "containerd"])
        } else {
            assert_eq!(
                at(
                    &config,
                    &[
                        "plugins",
                        "io.containerd.cri.v1.images",
                        "pinned_images",
                        "sandbox"
                    ]
                )
                .as_str(),
                Some("registry.k8s.io/pause:3.10")
            );
            (
                vec!["plugins", "io.containerd.cri.v1.images"],
                vec!["plugins", "io.containerd.cri.v1.runtime", "containerd"],
            )
        };
        let mut registry = cri_images.clone();
        registry.extend(["registry", "config_path"]);
        assert_eq!(
            at(&config, &registry).as_str(),
            Some("/etc/containerd/certs.d"),
            "{version}"
        );
        let mut options = cri_runtime.clone();
        options.extend(["runtimes", "runc", "options", "SystemdCgroup"]);
        assert_eq!(at(&config, &options).as_bool(), Some(true), "{version}");
    }
    assert_eq!(containerd_major("x.y"), None);
}

/// Several registry hosts: a `[host]` table each, in the node's order (containerd's order of
/// trial), each with the CA; `server` stays the registry's name.
#[test]
fn hosts_toml_lists_every_registry_host_in_the_given_order_with_the_ca() {
    let hosts = ["10.0.0.3:5443".to_owned(), "10.0.0.2:5443".to_owned()];
    let mirror = Mirror {
        hosts: &hosts,
        ..kk_registry(false)
    };
    let text = hosts_toml("docker.io", &mirror);
    let parsed = toml(&text);
    assert_eq!(
        at(&parsed, &["server"]).as_str(),
        Some("https://dockerhub.kubekey.local:5443")
    );
    for host in &hosts {
        let table = at(&parsed, &["host", &format!("https://{host}")]);
        assert_eq!(
            table.get("ca").and_then(|v| v.as_str()),
            Some(paths::TRUST_CA)
        );
    }
    let first = text
        .find("[host.\"https://10.0.0.3:5443\"]")
        .expect("first");
    let second = text
        .find("[host.\"https://10.0.0.2:5443\"]")
        .expect("second");
    assert!(first < second, "{text}");
    assert!(!text.contains("dockerhub.kubekey.local:5443\"]"), "{text}");
}

#[test]
fn hosts_toml_points_every_registry_host_at_kk_with_the_ca() {
    for (host, server) in [
        ("docker.io", "https://registry-1.docker.io"),
        ("registry.k8s.io", "https://registry.k8s.io"),
        ("quay.io", "https://quay.io"),
    ] {
        let hosts = toml(&hosts_toml(host, &kk_registry(true)));
        assert_eq!(at(&hosts, &["server"]).as_str(), Some(server));
        let closed = toml(&hosts_toml(host, &kk_registry(false)));
        assert_eq!(
            at(&closed, &["server"]).as_str(),
            Some("https://dockerhub.kubekey.local:5443"),
            "without upstream fallback nothing points outside"
        );
        let mirror = at(&hosts, &["host", "https://dockerhub.kubekey.local:5443"]);
        assert_eq!(
            mirror.get("ca").and_then(|v| v.as_str()),
            Some(paths::TRUST_CA)
        );
        assert_eq!(
            mirror
                .get("capabilities")
                .map(ToString::to_string)
                .as_deref(),
            Some("[\"pull\", \"resolve\"]")
        );
        assert!(mirror.get("skip_verify").is_none());
    }
}

#[test]
fn etcd_members_know_each_other_and_demand_client_certificates() {
    let members = vec![
        ("node1".to_owned(), "10.0.0.1".parse().expect("ip")),
        ("node2".to_owned(), "10.0.0.2".parse().expect("ip")),
    ];
    let env = etcd_env("node2", members[1].1, &members);
    for line in [
        "ETCD_NAME=node2",
        "ETCD_INITIAL_CLUSTER=node1=https://10.0.0.1:2380,node2=https://10.0.0.2:2380",
        "ETCD_LISTEN_CLIENT_URLS=https://10.0.0.2:2379,https://127.0.0.1:2379",
        "ETCD_ADVERTISE_CLIENT_URLS=https://10.0.0.2:2379",
        "ETCD_CLIENT_CERT_AUTH=true",
        "ETCD_PEER_CLIENT_CERT_AUTH=true",
        "ETCD_CERT_FILE=/etc/kubernetes/pki/etcd/server.crt",
        "ETCD_PEER_KEY_FILE=/etc/kubernetes/pki/etcd/peer.key",
        "ETCD_DATA_DIR=/var/lib/etcd",
    ] {
        assert!(env.lines().any(|l| l == line), "{line} missing:\n{env}");
    }
    let v6 = vec![("a".to_owned(), "fd00::1".parse().expect("ip"))];
    assert!(etcd_env("a", v6[0].1, &v6).contains("https://[fd00::1]:2380"));
    assert_eq!(
        etcd_endpoints(&members),
        "https://10.0.0.1:2379,https://10.0.0.2:2379"
    );
}

#[test]
fn a_joining_member_starts_existing_and_members_with_data_keep_their_bootstrap_settings() {
    let ip = "10.0.0.5".parse().expect("ip");
    let cluster = "node1=https://10.0.0.1:2380,node5=https://10.0.0.5:2380";
    let joining = etcd_env_joining("node5", ip, cluster);
    assert!(joining.contains(&format!("ETCD_INITIAL_CLUSTER={cluster}\n")));
    assert!(joining.contains("ETCD_INITIAL_CLUSTER_STATE=existing\n"));
    // The member that joined, on its next run: the plan's cluster is rendered, its own
    // bootstrap settings are kept, so its file is byte for byte what it has.
    let members = vec![
        ("node1".to_owned(), "10.0.0.1".parse().expect("ip")),
        ("node5".to_owned(), ip),
    ];
    let rendered = etcd_env("node5", ip, &members);
    assert_ne!(rendered, joining);
    assert_eq!(etcd_env_keeping_bootstrap(&rendered, &joining), joining);
    // Without a current file the rendered settings stand.
    assert_eq!(etcd_env_keeping_bootstrap(&rendered, ""), rendered);
}

#[test]
fn units_are_systemd_units_with_an_install_section() {
    for unit in [
        containerd_unit().to_owned(),
        etcd_unit().to_owned(),
        registry_unit("0.0.0.0:5443"),
    ] {
        for section in [
            "[Unit]",
            "[Service]",
            "[Install]",
            "WantedBy=multi-user.target",
        ] {
            assert!(unit.contains(section), "{section}:\n{unit}");
        }
        let exec = unit
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .expect("ExecStart");
        assert!(exec.starts_with("/usr/local/bin/"), "{exec}");
    }
    assert!(containerd_unit().contains("Delegate=yes"));
    assert!(etcd_unit().contains("Type=notify"));
    assert!(
        registry_unit("[::]:5443")
            .contains("--listen [::]:5443 --tls-cert /etc/kk/pki/registry.crt")
    );
    assert_eq!(
        registry_listen("10.0.0.1".parse().expect("ip"), 5443),
        "0.0.0.0:5443"
    );
}

#[test]
fn sysctls_cover_ipv6_only_for_dual_stack() {
    assert!(!sysctl_conf(false).contains("ipv6"));
    assert!(sysctl_conf(true).contains("net.ipv6.conf.all.forwarding = 1"));
    assert!(sysctl_conf(false).contains("net.bridge.bridge-nf-call-iptables = 1"));
}

#[test]
fn the_hosts_block_replaces_its_earlier_self_and_keeps_the_rest() {
    let entries = vec![
        (
            "10.0.0.1".parse().expect("ip"),
            vec!["node1".to_owned(), "dockerhub.kubekey.local".to_owned()],
        ),
        ("10.0.0.2".parse().expect("ip"), vec!["node2".to_owned()]),
    ];
    let original = "127.0.0.1 localhost\n10.0.0.1 node1\n";
    let once = hosts_file(original, &entries);
    assert!(once.starts_with(original), "{once}");
    assert!(once.contains("# BEGIN kk-install\n10.0.0.1 node1 dockerhub.kubekey.local\n10.0.0.2 node2\n# END kk-install\n"));
    assert_eq!(hosts_file(&once, &entries), once, "idempotent");
    let fewer = hosts_file(&once, &entries[..1]);
    assert!(!fewer.contains("node2"), "{fewer}");
    assert_eq!(
        hosts_file(&once, &[]),
        original,
        "reset takes the block out"
    );
}

#[test]
fn the_exports_block_is_added_replaced_and_removed_keeping_the_operators_lines() {
    let clients: Vec<IpAddr> = ["10.0.0.1", "10.0.0.2"]
        .iter()
        .map(|ip| ip.parse().expect("ip"))
        .collect();
    let original = "# the operator's\n/srv/backup 10.9.0.0/24(ro)\n";
    let once = exports_file(original, "/share/", &clients);
    assert!(once.starts_with(original), "{once}");
    assert!(
        once.ends_with("# BEGIN kk-install\n/share/ 10.0.0.1(rw,sync,no_subtree_check) 10.0.0.2(rw,sync,no_subtree_check)\n# END kk-install\n"),
        "{once}"
    );
    assert_eq!(exports_file(&once, "/share/", &clients), once, "idempotent");
    let moved = exports_file(&once, "/data", &clients[..1]);
    assert!(moved.starts_with(original), "{moved}");
    assert!(
        moved.contains("\n/data 10.0.0.1(rw,sync,no_subtree_check)\n# END")
            && !moved.contains("/share/"),
        "replaced, not added: {moved}"
    );
    assert_eq!(
        exports_file(&once, "/share/", &[]),
        original,
        "reset takes the block out"
    );
}

/// kk's registry as the plan makes it by default.
fn kk_registry(upstream_fallback: bool) -> Mirror<'static> {
    Mirror {
        address: "dockerhub.kubekey.local:5443",
        hosts: &[],
        ca: paths::TRUST_CA,
        upstream_fallback,
        external: false,
    }
}

#[test]
fn hosts_toml_points_at_an_external_registry_under_the_hosts_path_with_its_ca() {
    let external = Mirror {
        address: "harbor.lab:8443",
        hosts: &[],
        ca: "/etc/kk/pki/external-registry-ca.crt",
        upstream_fallback: false,
        external: true,
    };
    for host in ["docker.io", "registry.k8s.io"] {
        let hosts = toml(&hosts_toml(host, &external));
        assert_eq!(
            at(&hosts, &["server"]).as_str(),
            Some("https://harbor.lab:8443"),
            "nothing points outside"
        );
        // The push put `docker.io/library/busybox` at `harbor.lab:8443/docker.io/library/busybox`.
        let mirror = at(
            &hosts,
            &["host", &format!("https://harbor.lab:8443/v2/{host}")],
        );
        assert_eq!(
            mirror.get("ca").and_then(|v| v.as_str()),
            Some("/etc/kk/pki/external-registry-ca.crt")
        );
        assert_eq!(
            mirror.get("override_path").and_then(toml::Value::as_bool),
            Some(true)
        );
        assert!(mirror.get("skip_verify").is_none());
    }
    // kk's registry keeps the plain mirror URL (it reads `?ns=`).
    let own = toml(&hosts_toml("docker.io", &kk_registry(false)));
    let mirror = at(&own, &["host", "https://dockerhub.kubekey.local:5443"]);
    assert!(mirror.get("override_path").is_none());
}

#[test]
fn registry_credentials_go_where_each_containerd_reads_them() {
    // (major, plugin table)
    for (major, plugin) in [
        (1, "io.containerd.grpc.v1.cri"),
        (2, "io.containerd.cri.v1.images"),
    ] {
        let tricky = r#"pa"ss\word"#;
        let text = format!(
            "{}{}",
            containerd_config(major, "registry.k8s.io/pause:3.10"),
            containerd_registry_auth(major, &[("harbor.lab:8443", "pusher", tricky)])
        );
        let config = toml(&text);
        let auth = at(
            &config,
            &[
                "plugins",
                plugin,
                "registry",
                "configs",
                "harbor.lab:8443",
                "auth",
            ],
        );
        assert_eq!(
            auth.get("username").and_then(|v| v.as_str()),
            Some("pusher")
        );
        assert_eq!(auth.get("password").and_then(|v| v.as_str()), Some(tricky));
        // Still the one registry config: kk's `config_path`, beside the credentials.
        let registry = at(&config, &["plugins", plugin, "registry"]);
        assert!(registry.get("mirrors").is_none(), "{major}");
    }
    assert_eq!(containerd_registry_auth(2, &[]), "");
}

#[test]
fn a_deleted_node_leaves_kks_hosts_block_and_nothing_else() {
    let entries = |ips: &[(&str, &str)]| -> Vec<(IpAddr, Vec<String>)> {
        ips.iter()
            .map(|(ip, name)| (ip.parse().expect("ip"), vec![(*name).to_owned()]))
            .collect()
    };
    let own = "127.0.0.1 localhost\n10.0.0.5 node5-by-hand\n";
    let before = hosts_file(
        own,
        &entries(&[("10.0.0.1", "node1"), ("10.0.0.5", "node5")]),
    );
    let after = hosts_file_without(&before, "node5");
    // What the install writes once node5 is out of the inventory: a rerun changes nothing.
    assert_eq!(after, hosts_file(own, &entries(&[("10.0.0.1", "node1")])));
    assert_eq!(hosts_file_without(&after, "node5"), after);
    assert_eq!(hosts_file_without(own, "node5"), own);
}

use std::net::IpAddr;

use serde_json::{Value, json};

use super::*;

fn ip(text: &str) -> IpAddr {
    text.parse().expect("address")
}

/// Every YAML document of a file, parsed as kubeadm, the kubelet or Helm would read it.
fn yaml_docs(text: &str) -> Vec<Value> {
    serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text)
        .unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

fn yaml(text: &str) -> Value {
    let mut docs = yaml_docs(text);
    assert_eq!(docs.len(), 1, "{text}");
    docs.remove(0)
}

/// The value at a JSON pointer (`/a/b/0`), which must exist.
fn at<'a>(value: &'a Value, pointer: &str) -> &'a Value {
    value
        .pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in {value:#}"))
}

/// The document of a kind.
fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

/// Whether any mapping anywhere in `value` has `key`.
fn has_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.contains_key(key) || map.values().any(|v| has_key(v, key)),
        Value::Array(items) => items.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

/// kubeadm's extra arguments as name → value, from either API's shape, checking the shape.
fn args(value: &Value, api: &str) -> Vec<(String, String)> {
    if api == "kubeadm.k8s.io/v1beta4" {
        value
            .as_array()
            .unwrap_or_else(|| panic!("v1beta4 args are a list: {value}"))
            .iter()
            .map(|arg| {
                (
                    arg["name"].as_str().expect("name").to_owned(),
                    arg["value"].as_str().expect("string value").to_owned(),
                )
            })
            .collect()
    } else {
        value
            .as_object()
            .unwrap_or_else(|| panic!("v1beta3 args are a map: {value}"))
            .iter()
            .map(|(name, value)| (name.clone(), value.as_str().expect("string").to_owned()))
            .collect()
    }
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

fn cluster(version: &str, etcd: EtcdMode) -> ClusterInput {
    ClusterInput {
        version: version.to_owned(),
        node_name: "node1".to_owned(),
        advertise_address: ip("192.168.0.11"),
        node_ips: vec![ip("192.168.0.11")],
        bind_port: 6443,
        endpoint: "lb.kubesphere.local:6443".to_owned(),
        cert_sans: vec!["lb.kubesphere.local".to_owned(), "192.168.0.100".to_owned()],
        pod_subnet: "10.233.64.0/18".to_owned(),
        service_subnet: "10.233.0.0/18".to_owned(),
        dns_domain: "cluster.local".to_owned(),
        node_mask_v4: 24,
        node_mask_v6: 120,
        max_pods: 110,
        proxy_mode: "ipvs".to_owned(),
        etcd,
        cri_socket: "unix:///run/containerd/containerd.sock".to_owned(),
    }
}

/// Digits only in the secret half: it must stay a string, never become a number.
const TOKEN: InitToken<'static> = InitToken {
    token: "abcdef.0123456789012345",
    ttl: "24h0m0s",
};

fn external() -> EtcdMode {
    EtcdMode::External {
        endpoints: vec![
            "https://192.168.0.11:2379".to_owned(),
            "https://192.168.0.12:2379".to_owned(),
        ],
        ca_file: "/etc/kubernetes/pki/etcd/ca.crt".to_owned(),
        cert_file: "/etc/kubernetes/pki/apiserver-etcd-client.crt".to_owned(),
        key_file: "/etc/kubernetes/pki/apiserver-etcd-client.key".to_owned(),
    }
}

#[test]
fn kubeadm_api_follows_the_version() {
    for (version, api) in [
        ("v1.21.9", None),
        ("v1.22.0", Some("kubeadm.k8s.io/v1beta3")),
        ("v1.29.15", Some("kubeadm.k8s.io/v1beta3")),
        ("v1.30.5", Some("kubeadm.k8s.io/v1beta3")),
        ("v1.31.0", Some("kubeadm.k8s.io/v1beta4")),
        ("v1.33.0", Some("kubeadm.k8s.io/v1beta4")),
        ("1.32.1", Some("kubeadm.k8s.io/v1beta4")),
        ("v2.0.0", None),
        ("latest", None),
        ("", None),
    ] {
        assert_eq!(kubeadm_api(version), api, "{version}");
    }
}

#[test]
fn init_config_has_what_kubeadm_reads_in_each_api() {
    for (version, api, etcd) in [
        ("v1.30.5", "kubeadm.k8s.io/v1beta3", external()),
        ("v1.31.0", "kubeadm.k8s.io/v1beta4", EtcdMode::Stacked),
        ("v1.33.0", "kubeadm.k8s.io/v1beta4", external()),
    ] {
        let stacked = etcd == EtcdMode::Stacked;
        let text = init_config(&cluster(version, etcd), TOKEN).expect("config");
        let docs = yaml_docs(&text);
        assert_eq!(docs.len(), 4, "{text}");
        assert!(!has_key(&Value::Array(docs.clone()), "imageRepository"));

        let init = kind(&docs, "InitConfiguration");
        assert_eq!(init["apiVersion"], api, "{version}");
        assert_eq!(
            at(init, "/bootstrapTokens/0/token"),
            "abcdef.0123456789012345"
        );
        assert_eq!(at(init, "/bootstrapTokens/0/ttl"), "24h0m0s");
        assert_eq!(
            at(init, "/localAPIEndpoint/advertiseAddress"),
            "192.168.0.11"
        );
        assert_eq!(at(init, "/localAPIEndpoint/bindPort"), 6443);
        assert_eq!(at(init, "/nodeRegistration/name"), "node1");
        assert_eq!(
            at(init, "/nodeRegistration/criSocket"),
            "unix:///run/containerd/containerd.sock"
        );
        assert_eq!(
            args(at(init, "/nodeRegistration/kubeletExtraArgs"), api),
            pairs(&[("node-ip", "192.168.0.11")]),
            "{version}"
        );
        // Taints are kubeadm's default: the key is absent, not empty.
        assert!(init["nodeRegistration"].get("taints").is_none());

        let config = kind(&docs, "ClusterConfiguration");
        assert_eq!(config["apiVersion"], api);
        assert_eq!(config["kubernetesVersion"], version);
        assert_eq!(config["controlPlaneEndpoint"], "lb.kubesphere.local:6443");
        assert_eq!(config["certificatesDir"], "/etc/kubernetes/pki");
        assert_eq!(at(config, "/networking/podSubnet"), "10.233.64.0/18");
        assert_eq!(at(config, "/networking/serviceSubnet"), "10.233.0.0/18");
        assert_eq!(at(config, "/networking/dnsDomain"), "cluster.local");
        assert_eq!(
            at(config, "/apiServer/certSANs"),
            &json!(["lb.kubesphere.local", "192.168.0.100"])
        );
        assert_eq!(
            args(at(config, "/controllerManager/extraArgs"), api),
            pairs(&[("node-cidr-mask-size-ipv4", "24")])
        );
        if stacked {
            assert!(config.get("etcd").is_none(), "{version}");
        } else {
            assert_eq!(
                at(config, "/etcd/external/endpoints"),
                &json!(["https://192.168.0.11:2379", "https://192.168.0.12:2379"])
            );
            assert_eq!(
                at(config, "/etcd/external/caFile"),
                "/etc/kubernetes/pki/etcd/ca.crt"
            );
            assert_eq!(
                at(config, "/etcd/external/certFile"),
                "/etc/kubernetes/pki/apiserver-etcd-client.crt"
            );
            assert_eq!(
                at(config, "/etcd/external/keyFile"),
                "/etc/kubernetes/pki/apiserver-etcd-client.key"
            );
        }

        let kubelet = kind(&docs, "KubeletConfiguration");
        assert_eq!(kubelet["apiVersion"], "kubelet.config.k8s.io/v1beta1");
        assert_eq!(kubelet["cgroupDriver"], "systemd");
        assert_eq!(kubelet["maxPods"], 110);
        assert_eq!(kubelet["clusterDomain"], "cluster.local");

        let proxy = kind(&docs, "KubeProxyConfiguration");
        assert_eq!(proxy["apiVersion"], "kubeproxy.config.k8s.io/v1alpha1");
        assert_eq!(proxy["mode"], "ipvs");
        assert_eq!(proxy["clusterCIDR"], "10.233.64.0/18");
    }
}

#[test]
fn init_config_refuses_versions_before_v1beta3() {
    for version in ["v1.21.0", "v1.19.16", "not-a-version"] {
        let error = init_config(&cluster(version, EtcdMode::Stacked), TOKEN).expect_err(version);
        assert!(error.to_string().contains(version), "{error}");
        let join = join_config(&join_input(version, None), JOIN_TOKEN).expect_err(version);
        assert!(join.to_string().contains(version), "{join}");
    }
}

#[test]
fn init_config_sets_the_node_masks_of_the_families_present() {
    for (pod_subnet, masks) in [
        (
            "10.233.64.0/18,fd85:ee78:d8a6:8607::1:0/112",
            vec![
                ("node-cidr-mask-size-ipv4", "24"),
                ("node-cidr-mask-size-ipv6", "120"),
            ],
        ),
        (
            "fd85:ee78:d8a6:8607::1:0/112",
            vec![("node-cidr-mask-size-ipv6", "120")],
        ),
    ] {
        for (version, api) in [
            ("v1.30.5", "kubeadm.k8s.io/v1beta3"),
            ("v1.33.0", "kubeadm.k8s.io/v1beta4"),
        ] {
            let mut input = cluster(version, EtcdMode::Stacked);
            input.pod_subnet = pod_subnet.to_owned();
            input.service_subnet = "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116".to_owned();
            let docs = yaml_docs(&init_config(&input, TOKEN).expect("config"));
            let config = kind(&docs, "ClusterConfiguration");
            assert_eq!(at(config, "/networking/podSubnet"), pod_subnet);
            assert_eq!(
                at(config, "/networking/serviceSubnet"),
                "10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116"
            );
            assert_eq!(
                args(at(config, "/controllerManager/extraArgs"), api),
                pairs(&masks),
                "{pod_subnet} {version}"
            );
            let init = kind(&docs, "InitConfiguration");
            // One advertise address even with two families.
            assert_eq!(
                at(init, "/localAPIEndpoint/advertiseAddress"),
                "192.168.0.11"
            );
            assert_eq!(
                args(at(init, "/nodeRegistration/kubeletExtraArgs"), api),
                pairs(&[("node-ip", "192.168.0.11")])
            );
            // The kubelet reports both families when given both.
            input.node_ips.push(ip("fd85::11"));
            let docs = yaml_docs(&init_config(&input, TOKEN).expect("config"));
            assert_eq!(
                args(
                    at(
                        kind(&docs, "InitConfiguration"),
                        "/nodeRegistration/kubeletExtraArgs"
                    ),
                    api
                ),
                pairs(&[("node-ip", "192.168.0.11,fd85::11")])
            );
            assert_eq!(
                kind(&docs, "KubeProxyConfiguration")["clusterCIDR"],
                pod_subnet
            );
        }
    }
}

const JOIN_TOKEN: JoinToken<'static> = JoinToken {
    token: "abcdef.0123456789abcdef",
    ca_cert_hash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
};

fn join_input(version: &str, control_plane: Option<(IpAddr, u16)>) -> JoinInput {
    JoinInput {
        version: version.to_owned(),
        node_name: "node2".to_owned(),
        node_ips: vec![ip("192.168.0.12")],
        endpoint: "lb.kubesphere.local:6443".to_owned(),
        control_plane,
        ignore_preflight_errors: Vec::new(),
        cri_socket: "unix:///run/containerd/containerd.sock".to_owned(),
    }
}

#[test]
fn join_config_discovers_by_token_and_pins_the_ca() {
    for (version, api) in [
        ("v1.30.5", "kubeadm.k8s.io/v1beta3"),
        ("v1.31.0", "kubeadm.k8s.io/v1beta4"),
        ("v1.33.0", "kubeadm.k8s.io/v1beta4"),
    ] {
        for control_plane in [None, Some((ip("192.168.0.12"), 6443))] {
            let mut input = join_input(version, control_plane);
            if control_plane.is_some() {
                input.ignore_preflight_errors =
                    vec!["FileAvailable--etc-kubernetes-pki-ca.crt".to_owned()];
            }
            let join = yaml(&join_config(&input, JOIN_TOKEN).expect("config"));
            assert_eq!(join["apiVersion"], api);
            assert_eq!(join["kind"], "JoinConfiguration");
            assert!(!has_key(&join, "certificateKey"));
            assert_eq!(
                at(&join, "/discovery/bootstrapToken/apiServerEndpoint"),
                "lb.kubesphere.local:6443"
            );
            assert_eq!(
                at(&join, "/discovery/bootstrapToken/token"),
                "abcdef.0123456789abcdef"
            );
            assert_eq!(
                at(&join, "/discovery/bootstrapToken/caCertHashes"),
                &json!([JOIN_TOKEN.ca_cert_hash])
            );
            assert_eq!(at(&join, "/nodeRegistration/name"), "node2");
            assert_eq!(
                at(&join, "/nodeRegistration/criSocket"),
                "unix:///run/containerd/containerd.sock"
            );
            if control_plane.is_some() {
                assert_eq!(
                    at(&join, "/controlPlane/localAPIEndpoint/advertiseAddress"),
                    "192.168.0.12"
                );
                assert_eq!(at(&join, "/controlPlane/localAPIEndpoint/bindPort"), 6443);
                assert_eq!(
                    at(&join, "/nodeRegistration/ignorePreflightErrors"),
                    &json!(["FileAvailable--etc-kubernetes-pki-ca.crt"])
                );
            } else {
                assert!(join.get("controlPlane").is_none(), "{version}");
                assert!(
                    join["nodeRegistration"]
                        .get("ignorePreflightErrors")
                        .is_none()
                );
            }
            assert_eq!(
                args(at(&join, "/nodeRegistration/kubeletExtraArgs"), api),
                pairs(&[("node-ip", "192.168.0.12")])
            );
        }
    }
}

/// A systemd unit file as (section, key, value) in order, as systemd reads it.
fn systemd(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line}"));
        assert!(!section.is_empty(), "{key} outside a section");
        entries.push((section.clone(), key.to_owned(), value.to_owned()));
    }
    entries
}

fn values_of(entries: &[(String, String, String)], section: &str, key: &str) -> Vec<String> {
    entries
        .iter()
        .filter(|(s, k, _)| s == section && k == key)
        .map(|(_, _, v)| v.clone())
        .collect()
}

#[test]
fn kubelet_unit_and_dropin_are_upstreams() {
    let unit = systemd(&kubelet_unit("containerd.service"));
    for (section, key, value) in [
        ("Unit", "Wants", "network-online.target containerd.service"),
        ("Unit", "After", "network-online.target containerd.service"),
        ("Service", "ExecStart", "/usr/local/bin/kubelet"),
        ("Service", "Restart", "always"),
        ("Service", "StartLimitInterval", "0"),
        ("Service", "RestartSec", "10"),
        ("Install", "WantedBy", "multi-user.target"),
    ] {
        assert_eq!(values_of(&unit, section, key), [value], "{section}.{key}");
    }

    let dropin = systemd(kubeadm_dropin());
    assert!(dropin.iter().all(|(section, _, _)| section == "Service"));
    assert_eq!(
        values_of(&dropin, "Service", "Environment"),
        [
            "\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"",
            "\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"",
        ]
    );
    assert_eq!(
        values_of(&dropin, "Service", "EnvironmentFile"),
        [
            "-/var/lib/kubelet/kubeadm-flags.env",
            "-/etc/default/kubelet"
        ]
    );
    // The empty ExecStart= resets the unit's before the drop-in's own.
    assert_eq!(
        values_of(&dropin, "Service", "ExecStart"),
        [
            "",
            "/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS",
        ]
    );
}

/// The container's environment as name → value (`valueFrom` shown as its field path).
fn container_env(pod: &Value) -> Vec<(String, String)> {
    at(pod, "/spec/containers/0/env")
        .as_array()
        .expect("env list")
        .iter()
        .map(|var| {
            let name = var["name"].as_str().expect("name").to_owned();
            let value = match var.get("value") {
                Some(value) => value.as_str().expect("env values are strings").to_owned(),
                None => format!("from {}", at(var, "/valueFrom/fieldRef/fieldPath")),
            };
            (name, value)
        })
        .collect()
}

fn env_of<'a>(vars: &'a [(String, String)], name: &str) -> Option<&'a str> {
    vars.iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| value.as_str())
}

/// What every kube-vip Pod has, whatever the mode.
fn assert_kube_vip_pod(pod: &Value, input: &KubeVipInput) {
    assert_eq!(pod["apiVersion"], "v1");
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(at(pod, "/metadata/name"), "kube-vip");
    assert_eq!(at(pod, "/metadata/namespace"), "kube-system");
    assert_eq!(at(pod, "/spec/hostNetwork"), true);
    assert_eq!(
        at(pod, "/spec/hostAliases"),
        &json!([{"ip": "127.0.0.1", "hostnames": ["kubernetes"]}])
    );
    let container = at(pod, "/spec/containers/0");
    assert_eq!(container["image"], "ghcr.io/kube-vip/kube-vip:v0.8.9");
    assert_eq!(container["args"], json!(["manager"]));
    assert_eq!(
        at(container, "/securityContext/capabilities/add"),
        &json!(["NET_ADMIN", "NET_RAW"])
    );
    assert_eq!(
        container["volumeMounts"],
        json!([{"name": "kubeconfig", "mountPath": "/etc/kubernetes/admin.conf"}])
    );
    assert_eq!(at(pod, "/spec/volumes/0/name"), "kubeconfig");
    assert_eq!(
        at(pod, "/spec/volumes/0/hostPath/path"),
        input.kubeconfig.as_str()
    );
}

#[test]
fn kube_vip_manifest_announces_the_address_by_arp_or_bgp() {
    let arp = KubeVipInput {
        image: "ghcr.io/kube-vip/kube-vip:v0.8.9".to_owned(),
        address: ip("192.168.0.100"),
        port: 6443,
        interface: "eth0".to_owned(),
        mode: VipMode::Arp,
        kubeconfig: paths::SUPER_ADMIN_CONF.to_owned(),
    };
    let bgp = KubeVipInput {
        interface: "lo".to_owned(),
        mode: VipMode::Bgp {
            router_id: ip("192.168.0.11"),
            peers: vec![ip("192.168.0.12"), ip("fd00::13")],
            asn: 65000,
        },
        kubeconfig: paths::ADMIN_CONF.to_owned(),
        ..arp.clone()
    };
    let v6 = KubeVipInput {
        address: ip("fd00::100"),
        ..arp.clone()
    };
    for (input, expected, absent) in [
        (
            &arp,
            vec![
                ("vip_arp", "true"),
                ("port", "6443"),
                ("vip_nodename", "from \"spec.nodeName\""),
                ("vip_interface", "eth0"),
                ("vip_cidr", "32"),
                ("cp_enable", "true"),
                ("cp_namespace", "kube-system"),
                ("svc_enable", "false"),
                ("vip_leaderelection", "true"),
                ("vip_leasename", "plndr-cp-lock"),
                ("vip_leaseduration", "5"),
                ("vip_renewdeadline", "3"),
                ("vip_retryperiod", "1"),
                ("address", "192.168.0.100"),
            ],
            vec!["bgp_enable", "bgp_peers"],
        ),
        (
            &bgp,
            vec![
                ("vip_arp", "false"),
                ("vip_interface", "lo"),
                ("cp_enable", "true"),
                ("svc_enable", "false"),
                ("bgp_enable", "true"),
                ("bgp_routerid", "192.168.0.11"),
                ("bgp_as", "65000"),
                (
                    "bgp_peers",
                    "192.168.0.12:65000::false,[fd00::13]:65000::false",
                ),
                ("address", "192.168.0.100"),
            ],
            vec!["vip_leaderelection"],
        ),
        (
            &v6,
            vec![("vip_cidr", "128"), ("address", "fd00::100")],
            vec![],
        ),
    ] {
        let pod = yaml(&kube_vip_manifest(input));
        assert_kube_vip_pod(&pod, input);
        let vars = container_env(&pod);
        for (name, value) in expected {
            assert_eq!(env_of(&vars, name), Some(value), "{name} in {vars:?}");
        }
        for name in absent {
            assert_eq!(env_of(&vars, name), None, "{name} in {vars:?}");
        }
    }

    // A lone control plane in BGP mode has no peers: kube-vip refuses an empty list.
    let alone = KubeVipInput {
        mode: VipMode::Bgp {
            router_id: ip("192.168.0.11"),
            peers: vec![],
            asn: 65000,
        },
        ..bgp
    };
    let vars = container_env(&yaml(&kube_vip_manifest(&alone)));
    assert_eq!(env_of(&vars, "bgp_peers"), None);
    assert_eq!(env_of(&vars, "bgp_enable"), Some("true"));
}

#[test]
fn kube_vip_needs_super_admin_from_v1_29() {
    for (version, needs) in [
        ("v1.28.15", false),
        ("v1.29.0", true),
        ("v1.33.0", true),
        ("1.30.1", true),
        ("v2.0.0", true),
        ("garbage", false),
    ] {
        assert_eq!(kube_vip_needs_super_admin(version), needs, "{version}");
    }
}

#[test]
fn haproxy_cfg_balances_over_every_control_plane() {
    let backends = [
        ("node1".to_owned(), ip("192.168.0.11")),
        ("node2".to_owned(), ip("192.168.0.12")),
        ("node3".to_owned(), ip("fd00::13")),
    ];
    let cfg = haproxy_cfg(6443, &backends);
    let lines: Vec<&str> = cfg.lines().map(str::trim).collect();
    for line in [
        "frontend kube_api_frontend",
        "bind 127.0.0.1:6443",
        "default_backend kube_api_backend",
        "backend kube_api_backend",
        "balance roundrobin",
        "option httpchk GET /healthz",
        "frontend healthz",
        "bind 127.0.0.1:8081",
        "monitor-uri /healthz",
        "server node1 192.168.0.11:6443 check check-ssl verify none",
        "server node2 192.168.0.12:6443 check check-ssl verify none",
        "server node3 [fd00::13]:6443 check check-ssl verify none",
    ] {
        assert!(lines.contains(&line), "{line} missing:\n{cfg}");
    }
    assert_eq!(lines.iter().filter(|l| l.starts_with("server ")).count(), 3);
    // Every `server` follows the backend it belongs to, after the last frontend.
    let backend = lines
        .iter()
        .position(|l| *l == "backend kube_api_backend")
        .expect("backend");
    let first_server = lines
        .iter()
        .position(|l| l.starts_with("server "))
        .expect("server");
    assert!(first_server > backend);
    assert!(lines[backend..].iter().all(|l| !l.starts_with("frontend")));
    // The API's frontend is TCP: TLS passes through.
    let frontend = lines
        .iter()
        .position(|l| *l == "frontend kube_api_frontend")
        .expect("frontend");
    assert!(lines[frontend..backend].contains(&"mode tcp"));
}

#[test]
fn haproxy_manifest_restarts_with_its_configuration() {
    let sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let pod = yaml(&haproxy_manifest(
        "docker.io/library/haproxy:2.9.6-alpine",
        sum,
    ));
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(at(&pod, "/metadata/namespace"), "kube-system");
    assert_eq!(at(&pod, "/metadata/annotations/cfg-checksum"), sum);
    assert_eq!(at(&pod, "/spec/hostNetwork"), true);
    let container = at(&pod, "/spec/containers/0");
    assert_eq!(container["image"], "docker.io/library/haproxy:2.9.6-alpine");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(
            container[probe]["httpGet"],
            json!({"host": "127.0.0.1", "path": "/healthz", "port": 8081}),
            "{probe}"
        );
    }
    assert_eq!(
        container["volumeMounts"],
        json!([{"name": "etc-haproxy", "mountPath": "/usr/local/etc/haproxy/", "readOnly": true}])
    );
    assert_eq!(
        at(&pod, "/spec/volumes/0/hostPath/path"),
        "/etc/kubekey/haproxy"
    );
    // A different configuration changes the manifest, so the kubelet recreates the Pod.
    assert_ne!(
        haproxy_manifest("docker.io/library/haproxy:2.9.6-alpine", sum),
        haproxy_manifest("docker.io/library/haproxy:2.9.6-alpine", "ff")
    );
}

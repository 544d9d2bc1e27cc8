//! Parsing tests: the example files, KubeKey's own shapes, defaults, resolution and the keys
//! kk does not read. Rejections are tested in `error_table`.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use super::InventoryError;
use super::*;

/// The repository's `manifests/` directory.
fn manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests")
}

pub(super) fn inventory(text: &str) -> Inventory {
    Inventory::from_str_named(text, "inventory.yaml").unwrap_or_else(|error| panic!("{error}"))
}

pub(super) fn config(text: &str) -> Config {
    Config::from_str_named(text, "config.yaml").unwrap_or_else(|error| panic!("{error}"))
}

fn names(hosts: &[&Host]) -> Vec<String> {
    hosts.iter().map(|host| host.name.clone()).collect()
}

fn ssh(host: &Host) -> &SshConnector {
    match &host.connector {
        Connector::Ssh(ssh) => ssh,
        Connector::Local => panic!("{} is local", host.name),
    }
}

#[test]
fn the_example_inventory_parses() {
    let inventory = Inventory::from_path(&manifests().join("inventory.yaml")).expect("valid");
    assert_eq!(inventory.name(), Some("default"));
    assert!(
        inventory.warnings().is_empty(),
        "{:?}",
        inventory.warnings()
    );
    let all = ["node1", "node2", "node3"];
    assert_eq!(names(&inventory.group_members(K8S_CLUSTER)), all);
    assert_eq!(names(&inventory.role_members(Role::ControlPlane)), all);
    assert_eq!(
        names(&inventory.role_members(Role::ImageRegistry)),
        ["node1"]
    );
    assert!(inventory.role_members(Role::Nfs).is_empty());

    let node1 = inventory.host("node1").expect("node1");
    let roles: Vec<Role> = node1.roles.iter().collect();
    assert_eq!(
        roles,
        [
            Role::ControlPlane,
            Role::Worker,
            Role::Etcd,
            Role::ImageRegistry
        ]
    );
    assert_eq!(
        node1.location.to_string(),
        format!("{}:12:5", inventory.source_name())
    );
    let connector = ssh(node1);
    assert_eq!(
        (connector.host.as_str(), connector.port),
        ("10.250.0.11", 22)
    );
    assert_eq!(
        connector.private_key,
        Some(PathBuf::from("/root/.ssh/id_ed25519"))
    );

    let node3 = inventory.host("node3").expect("node3");
    assert_eq!(node3.internal_ipv4, Some(Ipv4Addr::new(10, 250, 0, 13)));
    assert_eq!(ssh(node3).host, "10.250.0.13");
    assert_eq!(ssh(node3).user, "root");
    assert!(!node3.roles.is_image_registry() && node3.roles.is_etcd());
}

#[test]
fn the_example_config_parses() {
    let config = Config::from_path(&manifests().join("config.yaml")).expect("valid");
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
    assert!(config.extra.is_empty(), "{:?}", config.extra);
    let kubernetes = &config.kubernetes;
    assert_eq!(
        kubernetes.kube_version.map(|v| v.to_string()).as_deref(),
        Some("v1.31.4")
    );
    let endpoint = &kubernetes.control_plane_endpoint;
    assert_eq!(
        (endpoint.host.as_str(), endpoint.port),
        ("lb.kubesphere.local", 6443)
    );
    let EndpointKind::KubeVip(kube_vip) = &endpoint.kind else {
        panic!("{:?}", endpoint.kind)
    };
    assert_eq!(kube_vip.address, IpAddr::from([10, 250, 0, 10]));
    assert_eq!(kube_vip.mode, KubeVipMode::Arp);
    assert_eq!(kubernetes.kube_proxy_mode, KubeProxyMode::Ipvs);
    // Everything else in the example is a default.
    let defaults = Config::default();
    assert_eq!(config.etcd, defaults.etcd);
    assert_eq!(config.cri, defaults.cri);
    assert_eq!(config.cni, defaults.cni);
    assert_eq!(config.image_registry, defaults.image_registry);
    assert_eq!(config.precheck, defaults.precheck);
}

/// KubeKey's default inventory (`builtin/core/defaults/inventory/localhost.yaml`) with its
/// commented-out example host filled in.
const KUBEKEY_INVENTORY: &str = "\
apiVersion: kubekey.kubesphere.io/v1
kind: Inventory
metadata:
  name: default
spec:
  hosts:
    localhost:
      connector:
        password: 123456
    node1:
      connector:
        type: ssh
        host: node1
        port: 22
        user: root
        password: 123456
      internal_ipv4: 1.1.1.1
      storage:
        - device: [/dev/sdb1]
          filesystem: xfs
  groups:
    k8s_cluster:
      groups:
        - kube_control_plane
        - kube_worker
    kube_control_plane:
      hosts:
        - localhost
    kube_worker:
      hosts:
        - localhost
        - node1
    etcd:
      hosts:
        - localhost
#    image_registry:
#      hosts:
#        - localhost
";

#[test]
fn kubekey_inventories_read_as_they_are() {
    let inventory = inventory(KUBEKEY_INVENTORY);
    assert!(
        inventory.warnings().is_empty(),
        "{:?}",
        inventory.warnings()
    );
    let localhost = inventory.host("localhost").expect("localhost");
    assert_eq!(localhost.connector, Connector::Local);
    // Connector keys of a local host are not read, and not variables either.
    assert!(localhost.vars.is_empty());
    let node1 = inventory.host("node1").expect("node1");
    let connector = ssh(node1);
    assert_eq!(connector.host, "node1");
    assert_eq!(
        connector.password.as_ref().map(Password::expose),
        Some("123456")
    );
    assert_eq!(format!("{:?}", connector.password), "Some(<redacted>)");
    assert!(!format!("{node1:?}").contains("123456"));
    assert_eq!(
        serde_json::Value::Object(node1.vars.clone().into_iter().collect()),
        serde_json::json!({"storage": [{"device": ["/dev/sdb1"], "filesystem": "xfs"}]})
    );
    assert_eq!(
        names(&inventory.group_members(K8S_CLUSTER)),
        ["localhost", "node1"]
    );
    assert!(localhost.roles.is_control_plane() && localhost.roles.is_etcd());
    assert!(!node1.roles.is_control_plane() && node1.roles.is_worker());
}

#[test]
fn nested_groups_resolve_in_order_once_each() {
    let inventory = inventory(
        "apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts: {a: {}, b: {}, c: {}, d: {}}
  groups:
    everything: {hosts: [d], groups: [pair, kube_worker]}
    pair: {hosts: [b, a], groups: [kube_worker]}
    kube_worker: {hosts: [c, a]}
    kube_control_plane: {hosts: [b]}
",
    );
    assert_eq!(
        names(&inventory.group_members("everything")),
        ["d", "b", "a", "c"]
    );
    assert_eq!(names(&inventory.group_members("pair")), ["b", "a", "c"]);
    assert!(inventory.group_members("missing").is_empty());
    // Without `k8s_cluster`, it is the control plane plus the workers.
    let cluster = inventory.group(K8S_CLUSTER).expect("implied");
    assert_eq!(cluster.groups, ["kube_control_plane", "kube_worker"]);
    assert_eq!(
        names(&inventory.group_members(K8S_CLUSTER)),
        ["b", "c", "a"]
    );
    assert_eq!(cluster.location.to_string(), "inventory.yaml:4:3");
    // Hosts without a connector go over SSH to their name when they have no address.
    assert_eq!(ssh(inventory.host("a").expect("a")).host, "a");
}

#[test]
fn connectors_follow_type_and_addresses() {
    let inventory = inventory(
        "apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts:
    localhost: {connector: {type: ssh, port: 2222, user: kk}}
    here: {connector: {type: local}, internal_ipv4: 10.0.0.2}
    v6: {internal_ipv4: \"\", internal_ipv6: \"fd00::6\"}
    bare:
    quoted: {connector: {port: \"2200\"}}
  groups:
    kube_worker: {hosts: [localhost, here, v6, bare, quoted]}
    nfs:
",
    );
    let localhost = ssh(inventory.host("localhost").expect("localhost"));
    assert_eq!(
        (localhost.host.as_str(), localhost.port),
        ("localhost", 2222)
    );
    assert_eq!(localhost.user, "kk");
    assert_eq!(
        inventory.host("here").expect("here").connector,
        Connector::Local
    );
    let v6 = inventory.host("v6").expect("v6");
    assert_eq!((v6.internal_ipv4, ssh(v6).host.as_str()), (None, "fd00::6"));
    assert_eq!(ssh(inventory.host("bare").expect("bare")).host, "bare");
    assert_eq!(ssh(inventory.host("quoted").expect("quoted")).port, 2200);
    assert!(inventory.group("nfs").expect("nfs").hosts.is_empty());
}

#[test]
fn unknown_keys_are_kept_and_likely_typos_warned() {
    let inventory = inventory(
        "apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts:
    node1:
      internal_ip4: 10.0.0.1
      connector: {hots: 10.0.0.1, timeout: 30}
  groups:
    kube_worker: {host: [node1], hosts: [node1]}
  vars: {ntp: pool.ntp.org}
",
    );
    let node1 = inventory.host("node1").expect("node1");
    assert_eq!(
        node1.vars.keys().collect::<Vec<_>>(),
        ["connector.hots", "connector.timeout", "internal_ip4"]
    );
    assert_eq!(inventory.vars()["ntp"], "pool.ntp.org");
    let warnings: Vec<String> = inventory
        .warnings()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        warnings,
        [
            "inventory.yaml:6:7: unknown field `internal_ip4` is kept but not read by kk; did you mean `internal_ipv4`?",
            "inventory.yaml:7:19: unknown field `connector.hots` is kept but not read by kk; did you mean `host`?",
            "inventory.yaml:9:19: unknown field `kube_worker.host` is kept but not read by kk; did you mean `hosts`?",
        ]
    );
}

/// A KubeKey v4 config as `kk create config` writes it (abridged): many keys kk does not read,
/// none of which may be taken for a typo.
const KUBEKEY_CONFIG: &str = "\
apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  download:
    zone: \"\"
  kubernetes:
    kube_version: v1.31.4
    helm_version: v3.13.3
    cluster_name: cluster.local
    sandbox_image:
      tag: \"3.10\"
    kubelet:
      max_pods: 110
      pod_pids_limit: 10000
    apiserver:
      port: 6443
    control_plane_endpoint:
      host: lb.kubesphere.local
      port: 6443
      type: kube_vip
      local:
        address: \"\"
      kube_vip:
        address: 192.168.0.100
        image:
          tag: v0.7.2
      haproxy:
        address: 127.0.0.1
        health_port: 8081
        image:
          tag: 2.9.6-alpine
    kube_proxy:
      mode: ipvs
      manage:
        enabled: false
    certs:
      renew: true
  etcd:
    etcd_version: v3.5.24
    deployment_type: internal
    port: 2379
    peer_port: 2380
    env:
      data_dir: /var/lib/etcd
  image_registry:
    type: \"\"
    ha_vip: \"\"
    auth:
      registry: dockerhub.kubekey.local
  cri:
    container_manager: docker
    cgroup_driver: systemd
    crictl_version: v1.31.0
    docker_version: 25.0.5
    cridockerd_version: v0.3.21
  cni:
    type: kubeovn
    multi_cni: none
    multus:
      enabled: false
    calico_version: v3.30.5
    cilium_version: 1.18.5
    kubeovn_version: v1.15.0
    pod_cidr: 10.233.64.0/18
    ipv4_mask_size: 24
    ipv6_mask_size: 64
    service_cidr: 10.233.0.0/18
  storage_class:
    local:
      enabled: true
  dns:
    dns_image:
      tag: v1.11.3
  image_manifests:
    - registry.k8s.io/pause:3.10
";

#[test]
fn kubekey_configs_read_as_they_are() {
    let config = config(KUBEKEY_CONFIG);
    assert!(config.warnings().is_empty(), "{:?}", config.warnings());
    assert_eq!(config.etcd.deployment_type, EtcdDeploymentType::Internal);
    assert_eq!(
        config.cri.container_manager,
        bundle_spec::manifest::ContainerRuntime::Docker
    );
    assert_eq!(config.cni.plugin, NetworkPlugin::KubeOvn);
    assert_eq!(config.image_registry, ImageRegistry::Kk);
    assert_eq!(
        config.registry_address.to_string(),
        "dockerhub.kubekey.local:5443"
    );
    assert!(!config.upstream_fallback, "an airgap falls back to nothing");
    assert!(matches!(
        config.kubernetes.control_plane_endpoint.kind,
        EndpointKind::KubeVip(_)
    ));
    assert_eq!(config.extra["kubernetes.helm_version"], "v3.13.3");
    assert_eq!(
        config.extra["kubernetes.control_plane_endpoint.kube_vip.image"]["tag"],
        "v0.7.2"
    );
    assert_eq!(config.cni.multi_cni, MultiCni::None);
    assert!(
        !config.extra.contains_key("cni.multi_cni"),
        "read, not kept"
    );
    assert_eq!(config.extra["cni.multus"]["enabled"], false);
    assert_eq!(
        config.extra["image_manifests"][0],
        "registry.k8s.io/pause:3.10"
    );
    assert_eq!(config.extra["etcd.port"], 2379);
}

#[test]
fn config_typos_are_warned_with_their_location() {
    let config = config(
        "apiVersion: install.kk.io/v1alpha1
kind: Config
spec:
  kubernetes:
    kube_verison: v1.31.4
  cni:
    pod_cdir: 10.0.0.0/16
",
    );
    assert_eq!(config.kubernetes.kube_version, None);
    let warnings: Vec<String> = config.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "config.yaml:5:5: unknown field `kubernetes.kube_verison` is kept but not read by kk; did you mean `kube_version`?",
            "config.yaml:7:5: unknown field `cni.pod_cdir` is kept but not read by kk; did you mean `pod_cidr`?",
        ]
    );
}

#[test]
fn an_empty_config_is_the_default() {
    let config = config("apiVersion: install.kk.io/v1alpha1\nkind: Config\n");
    let defaults = Config::default();
    assert_eq!(config.kubernetes, defaults.kubernetes);
    assert_eq!(config.cni, defaults.cni);
    assert_eq!(config.source_name(), "config.yaml");
    assert_eq!(defaults.source_name(), "defaults");
    assert_eq!(defaults.kubernetes.kube_version, None);
    assert_eq!(defaults.kubernetes.kube_proxy_mode, KubeProxyMode::Iptables);
    assert_eq!(
        defaults.kubernetes.control_plane_endpoint.kind,
        EndpointKind::Local
    );
    assert_eq!(defaults.etcd.deployment_type, EtcdDeploymentType::External);
    assert_eq!(defaults.cni.plugin, NetworkPlugin::Calico);
    assert_eq!(defaults.cni.pod_cidr.to_string(), "10.233.64.0/18");
    assert_eq!(defaults.cni.service_cidr.to_string(), "10.233.0.0/18");
    assert_eq!(
        (defaults.cni.max_pods, defaults.cni.ipv4_mask_size),
        (110, 24)
    );
    assert_eq!(defaults.image_registry, ImageRegistry::Kk);
    assert_eq!(defaults.precheck.min_kernel_version.to_string(), "4.9.17");
}

#[test]
fn nfs_and_its_storage_class_default_off_and_read_kubekey_shaped() {
    let defaults = config("apiVersion: install.kk.io/v1alpha1\nkind: Config\n");
    assert_eq!(defaults.nfs.share_dir, "/share/");
    assert_eq!(
        (
            defaults.storage_class.nfs.enabled,
            defaults.storage_class.nfs.default
        ),
        (false, false)
    );
    let set = config(
        "apiVersion: install.kk.io/v1alpha1
kind: Config
spec:
  nfs:
    share_dir: /srv/nfs
  storage_class:
    local:
      enabled: true
    nfs:
      enabled: true
      default: true
",
    );
    assert!(set.warnings().is_empty(), "{:?}", set.warnings());
    assert_eq!(set.nfs.share_dir, "/srv/nfs");
    assert!(set.storage_class.nfs.enabled && set.storage_class.nfs.default);
    assert_eq!(set.extra["storage_class.local"]["enabled"], true);
}

#[test]
fn configs_read_dual_stack_and_external_registries() {
    let config = config(
        "apiVersion: install.kk.io/v1alpha1
kind: Config
spec:
  cni:
    type: other
    pod_cidr: 10.233.64.0/18/fd85:ee78:d8a6:8607::1:0/112
    service_cidr: 10.233.0.0/18,fd85:ee78:d8a6:8607::1000/116
    ipv6_mask_size: 120
  image_registry:
    type: external
    address: harbor.example.com:8443
    username: admin
    password_env: HARBOR_PASSWORD
    ca_file: pki/harbor-ca.crt
    harbor: true
  cluster_require:
    minimal_master_memory_mb: 4096
    min_kernel_version: 5.10
",
    );
    assert_eq!(config.cni.plugin, NetworkPlugin::None);
    assert!(config.cni.pod_cidr.is_dual_stack());
    assert_eq!(
        config
            .cni
            .service_cidr
            .ipv6()
            .map(|cidr| cidr.to_string())
            .as_deref(),
        Some("fd85:ee78:d8a6:8607::1000/116")
    );
    let ImageRegistry::External(registry) = &config.image_registry else {
        panic!("{:?}", config.image_registry)
    };
    assert_eq!(registry.address, "harbor.example.com:8443");
    assert_eq!(registry.password_env.as_deref(), Some("HARBOR_PASSWORD"));
    assert!(registry.harbor);
    let ca = registry.ca_file.as_deref().expect("ca_file");
    assert!(ca.ends_with("pki/harbor-ca.crt"), "{}", ca.display());
    assert_eq!(config.precheck.min_control_plane_memory_mb, 4096);
    assert_eq!(
        config.precheck.min_kernel_version,
        KernelVersion::new(5, 10, 0)
    );
}

#[test]
fn a_missing_file_is_a_read_error() {
    let path = Path::new("/nonexistent/inventory.yaml");
    let error = Inventory::from_path(path).expect_err("no such file");
    assert!(matches!(error, InventoryError::Read { .. }));
    assert_eq!(
        error.to_string(),
        "cannot read `/nonexistent/inventory.yaml`"
    );
    let error = Config::from_path(path).expect_err("no such file");
    assert!(matches!(error, InventoryError::Read { .. }));
}

#[test]
fn addons_read_in_order_with_values_relative_to_the_config() {
    let text = "apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  addons:
    - name: metrics-server
      sources:
        chart: {name: metrics-server, values: [\"args={--kubelet-insecure-tls}\"], valuesFile: values/metrics.yaml}
    - name: ingress
      namespace: ingress-nginx
      sources:
        chart: {name: ingress-nginx, valuesFile: /srv/ingress.yaml}
";
    let config = Config::from_str_named(text, "/etc/kk/config.yaml").expect("config");
    let addons = &config.addons;
    assert_eq!(addons.len(), 2);
    assert_eq!(
        (addons[0].name.as_str(), addons[0].namespace.as_str()),
        ("metrics-server", "kube-system")
    );
    assert_eq!(addons[0].chart, "metrics-server");
    assert_eq!(addons[0].set, ["args={--kubelet-insecure-tls}"]);
    assert_eq!(
        addons[0].values_file.as_deref(),
        Some(Path::new("/etc/kk/values/metrics.yaml"))
    );
    assert_eq!(addons[1].namespace, "ingress-nginx");
    assert_eq!(
        addons[1].values_file.as_deref(),
        Some(Path::new("/srv/ingress.yaml"))
    );
    assert!(Config::default().addons.is_empty());
}

#[test]
fn trusted_keys_are_read_relative_to_the_config() {
    let text = "apiVersion: kubekey.kubesphere.io/v1
kind: Config
spec:
  trusted_keys: [keys/cosign.pub, /srv/vendor.pub]
";
    let config = Config::from_str_named(text, "/etc/kk/config.yaml").expect("config");
    assert_eq!(
        config.trusted_keys,
        [
            Path::new("/etc/kk/keys/cosign.pub"),
            Path::new("/srv/vendor.pub")
        ]
    );
    assert!(config.extra.is_empty(), "{:?}", config.extra);
    assert!(Config::default().trusted_keys.is_empty());
}

#[test]
fn node_names_are_refused_with_their_line() {
    let text = |control_plane: &str, etcd: &str| {
        format!(
            "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    {control_plane}: {{internal_ipv4: 10.0.0.1}}\n    {etcd}: {{internal_ipv4: 10.0.0.2}}\n  groups:\n    kube_control_plane: {{hosts: [{control_plane}]}}\n    etcd: {{hosts: [{etcd}]}}\n"
        )
    };
    let read = |text: &str| Inventory::from_str_named(text, "inventory.yaml").expect("read");
    let error = read(&text("Node1", "etcd1"))
        .check_node_names()
        .expect_err("Node1");
    assert!(
        matches!(&error, InventoryError::InvalidNodeName { name, .. } if name == "Node1"),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("inventory.yaml:5:5: host `Node1` is in `k8s_cluster`"),
        "{error}"
    );
    // A host outside `k8s_cluster` names no node.
    read(&text("node1", "Etcd_1"))
        .check_node_names()
        .expect("Etcd_1 is no node");
}

#[test]
fn node_names_follow_rfc_1123() {
    for (name, valid) in [
        ("node1", true),
        ("cp-1.example", true),
        ("Node1", false),
        ("node_1", false),
        ("-node", false),
        ("", false),
    ] {
        assert_eq!(is_node_name(name), valid, "{name}");
    }
}

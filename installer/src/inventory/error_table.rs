//! One table row per rejected inventory or config: the [`InventoryError`] variant expected, a
//! fragment of its message (sources included), and the `line:column` it must report. Removing
//! a check makes its row fail, since the file is then accepted or rejected differently.

use super::InventoryError;
use super::*;

/// A rejected file and what the rejection must look like.
struct Case {
    kind: Kind,
    yaml: String,
    variant: &'static str,
    fragment: &'static str,
    at: &'static str,
}

#[derive(Clone, Copy)]
enum Kind {
    Inventory,
    Config,
}

macro_rules! case {
    ($kind:ident, $variant:ident, $yaml:expr, $fragment:expr, $at:expr) => {
        Case {
            kind: Kind::$kind,
            yaml: $yaml,
            variant: stringify!($variant),
            fragment: $fragment,
            at: $at,
        }
    };
}

/// Declares `VARIANTS` and an exhaustive `variant_name` from one list, so a new variant does
/// not compile until it is listed, and then fails `table_covers_every_variant` until it has a
/// row.
macro_rules! variants {
    ($($variant:ident),* $(,)?) => {
        const VARIANTS: &[&str] = &[$(stringify!($variant)),*];

        fn variant_name(error: &InventoryError) -> &'static str {
            match error {
                $(InventoryError::$variant { .. } => stringify!($variant),)*
            }
        }
    };
}

variants![
    Read,
    Yaml,
    MissingField,
    UnsupportedApiVersion,
    WrongKind,
    NoHosts,
    InvalidHostName,
    InvalidNodeName,
    InvalidIp,
    WrongIpFamily,
    InvalidPort,
    InvalidHost,
    DuplicateAddress,
    UnknownHost,
    UnknownGroup,
    GroupCycle,
    HostInNoGroup,
    NotInCluster,
    InvalidKubeVersion,
    InvalidCidr,
    CidrOverlap,
    MaskTooWide,
    OutOfRange,
    TooManyPods,
    InvalidKernelVersion,
    InvalidRegistryAddress,
    IncompleteCredentials,
    InvalidEnvName,
    EmptyCaFile,
    RegistryFieldNeedsExternal,
    InvalidAddon,
    InvalidShareDir,
];

/// A valid inventory; rows edit it with `replace`. Hosts are on lines 5 and 6 (values from
/// column 12), groups on 8 and 9.
const INVENTORY: &str = "\
apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts:
    node1: {internal_ipv4: 10.0.0.1}
    node2: {internal_ipv4: 10.0.0.2}
  groups:
    kube_control_plane: {hosts: [node1]}
    kube_worker: {hosts: [node2]}
";

/// [`INVENTORY`] with `from` replaced by `to` (which must occur).
fn inventory(from: &str, to: &str) -> String {
    assert!(INVENTORY.contains(from), "{from}");
    INVENTORY.replacen(from, to, 1)
}

/// A config whose `spec` is `body`, starting on line 4.
fn config(body: &str) -> String {
    format!("apiVersion: install.kk.io/v1alpha1\nkind: Config\nspec:\n{body}")
}

// One row per line reads as a table; rustfmt would spread each over seven lines.
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let node1 = "node1: {internal_ipv4: 10.0.0.1}";
    vec![
        // YAML shape, through bundle-spec's classified errors.
        case!(Inventory, Yaml, inventory("[node1]}", "[node1}"), "mismatched bracket", "8:33"),
        case!(Inventory, Yaml, inventory(node1, "node1: {connector: {port: abc}}"), "invalid i64", "5:31"),
        case!(Inventory, Yaml, inventory(node1, "node1: {connector: {type: sssh}}"), "unknown value `sssh`; did you mean `ssh`?", "5:31"),
        case!(Inventory, Yaml, inventory("  groups:", "  groups: {}\n  groups:"), "duplicate key `groups`", "8:3"),
        case!(Config, Yaml, config("  cni: {type: calcio}\n"), "unknown value `calcio`; did you mean `calico`?", "4:15"),
        case!(Config, Yaml, config("  cni: {multi_cni: multsu}\n"), "unknown value `multsu`; did you mean `multus`?", "4:20"),
        case!(Config, Yaml, config("  cni: {multi_cni: whereabouts}\n"), "unknown value `whereabouts`", "4:20"),
        case!(Config, Yaml, config("  kubernetes: {kube_proxy: {mode: nftable}}\n"), "unknown value `nftable`; hint: expected one of `iptables`, `ipvs`", "4:35"),
        case!(Config, Yaml, config("  image_registry: {type: harbor}\n"), "unknown value `harbor`", "4:26"),
        case!(Config, Yaml, config("  cluster_require: {allow_unsupported_distribution_setup: yes}\n"), "invalid boolean", "4:59"),
        // Header.
        case!(Inventory, MissingField, INVENTORY.replace("apiVersion: install.kk.io/v1alpha1\n", ""), "missing required field `apiVersion`", "1:1"),
        case!(Config, MissingField, "apiVersion: install.kk.io/v1alpha1\n".to_owned(), "missing required field `kind`", "1:1"),
        case!(Inventory, UnsupportedApiVersion, inventory("install.kk.io/v1alpha1", "kubekey.kubesphere.io/v1alpha2"), "unsupported apiVersion `kubekey.kubesphere.io/v1alpha2`; hint: use `kubekey.kubesphere.io/v1` or `install.kk.io/v1alpha1`", "1:13"),
        case!(Inventory, WrongKind, inventory("Inventory", "Config"), "kind `Config` where `Inventory` was expected; hint: this is a config, pass it as the config file", "2:7"),
        case!(Config, WrongKind, "apiVersion: kubekey.kubesphere.io/v1\nkind: Cluster\n".to_owned(), "kind `Cluster` where `Config` was expected", "2:7"),
        // Hosts.
        case!(Inventory, MissingField, "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nmetadata: {name: x}\n".to_owned(), "missing required field `spec`", "1:1"),
        case!(Inventory, MissingField, inventory("  hosts:", "  vars: {}\n  hosts:").replace("  hosts:\n    node1: {internal_ipv4: 10.0.0.1}\n    node2: {internal_ipv4: 10.0.0.2}\n", ""), "missing required field `hosts`", "4:3"),
        case!(Inventory, NoHosts, "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts: {}\n".to_owned(), "the inventory has no hosts", "4:10"),
        case!(Inventory, InvalidHostName, inventory(node1, "node/1: {}"), "invalid host name `node/1`", "5:5"),
        case!(Inventory, InvalidIp, inventory("10.0.0.1}", "10.0.0.300}"), "invalid IPv4 address `10.0.0.300` in `internal_ipv4`", "5:28"),
        case!(Inventory, InvalidIp, inventory(node1, "node1: {internal_ipv6: fd00::zz}"), "invalid IPv6 address `fd00::zz` in `internal_ipv6`", "5:28"),
        case!(Inventory, WrongIpFamily, inventory("10.0.0.1}", "\"fd00::1\"}"), "`fd00::1` in `internal_ipv4` is an IPv6 address; hint: write it in `internal_ipv6`", "5:28"),
        case!(Inventory, InvalidPort, inventory(node1, "node1: {connector: {port: 0}}"), "invalid port `0` in `connector.port`; hint: use a number from 1 to 65535", "5:31"),
        case!(Inventory, InvalidPort, inventory(node1, "node1: {connector: {port: 70000}}"), "invalid port `70000`", "5:31"),
        case!(Inventory, InvalidHost, inventory(node1, "node1: {connector: {host: \"bad host\"}}"), "invalid host `bad host` in `connector.host`", "5:31"),
        case!(Inventory, DuplicateAddress, inventory("10.0.0.2", "10.0.0.1"), "host `node2` has internal_ipv4 `10.0.0.1`, which host `node1` already has at inventory.yaml:5:28", "6:28"),
        case!(Inventory, DuplicateAddress, inventory(node1, "node1: {internal_ipv6: \"fd00::1\"}").replace("node2: {", "node2: {internal_ipv6: \"fd00:0::1\", "), "internal_ipv6 `fd00::1`", "6:28"),
        // Groups.
        case!(Inventory, UnknownHost, inventory("[node2]", "[node2, nod2]"), "group `kube_worker` lists host `nod2`, which `spec.hosts` does not define; did you mean `node2`?", "9:34"),
        case!(Inventory, UnknownHost, inventory("[node2]", "[node2, etcd1]"), "does not define", "9:34"),
        case!(Inventory, UnknownGroup, inventory("  groups:\n", "  groups:\n    k8s_cluster: {groups: [kube_control_plane, kube_wroker]}\n"), "group `k8s_cluster` nests group `kube_wroker`, which `spec.groups` does not define; did you mean `kube_worker`?", "8:48"),
        case!(Inventory, GroupCycle, inventory("  groups:\n", "  groups:\n    a: {groups: [b]}\n    b: {groups: [c]}\n    c: {groups: [a]}\n"), "groups nest each other in a cycle: `a` → `b` → `c` → `a`", "10:18"),
        case!(Inventory, GroupCycle, inventory("{hosts: [node2]}", "{hosts: [node2], groups: [kube_worker]}"), "`kube_worker` → `kube_worker`", "9:44"),
        case!(Inventory, HostInNoGroup, inventory("  groups:", "    node3: {}\n  groups:"), "host `node3` is in no group, so nothing would be installed on it", "7:5"),
        case!(Inventory, NotInCluster, inventory("  groups:\n", "  groups:\n    k8s_cluster: {groups: [kube_control_plane]}\n"), "host `node2` is in `kube_worker` but not in `k8s_cluster`, so it would get no kubelet; hint: add `kube_worker`", "8:5"),
        // Kubernetes.
        case!(Config, InvalidKubeVersion, config("  kubernetes: {kube_version: \"1.31\"}\n"), "invalid kube_version `1.31`; hint: write `vMAJOR.MINOR.PATCH`", "4:30"),
        case!(Config, InvalidHost, config("  kubernetes: {control_plane_endpoint: {host: lb_local}}\n"), "invalid host `lb_local` in `control_plane_endpoint.host`", "4:47"),
        case!(Config, InvalidPort, config("  kubernetes:\n    control_plane_endpoint: {port: 65536}\n"), "invalid port `65536` in `control_plane_endpoint.port`", "5:36"),
        case!(Config, MissingField, config("  kubernetes:\n    control_plane_endpoint: {type: kube-vip}\n"), "missing required field `kube_vip`", "5:29"),
        case!(Config, MissingField, config("  kubernetes:\n    control_plane_endpoint: {type: kube_vip, kube_vip: {address: \"\"}}\n"), "missing required field `address`", "5:56"),
        case!(Config, InvalidIp, config("  kubernetes:\n    control_plane_endpoint: {type: kube-vip, kube_vip: {address: eth0}}\n"), "invalid IP address `eth0` in `kube_vip.address`", "5:66"),
        // Network.
        case!(Config, InvalidCidr, config("  cni: {pod_cidr: 10.233.64.1/18}\n"), "invalid `cni.pod_cidr` `10.233.64.1/18`: host bits are set; did you mean `10.233.64.0/18`?", "4:19"),
        case!(Config, InvalidCidr, config("  cni: {service_cidr: \"10.233.0.0/18,10.96.0.0/12\"}\n"), "both ranges are IPv4", "4:23"),
        case!(Config, InvalidCidr, config("  cni: {service_cidr: 10.233.0.0}\n"), "has no prefix length", "4:23"),
        case!(Config, CidrOverlap, config("  cni: {service_cidr: 10.233.96.0/20}\n"), "service range `10.233.96.0/20` overlaps pod range `10.233.64.0/18`", "4:23"),
        case!(Config, CidrOverlap, config("  cni: {pod_cidr: 10.233.0.0/16}\n"), "overlaps pod range `10.233.0.0/16`", "4:8"),
        case!(Config, MaskTooWide, config("  cni: {ipv4_mask_size: 16}\n"), "`cni.ipv4_mask_size` 16 gives each node a larger range than pod range `10.233.64.0/18`; hint: use a mask size of at least 18", "4:25"),
        case!(Config, MaskTooWide, config("  cni: {pod_cidr: 10.233.64.0/25}\n"), "`cni.ipv4_mask_size` 24", "4:19"),
        case!(Config, MaskTooWide, config("  cni: {pod_cidr: \"10.233.64.0/18,fd00::/112\"}\n"), "`cni.ipv6_mask_size` 64", "4:19"),
        case!(Config, OutOfRange, config("  cni: {max_pods: 0}\n"), "`cni.max_pods` is 0; hint: use a number from 1 to 2147483647", "4:19"),
        case!(Config, OutOfRange, config("  cni: {ipv4_mask_size: 33}\n"), "`cni.ipv4_mask_size` is 33; hint: use a number from 1 to 32", "4:25"),
        case!(Config, TooManyPods, config("  cni: {max_pods: 300}\n"), "`cni.max_pods` 300 is more than the 254 pod addresses a /24 node range holds; hint: lower `cni.max_pods` or `cni.ipv4_mask_size`", "4:8"),
        case!(Config, TooManyPods, config("  cni: {max_pods: 110, ipv4_mask_size: 26}\n"), "more than the 62 pod addresses a /26", "4:40"),
        // Registry and precheck.
        case!(Config, MissingField, config("  image_registry: {type: external}\n"), "missing required field `address`", "4:19"),
        case!(Config, InvalidRegistryAddress, config("  image_registry: {type: external, address: \"https://harbor\"}\n"), "invalid registry address `https://harbor`", "4:45"),
        case!(Config, IncompleteCredentials, config("  image_registry: {type: external, address: harbor, username: admin}\n"), "`image_registry` sets only one of `username` and `password_env`", "4:19"),
        case!(Config, InvalidEnvName, config("  image_registry: {type: external, address: harbor, username: admin, password_env: 1PASS}\n"), "invalid environment variable name `1PASS`", "4:84"),
        case!(Config, RegistryFieldNeedsExternal, config("  image_registry: {address: harbor.local}\n"), "`image_registry.address` is only read with `type: external`", "4:29"),
        case!(Config, RegistryFieldNeedsExternal, config("  image_registry: {ca_file: ca.crt}\n"), "`image_registry.ca_file` is only read with `type: external`", "4:29"),
        case!(Config, RegistryFieldNeedsExternal, config("  image_registry: {harbor: true}\n"), "`image_registry.harbor` is only read with `type: external`", "4:28"),
        case!(Config, EmptyCaFile, config("  image_registry: {type: external, address: harbor, ca_file: \"\"}\n"), "`image_registry.ca_file` is empty", "4:62"),
        case!(Config, InvalidKernelVersion, config("  cluster_require: {min_kernel_version: 5.x}\n"), "invalid min_kernel_version `5.x`", "4:41"),
        // Addons.
        case!(Config, InvalidAddon, config("  addons:\n  - {name: Metrics, sources: {chart: {name: m}}}\n"), "addon `name` `Metrics`: a release name is a lowercase DNS-1123 label", "5:12"),
        case!(Config, InvalidAddon, config("  addons:\n  - {name: m, sources: {chart: {name: m}}}\n  - {name: m, sources: {chart: {name: n}}}\n"), "an earlier addon has this name", "6:12"),
        case!(Config, InvalidAddon, config("  addons:\n  - {name: m, sources: {chart: {name: m, values: [novalue]}}}\n"), "each value is `key=value`", "5:51"),
        case!(Config, MissingField, config("  addons:\n  - {name: m, sources: {}}\n"), "missing required field `chart`", "5:24"),
        // NFS.
        case!(Config, InvalidShareDir, config("  nfs: {share_dir: share}\n"), "invalid nfs.share_dir `share`", "4:20"),
        case!(Config, InvalidShareDir, config("  nfs: {share_dir: /srv/../etc}\n"), "invalid nfs.share_dir `/srv/../etc`", "4:20"),
        case!(Config, InvalidShareDir, config("  nfs: {share_dir: //}\n"), "invalid nfs.share_dir `//`", "4:20"),
        case!(Config, InvalidShareDir, config("  nfs: {share_dir: '/srv/my share'}\n"), "invalid nfs.share_dir `/srv/my share`", "4:20"),
    ]
}

/// The message and its sources, joined as a report would show them.
fn full_message(error: &InventoryError) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

fn parse(case: &Case) -> Result<(), InventoryError> {
    match case.kind {
        Kind::Inventory => Inventory::from_str_named(&case.yaml, "inventory.yaml").map(drop),
        Kind::Config => Config::from_str_named(&case.yaml, "config.yaml").map(drop),
    }
}

#[test]
fn every_validation_error_is_reported_with_its_location() {
    let mut failures = Vec::new();
    for (row, case) in cases().into_iter().enumerate() {
        let Err(error) = parse(&case) else {
            failures.push(format!("row {row}: accepted\n{}", case.yaml));
            continue;
        };
        let message = full_message(&error);
        let file = match case.kind {
            Kind::Inventory => "inventory.yaml",
            Kind::Config => "config.yaml",
        };
        let ok = variant_name(&error) == case.variant
            && message.contains(case.fragment)
            && message.starts_with(&format!("{file}:{}: ", case.at));
        if !ok {
            failures.push(format!(
                "row {row}: expected {} `{}` at {}, got {}\n  {message}",
                case.variant,
                case.fragment,
                case.at,
                variant_name(&error)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn table_covers_every_variant() {
    let rows = cases();
    let missing: Vec<&str> = VARIANTS
        .iter()
        .copied()
        // `Read` has no location; `tests::a_missing_file_is_a_read_error` covers it.
        // `InvalidNodeName` is not a reading error; `tests::node_names_are_refused_with_their_line`.
        .filter(|name| !["Read", "InvalidNodeName"].contains(name))
        .filter(|name| !rows.iter().any(|case| case.variant == *name))
        .collect();
    assert!(missing.is_empty(), "no table row for {missing:?}");
}

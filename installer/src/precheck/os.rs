//! `os.*`: the node's name, distribution, architecture, memory, kernel and kernel modules.

use super::system::{self, Verdict};
use super::version::Version;
use super::{CheckResult, Node, list, mib};
use crate::inventory::{EndpointKind, PrecheckConfig, Role};

/// Distributions kk installs on: `ID` of `/etc/os-release` (lowercased) and the `VERSION_ID`s
/// (a listed `8` also accepts `8.9`).
const SUPPORTED: &[(&str, &[&str])] = &[
    ("debian", &["11", "12"]),
    ("ubuntu", &["20.04", "22.04", "24.04"]),
    ("centos", &["8", "9"]),
    ("rhel", &["8", "9"]),
    ("rocky", &["8", "9"]),
    ("almalinux", &["8", "9"]),
    ("openeuler", &["20.03", "22.03", "24.03"]),
    ("kylin", &["v10"]),
];

/// Architectures the installer and the catalog's binaries exist for.
const ARCHITECTURES: &[&str] = &["amd64", "arm64"];

/// Kernel modules every Kubernetes node needs, which kk's os phase loads (and lists in
/// `/etc/modules-load.d/`): `overlay` for containerd's overlayfs snapshotter, `br_netfilter`
/// for the `net.bridge.bridge-nf-call-*` sysctls.
pub(super) const MODULES: &[&str] = &["overlay", "br_netfilter"];

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![
        hostname(node),
        distribution(node),
        arch(node),
        memory(node),
        kernel(node),
        modules(node),
    ]
}

/// `os.hostname`: the inventory name becomes the node's host name and Kubernetes node name,
/// so it is what is judged, not the current host name (which may differ: the install
/// replaces it). It must be an RFC 1123 subdomain (what the kubelet accepts as a node name;
/// lowercase only, so no two valid inventory names, which are distinct keys, name the same
/// node), and must not be the registry's name (the host of `image_registry.auth.registry`)
/// unless it is the registry host, nor the control-plane endpoint's name unless that name maps
/// to it: kk's `/etc/hosts` block maps every node's name, the registry's and the endpoint's,
/// and one name with two addresses would send image pulls or API requests to either.
fn hostname(node: &Node) -> CheckResult {
    const ID: &str = "os.hostname";
    let name = node.name();
    if let Some(problem) = hostname_problem(name) {
        return CheckResult::fail(
            ID,
            format!(
                "node `{name}`: inventory name `{name}` cannot be a host name: {problem}; fix: rename the host in the inventory (lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit)"
            ),
        );
    }
    let registry = &node.cx.config.registry_address.host;
    if let Some(owner) = registry_host(node)
        && registry.eq_ignore_ascii_case(name)
        && owner != name
    {
        return CheckResult::fail(
            ID,
            format!(
                "node `{name}`: inventory name `{name}` is also the registry's name (the host of `image_registry.auth.registry`), which /etc/hosts maps to the registry host `{owner}`; fix: rename the host in the inventory, or give the registry another name"
            ),
        );
    }
    let endpoint = &node.cx.config.kubernetes.control_plane_endpoint;
    if endpoint.host.eq_ignore_ascii_case(name) {
        // kk's /etc/hosts maps the endpoint's name to the first control plane (`local`), the
        // virtual IP (kube-vip) or, on workers, 127.0.0.1 (haproxy): only the first control
        // plane of `local` may bear it.
        let first = node
            .cx
            .inventory
            .role_members(Role::ControlPlane)
            .first()
            .map(|h| h.name.as_str());
        let shared = matches!(endpoint.kind, EndpointKind::Local) && first == Some(name);
        if !shared {
            return CheckResult::fail(
                ID,
                format!(
                    "node `{name}`: inventory name `{name}` is also the control-plane endpoint's name (`control_plane_endpoint.host`), which /etc/hosts maps to the API servers' address; fix: rename the host in the inventory, or set `control_plane_endpoint.host` to another name"
                ),
            );
        }
    }
    if node.facts.hostname == name {
        CheckResult::pass(ID, format!("host name `{name}`"))
    } else {
        CheckResult::pass(
            ID,
            format!(
                "`{name}` (now `{}`; the install sets it)",
                node.facts.hostname
            ),
        )
    }
}

/// The host kk's registry runs on, as the install plans it: the first of `image_registry`,
/// else the first control plane.
fn registry_host<'a>(node: &Node<'a>) -> Option<&'a str> {
    let inventory = node.cx.inventory;
    inventory
        .role_members(Role::ImageRegistry)
        .into_iter()
        .chain(inventory.role_members(Role::ControlPlane))
        .next()
        .map(|host| host.name.as_str())
}

/// Why `name` is not an RFC 1123 host name, if it is not.
fn hostname_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 253 {
        return Some(format!("it has {} characters, not 1 to 253", name.len()));
    }
    name.split('.').find_map(|label| {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        if label.is_empty() || label.len() > 63 {
            Some(format!("label `{label}` is not 1 to 63 characters"))
        } else if !label.chars().all(|c| alnum(c) || c == '-') {
            Some(format!(
                "label `{label}` has characters other than a-z, 0-9 and `-`"
            ))
        } else if !label.starts_with(alnum) || !label.ends_with(alnum) {
            Some(format!(
                "label `{label}` does not start and end with a letter or digit"
            ))
        } else {
            None
        }
    })
}

/// `os.distribution`: a supported distribution, or a warning when the config allows others.
fn distribution(node: &Node) -> CheckResult {
    const ID: &str = "os.distribution";
    let os = &node.facts.os;
    let shown = if os.pretty_name.is_empty() {
        format!("{} {}", os.id, os.version_id)
    } else {
        os.pretty_name.clone()
    };
    if os.id.is_empty() {
        return CheckResult::fail(
            ID,
            "cannot tell the distribution: `/etc/os-release` is missing or has no `ID`; fix: restore `/etc/os-release`",
        );
    }
    if is_supported(&os.id, &os.version_id) {
        return CheckResult::pass(ID, shown);
    }
    let message = format!(
        "{shown} (`{} {}`) is not a supported distribution ({})",
        os.id,
        os.version_id,
        supported_list()
    );
    if node.cx.config.precheck.allow_unsupported_distribution {
        CheckResult::warn(
            ID,
            format!(
                "{message}; installing anyway as `allow_unsupported_distribution_setup` is set"
            ),
        )
    } else {
        CheckResult::fail(
            ID,
            format!(
                "{message}; fix: use a supported distribution, or set `cluster_require.allow_unsupported_distribution_setup: true` to try anyway"
            ),
        )
    }
}

fn is_supported(id: &str, version_id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    let version_id = version_id.to_ascii_lowercase();
    SUPPORTED.iter().any(|(name, versions)| {
        *name == id
            && versions.iter().any(|v| {
                version_id == *v
                    || version_id
                        .strip_prefix(v)
                        .is_some_and(|rest| rest.starts_with('.'))
            })
    })
}

fn supported_list() -> String {
    SUPPORTED
        .iter()
        .map(|(name, versions)| format!("{name} {}", versions.join("/")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `os.arch`: amd64 or arm64.
fn arch(node: &Node) -> CheckResult {
    const ID: &str = "os.arch";
    let arch = node.facts.arch();
    if ARCHITECTURES.contains(&arch) {
        CheckResult::pass(ID, arch)
    } else {
        CheckResult::fail(
            ID,
            format!(
                "architecture `{arch}` is not supported (amd64, arm64); fix: use an amd64 or arm64 machine"
            ),
        )
    }
}

/// `os.memory`: the configured minimum of the node's role (the control plane's when it is
/// both); in MiB, see the module docs.
fn memory(node: &Node) -> CheckResult {
    const ID: &str = "os.memory";
    let require = &node.cx.config.precheck;
    let roles = node.host.roles;
    let (minimum, role, key) = if roles.is_control_plane() {
        (
            require.min_control_plane_memory_mb,
            "control-plane node",
            "minimal_master_memory_mb",
        )
    } else if node.is_kubernetes() {
        (
            require.min_worker_memory_mb,
            "worker",
            "minimal_node_memory_mb",
        )
    } else {
        return CheckResult::skip(ID, "not a Kubernetes node");
    };
    let found = mib(node.facts.memory_bytes);
    if found >= minimum {
        CheckResult::pass(ID, format!("{found} MiB (a {role} needs {minimum} MiB)"))
    } else {
        CheckResult::fail(
            ID,
            format!(
                "{found} MiB of memory, less than the {minimum} MiB a {role} needs; fix: add memory, or lower `cluster_require.{key}`"
            ),
        )
    }
}

/// `os.kernel`: a kernel the kubeadm of the version to install accepts, on Kubernetes nodes
/// (its `SystemVerification` preflight: [`super::system`]), a refusal failing and a warning
/// warning; and at least `cluster_require.min_kernel_version` where the config sets one.
///
/// KubeKey's default minimum (4.9.17) is no floor of its own on Kubernetes nodes: kubeadm
/// v1.29 – v1.31 accept 3.10, v1.32 and v1.33 refuse anything below 4.19 (RHEL 8's 4.18
/// included), and from v1.34 kubeadm warns about any kernel outside its list. The config keeps
/// no trace of whether the minimum was written, so a config writing exactly the default is
/// read as one that does not. Nodes outside Kubernetes (etcd, the registry, nfs) run no kubeadm:
/// the minimum, default or not, is theirs.
fn kernel(node: &Node) -> CheckResult {
    const ID: &str = "os.kernel";
    let name = node.name();
    let found = &node.facts.kernel;
    let Some(version) = Version::find(found) else {
        return CheckResult::fail(
            ID,
            format!(
                "node `{name}`: cannot read the kernel version from `{found}` (`uname -r`); fix: check `uname -r` on the node"
            ),
        );
    };
    let configured = node.cx.config.precheck.min_kernel_version;
    let set = configured != PrecheckConfig::default().min_kernel_version;
    let minimum = Version::new(configured.major, configured.minor, configured.patch);
    if (set || !node.is_kubernetes()) && version < minimum {
        return CheckResult::fail(
            ID,
            format!(
                "node `{name}` has kernel `{found}`, older than `cluster_require.min_kernel_version` {configured}; fix: upgrade the kernel, or lower `cluster_require.min_kernel_version`"
            ),
        );
    }
    if !node.is_kubernetes() {
        return CheckResult::pass(
            ID,
            format!("`{found}` (at least {configured}; no kubeadm runs here)"),
        );
    }
    let release = node.cx.kube_version().map(Version::from);
    let judged = system::kernel(release, version);
    let whose = match release {
        Some(_) => format!("kubeadm v{}", judged.release),
        None => format!(
            "kubeadm v{} (the version to install is unknown; this is the strictest verdict of the versions kk installs)",
            judged.release
        ),
    };
    let accepted = judged.accepted;
    match judged.verdict {
        Verdict::Accepts => {
            CheckResult::pass(ID, format!("`{found}` ({whose} accepts {accepted})"))
        }
        Verdict::Warns => CheckResult::warn(
            ID,
            format!(
                "node `{name}` has kernel `{found}`, which {whose} does not list ({accepted}): its `SystemVerification` preflight warns, and the install goes on; fix: move to a kernel it lists to stay on tested ground"
            ),
        ),
        Verdict::Refuses => CheckResult::fail(
            ID,
            format!(
                "node `{name}` has kernel `{found}`, which {whose} refuses (it accepts {accepted}; its `SystemVerification` preflight fails); fix: upgrade the kernel (or install a Kubernetes version whose kubeadm accepts it)"
            ),
        ),
    }
}

/// `os.modules`: [`MODULES`] are available (see [`super::ESTABLISHED_BY_OS`]).
fn modules(node: &Node) -> CheckResult {
    const ID: &str = "os.modules";
    if !node.is_kubernetes() {
        return CheckResult::skip(ID, "not a Kubernetes node");
    }
    let missing: Vec<&str> = MODULES
        .iter()
        .copied()
        .filter(|m| !node.facts.has_module(m))
        .collect();
    if missing.is_empty() {
        return CheckResult::pass(ID, format!("{} loaded", list(MODULES)));
    }
    node.unmet_until_os(
        ID,
        &format!("{} not loaded", list(&missing)),
        "`modprobe` them and list them in /etc/modules-load.d/kubernetes.conf",
    )
}

#[cfg(test)]
mod tests {
    use super::super::Stage::{AfterOs, BeforeInstall};
    use super::super::Status;
    use super::super::Status::{Fail, Pass, SetByInstall, Skip, Warn};
    use super::super::fixtures::{Fixture, config, expect, inventory};

    #[test]
    fn hostnames() {
        for (name, problem) in [
            ("node1", None),
            ("a.b-c.d9", None),
            ("-node", Some("start and end")),
            ("node-", Some("start and end")),
            ("no_de", Some("other than")),
            ("a..b", Some("1 to 63")),
        ] {
            let found = super::hostname_problem(name);
            match problem {
                None => assert_eq!(found, None, "{name}"),
                Some(words) => assert!(found.is_some_and(|f| f.contains(words)), "{name}"),
            }
        }
        assert!(super::hostname_problem(&"a".repeat(64)).is_some());
        assert_eq!(super::hostname_problem(&"a".repeat(63)), None);
        let long = ["a".repeat(63).as_str(); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(super::hostname_problem(&long).is_some_and(|p| p.contains("253")));

        // Upper case is refused (a node name is lowercase): two valid inventory names, being
        // distinct keys, never name the same node.
        assert!(super::hostname_problem("Node1").is_some_and(|p| p.contains("other than")));

        let mut fixture = Fixture::three_nodes();
        // The current host name differs: the inventory name is what the install sets.
        expect(
            &fixture.on("node1", "os.hostname"),
            Pass,
            &["`node1`", "now `debian`"],
        );
        fixture.node("node1").hostname = "node1".to_owned();
        expect(
            &fixture.on("node1", "os.hostname"),
            Pass,
            &["host name `node1`"],
        );
        // The inventory name is judged, whatever the current host name.
        fixture.inventory =
            inventory(&super::super::fixtures::INVENTORY.replace("node3", "node_3"));
        fixture
            .facts
            .insert("node_3".to_owned(), fixture.facts["node3"].clone());
        fixture.node("node_3").hostname = "node3".to_owned();
        expect(
            &fixture.on("node_3", "os.hostname"),
            Fail,
            &[
                "node `node_3`: inventory name `node_3` cannot be a host name",
                "fix: rename",
            ],
        );
    }

    /// The registry's name is mapped in /etc/hosts to the registry host: another node may not
    /// bear it.
    #[test]
    fn hostnames_clashing_with_the_registry_name() {
        let mut fixture = Fixture::three_nodes();
        fixture.config = config("  image_registry: {auth: {registry: 'node2:5000'}}\n");
        expect(
            &fixture.on("node2", "os.hostname"),
            Fail,
            &[
                "node `node2`",
                "also the registry's name",
                "registry host `node1`",
                "fix: ",
            ],
        );
        // The registry host itself may.
        fixture.config = config("  image_registry: {auth: {registry: 'node1:5000'}}\n");
        expect(&fixture.on("node1", "os.hostname"), Pass, &[]);
        expect(&fixture.on("node2", "os.hostname"), Pass, &[]);
    }

    /// The control-plane endpoint's name is mapped in /etc/hosts to the API servers: only the
    /// control plane it maps to (the first, with `type: local`) may bear it.
    #[test]
    fn hostnames_clashing_with_the_endpoint_name() {
        let mut fixture = Fixture::three_nodes();
        fixture.config = config("  kubernetes: {control_plane_endpoint: {host: node2}}\n");
        expect(
            &fixture.on("node2", "os.hostname"),
            Fail,
            &["node `node2`", "control-plane endpoint's name", "fix: "],
        );
        fixture.config = config("  kubernetes: {control_plane_endpoint: {host: NODE1}}\n");
        expect(&fixture.on("node1", "os.hostname"), Pass, &[]);
        fixture.config = config(
            "  kubernetes:\n    control_plane_endpoint:\n      host: node1\n      type: kube-vip\n      kube_vip: {address: 10.0.0.100}\n",
        );
        expect(
            &fixture.on("node1", "os.hostname"),
            Fail,
            &["control-plane endpoint's name"],
        );
    }

    #[test]
    fn distributions() {
        let mut fixture = Fixture::three_nodes();
        for (id, version, status) in [
            ("debian", "12", Pass),
            ("debian", "10", Fail),
            ("ubuntu", "22.04", Pass),
            ("ubuntu", "22.10", Fail),
            ("rocky", "9.3", Pass),
            ("rhel", "8", Pass),
            ("rhel", "80", Fail),
            ("openEuler", "22.03", Pass),
            ("kylin", "V10", Pass),
            ("arch", "", Fail),
            ("", "", Fail),
        ] {
            fixture.node("node1").os.id = id.to_owned();
            fixture.node("node1").os.version_id = version.to_owned();
            fixture.node("node1").os.pretty_name = String::new();
            let result = fixture.on("node1", "os.distribution");
            assert_eq!(result.status, status, "{id} {version}: {result:?}");
        }
        fixture.config =
            config("  cluster_require: {allow_unsupported_distribution_setup: true}\n");
        expect(
            &fixture.on("node1", "os.distribution"),
            Fail,
            &["os-release"],
        );
        fixture.node("node1").os.id = "gentoo".to_owned();
        expect(
            &fixture.on("node1", "os.distribution"),
            Warn,
            &["gentoo", "anyway"],
        );
    }

    #[test]
    fn architectures() {
        let mut fixture = Fixture::three_nodes();
        for (machine, status) in [("x86_64", Pass), ("aarch64", Pass), ("riscv64", Fail)] {
            fixture.node("node1").machine = machine.to_owned();
            assert_eq!(fixture.on("node1", "os.arch").status, status, "{machine}");
        }
        expect(&fixture.on("node1", "os.arch"), Fail, &["riscv64", "amd64"]);
    }

    #[test]
    fn memory_by_role_in_mib() {
        let mut fixture = Fixture::three_nodes();
        // Control plane: 1700 MiB by default; exactly that passes, a MiB less fails.
        fixture.node("node1").memory_bytes = 1700 << 20;
        expect(&fixture.on("node1", "os.memory"), Pass, &["1700 MiB"]);
        fixture.node("node1").memory_bytes = (1700 << 20) - 1;
        expect(
            &fixture.on("node1", "os.memory"),
            Fail,
            &[
                "1699 MiB",
                "1700 MiB",
                "control-plane",
                "minimal_master_memory_mb",
            ],
        );
        // Worker: 1024 MiB.
        fixture.node("node2").memory_bytes = 1024 << 20;
        expect(&fixture.on("node2", "os.memory"), Pass, &["worker"]);
        fixture.node("node2").memory_bytes = 1000 << 20;
        expect(
            &fixture.on("node2", "os.memory"),
            Fail,
            &["1000 MiB", "minimal_node_memory_mb"],
        );
        fixture.config = config("  cluster_require: {minimal_node_memory_mb: 900}\n");
        expect(&fixture.on("node2", "os.memory"), Pass, &["900 MiB"]);
    }

    #[test]
    fn memory_is_skipped_off_kubernetes() {
        let mut fixture = Fixture::three_nodes();
        fixture.inventory = inventory(
            "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {}\n    store: {}\n  groups:\n    kube_control_plane: {hosts: [node1]}\n    nfs: {hosts: [store]}\n",
        );
        fixture
            .facts
            .insert("store".to_owned(), fixture.facts["node1"].clone());
        expect(
            &fixture.on("store", "os.memory"),
            Skip,
            &["not a Kubernetes node"],
        );
    }

    /// On a Kubernetes node, the kernel as the kubeadm of the version to install judges it
    /// (the bundle's v1.31.4 in the fixture, else the row's): KubeKey's 4.9.17 is no floor.
    #[test]
    fn kernels_by_kubernetes_version() {
        let table: &[(Option<&str>, &str, Status, &[&str])] = &[
            (
                None,
                "6.1.0-18-amd64",
                Pass,
                &["kubeadm v1.31.4 accepts 3.10 or newer"],
            ),
            (None, "4.9.17", Pass, &[]),
            // Below KubeKey's default, yet kubeadm v1.31 accepts it: the default is no floor.
            (None, "4.4.0", Pass, &[]),
            (None, "3.10.0-1160.el7.x86_64", Pass, &[]),
            (
                None,
                "3.9.0",
                Fail,
                &[
                    "node `node2` has kernel `3.9.0`",
                    "kubeadm v1.31.4 refuses",
                    "3.10 or newer",
                    "fix: ",
                ],
            ),
            (None, "", Fail, &["cannot read the kernel version from ``"]),
            (
                Some("v1.32.0"),
                "4.9.17",
                Fail,
                &["kubeadm v1.32.0 refuses", "4.19 or newer"],
            ),
            (
                Some("v1.32.0"),
                "4.18.0-553.el8_10.x86_64",
                Fail,
                &["`4.18.0-553.el8_10.x86_64`"],
            ),
            (
                Some("v1.33.1"),
                "4.19.90-52.22.v2207.ky10.x86_64",
                Pass,
                &[],
            ),
            (Some("v1.33.1"), "5.14.0-362.el9.x86_64", Pass, &[]),
            (
                Some("v1.34.0"),
                "5.14.0-362.el9.x86_64",
                Warn,
                &[
                    "node `node2`",
                    "kubeadm v1.34.0 does not list",
                    "5.4, 5.10, 5.15, or 6 and newer",
                    "goes on",
                    "fix: ",
                ],
            ),
            (Some("v1.34.0"), "4.18.0", Warn, &[]),
            (Some("v1.35.0"), "5.15.0-91-generic", Pass, &[]),
            (Some("v1.35.0"), "6.8.0-31-generic", Pass, &[]),
        ];
        for (version, kernel, status, words) in table {
            let mut fixture = Fixture::three_nodes();
            if let Some(version) = version {
                fixture.bundle.kubernetes_version = Some((*version).to_owned());
            }
            fixture.node("node2").kernel = (*kernel).to_owned();
            expect(&fixture.on("node2", "os.kernel"), *status, words);
        }
        // The version to install unknown: the strictest verdict of the versions kk installs.
        let mut fixture = Fixture::three_nodes();
        fixture.bundle.kubernetes_version = None;
        fixture.node("node2").kernel = "4.18.0".to_owned();
        expect(
            &fixture.on("node2", "os.kernel"),
            Fail,
            &[
                "kubeadm v1.32.0 (the version to install is unknown",
                "refuses",
            ],
        );
        fixture.node("node2").kernel = "5.14.0".to_owned();
        expect(
            &fixture.on("node2", "os.kernel"),
            Warn,
            &["kubeadm v1.34.0"],
        );
    }

    /// A `min_kernel_version` the config sets is a floor besides kubeadm's; off Kubernetes,
    /// where no kubeadm runs, the minimum (default or set) is the only floor.
    #[test]
    fn the_configured_minimum() {
        let mut fixture = Fixture::three_nodes();
        fixture.config = config("  cluster_require: {min_kernel_version: 5.10}\n");
        fixture.node("node2").kernel = "5.4.0-150-generic".to_owned();
        expect(
            &fixture.on("node2", "os.kernel"),
            Fail,
            &[
                "node `node2` has kernel `5.4.0-150-generic`",
                "`cluster_require.min_kernel_version` 5.10.0",
                "fix: ",
            ],
        );
        fixture.node("node2").kernel = "5.10.0-28-amd64".to_owned();
        expect(
            &fixture.on("node2", "os.kernel"),
            Pass,
            &["kubeadm v1.31.4"],
        );
        // Set lower than kubeadm's floor, kubeadm still refuses.
        fixture.config = config("  cluster_require: {min_kernel_version: 4.0}\n");
        fixture.bundle.kubernetes_version = Some("v1.32.0".to_owned());
        fixture.node("node2").kernel = "4.18.0".to_owned();
        expect(
            &fixture.on("node2", "os.kernel"),
            Fail,
            &["kubeadm v1.32.0 refuses"],
        );

        let mut fixture = Fixture::three_nodes();
        fixture.inventory = inventory(
            "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {}\n    store: {}\n  groups:\n    kube_control_plane: {hosts: [node1]}\n    nfs: {hosts: [store]}\n",
        );
        fixture
            .facts
            .insert("store".to_owned(), fixture.facts["node1"].clone());
        fixture.node("store").kernel = "4.9.16".to_owned();
        expect(
            &fixture.on("store", "os.kernel"),
            Fail,
            &["4.9.17", "min_kernel_version"],
        );
        fixture.node("store").kernel = "4.9.17".to_owned();
        expect(
            &fixture.on("store", "os.kernel"),
            Pass,
            &["no kubeadm runs here"],
        );
    }

    /// `overlay` and `br_netfilter`, loaded or evidently built in; else the install's to load.
    #[test]
    fn modules_loaded_or_built_in() {
        /// `/proc/modules`, `/proc/filesystems`, whether `net.bridge.*` exists, what is missing.
        type Row = (
            &'static [&'static str],
            &'static [&'static str],
            bool,
            Option<&'static str>,
        );
        let table: &[Row] = &[
            (&["overlay", "br_netfilter"], &[], false, None),
            (&["br_netfilter"], &["ext4", "overlay"], false, None),
            (&[], &["overlay"], true, None),
            (&["overlay"], &[], false, Some("`br_netfilter`")),
            (&[], &["ext4"], true, Some("`overlay`")),
            (
                &[],
                &[],
                false,
                Some("`overlay`, `br_netfilter` not loaded"),
            ),
        ];
        for (modules, filesystems, bridge, missing) in table {
            let mut fixture = Fixture::three_nodes();
            let facts = fixture.node("node2");
            facts.modules = modules.iter().map(|m| (*m).to_owned()).collect();
            facts.filesystems = filesystems.iter().map(|m| (*m).to_owned()).collect();
            if !bridge {
                facts
                    .sysctls
                    .retain(|key, _| !key.starts_with("net.bridge."));
            }
            let (before, after) = (
                fixture.on_at("node2", "os.modules", BeforeInstall),
                fixture.on_at("node2", "os.modules", AfterOs),
            );
            match missing {
                None => {
                    expect(&before, Pass, &["loaded"]);
                    assert_eq!(before, after);
                }
                Some(words) => {
                    expect(&before, SetByInstall, &["set by the install: now", words]);
                    expect(&after, Fail, &[words, "modules-load.d"]);
                }
            }
        }
    }
}

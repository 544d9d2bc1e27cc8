//! `os.*`: the node's name, distribution, architecture, memory, kernel and kernel modules.

use super::version::Version;
use super::{CheckResult, Node, list, mib};

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

/// `os.hostname`: the inventory name becomes the node's host name and Kubernetes node name.
fn hostname(node: &Node) -> CheckResult {
    const ID: &str = "os.hostname";
    let name = node.name();
    match hostname_problem(name) {
        Some(problem) => CheckResult::fail(
            ID,
            format!(
                "inventory name `{name}` cannot be a host name: {problem}; fix: rename the host in the inventory (lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit)"
            ),
        ),
        None if node.facts.hostname == name => CheckResult::pass(ID, format!("host name `{name}`")),
        None => CheckResult::pass(
            ID,
            format!(
                "`{name}` (now `{}`; the install sets it)",
                node.facts.hostname
            ),
        ),
    }
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

/// `os.kernel`: at least `min_kernel_version`.
fn kernel(node: &Node) -> CheckResult {
    const ID: &str = "os.kernel";
    let minimum = node.cx.config.precheck.min_kernel_version;
    let minimum_version = Version::new(minimum.major, minimum.minor, minimum.patch);
    let found = &node.facts.kernel;
    match Version::find(found) {
        Some(version) if version >= minimum_version => {
            CheckResult::pass(ID, format!("{found} (at least {minimum})"))
        }
        Some(_) => CheckResult::fail(
            ID,
            format!(
                "kernel {found} is older than {minimum}; fix: upgrade the kernel, or lower `cluster_require.min_kernel_version`"
            ),
        ),
        None => CheckResult::fail(
            ID,
            format!(
                "cannot read the kernel version from `{found}` (`uname -r`); fix: check `uname -r` on the node"
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

        let fixture = Fixture::three_nodes();
        expect(
            &fixture.on("node1", "os.hostname"),
            Pass,
            &["`node1`", "now `debian`"],
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

    #[test]
    fn kernels() {
        let mut fixture = Fixture::three_nodes();
        for (kernel, status) in [
            ("6.1.0-18-amd64", Pass),
            ("4.9.17", Pass),
            ("4.9.16-generic", Fail),
            ("3.10.0-1160.el7.x86_64", Fail),
            ("", Fail),
        ] {
            fixture.node("node1").kernel = kernel.to_owned();
            assert_eq!(fixture.on("node1", "os.kernel").status, status, "{kernel}");
        }
        fixture.node("node1").kernel = "4.4.0".to_owned();
        expect(
            &fixture.on("node1", "os.kernel"),
            Fail,
            &["4.4.0", "4.9.17", "min_kernel_version"],
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

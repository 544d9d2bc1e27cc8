//! `kubeadm.*`: what `kubeadm init`/`join` preflight checks, judged before kubeadm runs so
//! that every node's problems are reported at once.

use super::kubernetes::MIN_VERSION;
use super::own::{self, Component, Holder};
use super::packages::{Command, from_bundle, set_by_packages};
use super::system::{self, CGROUP_V1_MAINTENANCE, CGROUP_V1_REFUSED, Verdict};
use super::version::Version;
use super::{CheckResult, Node, Status, list, mib};
use crate::inventory::{EndpointKind, EtcdDeploymentType, KubeProxyMode};

/// kubeadm's own minimum memory for a control-plane node, in MiB.
pub(super) const KUBEADM_MEMORY_MIB: u64 = 1700;

/// kubeadm's minimum CPUs for a control-plane node.
pub(super) const KUBEADM_CPUS: u32 = 2;

/// How kubeadm's preflight treats a command missing from `PATH` (its `InPathCheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// `mandatory: true`: an error, preflight stops.
    Mandatory,
    /// `mandatory: false`: a warning.
    Optional,
}

/// The commands kubeadm's preflight looks for on `PATH` on Linux (`InPathCheck`s added by
/// `addCommonChecks`, through `addExecChecks` of `checks_linux.go`), for every `kubeadm init`
/// and `kubeadm join`, and how, at the release that installs `version`:
///
/// - `ip`, `iptables`, `mount`, `nsenter` mandatory; `ebtables`, `ethtool`, `socat`, `tc`,
///   `touch` optional, unchanged across v1.29 – v1.33.
/// - `conntrack` mandatory below v1.32: kube-proxy 1.32 clears conntrack entries over netlink
///   (kubernetes#126847), and kubeadm 1.32 adds the check only for a version below 1.32
///   (kubernetes#126953; a `join`, which passes no version, does not check it at all).
/// - `crictl` mandatory up to v1.30 (kubeadm shelled out to it for every CRI action); optional
///   in v1.31, where kubeadm moved to the CRI client library (kubernetes#124685); gone from
///   v1.32 (kubernetes#126596).
fn in_path_checks(version: Version) -> Vec<(&'static str, Need)> {
    let mut checks = Vec::new();
    if version < Version::new(1, 31, 0) {
        checks.push(("crictl", Need::Mandatory));
    } else if version < Version::new(1, 32, 0) {
        checks.push(("crictl", Need::Optional));
    }
    if version < Version::new(1, 32, 0) {
        checks.push(("conntrack", Need::Mandatory));
    }
    checks.extend([
        ("ip", Need::Mandatory),
        ("iptables", Need::Mandatory),
        ("mount", Need::Mandatory),
        ("nsenter", Need::Mandatory),
        ("ebtables", Need::Optional),
        ("ethtool", Need::Optional),
        ("socat", Need::Optional),
        ("tc", Need::Optional),
        ("touch", Need::Optional),
    ]);
    checks
}

/// Every command [`in_path_checks`] names for some version kk installs: what the fact script
/// looks for, and what a healthy fixture node has.
#[cfg(test)]
pub(crate) const COMMANDS: &[&str] = &[
    "crictl",
    "conntrack",
    "ip",
    "iptables",
    "mount",
    "nsenter",
    "ebtables",
    "ethtool",
    "socat",
    "tc",
    "touch",
];

/// Commands the bundle carries and the install puts on every Kubernetes node before kubeadm
/// runs (the runtime phase installs `crictl` with containerd).
const FROM_BUNDLE: &[&str] = &["crictl"];

/// Kernel modules kube-proxy's IPVS mode needs.
pub(super) const IPVS_MODULES: &[&str] =
    &["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack"];

/// Ports kubeadm checks, and which nodes need them free.
#[derive(Debug, Clone, Copy)]
enum PortUser {
    /// Every Kubernetes node (the kubelet).
    Kubernetes,
    /// Control-plane nodes.
    ControlPlane,
    /// etcd members.
    Etcd,
}

/// One fixed port kubeadm checks: the port, who it is for (in messages), which nodes need it,
/// and kk's component that listens on it once installed.
type Port = (u16, &'static str, PortUser, Component);

/// The fixed ports kubeadm checks besides the API server's, which is the configured
/// `control_plane_endpoint.port` (see [`api_server_port`]).
const PORTS: &[Port] = &[
    (
        10250,
        "the kubelet",
        PortUser::Kubernetes,
        Component::Kubelet,
    ),
    (
        10257,
        "kube-controller-manager",
        PortUser::ControlPlane,
        Component::ControllerManager,
    ),
    (
        10259,
        "kube-scheduler",
        PortUser::ControlPlane,
        Component::Scheduler,
    ),
    (2379, "etcd clients", PortUser::Etcd, Component::Etcd),
    (2380, "etcd peers", PortUser::Etcd, Component::Etcd),
];

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    let mut results = vec![root(node), cpu(node), memory(node), api_server_port(node)];
    let api = node.cx.config.kubernetes.control_plane_endpoint.port;
    results.extend(
        PORTS
            .iter()
            .filter(|&&(port, ..)| port != api)
            .map(|port| port_free(node, port)),
    );
    results.extend([
        on_kubernetes(node, "kubeadm.manifests", manifests),
        on_kubernetes(node, "kubeadm.swap", swap),
        on_kubernetes(node, "kubeadm.ip_forward", ip_forward),
        on_kubernetes(node, "kubeadm.commands", commands),
        on_kubernetes(node, "kubeadm.cgroups", cgroups),
        on_kubernetes(node, "kubeadm.hostname_resolves", hostname_resolves),
        etcd_data_dir(node),
        on_kubernetes(node, "kubeadm.ipvs_modules", ipvs_modules),
    ]);
    results
}

/// `rule` on Kubernetes nodes; `skip` elsewhere.
fn on_kubernetes(node: &Node, id: &str, rule: fn(&Node, &str) -> CheckResult) -> CheckResult {
    if node.is_kubernetes() {
        rule(node, id)
    } else {
        CheckResult::skip(id, "not a Kubernetes node")
    }
}

/// `kubeadm.root`: commands run as root (directly or through sudo).
fn root(node: &Node) -> CheckResult {
    const ID: &str = "kubeadm.root";
    match node.facts.uid {
        0 => CheckResult::pass(ID, "commands run as root"),
        uid => CheckResult::fail(
            ID,
            format!(
                "commands run as uid {uid}, not root; fix: connect as root, or as a user allowed to `sudo` without a password"
            ),
        ),
    }
}

/// `kubeadm.cpu`: two CPUs on the control plane.
fn cpu(node: &Node) -> CheckResult {
    const ID: &str = "kubeadm.cpu";
    if !node.host.roles.is_control_plane() {
        return CheckResult::skip(ID, "not a control-plane node");
    }
    let cpus = node.facts.cpus;
    if cpus >= KUBEADM_CPUS {
        CheckResult::pass(ID, format!("{cpus} CPUs"))
    } else {
        CheckResult::fail(
            ID,
            format!(
                "{cpus} CPU(s), fewer than the {KUBEADM_CPUS} kubeadm requires of a control-plane node; fix: give the node {KUBEADM_CPUS} or more CPUs"
            ),
        )
    }
}

/// `kubeadm.memory`: kubeadm's 1700 MiB on the control plane, whatever the config says.
fn memory(node: &Node) -> CheckResult {
    const ID: &str = "kubeadm.memory";
    if !node.host.roles.is_control_plane() {
        return CheckResult::skip(ID, "not a control-plane node");
    }
    let found = mib(node.facts.memory_bytes);
    if found >= KUBEADM_MEMORY_MIB {
        CheckResult::pass(ID, format!("{found} MiB"))
    } else {
        CheckResult::fail(
            ID,
            format!(
                "{found} MiB of memory, less than the {KUBEADM_MEMORY_MIB} MiB kubeadm requires of a control-plane node; fix: add memory"
            ),
        )
    }
}

/// `kubeadm.port.<control_plane_endpoint.port>`: the port every API server listens on (kk
/// makes it the endpoint's port, 6443 by default) is free on the control plane, and, with
/// `type: haproxy`, on the workers, whose local haproxy listens on it. A port another
/// component needs (the kubelet's, etcd's, kk's registry's on its host) fails as a clash.
fn api_server_port(node: &Node) -> CheckResult {
    let port = node.cx.config.kubernetes.control_plane_endpoint.port;
    let id = format!("kubeadm.port.{port}");
    let haproxy = matches!(
        node.cx.config.kubernetes.control_plane_endpoint.kind,
        EndpointKind::Haproxy
    );
    let (user, component) = if node.host.roles.is_control_plane() {
        ("kube-apiserver", Component::ApiServer)
    } else if haproxy && node.is_kubernetes() {
        (
            "the local haproxy in front of the API servers",
            Component::Haproxy,
        )
    } else if let Some(other) = PORTS.iter().find(|&&(other, ..)| other == port) {
        // Not the API server's here, but still that component's (which fails the clash on the
        // control plane).
        return port_free(node, other);
    } else if haproxy {
        return CheckResult::skip(id, "not a Kubernetes node");
    } else {
        return CheckResult::skip(id, "not a control-plane node");
    };
    let clash = PORTS
        .iter()
        .find(|&&(other, _, who, _)| other == port && port_needed(node, who))
        .map(|&(_, other_user, ..)| other_user)
        .or_else(|| {
            (super::airgap::runs_registry(node) && node.cx.config.registry_address.port == port)
                .then_some("kk's registry")
        });
    if let Some(other) = clash {
        return CheckResult::fail(
            id,
            format!(
                "node `{}`: port `{port}` (`control_plane_endpoint.port`) is for {user}, but it is also the port of {other}; fix: set `kubernetes.control_plane_endpoint.port` to a free port (6443 is kubeadm's default)",
                node.name()
            ),
        );
    }
    match own::port(node, port, component) {
        Holder::Free => CheckResult::pass(id, format!("{port} free for {user}")),
        Holder::Own(detail) => CheckResult::pass(id, detail),
        Holder::Other(who) => CheckResult::fail(
            id,
            format!(
                "node `{}`: port `{port}` (`control_plane_endpoint.port`), needed by {user}, is in use ({who}); fix: stop it (`ss -ltnp 'sport = :{port}'` names it), reset the old cluster, or choose another `control_plane_endpoint.port`",
                node.name(),
            ),
        ),
    }
}

/// Whether the node needs the ports of `who` free.
fn port_needed(node: &Node, who: PortUser) -> bool {
    match who {
        PortUser::Kubernetes => node.is_kubernetes(),
        PortUser::ControlPlane => node.host.roles.is_control_plane(),
        PortUser::Etcd => node.is_etcd_member(),
    }
}

/// `kubeadm.port.<n>`: the port is free on the nodes that will listen on it, or held by kk's
/// own component there (a node kk installed).
fn port_free(node: &Node, &(port, user, who, component): &Port) -> CheckResult {
    let id = format!("kubeadm.port.{port}");
    let (applies, reason) = match who {
        PortUser::Kubernetes => (node.is_kubernetes(), "not a Kubernetes node"),
        PortUser::ControlPlane => (
            node.host.roles.is_control_plane(),
            "not a control-plane node",
        ),
        PortUser::Etcd => (node.is_etcd_member(), "not an etcd member"),
    };
    if !applies {
        return CheckResult::skip(id, reason);
    }
    match own::port(node, port, component) {
        Holder::Free => CheckResult::pass(id, format!("{port} free for {user}")),
        Holder::Own(detail) => CheckResult::pass(id, detail),
        Holder::Other(who) => CheckResult::fail(
            id,
            format!(
                "port {port}, needed by {user}, is in use ({who}); fix: stop it (`ss -ltnp 'sport = :{port}'` names it), or reset the old cluster"
            ),
        ),
    }
}

/// `kubeadm.manifests`: no static pod manifests are left over, but kk's own on a node it
/// installed.
fn manifests(node: &Node, id: &str) -> CheckResult {
    let pods = &node.facts.static_pods;
    if pods.is_empty() {
        CheckResult::pass(id, "/etc/kubernetes/manifests is empty")
    } else if own::manifests(node) {
        CheckResult::pass(
            id,
            format!("/etc/kubernetes/manifests holds kk's own {}", list(pods)),
        )
    } else {
        CheckResult::fail(
            id,
            format!(
                "/etc/kubernetes/manifests already holds {}; fix: `kubeadm reset` the old cluster, or remove the files",
                list(pods)
            ),
        )
    }
}

/// `kubeadm.swap`: swap is off (kk's os phase turns it off: see [`super::ESTABLISHED_BY_OS`]).
fn swap(node: &Node, id: &str) -> CheckResult {
    let swap = node.facts.swap_bytes;
    if swap == 0 {
        CheckResult::pass(id, "swap is off")
    } else {
        node.unmet_until_os(
            id,
            &format!("swap is on ({} MiB)", mib(swap)),
            "`swapoff -a` and remove the swap entries from /etc/fstab",
        )
    }
}

/// `kubeadm.ip_forward`: IPv4 forwarding, and IPv6 forwarding on a node that uses IPv6 (kubeadm
/// reads `conf/default`, routing goes by `conf/all`: kk's os phase sets both).
fn ip_forward(node: &Node, id: &str) -> CheckResult {
    let mut keys = vec!["net.ipv4.ip_forward"];
    if node.uses_ipv6() {
        keys.extend([
            "net.ipv6.conf.all.forwarding",
            "net.ipv6.conf.default.forwarding",
        ]);
    }
    sysctls_on(
        node,
        id,
        &keys,
        "set them to 1 in /etc/sysctl.d/99-kubernetes.conf and run `sysctl --system`",
    )
}

/// `id` passes when every sysctl of `keys` is `1`; else it is unmet until the os phase, naming
/// each value found.
pub(super) fn sysctls_on(node: &Node, id: &str, keys: &[&str], fix: &str) -> CheckResult {
    let off: Vec<String> = keys
        .iter()
        .filter(|key| node.facts.sysctl(key) != Some("1"))
        .map(|key| format!("{key} = {}", node.facts.sysctl(key).unwrap_or("(absent)")))
        .collect();
    if off.is_empty() {
        CheckResult::pass(id, format!("{} = 1", keys.join(", ")))
    } else {
        node.unmet_until_os(id, &off.join(", "), fix)
    }
}

/// `kubeadm.commands`: the commands kubeadm's preflight looks for, judged as the kubeadm of the
/// version to install judges them ([`in_path_checks`]): a missing mandatory one fails, a
/// missing optional one warns. A command the install brings from the bundle counts as there:
/// a binary ([`FROM_BUNDLE`]), or, until kk's packages phase has run, a command a root package
/// of the node's set brings, which is `set` when nothing else is missing.
fn commands(node: &Node, id: &str) -> CheckResult {
    let (version, judged) = match node.cx.kube_version() {
        Some(version) => (
            Version::from(version),
            format!("kubeadm v{}", Version::from(version)),
        ),
        // The strictest kubeadm kk installs: an unknown version fails `kubernetes.version`
        // anyway, and a passing check should hold for whatever version it turns out to be.
        None => (
            MIN_VERSION,
            format!("kubeadm v{MIN_VERSION} (the version to install is unknown)"),
        ),
    };
    let binary = |command: &str| {
        FROM_BUNDLE.contains(&command) && node.cx.bundle.binaries.iter().any(|b| b == command)
    };
    let mut to_come = Vec::new();
    let (mut mandatory, mut optional) = (Vec::new(), Vec::new());
    for (command, need) in in_path_checks(version) {
        if binary(command) {
            continue;
        }
        match (node.command(command), need) {
            (Command::Present, _) => {}
            (Command::ToCome(root), _) => to_come.push(from_bundle(command, root)),
            (Command::Missing { .. }, Need::Mandatory) => mandatory.push(command),
            (Command::Missing { .. }, Need::Optional) => optional.push(command),
        }
    }
    let fix = commands_fix(node);
    if !mandatory.is_empty() {
        let also = if optional.is_empty() {
            String::new()
        } else {
            format!(", and {}, which it warns about", list(&optional))
        };
        let message = format!(
            "missing {}, which {judged} requires{also}",
            list(&mandatory)
        );
        return CheckResult::fail(id, format!("{message}; fix: {fix}"));
    }
    if !optional.is_empty() {
        return CheckResult::warn(
            id,
            format!(
                "missing {}, which {judged} warns about (the install goes on); fix: {fix}",
                list(&optional)
            ),
        );
    }
    if !to_come.is_empty() {
        return set_by_packages(id, &to_come);
    }
    CheckResult::pass(id, format!("every command {judged} looks for is there"))
}

/// How to get kubeadm's commands onto an airgapped node: from the bundle's packages, for the
/// node's distribution release and architecture (kk never reaches a package repository from a
/// node).
fn commands_fix(node: &Node) -> String {
    const PACKAGES: &str = "iproute2, iptables, util-linux, ebtables, ethtool, socat, conntrack";
    let facts = node.facts;
    let distro = facts.distro().map_or_else(
        || "the node's distribution".to_owned(),
        |d| format!("`{d}`"),
    );
    let arch = facts.deb_arch().unwrap_or(&facts.machine);
    if node.package_set().is_some() {
        format!(
            "add the packages that bring them ({PACKAGES}) to the `packages` of the bundle's `spec.osPackages` entry for {distro} `{arch}`, and build the bundle again"
        )
    } else {
        format!(
            "build the bundle with a `spec.osPackages` entry for {distro} `{arch}` (kk adds the packages of kubeadm's commands; list the others of {PACKAGES} in its `packages`)"
        )
    }
}

/// `kubeadm.cgroups`: a cgroup file system is mounted, and cgroup v1 only where the version to
/// install still runs on it ([`super::system::cgroup_v1`]): fine before v1.31, a warning from
/// v1.31 (maintenance mode), a failure from v1.35 (the kubelet refuses it by default). With the
/// version unknown, cgroup v1 warns.
fn cgroups(node: &Node, id: &str) -> CheckResult {
    let name = node.name();
    let fix_v1 = "boot with the unified hierarchy (`systemd.unified_cgroup_hierarchy=1` on the kernel command line), or use a distribution that does (Debian 11+, Ubuntu 21.10+, RHEL 9+)";
    match node.facts.cgroup_fs.as_str() {
        "cgroup2fs" => CheckResult::pass(id, "cgroup v2"),
        "tmpfs" => {
            let Some(release) = node.cx.kube_version().map(Version::from) else {
                return CheckResult::warn(
                    id,
                    format!(
                        "node `{name}` runs cgroup v1 (`/sys/fs/cgroup` is `tmpfs`), and the version to install is unknown: the kubelet warns about it from v{CGROUP_V1_MAINTENANCE} and refuses it from v{CGROUP_V1_REFUSED}; fix: {fix_v1}"
                    ),
                );
            };
            match system::cgroup_v1(release) {
                Verdict::Accepts => CheckResult::pass(
                    id,
                    format!("cgroup v1 (v{release} runs on it; v2 is preferred)"),
                ),
                Verdict::Warns => CheckResult::warn(
                    id,
                    format!(
                        "node `{name}` runs cgroup v1 (`/sys/fs/cgroup` is `tmpfs`), in maintenance mode from Kubernetes v{CGROUP_V1_MAINTENANCE}: the v{release} kubelet warns, and from v{CGROUP_V1_REFUSED} refuses to start on it; fix: {fix_v1}"
                    ),
                ),
                Verdict::Refuses => CheckResult::fail(
                    id,
                    format!(
                        "node `{name}` runs cgroup v1 (`/sys/fs/cgroup` is `tmpfs`), which the v{release} kubelet refuses by default (`failCgroupV1`) and kubeadm's preflight fails on; fix: {fix_v1}"
                    ),
                ),
            }
        }
        other => CheckResult::fail(
            id,
            format!(
                "node `{name}`: `/sys/fs/cgroup` is `{other}`, not a cgroup file system; fix: boot with cgroups mounted (systemd does this)"
            ),
        ),
    }
}

/// `kubeadm.hostname_resolves`: the node's name resolves on the node. The name is the inventory
/// name, which the install makes the host name and the Kubernetes node name (not the current
/// host name, which the install replaces); kubeadm looks the node name up in its
/// `HostnameCheck` and warns when it does not resolve. kk's os phase maps every node's name in
/// `/etc/hosts` (see [`super::ESTABLISHED_BY_OS`]); after that phase an unresolved name warns,
/// as kubeadm would.
fn hostname_resolves(node: &Node, id: &str) -> CheckResult {
    let facts = node.facts;
    let name = node.name();
    // Facts recorded before the inventory name was looked up name no name: those looked up
    // the current host name.
    let looked_up = if facts.resolved_name.is_empty() {
        facts.hostname.as_str()
    } else {
        facts.resolved_name.as_str()
    };
    if looked_up == name && facts.name_resolves {
        return CheckResult::pass(id, format!("`{name}` resolves"));
    }
    let found = if looked_up == name {
        format!("node name `{name}` does not resolve")
    } else {
        format!("node name `{name}` was not looked up (only `{looked_up}` was)")
    };
    node.unmet_until_os_as(
        Status::Warn,
        id,
        &found,
        "map it to the node's address in /etc/hosts or DNS",
    )
}

/// `kubeadm.etcd_data_dir`: kubeadm's stacked etcd needs an empty /var/lib/etcd.
fn etcd_data_dir(node: &Node) -> CheckResult {
    const ID: &str = "kubeadm.etcd_data_dir";
    if node.cx.config.etcd.deployment_type != EtcdDeploymentType::Internal {
        return CheckResult::skip(ID, "etcd is external (see `etcd.installed`)");
    }
    if !node.is_etcd_member() {
        return CheckResult::skip(ID, "not an etcd member");
    }
    if node.facts.etcd_data_present && own::etcd_data(node) {
        CheckResult::pass(ID, "/var/lib/etcd holds kk's own etcd member")
    } else if node.facts.etcd_data_present {
        CheckResult::fail(
            ID,
            "/var/lib/etcd is not empty; fix: back it up if it matters, then empty it (`kubeadm reset` does)",
        )
    } else {
        CheckResult::pass(ID, "/var/lib/etcd is empty or absent")
    }
}

/// `kubeadm.ipvs_modules`: the IPVS modules, with kube-proxy in IPVS mode. A warning: the
/// modules may be built in or loadable (`/proc/modules` lists loaded ones only).
fn ipvs_modules(node: &Node, id: &str) -> CheckResult {
    let mode = node.cx.config.kubernetes.kube_proxy_mode;
    if mode != KubeProxyMode::Ipvs {
        return CheckResult::skip(id, format!("kube-proxy mode is {mode}"));
    }
    let missing: Vec<&str> = IPVS_MODULES
        .iter()
        .copied()
        .filter(|m| !node.facts.modules.iter().any(|loaded| loaded == m))
        .collect();
    if missing.is_empty() {
        CheckResult::pass(id, "IPVS modules loaded")
    } else {
        CheckResult::warn(
            id,
            format!(
                "modules {} are not loaded; fix: `modprobe` them and list them in /etc/modules-load.d/ipvs.conf",
                list(&missing)
            ),
        )
    }
}

#[cfg(test)]
mod tests;

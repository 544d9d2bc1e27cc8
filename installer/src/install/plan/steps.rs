//! The steps of the phases up to etcd (and the post hooks), each with the nodes it runs on;
//! the Kubernetes plan adds its own ([`super::KubernetesPlan`]).

use super::{Action, BinaryFetch, Phase, Step};

/// The nodes of each role, by inventory name.
pub(super) struct Groups {
    pub(super) all: Vec<String>,
    pub(super) runtime: Vec<String>,
    pub(super) etcd: Vec<String>,
    /// The hosts of kk's registry; none with an external registry.
    pub(super) registry: Vec<String>,
    /// Whether the nodes pull from an external registry the bundle is pushed into.
    pub(super) external_registry: bool,
}

/// The nodes of the packages and nfs phases, by inventory name.
pub(super) struct ExtraPhases {
    /// The nodes some root package is for.
    pub(super) packages_nodes: Vec<String>,
    /// The `nfs` host.
    pub(super) nfs_node: Option<String>,
}

/// Adds a step of `phase` to `steps` unless it would run nowhere.
pub(super) fn add_step(
    steps: &mut Vec<Step>,
    phase: Phase,
    what: &str,
    action: Action,
    nodes: &[String],
) {
    if !nodes.is_empty() || action.is_cluster_wide() {
        steps.push(Step {
            phase,
            id: format!("{phase}.{what}"),
            action,
            nodes: nodes.to_vec(),
        });
    }
}

/// Every step in order, each with the nodes it runs on.
pub(super) fn steps(
    groups: &Groups,
    extra: &ExtraPhases,
    ipv6: bool,
    (runtime_binaries, runtime_action): (Vec<BinaryFetch>, Action),
    etcd_binary: Option<BinaryFetch>,
) -> Vec<Step> {
    let (all, runtime_nodes, etcd_nodes) = (&groups.all, &groups.runtime, &groups.etcd);
    let mut steps = Vec::new();
    let mut add = |phase: Phase, what: &str, action: Action, nodes: &[String]| {
        add_step(&mut steps, phase, what, action, nodes);
    };
    if groups.external_registry {
        add(Phase::Push, "login", Action::RegistryLogin, &[]);
        add(Phase::Push, "store", Action::PushStore, &[]);
        add(Phase::Push, "bundle", Action::PushBundle, &[]);
    }
    add(Phase::PreHook, "scripts", Action::Hooks, all);
    add(Phase::Precheck, "rules", Action::Precheck, all);
    add(Phase::Os, "agent", Action::Agent, all);
    // Only the registry host serves and unpacks; every other node runs the small agent.
    add(
        Phase::Os,
        "installer",
        Action::Installer,
        groups.registry.as_slice(),
    );
    add(Phase::Os, "hostname", Action::Hostname, all);
    add(Phase::Os, "swap", Action::Swap, runtime_nodes);
    add(Phase::Os, "modules", Action::Modules, runtime_nodes);
    add(Phase::Os, "sysctl", Action::Sysctl { ipv6 }, runtime_nodes);
    add(Phase::Os, "hosts", Action::Hosts, all);
    add(Phase::Os, "verify", Action::VerifyOs, runtime_nodes);
    add(Phase::Pki, "issue", Action::IssueCertificates, &[]);
    add(Phase::Pki, "copy", Action::Certificates, all);
    add(Phase::Pki, "spread", Action::SpreadCertificates, all);
    let registry_nodes = groups.registry.as_slice();
    add(
        Phase::Registry,
        "unpack",
        Action::UnpackBundle,
        registry_nodes,
    );
    add(
        Phase::Registry,
        "service",
        Action::RegistryService,
        registry_nodes,
    );
    add(Phase::Registry, "ready", Action::RegistryReady, all);
    let packages_nodes = &extra.packages_nodes;
    add(
        Phase::Packages,
        "install",
        Action::InstallPackages,
        packages_nodes,
    );
    if !packages_nodes.is_empty() {
        add(
            Phase::Packages,
            "verify",
            Action::VerifyPackages,
            packages_nodes,
        );
    }
    if let Some(nfs_node) = &extra.nfs_node {
        add(
            Phase::Nfs,
            "server",
            Action::NfsServer,
            std::slice::from_ref(nfs_node),
        );
    }
    add(
        Phase::Runtime,
        "binaries",
        Action::Fetch {
            binaries: runtime_binaries,
        },
        runtime_nodes,
    );
    // `runtime.containerd` or `runtime.docker`, by the runtime the plan chose.
    let runtime_step = if runtime_action == Action::Docker {
        "docker"
    } else {
        "containerd"
    };
    add(Phase::Runtime, runtime_step, runtime_action, runtime_nodes);
    add(Phase::Runtime, "pull", Action::PullProbe, runtime_nodes);
    if let Some(etcd) = etcd_binary {
        add(
            Phase::Etcd,
            "binaries",
            Action::Fetch {
                binaries: vec![etcd],
            },
            etcd_nodes,
        );
        add(Phase::Etcd, "service", Action::EtcdService, etcd_nodes);
        add(Phase::Etcd, "health", Action::EtcdHealth, etcd_nodes);
    }
    add(Phase::PostHook, "scripts", Action::Hooks, all);
    steps
}

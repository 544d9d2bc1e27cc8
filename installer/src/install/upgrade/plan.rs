//! The upgrade plan: what is installed + the install plan of the next bundle → the ordered
//! steps of the upgrade, in kubeadm's documented order, and which nodes each runs on. Pure: no
//! node is contacted, so `kk-install plan --upgrade` and the tests see exactly what an upgrade
//! would do, and every refusal is made here, before a node is touched.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bundle_spec::Sha256Digest;
use serde::{Deserialize, Serialize};

use super::error::UpgradePlanError;
use super::version::{self, KubeVersion};
use crate::install::plan::{Action, BinaryFetch, Phase, Plan, Step};
use crate::inventory::Inventory;

/// The binaries of the container runtime, upgraded together (drained, one node at a time).
const RUNTIME_BINARIES: [&str; 4] = ["containerd", "runc", "cni-plugins", "crictl"];

/// The images kubeadm's control plane runs, tagged with the Kubernetes version itself.
const VERSIONED_IMAGES: [&str; 4] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
];

/// What is installed: the bundle and the versions it installed, from the install state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// The identity (`sha256:…`) of the installed bundle.
    pub bundle: String,
    /// Every binary's version by name (`kubeadm` is the Kubernetes version).
    pub versions: BTreeMap<String, String>,
}

impl Installed {
    /// The installed Kubernetes version, if recorded.
    pub fn kubernetes(&self) -> Option<&str> {
        self.versions.get("kubeadm").map(String::as_str)
    }
}

/// What one upgrade step does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UpgradeAction {
    /// Reads the kubelet version of every node (and proves each is reachable) and makes the
    /// version refusals again with what the nodes run (cluster-wide).
    Precheck,
    /// The next bundle unpacked into the registry host's store beside the installed revision
    /// (the install's `registry.unpack`).
    Unpack,
    /// containerd, runc, the CNI plugins and crictl swapped in on a drained node, containerd
    /// restarted, the node uncordoned.
    Runtime {
        /// What the node fetches.
        binaries: Vec<BinaryFetch>,
    },
    /// The etcd member's binaries swapped in, the member restarted, every member healthy
    /// before the next one.
    Etcd {
        /// What the node fetches.
        binary: BinaryFetch,
    },
    /// The next kubeadm fetched on a node.
    Kubeadm {
        /// What the node fetches.
        binary: BinaryFetch,
    },
    /// `kubeadm upgrade apply <version> --yes` on the first control plane.
    Apply {
        /// The Kubernetes version.
        version: String,
    },
    /// `kubeadm upgrade node` on another control plane (its control plane and kubelet
    /// configuration) or a worker (its kubelet configuration).
    Node,
    /// The node drained, its kubelet and kubectl swapped in, the kubelet restarted, the node
    /// uncordoned and Ready again.
    Kubelet {
        /// What the node fetches.
        binaries: Vec<BinaryFetch>,
    },
    /// A step of the next bundle's install plan, run as the install runs it (the CNI and the
    /// addon charts).
    Install {
        /// The install's step id.
        step: String,
        /// What it does.
        action: Box<Action>,
    },
    /// The install state and every node's `/etc/kubekey/installed.json` moved to the next
    /// bundle (cluster-wide).
    Record,
}

impl UpgradeAction {
    /// Whether the step runs once for all its nodes rather than per node.
    pub fn is_cluster_wide(&self) -> bool {
        match self {
            Self::Precheck | Self::Record => true,
            Self::Install { action, .. } => action.is_cluster_wide(),
            _ => false,
        }
    }

    /// Whether the node is drained for the step (it stays cordoned if the step fails).
    pub fn drains(&self) -> bool {
        matches!(self, Self::Runtime { .. } | Self::Kubelet { .. })
    }

    /// A line for `kk-install plan --upgrade`.
    fn describe(&self) -> String {
        let names = |binaries: &[BinaryFetch]| {
            binaries
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Self::Precheck => "kubelet versions read on every node, kubeadm's rules".to_owned(),
            Self::Unpack => "the bundle unpacked beside the installed revision".to_owned(),
            Self::Runtime { binaries } => {
                format!(
                    "drain, {} swapped in, containerd restarted, uncordon",
                    names(binaries)
                )
            }
            Self::Etcd { binary } => {
                format!(
                    "{} swapped in, the member restarted, health checked",
                    binary.name
                )
            }
            Self::Kubeadm { binary } => format!("{} fetched", binary.name),
            Self::Apply { version } => format!("kubeadm upgrade apply {version} --yes"),
            Self::Node => "kubeadm upgrade node".to_owned(),
            Self::Kubelet { binaries } => format!(
                "drain, {} swapped in, kubelet restarted, uncordon, wait Ready",
                names(binaries)
            ),
            Self::Install { step, .. } => format!("as the install's `{step}`"),
            Self::Record => "install state and installed.json moved to the bundle".to_owned(),
        }
    }
}

/// One upgrade step and its nodes, worked on one at a time in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpgradeStep {
    /// `upgrade.<what>`, unique in the plan: the key of the step in the upgrade state.
    pub id: String,
    /// What it does.
    pub action: UpgradeAction,
    /// The nodes, by inventory name.
    pub nodes: Vec<String>,
}

/// The upgrade from what is installed to the next bundle.
#[derive(Debug, Clone, Serialize)]
pub struct UpgradePlan {
    /// What is installed.
    pub from: Installed,
    /// The identity of the next bundle.
    pub to: Sha256Digest,
    /// The installed Kubernetes version.
    pub from_version: String,
    /// The next bundle's Kubernetes version.
    pub to_version: String,
    /// Every step, in order.
    pub steps: Vec<UpgradeStep>,
}

impl UpgradePlan {
    /// The upgrade from `from` to the bundle `target` installs; refused where kubeadm would
    /// refuse it. `kubelets` are the versions the nodes run (the plan alone assumes the
    /// installed ones).
    pub fn new(
        from: &Installed,
        target: &Plan,
        kubelets: &[(String, KubeVersion)],
    ) -> Result<Self, UpgradePlanError> {
        let kubernetes = target
            .kubernetes
            .as_ref()
            .ok_or(UpgradePlanError::NoKubernetes)?;
        let from_version = KubeVersion::parse(from.kubernetes().unwrap_or_default())?;
        let to_version = KubeVersion::parse(&kubernetes.version)?;
        version::check(&from_version, &to_version, kubelets)?;
        missing_image(target, &from_version.text, &to_version.text)?;
        let control_planes: Vec<String> = kubernetes
            .control_planes
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        let workers = kubernetes.workers.iter().map(|(name, _)| name.clone());
        let k8s_nodes: Vec<String> = control_planes.iter().cloned().chain(workers).collect();
        let all = names_of(target);
        let changed = |name: &str| from.versions.get(name) != target.versions.get(name);
        let mut steps = Steps::default();
        steps.add("precheck", UpgradeAction::Precheck, &all);
        // With an external registry, the next bundle is pushed into it as the install pushes
        // (on the installer machine, before any node is changed).
        for step in target.phase(Phase::Push) {
            steps.0.push(UpgradeStep {
                id: format!("upgrade.{}", step.id),
                action: install(step),
                nodes: step.nodes.clone(),
            });
        }
        // Nodes a kk-install without the agent installed get it before anything is fetched
        // (the same file again is no change).
        for step in target.steps.iter().filter(|s| s.action == Action::Agent) {
            steps.add(&step.id, install(step), &step.nodes);
        }
        let registry_nodes = target.registry.nodes();
        if !registry_nodes.is_empty() {
            steps.add("unpack", UpgradeAction::Unpack, &registry_nodes);
        }
        if target.containerd.is_some() && RUNTIME_BINARIES.into_iter().any(changed) {
            let (nodes, binaries) = fetched(target, Phase::Runtime)?;
            steps.add("runtime", UpgradeAction::Runtime { binaries }, &nodes);
        }
        if !target.etcd_members.is_empty() && changed("etcd") {
            let (nodes, binaries) = fetched(target, Phase::Etcd)?;
            let binary = binaries.into_iter().next().ok_or_else(missing("etcd"))?;
            steps.add("etcd", UpgradeAction::Etcd { binary }, &nodes);
        }
        let (_, binaries) = fetched(target, Phase::Kubernetes)?;
        let pick = |names: &[&str]| -> Vec<BinaryFetch> {
            binaries
                .iter()
                .filter(|b| names.contains(&b.name.as_str()))
                .cloned()
                .collect()
        };
        let binary = pick(&["kubeadm"]).pop().ok_or_else(missing("kubeadm"))?;
        // kubeadm's guide upgrades kubeadm on every node: `upgrade node` on a worker upgrades
        // its kubelet configuration, after the other control planes.
        steps.add("kubeadm", UpgradeAction::Kubeadm { binary }, &k8s_nodes);
        let version = to_version.text.clone();
        steps.add(
            "apply",
            UpgradeAction::Apply { version },
            &control_planes[..1],
        );
        steps.add("node", UpgradeAction::Node, &k8s_nodes[1..]);
        let binaries = pick(&["kubelet", "kubectl"]);
        steps.add("kubelet", UpgradeAction::Kubelet { binaries }, &k8s_nodes);
        for step in target
            .steps
            .iter()
            .filter(|s| matches!(s.phase, Phase::Network | Phase::Addons))
        {
            steps.add(&step.id, install(step), &step.nodes);
        }
        steps.add("record", UpgradeAction::Record, &all);
        Ok(Self {
            from: from.clone(),
            to: target.bundle,
            from_version: from_version.text,
            to_version: to_version.text,
            steps: steps.0,
        })
    }

    /// The plan as text: the versions, then the steps per node in order.
    pub fn render(&self, inventory: &Inventory) -> String {
        let mut text = format!(
            "upgrade from bundle {} (kubernetes {}) to bundle {} (kubernetes {})\n",
            self.from.bundle, self.from_version, self.to, self.to_version
        );
        let width = self.steps.iter().map(|s| s.id.len()).max().unwrap_or(0);
        for host in inventory.hosts() {
            let _ = writeln!(text, "\n{}:", host.name);
            for step in self.steps.iter().filter(|s| s.nodes.contains(&host.name)) {
                let _ = writeln!(text, "  {:<width$} {}", step.id, step.action.describe());
            }
        }
        let once: Vec<&UpgradeStep> = self.steps.iter().filter(|s| s.nodes.is_empty()).collect();
        if !once.is_empty() {
            text.push_str("\non the installer machine:\n");
            for step in once {
                let _ = writeln!(text, "  {:<width$} {}", step.id, step.action.describe());
            }
        }
        text
    }
}

/// The steps in the making.
#[derive(Default)]
struct Steps(Vec<UpgradeStep>);

impl Steps {
    /// Adds `upgrade.<what>` on `nodes`, unless there are none.
    fn add(&mut self, what: &str, action: UpgradeAction, nodes: &[String]) {
        if !nodes.is_empty() {
            self.0.push(UpgradeStep {
                id: format!("upgrade.{what}"),
                action,
                nodes: nodes.to_vec(),
            });
        }
    }
}

/// The install's `step`, run as the install runs it.
fn install(step: &Step) -> UpgradeAction {
    UpgradeAction::Install {
        step: step.id.clone(),
        action: Box::new(step.action.clone()),
    }
}

/// Every node of the target plan, in the order of its steps' first mention.
fn names_of(target: &Plan) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in target.steps.iter().flat_map(|s| &s.nodes) {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// The nodes and binaries of the install's fetch step of `phase`.
fn fetched(
    target: &Plan,
    phase: Phase,
) -> Result<(Vec<String>, Vec<BinaryFetch>), UpgradePlanError> {
    target
        .phase(phase)
        .find_map(|step: &Step| match &step.action {
            Action::Fetch { binaries } => Some((step.nodes.clone(), binaries.clone())),
            _ => None,
        })
        .ok_or_else(missing(phase.name()))
}

/// The install plan lacks what `what` needs (the target plan checks the bundle for it).
fn missing(what: &str) -> impl FnOnce() -> UpgradePlanError + use<'_> {
    move || {
        UpgradePlanError::Target(crate::install::error::PlanError::MissingBinary {
            name: what.to_owned(),
        })
    }
}

/// The install's completeness gate for the target version: every image kubeadm's control
/// plane of `to` runs (its own images tagged `to`, `CoreDNS`, etcd when stacked) is in the bundle.
fn missing_image(target: &Plan, from: &str, to: &str) -> Result<(), UpgradePlanError> {
    let repository = |reference: &str| {
        bundle_spec::oci::ReferenceParts::split(reference)
            .repository
            .to_owned()
    };
    let has = |path: &str, tag: Option<&str>| {
        target.images.iter().any(|reference| {
            let wanted = repository(reference).ends_with(&format!("/{path}"));
            wanted && tag.is_none_or(|tag| reference.ends_with(&format!(":{tag}")))
        })
    };
    let mut needed: Vec<(String, Option<&str>)> = VERSIONED_IMAGES
        .iter()
        .map(|name| ((*name).to_owned(), Some(to)))
        .collect();
    needed.push(("coredns".to_owned(), None));
    if target.etcd_members.is_empty() {
        needed.push(("etcd".to_owned(), None));
    }
    match needed.into_iter().find(|(path, tag)| !has(path, *tag)) {
        None => Ok(()),
        Some((path, tag)) => Err(UpgradePlanError::MissingImage {
            image: tag.map_or_else(|| path.clone(), |tag| format!("{path}:{tag}")),
            from: from.to_owned(),
            to: to.to_owned(),
        }),
    }
}

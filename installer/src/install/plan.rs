//! The plan: inventory + config + bundle → the ordered steps of every phase, and which nodes
//! each step runs on. Pure: no node is contacted, so `kk-install plan` and the tests see exactly
//! what an install would do.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use bundle_spec::{Description, Sha256Digest};
use serde::Serialize;

use crate::install::error::PlanError;
use crate::inventory::{Config, EtcdDeploymentType, Host, Inventory, Role};

mod charts;
mod content;
mod docker;
pub mod etcd;
mod hosts;
mod kube_vip;
mod kubernetes;
mod nfs;
mod packages;
mod pins;
mod pki;
mod registry;
pub mod runtime;
mod steps;
mod text;

pub use content::CHARTS_DIR;
use content::Content;
use docker::RuntimeChoice;
pub use docker::{DockerPlan, MIN_DOCKER_MAJOR};
pub use hosts::HostsEntry;
pub use kube_vip::{KubeVipPlan, VipAnnounce, VipInterface};
pub use kubernetes::KubernetesPlan;
pub use nfs::{NfsPlan, PROVISIONER_CHART};
pub use packages::{PACKAGES_DIR, PackagesPlan, PlannedSet, set_key};
pub use pins::{
    CRI_PINNED_LABEL, CRI_PINNED_VALUE, KK_PINNED_LABEL, ListedImage, PinChange, PinPlan,
};
pub use pki::{CertificateSet, PkiPlan};
pub use registry::{
    EXTERNAL_REGISTRY_CA, ExternalPlan, RegistryAuth, RegistryPlan, RegistryServer,
    SYSTEM_CA_BUNDLE,
};
use registry::{registry_auth, registry_plan};
pub use runtime::ContainerdPlan;
use steps::{ExtraPhases, Groups, add_step, steps};

/// The phases of an install, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// With an external registry: the bundle pushed into it from the installer machine, before
    /// any node is touched (a refused login or push stops the install with every node as it
    /// was).
    Push,
    /// The operator's `pre_install_*.sh` scripts.
    PreHook,
    /// Facts and rules: whether the install can work.
    Precheck,
    /// Swap, kernel modules, sysctls, `/etc/hosts`, the node's copy of kk-install.
    Os,
    /// The cluster's certificates, made once and copied where each node needs them.
    Pki,
    /// kk's registry on the `image_registry` host, serving the unpacked bundle.
    Registry,
    /// The bundle's operating-system packages each node lacks, from kk's registry.
    Packages,
    /// The NFS server on the `nfs` host: share directory, exports, the server enabled.
    Nfs,
    /// containerd, runc, CNI plugins, crictl, trusting kk's registry as a mirror.
    Runtime,
    /// etcd as a systemd service on the `etcd` hosts.
    Etcd,
    /// kubelet and kubeadm: the first control plane initialised, the others and the workers
    /// joined, the control-plane endpoint made highly available.
    Kubernetes,
    /// The CNI chart of `cni.type`, from the bundle.
    Network,
    /// The charts of `spec.addons`, in order.
    Addons,
    /// The operator's `post_install_*.sh` scripts.
    PostHook,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Self; 14] = [
        Self::Push,
        Self::PreHook,
        Self::Precheck,
        Self::Os,
        Self::Pki,
        Self::Registry,
        Self::Packages,
        Self::Nfs,
        Self::Runtime,
        Self::Etcd,
        Self::Kubernetes,
        Self::Network,
        Self::Addons,
        Self::PostHook,
    ];

    /// The phase's name as `--phase` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Push => "push",
            Self::PreHook => "pre_hook",
            Self::Precheck => "precheck",
            Self::Os => "os",
            Self::Pki => "pki",
            Self::Registry => "registry",
            Self::Packages => "packages",
            Self::Nfs => "nfs",
            Self::Runtime => "runtime",
            Self::Etcd => "etcd",
            Self::Kubernetes => "kubernetes",
            Self::Network => "network",
            Self::Addons => "addons",
            Self::PostHook => "post_hook",
        }
    }

    /// The phase called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|phase| phase.name() == name)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one step does. Steps marked cluster-wide run once for all their nodes together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// Logs in to the external registry (`/v2/` with the credentials): a refusal names the
    /// registry and the user (cluster-wide, on the installer machine).
    RegistryLogin,
    /// Unpacks the bundle into the installer machine's store (`<work dir>/store`) and says
    /// what the push does with indexes the bundle has only some platforms of (cluster-wide).
    PushStore,
    /// Creates Harbor's missing projects, then pushes the store into the external registry
    /// (cluster-wide).
    PushBundle,
    /// Runs the hook scripts of every node (cluster-wide).
    Hooks,
    /// Gathers facts and evaluates every rule (cluster-wide).
    Precheck,
    /// Copies the node agent to `/usr/local/bin/kk-node` on the node (what every node runs to
    /// fetch binaries and wait for the registry).
    Agent,
    /// Copies this kk-install to `/usr/local/bin/kk-install` on the registry host.
    Installer,
    /// Sets the host name to the inventory name (kubeadm registers the node by it).
    Hostname,
    /// Turns swap off, now and in `/etc/fstab`.
    Swap,
    /// Loads `overlay` and `br_netfilter` and lists them in `/etc/modules-load.d/`.
    Modules,
    /// Writes and applies the forwarding and bridge sysctls.
    Sysctl {
        /// Whether IPv6 forwarding is needed too (dual stack).
        ipv6: bool,
    },
    /// Maps every node (and the name of kk's registry) in `/etc/hosts`.
    Hosts,
    /// Gathers the nodes' facts again and judges, for real, the precheck rules the os phase
    /// establishes (cluster-wide step over its nodes).
    VerifyOs,
    /// Makes the certificates in the work directory (cluster-wide, on the installer machine).
    IssueCertificates,
    /// Copies the certificates this node needs.
    Certificates,
    /// Copies the bundle to the registry host and unpacks it there, verified.
    UnpackBundle,
    /// Installs and starts `kk-registry.service`.
    RegistryService,
    /// Waits until the registry answers over TLS verified with its CA (kk's: the cluster CA).
    RegistryReady,
    /// Installs the packages of [`Plan::packages`] the node lacks for its roots: fetched from
    /// the registry by the node, installed with `dpkg -i` in install order.
    InstallPackages,
    /// Gathers the nodes' facts again and judges, for real, the precheck rules the packages
    /// establish (cluster-wide step over its nodes).
    VerifyPackages,
    /// The NFS server of [`Plan::nfs`]: share directory, kk's block of `/etc/exports`,
    /// `exportfs -ra`, `nfs-server` enabled (started where the kernel has nfsd).
    NfsServer,
    /// Fetches binaries from the registry, on the node.
    Fetch {
        /// What to fetch.
        binaries: Vec<BinaryFetch>,
    },
    /// Writes containerd's config, mirrors and unit; (re)starts it when they changed.
    Containerd,
    /// The docker runtime of [`Plan::docker`]: containerd, dockerd with its mirrors and
    /// cri-dockerd, each (re)started when what it reads changed.
    Docker,
    /// Pulls the pause image through the mirrors: proves the node's trust and mirrors.
    PullProbe,
    /// Writes the etcd unit and starts the member.
    EtcdService,
    /// Waits until every member reports healthy.
    EtcdHealth,
    /// Writes `kubelet.service` and kubeadm's drop-in; enables the kubelet (kubeadm starts it).
    KubeletService,
    /// Makes sure a valid bootstrap token exists: made by kk in the work directory, and
    /// replaced with `kubeadm token create` once expired (cluster-wide, always run).
    BootstrapToken,
    /// The kube-vip static pod on the first control plane before `kubeadm init`, with the
    /// kubeconfig that has rights during init.
    KubeVipBootstrap,
    /// Writes the kubeadm config and runs `kubeadm init` (first control plane, once).
    KubeadmInit,
    /// `kubeadm join --control-plane` with kk's join config.
    JoinControlPlane,
    /// haproxy as a static pod on a worker, balancing over the control planes (before join).
    InternalLoadBalancer,
    /// `kubeadm join` of a worker.
    JoinWorker,
    /// The kube-vip static pod on every control plane, with `admin.conf`.
    KubeVip,
    /// A chart of the bundle rendered with the bundle's helm, its images checked against the
    /// bundle, applied with the bundle's kubectl (first control plane).
    Chart {
        /// What to install.
        chart: Box<ChartInstall>,
    },
    /// Multus over the primary CNI (first control plane): its manifest fetched from the
    /// registry, rendered with the plan's image and delegate, its images checked against the
    /// bundle, applied with the bundle's kubectl.
    Multus {
        /// What to apply.
        multus: Box<MultusInstall>,
    },
    /// Labels nodes with the bundle's kubectl (first control plane), before a chart that
    /// selects them.
    LabelNodes {
        /// The label and its nodes.
        label: NodeLabel,
    },
    /// Puts the certificates that name control planes and the registry (`apiserver.crt`,
    /// `registry.crt`) on the nodes that hold an older one with the same key — reissued by
    /// `pki.issue` when the inventory gained a control plane — restarting what reads them one
    /// node at a time (cluster-wide step over its nodes, always run).
    SpreadCertificates,
    /// Pins the images of [`Plan::pins`] the node holds in containerd's `k8s.io` namespace
    /// and unpins those kk pinned that the bundle no longer names (see [`PinPlan`]).
    PinImages,
}

/// Multus, the secondary CNI: upstream's manifest (multus publishes no chart) and what kk
/// writes into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MultusInstall {
    /// The manifest as the node fetches it (the bundle's `multus` binary).
    pub fetch: BinaryFetch,
    /// The bundle's multus image by original name, in place of the one upstream's names.
    pub image: String,
    /// The primary CNI's configuration file in `/etc/cni/net.d`, multus's delegate.
    pub delegate: String,
}

/// A label the network plugin needs on some nodes (Kube-OVN's `kube-ovn/role=master` on the
/// control planes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeLabel {
    /// `key=value`.
    pub label: String,
    /// The nodes, by their Kubernetes names (the inventory names).
    pub nodes: Vec<String>,
}

impl Action {
    /// Whether the step runs once for all its nodes rather than per node.
    pub fn is_cluster_wide(&self) -> bool {
        matches!(
            self,
            Self::Hooks
                | Self::RegistryLogin
                | Self::PushStore
                | Self::PushBundle
                | Self::Precheck
                | Self::IssueCertificates
                | Self::VerifyOs
                | Self::VerifyPackages
                | Self::BootstrapToken
                | Self::SpreadCertificates
        )
    }

    /// Whether a node may go on to the next step of its phase without waiting for the other
    /// nodes to finish this one: the step reads and changes only its own node (and the
    /// registry, up since `registry.ready`). Consecutive such steps of one phase run as one
    /// per-node sequence; every other step keeps its barrier: etcd members must all start
    /// before any is healthy, joins need the first control plane, `registry.ready` needs the
    /// registry's service, cluster-wide steps need every node.
    pub fn pipelines(&self) -> bool {
        matches!(
            self,
            Self::Installer
                | Self::Agent
                | Self::Hostname
                | Self::Swap
                | Self::Modules
                | Self::Sysctl { .. }
                | Self::Hosts
                | Self::Certificates
                | Self::Fetch { .. }
                | Self::Containerd
                | Self::Docker
                | Self::PullProbe
                | Self::KubeletService
                | Self::InstallPackages
        )
    }
}

/// A binary a node fetches from the registry, and where it puts which files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BinaryFetch {
    /// The artifact's name (`etcd`).
    pub name: String,
    /// Its reference in the registry (`kk.internal/binaries/etcd:v3.4.23`).
    pub reference: String,
    /// The manifest digests the bundle lists for it, one per platform.
    pub digests: Vec<Sha256Digest>,
    /// The directory on the node.
    pub into: String,
    /// The files to take (all of an archive's when empty).
    pub files: Vec<String>,
}

/// A chart of the bundle and how it is installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChartInstall {
    /// The release name.
    pub release: String,
    /// The namespace it goes to (created when missing).
    pub namespace: String,
    /// The chart as the node fetches it.
    pub fetch: BinaryFetch,
    /// The values: for the CNI, rendered by kk from the config; for an addon, as given.
    pub values: ChartValues,
}

/// A chart's values, decided when the plan is made: what the node's values file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChartValues {
    /// The CNI's values, rendered from the config (pod CIDR, image registry kept original).
    Cni {
        /// The values file, YAML.
        yaml: String,
    },
    /// An addon's `valuesFile` (on the installer machine), read, and `values` (`--set` pairs).
    Addon {
        /// The values file, if any.
        file: Option<std::path::PathBuf>,
        /// Its content (`{}` without one).
        yaml: String,
        /// `key=value` pairs.
        set: Vec<String>,
    },
    /// A storage class provisioner's values, rendered by kk from the config and the plan.
    StorageClass {
        /// The values file, YAML.
        yaml: String,
    },
}

impl ChartValues {
    /// The values file the node gets, YAML.
    pub fn yaml(&self) -> &str {
        match self {
            Self::Cni { yaml } | Self::Addon { yaml, .. } | Self::StorageClass { yaml } => yaml,
        }
    }
}

/// One step of a phase and the nodes it runs on, in inventory order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The phase.
    pub phase: Phase,
    /// `phase.what`, unique in the plan: the key of the step in the state file.
    pub id: String,
    /// What it does.
    pub action: Action,
    /// The nodes, by inventory name.
    pub nodes: Vec<String>,
}

/// The cluster's DNS domain: kubeadm's `networking.dnsDomain`, the kubelet's `clusterDomain`
/// and the API server certificate's `kubernetes.default.svc.<domain>`.
const CLUSTER_DOMAIN: &str = "cluster.local";

/// The whole install, step by step.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The identity of the bundle the plan installs.
    pub bundle: Sha256Digest,
    /// The cluster's DNS domain.
    pub cluster_domain: String,
    /// The Kubernetes version the bundle carries, if any.
    pub kubernetes_version: Option<String>,
    /// The registry.
    pub registry: RegistryPlan,
    /// The credentials containerd's CRI plugin gets in `registry.configs."<host>".auth` and the
    /// probe pull sends: one entry per registry host that needs them (an external registry's).
    pub registry_auth: Vec<RegistryAuth>,
    /// docker and cri-dockerd, when `cri.container_manager` is docker.
    pub docker: Option<DockerPlan>,
    /// The pause image by its original reference (containerd's sandbox image, the pull probe).
    pub pause_image: String,
    /// The bundle's containerd version (its config version follows from it) and what its
    /// effective (merged) configuration must hold on every node; `None` with docker, whose
    /// tarball carries its own containerd.
    pub containerd: Option<ContainerdPlan>,
    /// The registry hosts the bundle's images are named by (`docker.io`, `registry.k8s.io`):
    /// each gets a containerd mirror entry.
    pub image_hosts: Vec<String>,
    /// The `etcd` hosts with their addresses, in inventory order.
    pub etcd_members: Vec<(String, IpAddr)>,
    /// The cluster's certificates and which node gets which.
    pub pki: PkiPlan,
    /// Each node's `/etc/hosts` entries, by inventory name.
    pub etc_hosts: BTreeMap<String, Vec<HostsEntry>>,
    /// Kubernetes, when the bundle carries kubeadm.
    pub kubernetes: Option<KubernetesPlan>,
    /// The operating-system packages, when the bundle carries some.
    pub packages: Option<PackagesPlan>,
    /// The NFS server, when the inventory has an `nfs` group.
    pub nfs: Option<NfsPlan>,
    /// Every image of the bundle by its original reference.
    pub images: Vec<String>,
    /// The images pinned in containerd; `None` with docker, whose image store is not
    /// containerd's CRI (kubelet's image GC goes through cri-dockerd, which has no pins).
    pub pins: Option<PinPlan>,
    /// The version of every binary of the bundle, by name: recorded in the install state for
    /// a later upgrade to compare with (not printed: the bundle's `inspect` shows them).
    #[serde(skip)]
    pub versions: BTreeMap<String, String>,
    /// Every step, in order.
    pub steps: Vec<Step>,
}

impl Plan {
    /// The plan for `inventory` and `config` from the bundle described by `description`.
    pub fn new(
        inventory: &Inventory,
        config: &Config,
        identity: Sha256Digest,
        description: &Description,
    ) -> Result<Self, PlanError> {
        let content = Content::of(description);
        let registry = registry_plan(inventory, config, &content)?;
        let runtime_nodes = names(&inventory.group_members(crate::inventory::K8S_CLUSTER));
        let etcd_members = external_etcd_members(inventory, config)?;
        let pause_image = content.pause_image().ok_or(PlanError::NoPauseImage)?;
        let registry_auth = registry_auth(config);
        let mirror_auth = registry_auth
            .iter()
            .find(|auth| auth.host == registry.address);
        let runtime = RuntimeChoice::new(
            config.cri.container_manager,
            &content,
            &pause_image,
            mirror_auth,
        )?;
        let etcd_binary = (!etcd_members.is_empty())
            .then(|| content.binary("etcd", "/usr/local/bin", &["etcd", "etcdctl"]))
            .transpose()?;
        let groups = Groups {
            all: names(&inventory.hosts().iter().collect::<Vec<_>>()),
            runtime: runtime_nodes,
            etcd: etcd_members.iter().map(|(name, _)| name.clone()).collect(),
            registry: registry.nodes(),
            external_registry: registry.external().is_some(),
        };
        // IPv6 forwarding whenever a cluster range is IPv6 (dual stack or IPv6 only).
        let ipv6 = config.cni.pod_cidr.ipv6().is_some() || config.cni.service_cidr.ipv6().is_some();
        let packages = PackagesPlan::new(inventory, &description.packages, &content.packages)?;
        let nfs = NfsPlan::new(inventory, config)?;
        let storage_class = nfs::provisioner(config, nfs.as_ref(), &content)?;
        let kubernetes = match &content.kubernetes_version {
            Some(version) => {
                let shared = kubernetes::Shared {
                    content: &content,
                    version,
                    cluster_domain: CLUSTER_DOMAIN,
                    etcd_members: &etcd_members,
                    storage_class,
                    cri_socket: runtime.cri_socket(),
                    cri_unit: runtime.cri_unit(),
                };
                Some(KubernetesPlan::new(inventory, config, &shared)?)
            }
            None => None,
        };
        let extra = ExtraPhases {
            packages_nodes: packages
                .as_ref()
                .map(|p| p.nodes(inventory))
                .unwrap_or_default(),
            nfs_node: nfs.as_ref().map(|n| n.node.clone()),
        };
        let pin_nodes = runtime
            .docker
            .is_none()
            .then_some(groups.runtime.as_slice());
        let base = steps(
            &groups,
            &extra,
            ipv6,
            (runtime.binaries, runtime.action),
            etcd_binary,
        );
        let steps = with_kubernetes_and_pins(base, kubernetes.as_ref(), pin_nodes);
        let containerd = ContainerdPlan::of_runtime(
            runtime.docker.is_none(),
            &runtime.containerd_version,
            &pause_image,
            &registry_auth,
        )?;
        let pki = PkiPlan::new(inventory, config, &registry, &etcd_members, CLUSTER_DOMAIN)?;
        let node_hosts = hosts::entries(inventory, config, &registry, kubernetes.as_ref())?;
        Ok(Self {
            bundle: identity,
            cluster_domain: CLUSTER_DOMAIN.to_owned(),
            kubernetes_version: content.kubernetes_version.clone(),
            registry,
            registry_auth,
            docker: runtime.docker,
            pause_image,
            containerd,
            image_hosts: content.image_hosts.clone(),
            etcd_members,
            pki,
            etc_hosts: node_hosts,
            kubernetes,
            packages,
            nfs,
            versions: content.versions,
            images: content.images,
            pins: pin_nodes.map(|_| PinPlan::new(&identity, description)),
            steps,
        })
    }

    /// The steps of `phase`.
    pub fn phase(&self, phase: Phase) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(move |step| step.phase == phase)
    }
}

/// The name and address of every member of kk's external etcd, in inventory order; none with
/// stacked etcd (kubeadm's).
fn external_etcd_members(
    inventory: &Inventory,
    config: &Config,
) -> Result<Vec<(String, IpAddr)>, PlanError> {
    if config.etcd.deployment_type != EtcdDeploymentType::External {
        return Ok(Vec::new());
    }
    inventory
        .role_members(Role::Etcd)
        .iter()
        .map(|host| Ok((host.name.clone(), address_of(host)?)))
        .collect()
}

/// `steps` with the Kubernetes plan's and the pins step (on `pin_nodes`, when the runtime
/// pins) before the post hooks, which stay last.
fn with_kubernetes_and_pins(
    mut steps: Vec<Step>,
    kubernetes: Option<&KubernetesPlan>,
    pin_nodes: Option<&[String]>,
) -> Vec<Step> {
    let post = steps.pop();
    if let Some(kubernetes) = kubernetes {
        steps.extend(kubernetes.steps());
    }
    // Last before the post hooks: the cluster's own images are on the nodes by then.
    if let Some(nodes) = pin_nodes {
        add_step(&mut steps, Phase::Addons, "pins", Action::PinImages, nodes);
    }
    steps.extend(post);
    steps
}

fn names(hosts: &[&Host]) -> Vec<String> {
    hosts.iter().map(|host| host.name.clone()).collect()
}

/// The address the cluster uses for `host`.
pub fn address_of(host: &Host) -> Result<IpAddr, PlanError> {
    host.internal_ipv4
        .map(IpAddr::V4)
        .or(host.internal_ipv6.map(IpAddr::V6))
        .ok_or_else(|| PlanError::NoAddress {
            node: host.name.clone(),
        })
}

#[cfg(test)]
mod tests;

/// A plan for unit tests of the executor.
#[cfg(test)]
pub(crate) mod tests_support {
    /// The plan of `plan/tests.rs` for three nodes with external etcd.
    pub(crate) fn sample_plan() -> super::Plan {
        super::tests::sample_plan()
    }

    pub(crate) use super::tests::packages_nfs::NFS_INVENTORY;

    /// A plan with Debian 12 packages, an `nfs` host (`store`) and the NFS class enabled.
    pub(crate) fn packages_plan() -> super::Plan {
        use super::tests::packages_nfs::{NFS_INVENTORY, debian_set, description_with, plan_with};
        plan_with(
            NFS_INVENTORY,
            "  storage_class:\n    nfs: {enabled: true}\n",
            &description_with(vec![debian_set()], &[]),
        )
        .expect("plan")
    }
}

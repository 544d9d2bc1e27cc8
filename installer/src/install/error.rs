//! The install's errors: the plan's ([`PlanError`]), a step's ([`StepError`]) and the run's
//! ([`InstallError`]), which names the phase, step and target of a failed step and keeps the
//! step's error as its source.

use std::path::PathBuf;

use super::bootstrap::TokenError;
use super::render::kubernetes::KubeadmVersionError;
use super::render::multus::MultusManifestError;
use super::target::Target;
use crate::hooks::HookError;
use crate::inventory::InventoryError;
use crate::pki::PkiError;
use crate::ssh::SshError;

/// The inventory, config and bundle do not make an installable plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The bundle's containerd version is not a version (its config version follows from it).
    #[error(
        "the bundle's containerd version `{version}` is not a version; hint: build the bundle with a containerd version such as `1.7.24` or `2.1.9`"
    )]
    ContainerdVersion {
        /// The version the bundle names.
        version: String,
    },
    /// Neither `image_registry` nor `kube_control_plane` has a host.
    #[error(
        "no host can serve kk's registry; hint: put a host in the `image_registry` or `kube_control_plane` group"
    )]
    NoRegistryHost,
    /// A host has no internal address.
    #[error(
        "host `{node}` has no `internal_ipv4` or `internal_ipv6`; hint: the cluster needs the address it reaches the node at"
    )]
    NoAddress {
        /// The inventory name.
        node: String,
    },
    /// The bundle lacks a binary the install needs.
    #[error(
        "the bundle has no binary `{name}`; hint: build it with `spec.kubernetes` (the catalog adds it) or list it under `spec.binaries`"
    )]
    MissingBinary {
        /// The binary's name.
        name: String,
    },
    /// The bundle has no pause image.
    #[error(
        "the bundle has no pause image (`registry.k8s.io/pause:…`), which containerd needs as its sandbox image; hint: build it with `spec.kubernetes`, or add the image"
    )]
    NoPauseImage,
    /// The bundle's docker is older than the oldest kk installs.
    #[error(
        "the bundle's docker `{version}` is not 28 or newer: only docker 28 and newer resolve images through `/etc/docker/certs.d/<host>/hosts.toml` (the containerd image store), which is how nodes pull the original image names from kk's registry; hint: build the bundle with docker 28 or newer (a `docker` binary in `spec.binaries` overrides the catalog's), or use `cri.container_manager: containerd`"
    )]
    DockerTooOld {
        /// The docker version the bundle carries.
        version: String,
    },
    /// The bundle lacks a chart the install needs.
    #[error(
        "the bundle has no chart `{name}`; hint: build it with `spec.kubernetes` (the catalog adds the CNI's chart) or list it under `spec.charts`"
    )]
    MissingChart {
        /// The chart's name.
        name: String,
    },
    /// The bundle lacks an image the config asks for.
    #[error(
        "the bundle has no `{name}` image, which the config's control-plane endpoint needs; hint: build the bundle with `spec.kubernetes` (the catalog adds it) or list the image under `spec.images`"
    )]
    MissingImage {
        /// The repository path looked for.
        name: String,
    },
    /// No control plane in the inventory.
    #[error(
        "the inventory has no host in `kube_control_plane`; hint: Kubernetes needs at least one control plane"
    )]
    NoControlPlane,
    /// The bundle lacks an image the CNI's chart values name.
    #[error(
        "the bundle has no `{image}` image, which `spec.cni.type: {cni}` needs; hint: build the bundle again with `spec.kubernetes` and the same CNI (the catalog adds its images), or list the image under `spec.images`"
    )]
    MissingCniImage {
        /// The repository path looked for (`calico/node`).
        image: &'static str,
        /// The network plugin.
        cni: &'static str,
    },
    /// Multus without a primary network plugin to delegate to.
    #[error(
        "`spec.cni.multi_cni: multus` needs a primary network plugin to delegate to, but `spec.cni.type` is `none`; hint: set `spec.cni.type` to one kk installs (calico, cilium, flannel, hybridnet, kube-ovn), or `spec.cni.multi_cni: none`"
    )]
    MultusWithoutCni,
    /// The bundle lacks multus's manifest or image.
    #[error(
        "the bundle has no {what}, which `spec.cni.multi_cni: multus` needs; hint: build the bundle again with `spec.kubernetes.multiCni: multus` (the catalog adds multus's manifest and image)"
    )]
    MissingMultus {
        /// What is missing: the manifest's binary or the image.
        what: String,
    },
    /// A network plugin kk installs single-stack given a dual-stack pod range.
    #[error(
        "`spec.cni.type: {cni}` gives pods one address family, but `spec.cni.pod_cidr` is `{pod_cidr}`, dual stack; hint: keep one range in `spec.cni.pod_cidr`, or choose calico, cilium, flannel or kube-ovn for dual stack"
    )]
    CniSingleStack {
        /// The network plugin.
        cni: &'static str,
        /// The configured pod ranges.
        pod_cidr: String,
    },
    /// An addon's values file cannot be read.
    #[error(
        "cannot read the values file `{}` of addon `{addon}`; hint: check `valuesFile` in the config (a relative path is taken from the config's directory)", path.display()
    )]
    ValuesFile {
        /// The addon's name.
        addon: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A package of the description's sets has no artifact in the bundle.
    #[error(
        "the bundle describes package `{reference}` but carries no artifact of it; hint: the bundle is inconsistent, build it again"
    )]
    MissingPackage {
        /// The package's reference.
        reference: String,
    },
    /// `storage_class.nfs.enabled` without an `nfs` host to serve the volumes.
    #[error(
        "`storage_class.nfs.enabled` needs an NFS server, and the inventory has no `nfs` group; hint: put one host in the `nfs` group, or turn the class off"
    )]
    NfsClassWithoutServer,
    /// `storage_class.nfs.enabled` and the bundle lacks the provisioner's chart.
    #[error(
        "`storage_class.nfs.enabled` needs the chart `{chart}`, which the bundle lacks; hint: build the bundle with `spec.kubernetes.storage: [nfs]` (the catalog adds the chart and its image)"
    )]
    MissingNfsProvisioner {
        /// The chart's name.
        chart: &'static str,
    },
    /// An addon has the release name kk gives a chart of its own.
    #[error(
        "addon `{name}` has the release name kk gives the NFS provisioner of `storage_class.nfs`; hint: drop the addon (kk installs the provisioner) or turn the class off"
    )]
    AddonNameTaken {
        /// The release name.
        name: &'static str,
    },
    /// The inventory names a node Kubernetes would refuse.
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    /// kubeadm would refuse the config.
    #[error(
        "`{field}` is `{value}`: {reason}; hint: change it in the config (kubeadm would refuse it on the node)"
    )]
    Kubeadm {
        /// The config field.
        field: String,
        /// Its value.
        value: String,
        /// Why kubeadm refuses it.
        reason: String,
    },
}

/// The install (or reset) stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// A step failed on a node, or on the installer machine.
    #[error("{phase} phase, step `{step}` failed {}", target.place())]
    Step {
        /// The phase.
        phase: String,
        /// The step id.
        step: String,
        /// Where it ran.
        target: Target,
        /// What happened, with the remote command's output.
        #[source]
        source: Box<StepError>,
    },
    /// The precheck found problems.
    #[error(
        "the precheck failed: fix what the table marks `fail`, or waive a check with `--ignore ID`"
    )]
    Precheck,
    /// The state file belongs to another bundle.
    #[error("`{}` records an install of bundle `{recorded}`, not of this bundle `{bundle}`; hint: use another `--work-dir`, or remove the file to start over", path.display())]
    OtherBundle {
        /// The state file.
        path: PathBuf,
        /// The bundle it names.
        recorded: String,
        /// The bundle given.
        bundle: String,
    },
    /// `--resume` without anything to resume.
    #[error("`--resume`: `{}` does not exist, so there is no install to resume; hint: run without `--resume`", path.display())]
    NothingToResume {
        /// The state file looked for.
        path: PathBuf,
    },
    /// The state file cannot be read or written.
    #[error("cannot read or write the install state `{}`", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Another kk-install holds the work directory's lock.
    #[error(
        "another kk-install ({}) is installing or resetting with the work directory `{}`; two at once would undo each other's steps; hint: wait for it to end, or stop it",
        pid.as_deref().map_or_else(|| "whose PID is not written yet".to_owned(), |pid| format!("PID {pid}")),
        work_dir.display()
    )]
    Locked {
        /// The work directory.
        work_dir: PathBuf,
        /// The PID the holder wrote into the lock file.
        pid: Option<String>,
    },
    /// The lock file cannot be opened, locked or written.
    #[error("cannot lock the install state with `{}`", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Reset failed on a node.
    #[error("reset of node `{node}` failed")]
    Reset {
        /// The inventory name.
        node: String,
        /// What happened.
        #[source]
        source: Box<StepError>,
    },
    /// A node could not be reached.
    #[error(transparent)]
    Ssh(Box<SshError>),
    /// The plan could not be made.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl From<SshError> for InstallError {
    fn from(error: SshError) -> Self {
        Self::Ssh(Box::new(error))
    }
}

/// Why a step failed, as the operator should read it (remote output included).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepError {
    /// A command or an upload on the node failed, or the node was lost.
    #[error(transparent)]
    Ssh(Box<SshError>),
    /// A local file could not be read or written.
    #[error("cannot {action} `{}`", path.display())]
    Io {
        /// What was done: `read`, `create`, `list`…
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A configuration file could not be rendered.
    #[error(transparent)]
    Render(#[from] KubeadmVersionError),
    /// A hook script failed.
    #[error(transparent)]
    Hook(Box<HookError>),
    /// The certificates could not be made or kept.
    #[error(transparent)]
    Pki(Box<PkiError>),
    /// The bootstrap token could not be read, made or written.
    #[error(transparent)]
    Token(Box<TokenError>),
    /// The plan does not hold an address or a host the step needs.
    #[error(transparent)]
    Plan(Box<PlanError>),
    /// A check the os or packages phase establishes still fails.
    #[error("after the {phase} phase, still not as the install needs:\n{}", failures.join("\n"))]
    NotEstablished {
        /// The phase that should have established them (`os`, `packages`).
        phase: &'static str,
        /// `node: rule: message`, one per failed check.
        failures: Vec<String>,
    },
    /// A chart's rendered manifest is not YAML.
    #[error("the rendered chart `{chart}` is not YAML")]
    ChartYaml {
        /// The chart.
        chart: String,
        /// Why.
        #[source]
        source: Box<serde_saphyr::Error>,
    },
    /// A chart names images the bundle lacks.
    #[error(
        "chart `{chart}` names images the bundle lacks: {}; hint: add them to the bundle manifest's `spec.images` and build again",
        images.join(", ")
    )]
    ChartImages {
        /// The chart.
        chart: String,
        /// The images missing.
        images: Vec<String>,
    },
    /// `helm template` or `kubectl apply` of a chart failed.
    #[error("`{tool}` of chart `{chart}` failed")]
    Chart {
        /// `helm template` or `kubectl apply`.
        tool: &'static str,
        /// The chart.
        chart: String,
        /// The command's failure, with its output.
        #[source]
        source: Box<SshError>,
    },
    /// Multus's manifest from the bundle does not have the shape kk edits.
    #[error("multus's manifest cannot be rendered")]
    MultusManifest {
        /// What is missing from it.
        #[source]
        source: Box<MultusManifestError>,
    },
    /// Multus's rendered manifest names images the bundle lacks.
    #[error(
        "multus's manifest names images the bundle lacks: {}; hint: add them to the bundle manifest's `spec.images` and build again",
        images.join(", ")
    )]
    MultusImages {
        /// The images missing.
        images: Vec<String>,
    },
    /// `kubectl apply` of multus's manifest failed.
    #[error("`kubectl apply` of multus's manifest failed")]
    MultusApply {
        /// The command's failure, with its output.
        #[source]
        source: Box<SshError>,
    },
    /// `kubectl label` of the network plugin's nodes failed.
    #[error(
        "`kubectl label` of `{label}` failed; hint: the nodes must have joined under their inventory names"
    )]
    Label {
        /// `key=value`.
        label: String,
        /// The command's failure, with its output.
        #[source]
        source: Box<SshError>,
    },
    /// `kk-install fetch` on the node printed something else than its JSON.
    #[error("`kk-install fetch` printed something unexpected: {printed}")]
    FetchOutput {
        /// What it printed.
        printed: String,
        /// Why it is not the JSON expected.
        #[source]
        source: serde_json::Error,
    },
    /// A node's `/etc/kubekey/installed.json` is not kk's record.
    #[error("`{path}` is not kk's record")]
    NotARecord {
        /// The record's path on the node.
        path: &'static str,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// etcd members did not all report healthy in time.
    #[error("{healthy} of {members} etcd members report healthy:\n{said}")]
    EtcdUnhealthy {
        /// Members healthy.
        healthy: usize,
        /// Members of the plan.
        members: usize,
        /// What `etcdctl` printed.
        said: String,
    },
    /// No interface of the node holds its plan address (kube-vip's ARP mode needs one).
    #[error("no interface of `{node}` holds {ip}")]
    NoInterface {
        /// The inventory name.
        node: String,
        /// The address looked for.
        ip: std::net::IpAddr,
    },
    /// A step that makes what this one needs has not run in this run.
    #[error("{what} (step `{step}` did not run)")]
    NotRun {
        /// What is missing.
        what: &'static str,
        /// The step that makes it.
        step: &'static str,
    },
    /// No package set of the bundle fits the node's distribution and architecture.
    #[error(
        "`{node}` runs {distro} on {arch}, for which the bundle carries no packages; it lacks {}; hint: build the bundle with `spec.osPackages` for {distro}",
        roots.join(", ")
    )]
    NoPackageSet {
        /// The inventory name.
        node: String,
        /// `ID-VERSION_ID` as the node says.
        distro: String,
        /// `dpkg --print-architecture`.
        arch: String,
        /// The roots it needs.
        roots: Vec<String>,
    },
    /// The node's installed packages and the set's records do not resolve.
    #[error("the packages of {set} do not resolve on `{node}`")]
    Resolve {
        /// The inventory name.
        node: String,
        /// The set (`debian-12-amd64`).
        set: String,
        /// Why.
        #[source]
        source: Box<bundle_spec::packages::resolve::ResolveError>,
    },
    /// A root is not installed after `dpkg -i`.
    #[error("after `dpkg -i`, `{package}` is not installed on `{node}`: {said}")]
    NotInstalled {
        /// The inventory name.
        node: String,
        /// The package.
        package: String,
        /// What `dpkg -s` said.
        said: String,
    },
    /// containerd's effective (merged) configuration on a node is not what kk wrote.
    #[error(
        "containerd's effective configuration on `{node}` is not kk's:\n{}\nhint: remove or change the drop-ins named (containerd merges every file its `imports` name, `{drop_ins}/*.toml` among them), then run the install again",
        findings.join("\n")
    )]
    ContainerdConfig {
        /// The inventory name.
        node: String,
        /// One line per setting: its key, its value, what kk expects, the drop-in that sets it.
        findings: Vec<String>,
        /// The drop-in directory kk's config imports.
        drop_ins: &'static str,
    },
    /// `containerd config dump` printed something that is not TOML.
    #[error("`containerd config dump` on `{node}` printed something that is not TOML")]
    ContainerdDump {
        /// The inventory name.
        node: String,
        /// Why it does not parse.
        #[source]
        source: Box<toml::de::Error>,
    },
    /// The plan lacks what the step needs: a step run with a plan not made for it.
    #[error("{what}")]
    NotInPlan {
        /// What is missing, naming the node or the field.
        what: String,
    },
    /// The bundle could not be unpacked into the installer machine's store.
    #[error("cannot unpack the bundle `{}` into the installer's store", path.display())]
    Bundle {
        /// The bundle as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<bundle_spec::BundleError>,
    },
    /// The installer machine's store could not be read.
    #[error("cannot read the store `{}`", path.display())]
    Store {
        /// The store.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<crate::registry::RegistryError>,
    },
    /// The bundle could not be pushed into the external registry.
    #[error(transparent)]
    Push(Box<crate::push::PushError>),
    /// A blocking task of the step panicked or was cancelled.
    #[error("a task of the step ended abnormally")]
    Task(#[from] tokio::task::JoinError),
    /// A reissued certificate could not be put on a node, or what reads it not restarted.
    #[error(transparent)]
    Certs(Box<crate::certs::CertsError>),
    /// `ctr images ls` on a node printed a line that is not an image.
    #[error("`ctr -n k8s.io images ls` on `{node}` printed a line kk cannot read: `{line}`")]
    CtrImages {
        /// The inventory name.
        node: String,
        /// The line.
        line: String,
    },
}

/// `From` for the variants that box their source (a step's error travels in every `Result`
/// of the phases, so it is kept small).
macro_rules! boxed_from {
    ($($variant:ident($error:ty)),* $(,)?) => {$(
        impl From<$error> for StepError {
            fn from(error: $error) -> Self {
                Self::$variant(Box::new(error))
            }
        }
    )*};
}

boxed_from!(
    Ssh(SshError),
    Hook(HookError),
    Pki(PkiError),
    Token(TokenError),
    Plan(PlanError),
    Push(crate::push::PushError),
    Certs(crate::certs::CertsError),
);

impl StepError {
    /// A closure turning an I/O error on `path` into [`StepError::Io`].
    pub(crate) fn io(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_owned();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }

    /// [`StepError::NotInPlan`] with `what`.
    pub(crate) fn not_in_plan(what: impl Into<String>) -> Self {
        Self::NotInPlan { what: what.into() }
    }
}

//! What each step does: on a node ([`run`]), or once for the cluster on the installer machine
//! ([`run_cluster`], [`precheck::rules`]). The executor (`run.rs`) only orders the steps,
//! records them and reports progress. Every step checks before it changes: a file is written
//! only when its content or mode differs, a service is restarted only when something it reads
//! changed, so running a step twice changes nothing the second time.

mod docker;
pub(crate) mod etcd;
pub(crate) mod hooks;
pub(crate) mod kubernetes;
mod network;
pub(crate) mod nfs;
pub(crate) mod os;
mod packages;
mod pins;
pub(crate) mod pki;
pub(crate) mod precheck;
mod push;
pub(crate) mod registry;
mod runtime;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::pki::Issued;
use crate::ssh::SshError;
use crate::ssh::{Node, quote};

use super::error::StepError;
use super::plan::{Action, Plan};
use precheck::Checks;

/// What every step may read.
#[derive(Debug)]
pub(crate) struct Cx<'a> {
    pub(crate) plan: &'a Plan,
    /// What the precheck and the os phase's check read; how nodes are reached.
    pub(crate) checks: &'a Checks<'a>,
    /// The bundle file as given (a file, a parts index or a first part).
    pub(crate) bundle_path: &'a Path,
    /// The kk-install copied to the registry host.
    pub(crate) installer_binary: &'a Path,
    /// The node agent copied to every node.
    pub(crate) agent_binary: &'a Path,
    /// The work directory (certificates, logs, state).
    pub(crate) work_dir: &'a Path,
    /// The certificates, once `pki.issue` ran.
    pub(crate) pki: &'a OnceLock<Issued>,
    /// The bootstrap token and CA hash, once `kubernetes.token` ran.
    pub(crate) bootstrap: &'a OnceLock<kubernetes::Bootstrap>,
}

/// What a step did on a node.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Whether anything on the node changed.
    pub(crate) changed: bool,
    /// Files kk wrote (or keeps) there.
    pub(crate) files: Vec<String>,
    /// Bytes the installer machine sent to the node.
    pub(crate) sent: u64,
    /// Lines for the operator (what was installed, what could not start).
    pub(crate) notes: Vec<String>,
}

impl Outcome {
    fn merge(&mut self, other: Self) {
        self.changed |= other.changed;
        self.files.extend(other.files);
        self.sent += other.sent;
        self.notes.extend(other.notes);
    }
}

/// What a node step did, or why it failed.
pub(crate) type StepResult = Result<Outcome, StepError>;

/// Runs the per-node `action` on `node`.
pub(crate) async fn run(cx: &Cx<'_>, action: &Action, node: &Node) -> StepResult {
    match action {
        Action::Agent => os::agent(cx, node).await,
        Action::Installer => os::installer(cx, node).await,
        Action::Hostname => os::hostname(node).await,
        Action::Swap => os::swap(node).await,
        Action::Modules => os::modules(cx, node).await,
        Action::Sysctl { ipv6 } => os::sysctl(cx, node, *ipv6).await,
        Action::Hosts => os::hosts(cx, node).await,
        Action::Certificates => pki::copy(cx, node).await,
        Action::UnpackBundle => registry::unpack(cx, node).await,
        Action::RegistryService => registry::service(cx, node).await,
        Action::RegistryReady => registry::ready(cx, node).await,
        Action::InstallPackages => packages::install(cx, node).await,
        Action::NfsServer => nfs::server(cx, node).await,
        Action::Fetch { binaries } => runtime::fetch(cx, node, binaries).await,
        Action::Containerd => runtime::containerd(cx, node).await,
        Action::Docker => docker::docker(cx, node).await,
        Action::PullProbe if cx.plan.docker.is_some() => docker::pull_probe(cx, node).await,
        Action::PullProbe => runtime::pull_probe(cx, node).await,
        Action::EtcdService => etcd::service(cx, node).await,
        Action::EtcdHealth => etcd::health(cx, node).await,
        Action::KubeletService => kubernetes::kubelet(cx, node).await,
        Action::KubeVipBootstrap => kubernetes::vip_bootstrap(cx, node).await,
        Action::KubeadmInit => kubernetes::init(cx, node).await,
        Action::JoinControlPlane => kubernetes::join(cx, node, true).await,
        Action::InternalLoadBalancer => kubernetes::haproxy(cx, node).await,
        Action::JoinWorker => kubernetes::join(cx, node, false).await,
        Action::KubeVip => kubernetes::vip(cx, node).await,
        Action::Chart { chart } => network::chart(cx, node, chart).await,
        Action::Multus { multus } => network::multus(cx, node, multus).await,
        Action::LabelNodes { label } => network::label(node, label).await,
        Action::PinImages => pins::reconcile(cx, node).await,
        Action::Hooks
        | Action::RegistryLogin
        | Action::PushStore
        | Action::PushBundle
        | Action::Precheck
        | Action::IssueCertificates
        | Action::VerifyOs
        | Action::VerifyPackages
        | Action::BootstrapToken
        | Action::SpreadCertificates => Err(StepError::not_in_plan(format!(
            "`{action:?}` is a cluster-wide step, not a node step"
        ))),
    }
}

/// Runs `command` on `node`; a failure is the step's error, with the command's output.
pub(crate) async fn sh(node: &Node, command: &str) -> Result<String, SshError> {
    node.run_checked(command)
        .await
        .map(|output| output.stdout_text())
}

/// Puts `content` at `path` on `node` with `mode`, unless it is there already with that
/// content and mode. Returns whether it wrote.
async fn put(cx: &Cx<'_>, node: &Node, content: &[u8], path: &str, mode: u32) -> StepResult {
    let staged = stage(cx.work_dir, content)?;
    put_file(node, staged.path(), path, mode).await
}

/// Like [`put`] for a local file.
async fn put_file(node: &Node, local: &Path, path: &str, mode: u32) -> StepResult {
    let local_owned = local.to_owned();
    let (digest, size) = tokio::task::spawn_blocking(move || {
        std::fs::File::open(&local_owned).and_then(bundle_spec::Sha256Digest::of_reader)
    })
    .await?
    .map_err(StepError::io("read", local))?;
    let probe = format!(
        "if [ -f {p} ]; then echo \"$(sha256sum < {p} | cut -d' ' -f1) $(stat -c %a {p})\"; fi",
        p = quote(path)
    );
    let current = sh(node, &probe).await?;
    let wanted = format!("{} {mode:o}", digest.hex());
    let mut outcome = Outcome {
        files: vec![path.to_owned()],
        ..Outcome::default()
    };
    if current.trim() != wanted {
        node.upload(local, path, mode).await?;
        outcome.changed = true;
        outcome.sent = size;
    }
    Ok(outcome)
}

/// `content` in a temporary file of the work directory, for an upload.
fn stage(work_dir: &Path, content: &[u8]) -> Result<tempfile::NamedTempFile, StepError> {
    let dir: PathBuf = work_dir.join("tmp");
    std::fs::create_dir_all(&dir).map_err(StepError::io("create", &dir))?;
    let mut file =
        tempfile::NamedTempFile::new_in(&dir).map_err(StepError::io("write in", &dir))?;
    file.write_all(content)
        .map_err(StepError::io("write in", &dir))?;
    Ok(file)
}

/// Whether [`ensure_unit`] (re)starts the unit, and whether it waits for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// Enabled only: another program starts it (kubeadm starts the kubelet).
    Never,
    /// Started, waiting until systemd reports it up.
    Wait,
    /// Started without waiting (etcd members report ready only once they have quorum).
    NoWait,
}

/// Reloads systemd when a unit changed and enables `unit`; unless `start` is
/// [`Start::Never`], also (re)starts it: restarted when `changed` and running, started when
/// not running, left alone otherwise.
async fn ensure_unit(node: &Node, unit: &str, changed: bool, start: Start) -> StepResult {
    let no_block = if start == Start::NoWait {
        " --no-block"
    } else {
        ""
    };
    let run = if start == Start::Never {
        String::new()
    } else {
        format!(
            "if systemctl is-active --quiet $u; then \
               if [ {changed} = 1 ]; then systemctl restart{no_block} $u || fail; echo restarted; fi; \
             else systemctl start{no_block} $u || fail; echo started; fi",
            changed = u8::from(changed),
        )
    };
    // A unit that does not come up is reported with systemd's own account of why.
    let command = format!(
        "u={unit}; fail() {{ systemctl status --no-pager $u; journalctl -u $u -n 30 --no-pager; exit 1; }}; \
         if [ {changed} = 1 ]; then systemctl daemon-reload || exit 1; fi; \
         if ! systemctl is-enabled --quiet $u 2>/dev/null; then systemctl enable --quiet $u || fail; echo enabled; fi; {run}",
        unit = quote(unit),
        changed = u8::from(changed),
    );
    let said = sh(node, &command).await?;
    Ok(Outcome {
        changed: !said.trim().is_empty(),
        ..Outcome::default()
    })
}

/// Writes `/etc/kubekey/installed.json` when its content changed.
pub(crate) async fn put_record(cx: &Cx<'_>, node: &Node, content: &[u8]) -> Result<(), StepError> {
    put(cx, node, content, super::render::paths::INSTALLED, 0o644)
        .await
        .map(drop)
}

/// Runs the cluster-wide `action` of `phase` on the installer machine, for `nodes`: the hooks,
/// the certificates, the os phase's check, the bootstrap token (the precheck has its own
/// entry, [`precheck::rules`]: its report decides whether the install goes on). `rerun`: an
/// earlier run did the step. Returns a line for the operator, if the step has one.
pub(crate) async fn run_cluster(
    cx: &Cx<'_>,
    action: &Action,
    phase: super::plan::Phase,
    nodes: &[&Node],
    rerun: bool,
) -> Result<Option<String>, StepError> {
    match action {
        Action::Hooks => hooks::scripts(cx, phase, nodes).await.map(Some),
        Action::RegistryLogin => push::login(cx).await,
        Action::PushStore => push::store(cx).await,
        Action::PushBundle => push::bundle(cx).await,
        Action::IssueCertificates => {
            tokio::task::block_in_place(|| pki::issue(cx))?;
            Ok(None)
        }
        Action::SpreadCertificates => pki::spread(cx, nodes).await,
        Action::VerifyOs => os::verify(cx, nodes).await.map(|()| None),
        Action::VerifyPackages => packages::verify(cx, nodes).await.map(|()| None),
        Action::BootstrapToken => {
            let replaced = kubernetes::token(cx, nodes.first().copied()).await?;
            Ok((replaced && rerun)
                .then(|| "kubernetes: the bootstrap token had expired and was replaced".to_owned()))
        }
        _ => Err(StepError::not_in_plan(format!(
            "`{action:?}` is not a cluster-wide step"
        ))),
    }
}

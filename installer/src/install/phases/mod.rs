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

use std::fmt::Write as _;
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

/// A local file to put on a node: [`put_many`]'s unit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Put<'a> {
    /// The file on the installer machine.
    pub(crate) local: &'a Path,
    /// Where it goes on the node.
    pub(crate) path: &'a str,
    /// Its mode there.
    pub(crate) mode: u32,
}

/// Like [`put_file`] for several files, in a fixed number of round trips whatever their count:
/// one probe of every path, one upload of a tar of the files that differ (checked by its sha256
/// as any upload), and one command that takes each out of it into a fresh staging directory
/// beside its target, checks its sha256, sets its mode and renames it into place (the staging
/// of [`Node::upload`]). One [`put_file`] per file was four round trips each: a control plane's
/// two dozen certificates cost a hundred.
async fn put_many(work_dir: &Path, node: &Node, files: &[Put<'_>]) -> StepResult {
    let locals: Vec<PathBuf> = files.iter().map(|f| f.local.to_owned()).collect();
    let digests = tokio::task::spawn_blocking(move || {
        locals
            .iter()
            .map(|local| {
                std::fs::File::open(local)
                    .and_then(bundle_spec::Sha256Digest::of_reader)
                    .map_err(StepError::io("read", local))
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await??;
    let mut outcome = Outcome {
        files: files.iter().map(|f| f.path.to_owned()).collect(),
        ..Outcome::default()
    };
    let current = sh(node, &probe_script(files)).await?;
    let mut found = current.lines();
    let changed: Vec<Changed<'_>> = files
        .iter()
        .zip(digests)
        .filter_map(|(file, (digest, _))| {
            let wanted = format!("{} {:o}", digest.hex(), file.mode);
            (found.next().map(str::trim) != Some(wanted.as_str())).then(|| Changed {
                file,
                hex: digest.hex(),
            })
        })
        .collect();
    let Some(first) = changed.first() else {
        return Ok(outcome);
    };
    let archive = stage_archive(work_dir, &changed)?;
    // Named by content: two runs never share a half-written tar.
    let landed = format!("/tmp/kk-put-{}.tar", &first.hex[..16]);
    node.upload(archive.path(), &landed, 0o600).await?;
    sh(node, &place_script(&landed, &changed)).await?;
    outcome.changed = true;
    outcome.sent = archive
        .as_file()
        .metadata()
        .map_err(StepError::io("read", archive.path()))?
        .len();
    Ok(outcome)
}

/// A file [`put_many`] writes, and its sha256.
struct Changed<'a> {
    file: &'a Put<'a>,
    hex: String,
}

/// One line per file, in order: `<sha256> <mode>` of what is there, or `-`.
fn probe_script(files: &[Put<'_>]) -> String {
    let paths: Vec<String> = files.iter().map(|f| quote(f.path)).collect();
    format!(
        "for p in {}; do if [ -f \"$p\" ]; then echo \"$(sha256sum < \"$p\" | cut -d' ' -f1) $(stat -c %a \"$p\")\"; else echo -; fi; done",
        paths.join(" ")
    )
}

/// The `changed` files in a tar of the work directory, member `<i>` for the i-th.
fn stage_archive(
    work_dir: &Path,
    changed: &[Changed<'_>],
) -> Result<tempfile::NamedTempFile, StepError> {
    let mut archive = tar::Builder::new(Vec::new());
    for (index, changed) in changed.iter().enumerate() {
        let local = changed.file.local;
        archive
            .append_path_with_name(local, index.to_string())
            .map_err(StepError::io("read", local))?;
    }
    let bytes = archive
        .into_inner()
        .map_err(StepError::io("write in", work_dir))?;
    stage(work_dir, &bytes)
}

/// Takes member `<i>` of the tar `landed` to the i-th of `changed`: staged beside its target
/// (a fresh `mktemp -d`), sha256 checked (exit 3 naming what was found), mode set, renamed.
/// The tar and every staging directory go, whatever happens.
fn place_script(landed: &str, changed: &[Changed<'_>]) -> String {
    let tar = quote(landed);
    let mut script =
        format!("s=; fail() {{ rm -rf -- ${{s:+\"$s\"}}; rm -f -- {tar}; exit \"$1\"; }}; ");
    for (index, Changed { file, hex }) in changed.iter().enumerate() {
        let dir = match file.path.rsplit_once('/') {
            Some(("", _)) => "/",
            Some((dir, _)) => dir,
            None => ".",
        };
        let dir = quote(dir);
        let _ = write!(
            script,
            "mkdir -p -- {dir} || fail 1; s=$(mktemp -d {dir}/.kk-upload-XXXXXXXXXX) || fail 1; \
             tar -xOf {tar} {index} > \"$s/f\" || fail 1; \
             got=$(sha256sum -- \"$s/f\" | cut -d' ' -f1) || fail 1; \
             if [ \"$got\" != {hex} ]; then echo {to}\": found sha256 $got\" >&2; fail 3; fi; \
             chmod {mode:o} \"$s/f\" && mv -f -- \"$s/f\" {to} && rmdir -- \"$s\" || fail 1; s=; ",
            mode = file.mode,
            to = quote(file.path),
        );
    }
    let _ = write!(script, "rm -f -- {tar}");
    script
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::ssh::{Connector, HostKeyPolicy, NodeLog, Target, Timeouts};

    async fn local_node() -> Node {
        let target = Target {
            name: "local".to_owned(),
            connector: Connector::Local,
        };
        let policy = HostKeyPolicy {
            known_hosts: PathBuf::from("/nonexistent"),
            accept_new: false,
        };
        Node::connect(&target, &policy, Timeouts::default(), NodeLog::discard())
            .await
            .expect("local node")
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
    }

    #[tokio::test]
    async fn put_many_writes_only_what_differs_and_nothing_the_second_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (work, node_root) = (dir.path().join("work"), dir.path().join("node"));
        std::fs::create_dir_all(node_root.join("x")).expect("mkdir");
        let local = |name: &str, content: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, content).expect("write");
            path
        };
        let (same, mode, new) = (
            local("same", "kept as is\n"),
            local("mode", "right bytes, wrong mode\n"),
            local("new", "not there yet\n"),
        );
        let target = |rel: &str| node_root.join(rel).to_str().expect("utf-8").to_owned();
        let (same_at, mode_at, new_at) = (target("x/same"), target("x/mode"), target("y/z/new"));
        std::fs::copy(&same, &same_at).expect("copy");
        std::fs::set_permissions(&same_at, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        std::fs::copy(&mode, &mode_at).expect("copy");
        std::fs::set_permissions(&mode_at, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let puts = [
            Put {
                local: &same,
                path: &same_at,
                mode: 0o644,
            },
            Put {
                local: &mode,
                path: &mode_at,
                mode: 0o600,
            },
            Put {
                local: &new,
                path: &new_at,
                mode: 0o640,
            },
        ];
        let node = local_node().await;

        let first = put_many(&work, &node, &puts).await.expect("put");
        assert!(first.changed && first.sent > 0, "{first:?}");
        assert_eq!(
            first.files,
            [same_at.clone(), mode_at.clone(), new_at.clone()]
        );
        for (local, at, mode) in [
            (&same, &same_at, 0o644),
            (&mode, &mode_at, 0o600),
            (&new, &new_at, 0o640),
        ] {
            let at = Path::new(at);
            assert_eq!(
                std::fs::read(at).expect("read"),
                std::fs::read(local).expect("read"),
                "{at:?}"
            );
            assert_eq!(mode_of(at), mode, "{at:?}");
        }
        // No staging directory left beside any target.
        for dir in ["x", "y/z"] {
            let names: Vec<_> = std::fs::read_dir(node_root.join(dir))
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert!(
                names
                    .iter()
                    .all(|n| !n.to_string_lossy().starts_with(".kk-upload-")),
                "{names:?}"
            );
        }

        let again = put_many(&work, &node, &puts).await.expect("put again");
        assert!(!again.changed && again.sent == 0, "{again:?}");
    }
}

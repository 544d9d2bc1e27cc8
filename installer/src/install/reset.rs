//! `kk-install reset`: takes the cluster off every node, so that the same command installs it
//! again from nothing.
//!
//! On each node: `kubeadm reset -f`; the containers kubeadm's CRI cleanup would remove; the
//! units kk installed stopped, disabled and removed; every file `/etc/kubekey/installed.json`
//! lists removed (kk's block taken out of `/etc/hosts` and `/etc/exports`, which are not kk's
//! files, and the exports re-read with `exportfs -ra`); the CNI's config and the iptables
//! chains CNIs and kube-proxy leave; kk's working files (fetch stamps, the charts and their
//! rendered values — the NFS provisioner's among them —, the fetched `.deb`s). Data — etcd's,
//! the registry's store, containerd's images, the NFS share's volumes — stays unless `purge`,
//! so a reinstall does not have to move gigabytes again and nobody's volumes are lost by
//! accident. On the installer machine the state and the token record go (the certificates
//! stay: the same CA serves the next install).
//!
//! The operating-system packages the packages phase installed stay: once installed they are
//! the node's (`dpkg` knows no owner), other software may depend on them by now, and removing
//! them could break what the operator runs on the node. `nfs-server` stays enabled for the same
//! reason; without kk's exports it serves nothing of kk's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{InstallError, StepError};
use super::lock::StateLock;
use super::phases::sh as run;
use super::render::{self, paths};
use crate::ssh::{Node, fan_out, quote};

/// The units kk installs, each stopped before what it runs on (cri-dockerd and dockerd with
/// `cri.container_manager: docker`, before their containerd).
const UNITS: [&str; 6] = [
    "kubelet",
    "cri-docker",
    "docker",
    "etcd",
    "containerd",
    "kk-registry",
];

/// Directories kk keeps its own working files in (stamps, charts, kubeadm configs and chart
/// values, fetched packages).
const KK_DIRS: [&str; 4] = [
    crate::fetch::STAMP_DIR,
    super::plan::CHARTS_DIR,
    render::kubernetes::paths::KK_CONFIGS,
    super::plan::PACKAGES_DIR,
];

/// Files kk keeps a marked block in, not its own: only the block goes.
const BLOCK_FILES: [&str; 2] = ["/etc/hosts", super::phases::nfs::EXPORTS];

/// Data removed only with `purge` (their contents: they may be mount points).
const DATA_DIRS: [&str; 4] = [
    "/var/lib/etcd",
    paths::STORE,
    "/var/lib/containerd",
    "/var/lib/docker",
];

/// Chain-name prefixes of kube-proxy and the CNIs kk installs.
const CHAIN_PREFIXES: &str = "KUBE-|cali-|CILIUM|FLANNEL";

/// What reset did on a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeReset {
    /// Whether kubeadm was there and reset the node.
    pub kubeadm: bool,
    /// The units stopped and removed.
    pub units: Vec<String>,
    /// How many files of the record were removed.
    pub files: usize,
    /// Whether data directories were emptied.
    pub purged: bool,
}

/// What reset reads of the record.
#[derive(Debug, Default, Deserialize)]
struct Record {
    #[serde(default)]
    files: Vec<String>,
    /// The NFS share directory, on the `nfs` host.
    #[serde(default)]
    nfs_share: Option<String>,
}

/// Resets every node in `nodes` (all at once, bounded by `concurrency`), then forgets the
/// install in `work_dir`, whose `lock` the caller holds. The first node that fails is the
/// error; the others still ran. `nfs_shares`: the share directory the config names for each
/// `nfs` host, which `purge` empties when the node's record no longer names it (a reset
/// before this one removed the record, as it removes every other file of kk's).
pub async fn reset(
    nodes: &[Node],
    work_dir: &Path,
    _lock: &StateLock,
    purge: bool,
    concurrency: usize,
    nfs_shares: &BTreeMap<String, String>,
) -> Result<Vec<(String, NodeReset)>, InstallError> {
    let targets: Vec<&Node> = nodes.iter().collect();
    let results = fan_out(&targets, concurrency, |node| async move {
        let configured = nfs_shares.get(node.name()).map(String::as_str);
        reset_node(node, purge, configured)
            .await
            .map_err(|source| InstallError::Reset {
                node: node.name().to_owned(),
                source: Box::new(source),
            })
    })
    .await;
    let mut done = Vec::new();
    for (node, result) in nodes.iter().zip(results) {
        done.push((node.name().to_owned(), result?));
    }
    for file in [super::state::STATE_FILE, super::bootstrap::TOKEN_FILE] {
        let path = work_dir.join(file);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(InstallError::State { path, source }),
        }
    }
    Ok(done)
}

/// Resets the one `node` (`delete-node` too); `configured_share`: see [`reset`].
pub(super) async fn reset_node(
    node: &Node,
    purge: bool,
    configured_share: Option<&str>,
) -> Result<NodeReset, StepError> {
    let mut done = NodeReset::default();
    let kubeadm = run(
        node,
        "if [ -x /usr/local/bin/kubeadm ]; then /usr/local/bin/kubeadm reset -f >/dev/null 2>&1 \
           || { /usr/local/bin/kubeadm reset -f 2>&1; exit 1; }; echo reset; fi",
    )
    .await?;
    done.kubeadm = kubeadm.contains("reset");
    // kubeadm's CRI cleanup, for what the kubelet started: every task killed, every container
    // removed, while containerd still runs.
    run(
        node,
        "c='/usr/local/bin/ctr -n k8s.io'; if [ -x /usr/local/bin/ctr ] && $c version >/dev/null 2>&1; then \
           for t in $($c tasks ls -q 2>/dev/null); do $c tasks kill -s KILL \"$t\" >/dev/null 2>&1; done; \
           sleep 1; for k in $($c containers ls -q 2>/dev/null); do $c tasks rm -f \"$k\" >/dev/null 2>&1; $c containers rm \"$k\" >/dev/null 2>&1; done; fi",
    )
    .await?;
    for unit in UNITS {
        let file = format!("/etc/systemd/system/{unit}.service");
        // A socket unit beside the service (cri-docker.socket) goes first, or it would start the
        // service again.
        let socket = format!("/etc/systemd/system/{unit}.socket");
        let said = run(
            node,
            &format!(
                "if [ -f {socket} ]; then systemctl disable --now {unit}.socket >/dev/null 2>&1; \
                   systemctl stop {unit}.socket 2>&1 || exit 1; rm -f {socket}; fi; \
                 if [ -f {file} ]; then systemctl disable --now {unit}.service >/dev/null 2>&1; \
                   systemctl stop {unit}.service 2>&1 || exit 1; rm -rf {file} {file}.d; echo removed; fi"
            ),
        )
        .await?;
        if said.contains("removed") {
            done.units.push(unit.to_owned());
        }
    }
    run(node, "systemctl daemon-reload").await?;
    let record = read_record(node).await?;
    done.files = remove_files(node, &record.files).await?;
    let dirs: Vec<String> = KK_DIRS.iter().map(|d| quote(d)).collect();
    run(
        node,
        &format!("rm -rf {} /etc/cni/net.d/* /var/lib/cni", dirs.join(" ")),
    )
    .await?;
    run(node, &iptables_cleanup()).await?;
    if purge {
        for dir in DATA_DIRS {
            run(
                node,
                &format!("if [ -d {dir} ]; then find {dir} -mindepth 1 -delete; fi"),
            )
            .await?;
        }
        let share = record.nfs_share.as_deref().or(configured_share);
        if let Some(share) = share.filter(|dir| is_purgeable(dir)) {
            run(
                node,
                &format!(
                    "if [ -d {dir} ]; then find {dir} -mindepth 1 -delete; fi",
                    dir = quote(share)
                ),
            )
            .await?;
        }
        done.purged = true;
    }
    Ok(done)
}

/// Whether the recorded share directory may be emptied: an absolute path below `/` that
/// nothing leads out of (the record is a file on the node, read back).
fn is_purgeable(dir: &str) -> bool {
    dir.starts_with('/')
        && !dir.trim_end_matches('/').is_empty()
        && !dir.split('/').any(|part| part == "..")
}

/// `/etc/kubekey/installed.json` (empty when there is none).
async fn read_record(node: &Node) -> Result<Record, StepError> {
    let text = run(
        node,
        &format!("cat {} 2>/dev/null || true", paths::INSTALLED),
    )
    .await?;
    if text.trim().is_empty() {
        return Ok(Record::default());
    }
    serde_json::from_str(&text).map_err(|source| StepError::NotARecord {
        path: paths::INSTALLED,
        source,
    })
}

/// Removes `files` (kk's block out of each of [`BLOCK_FILES`]); returns how many were removed.
async fn remove_files(node: &Node, files: &[String]) -> Result<usize, StepError> {
    let mut removable: BTreeSet<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|f| f.starts_with('/') && !f.contains(".."))
        .collect();
    for file in BLOCK_FILES {
        if removable.remove(file) {
            remove_block(node, file).await?;
        }
    }
    // The record goes last, so an interrupted reset can run again.
    removable.remove(paths::INSTALLED);
    let mut removed = 0;
    for chunk in removable.iter().collect::<Vec<_>>().chunks(64) {
        let list: Vec<String> = chunk.iter().map(|f| quote(f)).collect();
        let said = run(
            node,
            &format!(
                "n=0; for f in {}; do if [ -e \"$f\" ] || [ -L \"$f\" ]; then rm -f -- \"$f\" && n=$((n+1)); fi; done; echo $n",
                list.join(" ")
            ),
        )
        .await?;
        removed += said.trim().parse::<usize>().unwrap_or(0);
    }
    run(node, &format!("rm -f {}", paths::INSTALLED)).await?;
    Ok(removed)
}

/// Takes kk's block out of `file`; for `/etc/exports`, the server then re-reads its exports
/// (where `exportfs` is there to do it).
async fn remove_block(node: &Node, file: &str) -> Result<(), StepError> {
    let current = run(node, &format!("cat {file} 2>/dev/null || true")).await?;
    let cleaned = render::without_block(&current);
    if cleaned != current {
        run(node, &format!("printf '%s' {} > {file}", quote(&cleaned))).await?;
    }
    if file == super::phases::nfs::EXPORTS {
        run(
            node,
            "if command -v exportfs >/dev/null 2>&1; then exportfs -ra 2>&1; fi",
        )
        .await?;
    }
    Ok(())
}

/// Removes every iptables/ip6tables rule and chain whose name starts with a prefix kube-proxy
/// or the CNIs use, table by table, atomically (`iptables-restore` of the saved table without
/// them); tables without any are not touched.
fn iptables_cleanup() -> String {
    format!(
        "for v in iptables ip6tables; do command -v $v-save >/dev/null 2>&1 || continue; \
           for t in filter nat mangle raw; do s=$($v-save -t $t 2>/dev/null) || continue; \
             printf '%s\\n' \"$s\" | grep -qE -- '{CHAIN_PREFIXES}' || continue; \
             printf '%s\\n' \"$s\" | grep -vE -- '{CHAIN_PREFIXES}' | $v-restore -T $t 2>&1 || exit 1; \
           done; done"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_stops_before_what_it_runs_on() {
        let at = |unit: &str| UNITS.iter().position(|u| *u == unit).expect(unit);
        assert!(at("kubelet") < at("cri-docker"));
        assert!(at("cri-docker") < at("docker"));
        assert!(at("docker") < at("containerd"));
    }

    #[test]
    fn data_is_only_what_purge_removes() {
        assert!(!KK_DIRS.iter().any(|d| DATA_DIRS.contains(d)));
        assert!(DATA_DIRS.contains(&"/var/lib/etcd") && DATA_DIRS.contains(&paths::STORE));
    }

    #[test]
    fn kk_working_files_go_and_the_share_is_emptied_only_when_safe() {
        for dir in [
            super::super::plan::PACKAGES_DIR,
            super::super::plan::CHARTS_DIR,
            render::kubernetes::paths::KK_CONFIGS,
        ] {
            assert!(KK_DIRS.contains(&dir), "{dir}");
        }
        assert!(BLOCK_FILES.contains(&"/etc/exports"));
        for (dir, purgeable) in [
            ("/share/", true),
            ("/srv/nfs", true),
            ("/", false),
            ("//", false),
            ("share", false),
            ("/srv/../etc", false),
        ] {
            assert_eq!(is_purgeable(dir), purgeable, "{dir}");
        }
    }

    #[test]
    fn the_iptables_cleanup_keeps_tables_without_cni_chains() {
        let script = iptables_cleanup();
        assert!(script.contains("grep -qE -- 'KUBE-|cali-|CILIUM|FLANNEL' || continue"));
        assert!(script.contains("-restore -T $t"));
    }
}

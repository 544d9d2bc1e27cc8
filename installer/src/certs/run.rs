//! The SSH side of `certs check` and `certs renew`: reading the nodes, then executing a
//! renewal's [`NodePlan`]s one node at a time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::CertsError;
use super::plan::{self, NODE_FILES, NodeFacts, NodePlan, Restart, Selection};
use super::table::{self, CertRow};
use crate::pki;
use crate::ssh::{Node, fan_out, quote};

/// Where a static pod's manifest waits while the kubelet stops the pod.
const PAUSED_MANIFESTS: &str = "/etc/kubernetes/kk-paused-manifests";

/// Every certificate on every node (read at once, bounded by `concurrency`), at time `now`.
pub async fn check(
    nodes: &[Node],
    concurrency: usize,
    now: SystemTime,
) -> Result<Vec<CertRow>, CertsError> {
    let now = seconds(now);
    let targets: Vec<&Node> = nodes.iter().collect();
    let read = fan_out(&targets, concurrency, |node| async move {
        let dump = sh(node, table::DUMP, "read the certificates").await?;
        table::rows(node.name(), &dump, now)
    })
    .await;
    let mut rows = Vec::new();
    for result in read {
        rows.extend(result?);
    }
    Ok(rows)
}

/// One step of a renewal, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Done {
    /// The node (`-` for the master copy).
    pub node: String,
    /// What was done.
    pub what: String,
}

/// `certs renew`: renews `selection`'s kk certificates in the master copy `dir`, then node by
/// node (never two at once) puts the renewed files, runs `kubeadm certs renew`, restarts what
/// reads them and waits until it is back. `control_planes`: their inventory names.
pub async fn renew(
    nodes: &[Node],
    control_planes: &[String],
    dir: &Path,
    selection: &Selection,
    concurrency: usize,
) -> Result<Vec<Done>, CertsError> {
    let targets: Vec<&Node> = nodes.iter().collect();
    let facts = facts(&targets, control_planes, concurrency).await?;
    let renewed = pki::renew(dir, &selection.kk, SystemTime::now())?;
    let keys = key_ids(dir)?;
    let mut done: Vec<Done> = renewed
        .iter()
        .map(|r| Done {
            node: "-".to_owned(),
            what: format!("renewed {} in the master copy", r.file.display()),
        })
        .collect();
    let plans = plan::plan(dir, selection, &renewed, &keys, &facts);
    for node_plan in plans {
        let Some(node) = nodes.iter().find(|n| n.name() == node_plan.node) else {
            continue;
        };
        execute(node, &node_plan, &mut done).await?;
    }
    Ok(done)
}

/// Puts `files` (certificates of the master copy `dir`, relative to it) on the nodes that hold
/// one with the same key but other content, then restarts what reads them, one node at a time
/// (the install's share of a certificate it reissued for a control plane added). Content that
/// already matches is left alone, so a run killed half-way converges on the next one and a
/// cluster in step changes nothing. `control_planes`: their inventory names.
pub async fn spread(
    nodes: &[&Node],
    control_planes: &[String],
    dir: &Path,
    files: &[PathBuf],
    concurrency: usize,
) -> Result<Vec<Done>, CertsError> {
    let facts = facts(nodes, control_planes, concurrency).await?;
    let keys = key_ids(dir)?;
    // Named as `certs renew` names them: the file is `<name>.crt` at the master copy's root.
    let renewed: Vec<pki::Renewed> = files
        .iter()
        .filter_map(|file| {
            let name = pki::KK_CERTIFICATES
                .into_iter()
                .find(|name| Path::new(&format!("{name}.crt")) == file)?;
            Some(pki::Renewed {
                name,
                file: file.clone(),
            })
        })
        .collect();
    let mut done = Vec::new();
    for mut node_plan in plan::plan(dir, &Selection::default(), &renewed, &keys, &facts) {
        let Some(node) = nodes.iter().find(|n| n.name() == node_plan.node) else {
            continue;
        };
        node_plan.files = differing(node, node_plan.files).await?;
        if !node_plan.files.is_empty() {
            execute(node, &node_plan, &mut done).await?;
        }
    }
    Ok(done)
}

/// The `(local, remote)` pairs whose remote file differs from the local one.
async fn differing(
    node: &Node,
    files: Vec<(PathBuf, String)>,
) -> Result<Vec<(PathBuf, String)>, CertsError> {
    let mut differ = Vec::new();
    for (local, remote) in files {
        let bytes = std::fs::read(&local).map_err(|source| pki::PkiError::Read {
            path: local.clone(),
            source,
        })?;
        let wanted = bundle_spec::Sha256Digest::of(&bytes).hex();
        let have = sh(
            node,
            &format!("sha256sum < {} | cut -d' ' -f1", quote(&remote)),
            "read a certificate's digest",
        )
        .await?;
        if have.trim() != wanted {
            differ.push((local, remote));
        }
    }
    Ok(differ)
}

/// What [`plan::plan`] needs of every node: which of [`NODE_FILES`] it has, and the key of
/// each certificate (read whole: certificates are public, and a node may lack openssl).
async fn facts(
    nodes: &[&Node],
    control_planes: &[String],
    concurrency: usize,
) -> Result<Vec<NodeFacts>, CertsError> {
    let list: Vec<String> = NODE_FILES.iter().map(|f| quote(f)).collect();
    // A kubeconfig's contents are secret (its client key): only its name is printed.
    let command = format!(
        "for f in {}; do [ -f \"$f\" ] || continue; echo \"==> $f\"; \
           case \"$f\" in *.crt) cat \"$f\"; echo ;; esac; done; true",
        list.join(" ")
    );
    let read = fan_out(nodes, concurrency, |node| {
        let command = &command;
        async move { sh(node, command, "read the certificates kk may renew").await }
    })
    .await;
    let mut facts = Vec::new();
    for (node, said) in nodes.iter().zip(read) {
        let said = said?;
        let files = table::files(&said)
            .into_iter()
            .map(|(path, body)| {
                let id = plan::key_id(body).unwrap_or_default();
                (path.to_owned(), id)
            })
            .collect();
        facts.push(NodeFacts {
            name: node.name().to_owned(),
            control_plane: control_planes.iter().any(|cp| cp == node.name()),
            files,
        });
    }
    Ok(facts)
}

/// The key of every certificate in the master copy ([`plan::key_id`]), by path relative to it.
fn key_ids(dir: &Path) -> Result<BTreeMap<PathBuf, String>, CertsError> {
    let mut found = BTreeMap::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(sub) = todo.pop() {
        let path = dir.join(&sub);
        let read_error = |source| pki::PkiError::Read {
            path: path.clone(),
            source,
        };
        for entry in std::fs::read_dir(&path).map_err(read_error)? {
            let entry = entry.map_err(read_error)?;
            let relative = sub.join(entry.file_name());
            if entry.file_type().map_err(read_error)?.is_dir() {
                todo.push(relative);
            } else if relative.extension().is_some_and(|e| e == "crt") {
                let text = std::fs::read_to_string(entry.path()).map_err(read_error)?;
                if let Some(id) = plan::key_id(&text) {
                    found.insert(relative, id);
                }
            }
        }
    }
    Ok(found)
}

/// One node's share: files, kubeadm, restarts, each recorded in `done`.
async fn execute(node: &Node, plan: &NodePlan, done: &mut Vec<Done>) -> Result<(), CertsError> {
    let mut record = |what: String| {
        done.push(Done {
            node: plan.node.clone(),
            what,
        });
    };
    for (local, remote) in &plan.files {
        node.upload(local, remote, 0o644)
            .await
            .map_err(|source| CertsError::Node {
                node: plan.node.clone(),
                what: format!("put `{remote}`"),
                source: Box::new(source),
            })?;
        record(format!("put {remote}"));
    }
    if !plan.kubeadm.is_empty() {
        let names = plan.kubeadm.join(" ");
        sh(
            node,
            &format!("/usr/local/bin/kubeadm certs renew {names} 2>&1"),
            &format!("run `kubeadm certs renew {names}`"),
        )
        .await?;
        record(format!("kubeadm certs renew {names}"));
    }
    for restart in &plan.restarts {
        restart_one(node, *restart).await?;
        record(format!("restarted {}", service(*restart)));
    }
    Ok(())
}

fn service(restart: Restart) -> String {
    match restart {
        Restart::Etcd => "etcd".to_owned(),
        Restart::StaticPod(pod) => format!("static pod {pod}"),
        Restart::Registry => "kk-registry".to_owned(),
    }
}

/// Restarts `restart` and waits until it serves again.
async fn restart_one(node: &Node, restart: Restart) -> Result<(), CertsError> {
    let pki = pki::KUBERNETES_PKI;
    let command = match restart {
        Restart::Etcd => format!(
            "systemctl restart etcd.service 2>&1 || exit 1; i=0; while [ $i -lt 60 ]; do \
               ETCDCTL_API=3 /usr/local/bin/etcdctl --endpoints https://127.0.0.1:2379 \
               --cacert {pki}/etcd/ca.crt --cert {pki}/etcd/healthcheck-client.crt \
               --key {pki}/etcd/healthcheck-client.key --dial-timeout 3s endpoint health 2>&1 \
               | grep -q 'is healthy' && exit 0; i=$((i+1)); sleep 1; done; \
             systemctl status --no-pager etcd.service 2>&1; exit 1"
        ),
        // kubeadm's documented way: the kubelet stops a static pod whose manifest is gone and
        // starts it again when it is back.
        Restart::StaticPod(pod) => format!(
            "m=/etc/kubernetes/manifests/{pod}.yaml; p={PAUSED_MANIFESTS}; mkdir -p $p; \
             [ -f $m ] || [ -f $p/{pod}.yaml ] || exit 0; [ -f $m ] && mv $m $p/; \
             c='/usr/local/bin/crictl'; i=0; while [ $i -lt 60 ] && [ -n \"$($c ps -q --name '^{pod}$' 2>/dev/null)\" ]; do i=$((i+1)); sleep 1; done; \
             mv $p/{pod}.yaml $m || exit 1; i=0; while [ $i -lt 120 ]; do \
               [ -n \"$($c ps -q --state running --name '^{pod}$' 2>/dev/null)\" ] && exit 0; i=$((i+1)); sleep 1; done; \
             echo 'no running container'; exit 1"
        ),
        Restart::Registry => "systemctl restart kk-registry.service 2>&1 && systemctl is-active kk-registry.service 2>&1".to_owned(),
    };
    node.run_checked(&command)
        .await
        .map(|_| ())
        .map_err(|source| CertsError::Restart {
            node: node.name().to_owned(),
            service: service(restart),
            said: source.to_string(),
        })
}

async fn sh(node: &Node, command: &str, what: &str) -> Result<String, CertsError> {
    node.run_checked(command)
        .await
        .map(|output| output.stdout_text())
        .map_err(|source| CertsError::Node {
            node: node.name().to_owned(),
            what: what.to_owned(),
            source: Box::new(source),
        })
}

fn seconds(time: SystemTime) -> i64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
        .cast_signed()
}

/// A note for each CA of the master copy `dir` within [`table::CA_WARN_DAYS`] of its expiry
/// at `now`, with what rotating it takes.
pub fn ca_notes(dir: &Path, now: SystemTime) -> Result<Vec<String>, CertsError> {
    let now = seconds(now);
    let notes = pki::ca_expiries(dir)?
        .into_iter()
        .filter(|ca| (ca.not_after - now).div_euclid(86_400) < table::CA_WARN_DAYS)
        .map(|ca| {
            format!(
                "CA `{}` expires in {} days: certs renew does not rotate CAs; rotating it means a new CA trusted beside the old one on every node (kubelets, kubeconfigs, containerd's registry trust), every leaf reissued from it, then the old one removed (kubeadm's manual rotation)",
                dir.join(&ca.file).display(),
                (ca.not_after - now).div_euclid(86_400)
            )
        })
        .collect();
    Ok(notes)
}

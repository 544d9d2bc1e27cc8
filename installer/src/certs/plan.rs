//! What `certs renew` does, decided before any node changes: which names kk renews in its
//! master copy and which kubeadm renews on the control planes ([`select`]), then per node which
//! files it gets, what kubeadm renews there and which services restart ([`plan`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::CertsError;
use crate::pki::{KK_CERTIFICATES, PkiError, Renewed};

/// The kubeconfigs only kubeadm holds (their keys never leave the control plane).
pub const KUBECONFIGS: [&str; 4] = [
    "admin.conf",
    "super-admin.conf",
    "controller-manager.conf",
    "scheduler.conf",
];

/// Stacked etcd's certificates, which kubeadm makes on each control plane with the etcd CA's
/// key (kk's master copy has none of a stacked member's).
const STACKED_ETCD: [&str; 3] = ["etcd-server", "etcd-peer", "etcd-healthcheck-client"];

/// The files `certs renew` may replace on a node, and the kubeconfigs it asks kubeadm to renew:
/// what [`plan`] needs to know of each node (which are there, and whose key each certificate
/// holds).
pub const NODE_FILES: [&str; 12] = [
    "/etc/kubernetes/pki/apiserver.crt",
    "/etc/kubernetes/pki/apiserver-kubelet-client.crt",
    "/etc/kubernetes/pki/front-proxy-client.crt",
    "/etc/kubernetes/pki/apiserver-etcd-client.crt",
    "/etc/kubernetes/pki/etcd/server.crt",
    "/etc/kubernetes/pki/etcd/peer.crt",
    "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
    "/etc/kk/pki/registry.crt",
    "/etc/kubernetes/admin.conf",
    "/etc/kubernetes/super-admin.conf",
    "/etc/kubernetes/controller-manager.conf",
    "/etc/kubernetes/scheduler.conf",
];

/// The names to renew, by who renews them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Selection {
    /// Renewed by kk in its master copy, then copied to the nodes.
    pub kk: Vec<&'static str>,
    /// Renewed by `kubeadm certs renew` on each control plane that has them.
    pub kubeadm: Vec<&'static str>,
}

/// Resolves `names` (or every name with `all`): kk's where its master copy holds them
/// (`holds`), kubeadm's for the kubeconfigs and, with stacked etcd, etcd's certificates.
pub fn select(
    all: bool,
    names: &[String],
    holds: impl Fn(&str) -> Result<bool, PkiError>,
) -> Result<Selection, CertsError> {
    let stacked = !holds("etcd-server")?;
    let mut selection = Selection::default();
    let wanted: Vec<&str> = if all {
        KK_CERTIFICATES
            .iter()
            .chain(&KUBECONFIGS)
            .copied()
            .collect()
    } else if names.is_empty() {
        return Err(CertsError::NothingAsked);
    } else {
        names.iter().map(String::as_str).collect()
    };
    for name in wanted {
        let kubeconfig = KUBECONFIGS.iter().find(|k| **k == name);
        let kk = KK_CERTIFICATES.iter().find(|k| **k == name);
        let stacked_etcd = STACKED_ETCD
            .iter()
            .find(|k| **k == name)
            .filter(|_| stacked);
        match (kubeconfig, kk) {
            (Some(kubeconfig), _) => push(&mut selection.kubeadm, kubeconfig),
            (None, Some(kk)) => {
                if let Some(etcd) = stacked_etcd {
                    push(&mut selection.kubeadm, etcd);
                }
                // With `--all`, what this install did not make (no kk registry, stacked etcd's
                // members) is not asked of kk; asked by name, kk says it does not hold it.
                if !all || holds(kk)? {
                    push(&mut selection.kk, kk);
                }
            }
            (None, None) => {
                return Err(CertsError::UnknownName {
                    name: name.to_owned(),
                    known: KK_CERTIFICATES
                        .iter()
                        .chain(&KUBECONFIGS)
                        .copied()
                        .collect::<Vec<_>>()
                        .join("`, `"),
                });
            }
        }
    }
    Ok(selection)
}

fn push(list: &mut Vec<&'static str>, name: &&'static str) {
    if !list.contains(name) {
        list.push(name);
    }
}

/// A node as [`plan`] sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// Its inventory name.
    pub name: String,
    /// Whether it is a control plane.
    pub control_plane: bool,
    /// Each of [`NODE_FILES`] it has: for a certificate, the sha256 (hex) of its public key
    /// ([`key_id`]); for a kubeconfig, empty.
    pub files: BTreeMap<String, String>,
}

/// A service restarted so that it reads renewed certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restart {
    /// kk's external etcd member (`etcd.service`), health-checked after.
    Etcd,
    /// A kubeadm static pod, restarted as kubeadm documents it (its manifest moved out of the
    /// kubelet's directory until the pod is gone, then back).
    StaticPod(&'static str),
    /// `kk-registry.service`.
    Registry,
}

/// What happens on one node, in order: files put, kubeadm's renewals, restarts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodePlan {
    /// The node.
    pub node: String,
    /// `(file of the master copy, path on the node)`.
    pub files: Vec<(PathBuf, String)>,
    /// The names given to `kubeadm certs renew` there.
    pub kubeadm: Vec<&'static str>,
    /// The services restarted there, in order.
    pub restarts: Vec<Restart>,
}

/// Each node's share of a renewal: the renewed files of the master copy (`renewed`, relative
/// to `dir`) go where the node has a certificate with the same key (`keys`: [`key_id`] by
/// master-copy file), so a file kubeadm made on the node (its own key) is never replaced by
/// kk's; and since a renewal keeps the key, a renewal that stopped half-way, run again, still
/// finds every node that has not had its file yet. kubeadm's names go to control planes that
/// have them. Nodes with nothing to do are left out.
pub fn plan(
    dir: &Path,
    selection: &Selection,
    renewed: &[Renewed],
    keys: &BTreeMap<PathBuf, String>,
    nodes: &[NodeFacts],
) -> Vec<NodePlan> {
    let mut plans = Vec::new();
    for node in nodes {
        let mut plan = NodePlan {
            node: node.name.clone(),
            files: Vec::new(),
            kubeadm: Vec::new(),
            restarts: Vec::new(),
        };
        for file in renewed.iter().map(|r| &r.file) {
            let Some(remote) = node_path(file, &node.name) else {
                continue;
            };
            if node
                .files
                .get(&remote)
                .is_some_and(|k| keys.get(file) == Some(k))
            {
                plan.restarts.extend(restart_for_file(&remote));
                plan.files.push((dir.join(file), remote));
            }
        }
        if node.control_plane {
            for name in &selection.kubeadm {
                if node.files.contains_key(&kubeadm_file(name)) {
                    plan.kubeadm.push(name);
                    plan.restarts.extend(restart_for_kubeadm(name));
                }
            }
        }
        plan.restarts.sort();
        plan.restarts.dedup();
        if !plan.files.is_empty() || !plan.kubeadm.is_empty() {
            plans.push(plan);
        }
    }
    plans
}

/// What identifies a certificate's key pair: the sha256 (hex) of its public key, or `None` for
/// text that is not a PEM certificate.
pub fn key_id(pem: &str) -> Option<String> {
    use sha2::Digest as _;
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let x509 = pem.parse_x509().ok()?;
    Some(hex::encode(sha2::Sha256::digest(x509.public_key().raw)))
}

/// Where a master-copy certificate lives on `node`: an etcd member's only on that member.
pub fn node_path(file: &Path, node: &str) -> Option<String> {
    let text = file.to_string_lossy();
    if let Some(member) = text.strip_prefix("etcd/members/") {
        let (name, kind) = member.split_once('/')?;
        return (name == node).then(|| format!("{}/etcd/{kind}", crate::pki::KUBERNETES_PKI));
    }
    if text == "registry.crt" {
        return Some(format!("{}/registry.crt", crate::pki::KK_PKI));
    }
    Some(format!("{}/{text}", crate::pki::KUBERNETES_PKI))
}

/// The file on a control plane that kubeadm renews for `name`.
fn kubeadm_file(name: &str) -> String {
    match name.strip_prefix("etcd-") {
        Some(kind) => format!("{}/etcd/{kind}.crt", crate::pki::KUBERNETES_PKI),
        None => format!("/etc/kubernetes/{name}"),
    }
}

fn restart_for_file(remote: &str) -> Option<Restart> {
    let file = remote.rsplit('/').next()?;
    match (
        remote.contains("/etc/kk/"),
        remote.contains("/pki/etcd/"),
        file,
    ) {
        (true, _, _) => Some(Restart::Registry),
        (false, true, "server.crt" | "peer.crt") => Some(Restart::Etcd),
        (false, true, _) => None,
        (false, false, _) => Some(Restart::StaticPod("kube-apiserver")),
    }
}

fn restart_for_kubeadm(name: &str) -> Option<Restart> {
    match name {
        "controller-manager.conf" => Some(Restart::StaticPod("kube-controller-manager")),
        "scheduler.conf" => Some(Restart::StaticPod("kube-scheduler")),
        "etcd-server" | "etcd-peer" => Some(Restart::StaticPod("etcd")),
        _ => None,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

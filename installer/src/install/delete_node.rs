//! `kk-install delete-node NAME`: takes one node out of an installed cluster.
//!
//! In order: the node drained and deleted from Kubernetes (`kubectl` on the first control
//! plane); removed from etcd when it is a member (`etcdctl member remove` through the other
//! members, refused when the remaining healthy members would not make a quorum); `kubeadm
//! reset` and kk's units and files taken off it as `kk-install reset` does (and, for a former
//! etcd member, its etcd data); its line taken out of kk's `/etc/hosts` block on every other
//! node; its steps and files forgotten in the install state. Every part checks before it acts,
//! so a rerun after success or after a kill converges and then changes nothing. The operator
//! then removes the host from the inventory.
//!
//! [`deletion`] decides from the inventory and config alone (what the node is, what deleting it
//! would break); [`delete_node`] executes the decision on the connected nodes.

use std::net::IpAddr;
use std::path::Path;

use serde::Serialize;
use thiserror::Error;

use super::error::{InstallError, PlanError, StepError};
use super::lock::StateLock;
use super::phases::{etcd as etcd_phase, sh};
use super::plan::{address_of, etcd::listed_at, etcd::peer_url};
use super::render::{self, kubernetes::paths::ADMIN_CONF};
use super::reset::{NodeReset, reset_node};
use super::state::State;
use crate::inventory::{Config, EtcdDeploymentType, Inventory, Role};
use crate::ssh::{Node, quote};

/// Why a node is not deleted.
#[derive(Debug, Error)]
pub enum DeleteNodeError {
    /// The inventory has no host of that name.
    #[error("the inventory has no host `{node}`; hint: the hosts are {known}")]
    Unknown {
        /// The name given.
        node: String,
        /// The inventory's hosts, in backticks, comma-separated.
        known: String,
    },
    /// The first control plane holds the cluster's kubeadm state and runs `kubectl`.
    #[error(
        "`{node}` is the first control plane, which kk runs kubeadm and kubectl on; hint: it cannot be deleted, reset the whole cluster with `kk-install reset` instead"
    )]
    FirstControlPlane {
        /// The node.
        node: String,
    },
    /// The last registry host serves every node's images and binaries.
    #[error(
        "`{node}` runs kk's registry, which every node pulls from, and no other host does; hint: add another host to `image_registry` and rerun the install first, or reset the whole cluster with `kk-install reset`"
    )]
    Registry {
        /// The node.
        node: String,
    },
    /// The last etcd member holds all of the cluster's data.
    #[error(
        "`{node}` is the last etcd member and holds all of the cluster's data; hint: add another host to the `etcd` group and rerun the install first"
    )]
    LastEtcdMember {
        /// The node.
        node: String,
    },
    /// Removing the member would leave too few healthy members for a quorum.
    #[error(
        "removing `{node}` from etcd would lose quorum: {healthy} other members of {members} are healthy, {needed} are needed once it is gone; hint: bring the unhealthy members back first"
    )]
    Quorum {
        /// The node.
        node: String,
        /// Healthy members besides it.
        healthy: usize,
        /// Members listed, it included.
        members: usize,
        /// Healthy members the cluster needs without it.
        needed: usize,
    },
    /// The node's address could not be found.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A command on a node failed.
    #[error("deleting `{node}`: a command on `{on}` failed")]
    Step {
        /// The node being deleted.
        node: String,
        /// Where the command ran.
        on: String,
        /// Why.
        #[source]
        source: Box<StepError>,
    },
    /// The install state could not be read or written.
    #[error(transparent)]
    State(#[from] Box<InstallError>),
}

/// What deleting a node involves, decided from the inventory and config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deletion {
    /// The node to delete.
    pub node: String,
    /// Where `kubectl drain` and `kubectl delete node` run.
    pub first_control_plane: Option<String>,
    /// The node's etcd peer URL, when it is a member of kk's external etcd.
    pub etcd_peer_url: Option<String>,
    /// The other etcd members (name, address), through which it is removed.
    pub etcd_others: Vec<(String, IpAddr)>,
    /// Every other node, in inventory order: its `/etc/hosts` block loses the node.
    pub others: Vec<String>,
}

/// What deleting `node` involves, or why it is refused (the first control plane, the last
/// registry host, the last etcd member, a name the inventory does not have).
pub fn deletion(
    inventory: &Inventory,
    config: &Config,
    node: &str,
) -> Result<Deletion, DeleteNodeError> {
    let host = inventory
        .host(node)
        .ok_or_else(|| DeleteNodeError::Unknown {
            node: node.to_owned(),
            known: inventory
                .hosts()
                .iter()
                .map(|h| format!("`{}`", h.name))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let named = |role: Role| -> Vec<String> {
        inventory
            .role_members(role)
            .iter()
            .map(|h| h.name.clone())
            .collect()
    };
    let first_control_plane = named(Role::ControlPlane).into_iter().next();
    let refused = |error: fn(String) -> DeleteNodeError| Err(error(node.to_owned()));
    if first_control_plane.as_deref() == Some(node) {
        return refused(|node| DeleteNodeError::FirstControlPlane { node });
    }
    // One of several registry hosts may go: the others serve the same store, and every node's
    // mirrors fall back to them (the next install drops it from `hosts.toml`).
    if named(Role::ImageRegistry) == [node] {
        return refused(|node| DeleteNodeError::Registry { node });
    }
    let external = config.etcd.deployment_type == EtcdDeploymentType::External;
    let members = if external {
        inventory.role_members(Role::Etcd)
    } else {
        Vec::new()
    };
    let member = members.iter().any(|h| h.name == node);
    if member && members.len() == 1 {
        return refused(|node| DeleteNodeError::LastEtcdMember { node });
    }
    let etcd_others = if member {
        members
            .iter()
            .filter(|h| h.name != node)
            .map(|h| Ok((h.name.clone(), address_of(h)?)))
            .collect::<Result<Vec<_>, PlanError>>()?
    } else {
        Vec::new()
    };
    Ok(Deletion {
        node: node.to_owned(),
        first_control_plane,
        etcd_peer_url: member.then(|| address_of(host).map(peer_url)).transpose()?,
        etcd_others,
        others: inventory
            .hosts()
            .iter()
            .filter(|h| h.name != node)
            .map(|h| h.name.clone())
            .collect(),
    })
}

/// The healthy members etcd needs once one of `members` (the listed ones, the leaving one
/// included) is gone: a majority of those that stay.
pub fn quorum_without_one(members: usize) -> usize {
    members.saturating_sub(1) / 2 + 1
}

/// What `delete-node` did (all false on a rerun after success).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Deleted {
    /// Whether the node was drained and deleted from Kubernetes.
    pub kubernetes: bool,
    /// Whether it was removed from etcd.
    pub etcd: bool,
    /// What reset did on it.
    pub reset: NodeReset,
    /// The nodes whose `/etc/hosts` lost it.
    pub hosts: Vec<String>,
    /// Whether the install state had it.
    pub state: bool,
}

/// Executes `deletion` on the connected `nodes` (the node itself included), holding the work
/// directory's `lock`.
pub async fn delete_node(
    deletion: &Deletion,
    nodes: &[Node],
    work_dir: &Path,
    _lock: &StateLock,
) -> Result<Deleted, DeleteNodeError> {
    let name = deletion.node.as_str();
    let step = |on: &Node| {
        let on = on.name().to_owned();
        move |source: StepError| DeleteNodeError::Step {
            node: name.to_owned(),
            on,
            source: Box::new(source),
        }
    };
    let node_named = |wanted: &str| nodes.iter().find(|n| n.name() == wanted);
    let mut deleted = Deleted::default();
    if let Some(first) = deletion.first_control_plane.as_deref().and_then(node_named) {
        deleted.kubernetes = from_kubernetes(first, name).await.map_err(step(first))?;
    }
    if let Some(url) = &deletion.etcd_peer_url {
        let through = deletion
            .etcd_others
            .iter()
            .find_map(|(other, _)| node_named(other));
        if let Some(through) = through {
            deleted.etcd = from_etcd(through, deletion, url).await?;
        }
    }
    if let Some(node) = node_named(name) {
        deleted.reset = reset_node(node, false, None).await.map_err(step(node))?;
        if deletion.etcd_peer_url.is_some() {
            // Its data names the cluster it left: a later join must start from nothing.
            sh(
                node,
                "if [ -d /var/lib/etcd ]; then find /var/lib/etcd -mindepth 1 -delete; fi",
            )
            .await
            .map_err(|e| step(node)(e.into()))?;
        }
    }
    for other in &deletion.others {
        if let Some(node) = node_named(other)
            && without_in_hosts(node, name).await.map_err(step(node))?
        {
            deleted.hosts.push(other.clone());
        }
    }
    deleted.state = forget(work_dir, name).map_err(Box::new)?;
    Ok(deleted)
}

/// `kubectl drain` and `kubectl delete node` on `first`, unless the API server no longer knows
/// the node; returns whether it did.
async fn from_kubernetes(first: &Node, name: &str) -> Result<bool, StepError> {
    let command = format!(
        "[ -x /usr/local/bin/kubectl ] || exit 0; k='/usr/local/bin/kubectl --kubeconfig {ADMIN_CONF}'; \
         if out=$($k get node {name} -o name 2>&1); then \
           $k drain {name} --ignore-daemonsets --delete-emptydir-data 2>&1 || exit 1; \
           $k delete node {name} 2>&1 || exit 1; echo deleted; \
         elif printf '%s' \"$out\" | grep -q NotFound; then :; else echo \"$out\"; exit 1; fi",
        name = quote(name),
    );
    Ok(sh(first, &command).await?.contains("deleted"))
}

/// `etcdctl member remove` through `through`, unless the member is no longer listed; refused
/// when the cluster would lose quorum.
async fn from_etcd(
    through: &Node,
    deletion: &Deletion,
    url: &str,
) -> Result<bool, DeleteNodeError> {
    let failed = |source: StepError| DeleteNodeError::Step {
        node: deletion.node.clone(),
        on: through.name().to_owned(),
        source: Box::new(source),
    };
    let Some((endpoints, listed)) = etcd_phase::running_cluster(through, &deletion.etcd_others)
        .await
        .map_err(failed)?
    else {
        return Err(DeleteNodeError::Quorum {
            node: deletion.node.clone(),
            healthy: 0,
            members: deletion.etcd_others.len() + 1,
            needed: quorum_without_one(deletion.etcd_others.len() + 1),
        });
    };
    let Some(member) = listed_at(&listed, url) else {
        return Ok(false);
    };
    let healthy = endpoints.split(',').count();
    let needed = quorum_without_one(listed.len());
    if healthy < needed {
        return Err(DeleteNodeError::Quorum {
            node: deletion.node.clone(),
            healthy,
            members: listed.len(),
            needed,
        });
    }
    etcd_phase::member_remove(through, &endpoints, &member.id)
        .await
        .map_err(failed)?;
    Ok(true)
}

/// Takes `name`'s line out of kk's `/etc/hosts` block on `node`; returns whether it changed.
async fn without_in_hosts(node: &Node, name: &str) -> Result<bool, StepError> {
    let current = sh(node, "cat /etc/hosts 2>/dev/null || true").await?;
    let wanted = render::hosts_file_without(&current, name);
    if wanted == current {
        return Ok(false);
    }
    sh(
        node,
        &format!("printf '%s' {} > /etc/hosts", quote(&wanted)),
    )
    .await?;
    Ok(true)
}

/// Forgets `name` in the install state of `work_dir`; returns whether it was there.
fn forget(work_dir: &Path, name: &str) -> Result<bool, InstallError> {
    let Some(mut state) = State::load(work_dir)? else {
        return Ok(false);
    };
    let forgotten = state.forget_node(name);
    if forgotten {
        state.save(work_dir)?;
    }
    Ok(forgotten)
}

#[cfg(test)]
mod tests;

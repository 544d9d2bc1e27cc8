//! Each node's `/etc/hosts` entries, decided with the plan: every node by its inventory name, the
//! name of kk's registry when it is reached by name, and the control-plane endpoint's name where that
//! node reaches it.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use super::{KubernetesPlan, RegistryPlan, RegistryServer, address_of};
use crate::install::error::PlanError;
use crate::inventory::{Config, EndpointKind, Inventory};

/// One line kk owns in a node's `/etc/hosts`: an address and its names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostsEntry {
    /// The address.
    pub ip: IpAddr,
    /// The names it answers to, in order.
    pub names: Vec<String>,
}

/// Every node's entries, by inventory name.
pub(super) fn entries(
    inventory: &Inventory,
    config: &Config,
    registry: &RegistryPlan,
    kubernetes: Option<&KubernetesPlan>,
) -> Result<BTreeMap<String, Vec<HostsEntry>>, PlanError> {
    let mut common = Vec::new();
    for host in inventory.hosts() {
        common.push(HostsEntry {
            ip: address_of(host)?,
            names: vec![host.name.clone()],
        });
    }
    // An external registry's name is the operator's DNS to resolve, not kk's to map.
    // With several hosts the name is the first one's; the nodes' mirrors name every host by IP.
    if let RegistryServer::Kk { hosts } = &registry.server
        && let Some(first) = hosts.first()
        && registry.host.parse::<IpAddr>().is_err()
    {
        add_name(&mut common, first.ip, &registry.host);
    }
    let mut all = BTreeMap::new();
    for host in inventory.hosts() {
        let mut entries = common.clone();
        if let Some(kubernetes) = kubernetes
            && kubernetes.endpoint_host.parse::<IpAddr>().is_err()
        {
            let ip = endpoint_address(config, kubernetes, &host.name);
            add_name(&mut entries, ip, &kubernetes.endpoint_host);
        }
        all.insert(host.name.clone(), entries);
    }
    Ok(all)
}

/// Where `node` reaches the control-plane endpoint's name: the virtual IP with kube-vip; on a
/// worker with haproxy, its local haproxy; otherwise the first control plane.
fn endpoint_address(config: &Config, kubernetes: &KubernetesPlan, node: &str) -> IpAddr {
    let is_worker = kubernetes.workers.iter().any(|(name, _)| name == node);
    match &config.kubernetes.control_plane_endpoint.kind {
        EndpointKind::KubeVip(vip) => vip.address,
        EndpointKind::Haproxy if is_worker => IpAddr::from([127, 0, 0, 1]),
        _ => kubernetes.control_planes[0].1,
    }
}

/// Adds `name` to the entry of `ip`, or a new entry.
fn add_name(entries: &mut Vec<HostsEntry>, ip: IpAddr, name: &str) {
    match entries.iter_mut().find(|entry| entry.ip == ip) {
        Some(entry) => entry.names.push(name.to_owned()),
        None => entries.push(HostsEntry {
            ip,
            names: vec![name.to_owned()],
        }),
    }
}

//! The pki part of the plan: what the cluster's certificates name, and which of them each node
//! gets. The pki phase makes and copies exactly this.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use super::{RegistryPlan, RegistryServer, address_of};
use crate::install::error::PlanError;
use crate::inventory::{Config, EndpointKind, EtcdDeploymentType, Host, Inventory, Role};
use crate::pki::{Member, PkiSpec, RegistryNames};

/// The certificates of the cluster and where they go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PkiPlan {
    /// What the certificates name.
    pub spec: PkiSpec,
    /// By inventory name: the sets of files each node gets, in the order they are copied.
    pub nodes: BTreeMap<String, Vec<CertificateSet>>,
}

/// A set of files of the work directory's PKI that a node gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CertificateSet {
    /// The CA every node trusts kk's registry with.
    Trust,
    /// The registry's serving pair (its host).
    Registry,
    /// kubeadm's tree without etcd's private parts (control planes).
    ControlPlane,
    /// The etcd CA's key, with which kubeadm makes stacked etcd's certificates (control planes,
    /// stacked etcd).
    StackedEtcd,
    /// The member's own server and peer pairs (kk's external etcd members).
    EtcdMember,
}

impl PkiPlan {
    /// The plan for the cluster's certificates, with the cluster's DNS domain.
    pub(super) fn new(
        inventory: &Inventory,
        config: &Config,
        registry: &RegistryPlan,
        etcd_members: &[(String, IpAddr)],
        cluster_domain: &str,
    ) -> Result<Self, PlanError> {
        let external_etcd = config.etcd.deployment_type == EtcdDeploymentType::External;
        let is_etcd_member = |name: &str| etcd_members.iter().any(|(member, _)| member == name);
        let nodes = inventory
            .hosts()
            .iter()
            .map(|host| {
                let mut sets = vec![CertificateSet::Trust];
                if registry
                    .hosts()
                    .iter()
                    .any(|served| served.node == host.name)
                {
                    sets.push(CertificateSet::Registry);
                }
                if host.roles.is_control_plane() {
                    sets.push(CertificateSet::ControlPlane);
                    if !external_etcd {
                        sets.push(CertificateSet::StackedEtcd);
                    }
                }
                if external_etcd && is_etcd_member(&host.name) {
                    sets.push(CertificateSet::EtcdMember);
                }
                (host.name.clone(), sets)
            })
            .collect();
        Ok(Self {
            spec: spec(inventory, config, registry, etcd_members, cluster_domain)?,
            nodes,
        })
    }
}

/// What the certificates name: the control planes, the etcd members, the endpoint, the API
/// server's service addresses, kube-vip's address and the registry's names.
fn spec(
    inventory: &Inventory,
    config: &Config,
    registry: &RegistryPlan,
    etcd_members: &[(String, IpAddr)],
    cluster_domain: &str,
) -> Result<PkiSpec, PlanError> {
    let control_planes = inventory
        .role_members(Role::ControlPlane)
        .into_iter()
        .map(member)
        .collect::<Result<Vec<_>, _>>()?;
    let etcd_members = etcd_members
        .iter()
        .filter_map(|(name, _)| inventory.host(name))
        .map(member)
        .collect::<Result<Vec<_>, _>>()?;
    let service_ips = config
        .cni
        .service_cidr
        .ranges()
        .filter_map(|cidr| first_host(cidr.address()))
        .collect();
    let endpoint = &config.kubernetes.control_plane_endpoint;
    let mut extra_apiserver_sans = Vec::new();
    if let EndpointKind::KubeVip(vip) = &endpoint.kind {
        extra_apiserver_sans.push(vip.address.to_string());
    }
    let names = match &registry.server {
        // One certificate for every host: each host's IP (the nodes' mirrors) and the name.
        RegistryServer::Kk { hosts } => {
            let mut names = RegistryNames {
                dns: Vec::new(),
                ips: hosts.iter().map(|host| host.ip).collect(),
            };
            match registry.host.parse::<IpAddr>() {
                Ok(ip) if !names.ips.contains(&ip) => names.ips.push(ip),
                Ok(_) => {}
                Err(_) => names.dns.push(registry.host.clone()),
            }
            Some(names)
        }
        RegistryServer::External(_) => None,
    };
    Ok(PkiSpec {
        cluster_domain: cluster_domain.to_owned(),
        control_planes,
        etcd_members,
        endpoint_host: endpoint.host.clone(),
        service_ips,
        extra_apiserver_sans,
        registry: names,
    })
}

/// `host` as its certificates name it: every internal address it has.
fn member(host: &Host) -> Result<Member, PlanError> {
    // A host without an address is refused here, naming it.
    address_of(host)?;
    let ips = host
        .internal_ipv4
        .map(IpAddr::V4)
        .into_iter()
        .chain(host.internal_ipv6.map(IpAddr::V6))
        .collect();
    Ok(Member {
        name: host.name.clone(),
        ips,
    })
}

/// The first host address of a range (the API server's service IP).
fn first_host(network: IpAddr) -> Option<IpAddr> {
    match network {
        IpAddr::V4(ip) => u32::from(ip).checked_add(1).map(|n| IpAddr::V4(n.into())),
        IpAddr::V6(ip) => u128::from(ip).checked_add(1).map(|n| IpAddr::V6(n.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::first_host;

    #[test]
    fn the_service_ip_is_the_first_host_of_the_range() {
        for (network, first) in [
            ("10.233.0.0", "10.233.0.1"),
            ("10.96.0.0", "10.96.0.1"),
            ("fd85:ee78:d8a6:8607::1000", "fd85:ee78:d8a6:8607::1001"),
        ] {
            assert_eq!(
                first_host(network.parse().expect("ip")),
                Some(first.parse().expect("ip"))
            );
        }
    }
}

//! The pki phase: the certificates are made once, on the installer machine, in the work
//! directory (the master copy), then each node gets exactly the files its roles need.

use std::net::IpAddr;

use super::{Cx, Outcome, StepResult, put_file};
use crate::install::error::StepError;
use crate::install::plan::address_of;
use crate::inventory::{EtcdDeploymentType, Role};
use crate::pki::{self, Member, PkiSpec, RegistryNames};
use crate::ssh::Node;

/// `pki.issue` (on the installer machine): every certificate the plan needs, under
/// `<work dir>/pki`; what exists is kept.
pub(crate) fn issue(cx: &Cx<'_>) -> Result<(), StepError> {
    let spec = spec(cx)?;
    let issued = pki::ensure(&cx.work_dir.join("pki"), &spec)?;
    // A second call in the same run finds the same files; the first result stands.
    let _ = cx.pki.set(issued);
    Ok(())
}

fn member(cx: &Cx<'_>, name: &str) -> Result<Member, StepError> {
    let host = cx
        .inventory
        .host(name)
        .ok_or_else(|| StepError::not_in_plan(format!("no host `{name}` in the inventory")))?;
    let mut ips: Vec<IpAddr> = Vec::new();
    ips.extend(host.internal_ipv4.map(IpAddr::V4));
    ips.extend(host.internal_ipv6.map(IpAddr::V6));
    if ips.is_empty() {
        ips.push(address_of(host)?);
    }
    Ok(Member {
        name: name.to_owned(),
        ips,
    })
}

fn spec(cx: &Cx<'_>) -> Result<PkiSpec, StepError> {
    let control_planes = cx
        .inventory
        .role_members(Role::ControlPlane)
        .iter()
        .map(|host| member(cx, &host.name))
        .collect::<Result<Vec<_>, _>>()?;
    let etcd_members = cx
        .plan
        .etcd_members
        .iter()
        .map(|(name, _)| member(cx, name))
        .collect::<Result<Vec<_>, _>>()?;
    let service_ips = cx
        .config
        .cni
        .service_cidr
        .ranges()
        .filter_map(|cidr| first_host(cidr.address()))
        .collect();
    let endpoint = &cx.config.kubernetes.control_plane_endpoint;
    let mut extra_apiserver_sans = Vec::new();
    if let crate::inventory::EndpointKind::KubeVip(vip) = &endpoint.kind {
        extra_apiserver_sans.push(vip.address.to_string());
    }
    let registry = &cx.plan.registry;
    let mut names = RegistryNames {
        dns: Vec::new(),
        ips: vec![registry.ip],
    };
    match registry.host.parse::<IpAddr>() {
        Ok(ip) if ip != registry.ip => names.ips.push(ip),
        Ok(_) => {}
        Err(_) => names.dns.push(registry.host.clone()),
    }
    Ok(PkiSpec {
        cluster_domain: "cluster.local".to_owned(),
        control_planes,
        etcd_members,
        endpoint_host: endpoint.host.clone(),
        service_ips,
        extra_apiserver_sans,
        registry: names,
    })
}

/// The first host address of a range (the API server's service IP).
fn first_host(network: IpAddr) -> Option<IpAddr> {
    match network {
        IpAddr::V4(ip) => u32::from(ip).checked_add(1).map(|n| IpAddr::V4(n.into())),
        IpAddr::V6(ip) => u128::from(ip).checked_add(1).map(|n| IpAddr::V6(n.into())),
    }
}

/// What a step that needs the certificates reports when `pki.issue` has not run.
pub(super) const NOT_ISSUED: StepError = StepError::NotRun {
    what: "the certificates were not made",
    step: "pki.issue",
};

/// `pki.copy`: the CA every node trusts the registry with; the registry's pair on its host;
/// kubeadm's tree on control planes; each etcd member's own server and peer pairs.
pub(super) async fn copy(cx: &Cx<'_>, node: &Node) -> StepResult {
    let issued = cx.pki.get().ok_or(NOT_ISSUED)?;
    let host = cx.inventory.host(node.name()).ok_or_else(|| {
        StepError::not_in_plan(format!("no host `{}` in the inventory", node.name()))
    })?;
    let mut files = issued.trust_files();
    if node.name() == cx.plan.registry.node {
        files.extend(issued.registry_files());
    }
    if host.roles.is_control_plane() {
        files.extend(issued.control_plane_files());
    }
    let external = cx.config.etcd.deployment_type == EtcdDeploymentType::External;
    if !external && host.roles.is_control_plane() {
        files.extend(issued.stacked_etcd_files());
    }
    if external
        && cx
            .plan
            .etcd_members
            .iter()
            .any(|(name, _)| name == node.name())
    {
        files.extend(issued.etcd_member_files(node.name()));
    }
    let mut outcome = Outcome::default();
    let mut seen = std::collections::BTreeSet::new();
    for file in files {
        if seen.insert(file.remote.clone()) {
            outcome.merge(put_file(node, &file.local, &file.remote, file.mode).await?);
        }
    }
    Ok(outcome)
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

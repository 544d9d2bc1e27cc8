//! The Kubernetes part of the plan: who initialises, who joins, how the control-plane endpoint
//! is reached, kubeadm's cluster input, which charts go in with which values — and kubeadm's
//! own validation, done here, so that a config the bundle's kubeadm would reject never reaches
//! a node.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use super::{
    Action, BinaryFetch, ChartInstall, Content, KubeVipPlan, MultusInstall, NodeLabel, Phase, Step,
    add_step, address_of, charts,
};
use crate::install::error::PlanError;
use crate::install::render::kubernetes::paths::{
    APISERVER_ETCD_CLIENT_CERT, APISERVER_ETCD_CLIENT_KEY,
};
use crate::install::render::kubernetes::{ClusterInput, EtcdMode, JoinInput, kubeadm_api};
use crate::install::render::{etcd_client_urls, paths};
use crate::inventory::{Config, EndpointKind, EtcdDeploymentType, Host, Inventory, Role};

/// How the cluster's Kubernetes is set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KubernetesPlan {
    /// The version of the bundle's kubeadm (`v1.33.0`).
    pub version: String,
    /// The control planes with their addresses, in inventory order; the first runs `kubeadm init`.
    pub control_planes: Vec<(String, IpAddr)>,
    /// The workers (cluster nodes that are not control planes).
    pub workers: Vec<(String, IpAddr)>,
    /// The kubelet's `--node-ip` of every Kubernetes node: its plan address, and in a
    /// dual-stack cluster its address of the other family after it.
    pub node_ips: BTreeMap<String, Vec<IpAddr>>,
    /// `control_plane_endpoint.host`.
    pub endpoint_host: String,
    /// `control_plane_endpoint.port`, which every API server listens on too.
    pub endpoint_port: u16,
    /// kube-vip on the control planes, with `type: kube-vip`.
    pub kube_vip: Option<KubeVipPlan>,
    /// The haproxy image, with `type: haproxy`.
    pub haproxy_image: Option<String>,
    /// kubeadm's input for `kubeadm init` on the first control plane, all but the bootstrap
    /// token (made when the install runs).
    pub cluster: ClusterInput,
    /// By inventory name: kubeadm's input for `kubeadm join` on every other control plane and
    /// every worker, all but the token and the CA's hash.
    pub joins: BTreeMap<String, JoinInput>,
    /// The container runtime's CRI unit (`containerd.service`, `cri-docker.service`): the
    /// kubelet's unit wants it and starts after it.
    pub cri_unit: String,
    binaries: Vec<BinaryFetch>,
    helm: Option<BinaryFetch>,
    /// The label the network plugin needs on its nodes before its chart.
    cni_label: Option<NodeLabel>,
    charts: Vec<(Phase, String, ChartInstall)>,
    /// Multus's manifest (`cni.multi_cni: multus`), applied after the network phase's charts.
    multus: Option<MultusInstall>,
}

/// What the Kubernetes plan takes from the rest of the plan.
pub(super) struct Shared<'a> {
    /// The bundle's content.
    pub(super) content: &'a Content,
    /// The version of the bundle's kubeadm.
    pub(super) version: &'a str,
    /// The cluster's DNS domain.
    pub(super) cluster_domain: &'a str,
    /// kk's external etcd members (empty when stacked).
    pub(super) etcd_members: &'a [(String, IpAddr)],
    /// The NFS provisioner's chart, when `storage_class.nfs.enabled`: the first addon, so that
    /// the operator's addons may claim volumes of its class.
    pub(super) storage_class: Option<ChartInstall>,
    /// The CRI socket of the container runtime the plan chose (kubeadm's `criSocket`).
    pub(super) cri_socket: &'a str,
    /// The systemd unit serving that socket, which the kubelet wants and starts after.
    pub(super) cri_unit: &'a str,
}

impl KubernetesPlan {
    /// The plan for `shared.version`, the version of the bundle's kubeadm.
    pub(super) fn new(
        inventory: &Inventory,
        config: &Config,
        shared: &Shared<'_>,
    ) -> Result<Self, PlanError> {
        let (content, version) = (shared.content, shared.version);
        validate(inventory, config, version)?;
        let control_plane_hosts = inventory.role_members(Role::ControlPlane);
        if control_plane_hosts.is_empty() {
            return Err(PlanError::NoControlPlane);
        }
        let worker_hosts: Vec<&Host> = inventory
            .group_members(crate::inventory::K8S_CLUSTER)
            .into_iter()
            .filter(|host| !host.roles.is_control_plane())
            .collect();
        let control_planes = with_address(&control_plane_hosts)?;
        let workers = with_address(&worker_hosts)?;
        let dual_stack = config.cni.pod_cidr.is_dual_stack();
        let node_ips = control_plane_hosts
            .iter()
            .chain(&worker_hosts)
            .map(|host| Ok((host.name.clone(), node_ips(host, dual_stack)?)))
            .collect::<Result<BTreeMap<_, _>, PlanError>>()?;
        let endpoint = &config.kubernetes.control_plane_endpoint;
        let kube_vip = match &endpoint.kind {
            EndpointKind::KubeVip(vip) => Some(KubeVipPlan::new(
                vip,
                content.image_named("kube-vip/kube-vip")?,
                endpoint.port,
                version,
                &control_planes,
            )),
            _ => None,
        };
        let haproxy_image = match endpoint.kind {
            EndpointKind::Haproxy => Some(content.image_named("library/haproxy")?),
            _ => None,
        };
        let binaries = ["kubeadm", "kubelet", "kubectl"]
            .into_iter()
            .map(|name| content.binary(name, "/usr/local/bin", &[name]))
            .collect::<Result<Vec<_>, _>>()?;
        let mut charts = Vec::new();
        let cni_nodes = charts::CniNodes {
            control_planes: &control_planes,
            nodes: control_planes.len() + workers.len(),
        };
        let cni = charts::cni(config, content, &cni_nodes)?;
        let cni_label = cni.as_ref().and_then(|cni| cni.label.clone());
        if let Some(cni) = cni {
            charts.push((Phase::Network, "cni".to_owned(), cni.chart));
        }
        let multus = charts::multus(config, content)?;
        if let Some(chart) = &shared.storage_class {
            charts.push((Phase::Addons, chart.release.clone(), chart.clone()));
        }
        for addon in &config.addons {
            let chart = charts::addon(addon, content)?;
            charts.push((Phase::Addons, addon.name.clone(), chart));
        }
        let helm = if charts.is_empty() {
            None
        } else {
            Some(content.binary("helm", "/usr/local/bin", &["helm"])?)
        };
        let cluster = cluster_input(config, shared, &control_planes[0], &node_ips);
        let joins = joins(
            &cluster,
            &control_planes,
            &workers,
            &node_ips,
            haproxy_image.is_some(),
        );
        Ok(Self {
            version: version.to_owned(),
            control_planes,
            workers,
            node_ips,
            endpoint_host: endpoint.host.clone(),
            endpoint_port: endpoint.port,
            kube_vip,
            haproxy_image,
            cluster,
            joins,
            cri_unit: shared.cri_unit.to_owned(),
            binaries,
            helm,
            cni_label,
            charts,
            multus,
        })
    }

    /// The charts of the network and addons phases, in order, with the step each is.
    pub fn charts(&self) -> impl Iterator<Item = (Phase, &str, &ChartInstall)> {
        self.charts
            .iter()
            .map(|(phase, what, chart)| (*phase, what.as_str(), chart))
    }

    /// The control plane that runs `kubeadm init`.
    pub fn first_control_plane(&self) -> &str {
        &self.control_planes[0].0
    }

    /// `host:port` of the control-plane endpoint.
    pub fn endpoint(&self) -> String {
        endpoint(&self.endpoint_host, self.endpoint_port)
    }

    /// The kubernetes, network and addons steps.
    pub(super) fn steps(&self) -> Vec<Step> {
        let names = |list: &[(String, IpAddr)]| -> Vec<String> {
            list.iter().map(|(name, _)| name.clone()).collect()
        };
        let control_planes = names(&self.control_planes);
        let workers = names(&self.workers);
        let first = vec![self.first_control_plane().to_owned()];
        let others = control_planes[1..].to_vec();
        let all: Vec<String> = control_planes.iter().chain(&workers).cloned().collect();
        let kube_vip = self.kube_vip.is_some();
        let mut steps = Vec::new();
        let mut add = |phase: Phase, what: &str, action: Action, nodes: &[String]| {
            add_step(&mut steps, phase, what, action, nodes);
        };
        let k8s = Phase::Kubernetes;
        let binaries = Action::Fetch {
            binaries: self.binaries.clone(),
        };
        add(k8s, "binaries", binaries, &all);
        add(k8s, "kubelet", Action::KubeletService, &all);
        add(k8s, "token", Action::BootstrapToken, &first);
        if kube_vip {
            add(k8s, "vip-bootstrap", Action::KubeVipBootstrap, &first);
        }
        add(k8s, "init", Action::KubeadmInit, &first);
        add(k8s, "join-control-plane", Action::JoinControlPlane, &others);
        if self.haproxy_image.is_some() {
            add(k8s, "haproxy", Action::InternalLoadBalancer, &workers);
        }
        add(k8s, "join-worker", Action::JoinWorker, &workers);
        if kube_vip {
            add(k8s, "vip", Action::KubeVip, &control_planes);
        }
        if let Some(label) = &self.cni_label {
            let action = Action::LabelNodes {
                label: label.clone(),
            };
            add(Phase::Network, "label", action, &first);
        }
        if let Some(helm) = &self.helm {
            let fetch = Action::Fetch {
                binaries: vec![helm.clone()],
            };
            add(Phase::Network, "helm", fetch, &first);
        }
        // Multus goes after the primary CNI it delegates to, before the addons.
        let (network, addons): (Vec<_>, Vec<_>) = self
            .charts
            .iter()
            .partition(|(phase, ..)| *phase == Phase::Network);
        let chart = |chart: &ChartInstall| Action::Chart {
            chart: Box::new(chart.clone()),
        };
        for (phase, what, installed) in network {
            add(*phase, what, chart(installed), &first);
        }
        if let Some(multus) = &self.multus {
            let action = Action::Multus {
                multus: Box::new(multus.clone()),
            };
            add(Phase::Network, "multus", action, &first);
        }
        for (phase, what, installed) in addons {
            add(*phase, what, chart(installed), &first);
        }
        steps
    }
}

/// `host:port`, an IPv6 host in brackets.
fn endpoint(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// kubeadm's input for `kubeadm init` on `first`, the first control plane.
fn cluster_input(
    config: &Config,
    shared: &Shared<'_>,
    (first, advertise_address): &(String, IpAddr),
    node_ips: &BTreeMap<String, Vec<IpAddr>>,
) -> ClusterInput {
    let etcd = if config.etcd.deployment_type == EtcdDeploymentType::Internal {
        EtcdMode::Stacked
    } else {
        EtcdMode::External {
            endpoints: etcd_client_urls(shared.etcd_members),
            ca_file: format!("{}/ca.crt", paths::ETCD_PKI),
            cert_file: APISERVER_ETCD_CLIENT_CERT.to_owned(),
            key_file: APISERVER_ETCD_CLIENT_KEY.to_owned(),
        }
    };
    let control_plane_endpoint = &config.kubernetes.control_plane_endpoint;
    let mut cert_sans = vec![control_plane_endpoint.host.clone()];
    if let EndpointKind::KubeVip(vip) = &control_plane_endpoint.kind {
        cert_sans.push(vip.address.to_string());
    }
    let cni = &config.cni;
    ClusterInput {
        version: shared.version.to_owned(),
        node_name: first.clone(),
        advertise_address: *advertise_address,
        node_ips: node_ips.get(first).cloned().unwrap_or_default(),
        bind_port: control_plane_endpoint.port,
        endpoint: endpoint(&control_plane_endpoint.host, control_plane_endpoint.port),
        cert_sans,
        pod_subnet: cni.pod_cidr.to_string(),
        service_subnet: cni.service_cidr.to_string(),
        dns_domain: shared.cluster_domain.to_owned(),
        node_mask_v4: cni.ipv4_mask_size,
        node_mask_v6: cni.ipv6_mask_size,
        max_pods: cni.max_pods,
        proxy_mode: config.kubernetes.kube_proxy_mode.as_str().to_owned(),
        etcd,
        cri_socket: shared.cri_socket.to_owned(),
    }
}

/// kubeadm's join input of every node but the first control plane, by name.
fn joins(
    cluster: &ClusterInput,
    control_planes: &[(String, IpAddr)],
    workers: &[(String, IpAddr)],
    node_ips: &BTreeMap<String, Vec<IpAddr>>,
    haproxy: bool,
) -> BTreeMap<String, JoinInput> {
    let join = |name: &str, control_plane: Option<(IpAddr, u16)>| {
        // haproxy's static pod is in place before a worker joins (the kubelet needs the
        // endpoint to register), and kubeadm's join refuses a non-empty manifests directory
        // unless told.
        let ignore_preflight_errors = if control_plane.is_none() && haproxy {
            vec!["DirAvailable--etc-kubernetes-manifests".to_owned()]
        } else {
            Vec::new()
        };
        JoinInput {
            version: cluster.version.clone(),
            node_name: name.to_owned(),
            node_ips: node_ips.get(name).cloned().unwrap_or_default(),
            endpoint: cluster.endpoint.clone(),
            control_plane,
            ignore_preflight_errors,
            cri_socket: cluster.cri_socket.clone(),
        }
    };
    let control_planes = control_planes[1..]
        .iter()
        .map(|(name, ip)| (name.clone(), join(name, Some((*ip, cluster.bind_port)))));
    let workers = workers
        .iter()
        .map(|(name, _)| (name.clone(), join(name, None)));
    control_planes.chain(workers).collect()
}

/// `hosts` with their plan addresses.
fn with_address(hosts: &[&Host]) -> Result<Vec<(String, IpAddr)>, PlanError> {
    hosts
        .iter()
        .map(|host| Ok((host.name.clone(), address_of(host)?)))
        .collect()
}

/// The kubelet's `--node-ip` for `host`: its plan address, and in a dual-stack cluster its
/// address of the other family too.
fn node_ips(host: &Host, dual_stack: bool) -> Result<Vec<IpAddr>, PlanError> {
    let first = address_of(host)?;
    let mut ips = vec![first];
    if dual_stack {
        let other = if first.is_ipv4() {
            host.internal_ipv6.map(IpAddr::V6)
        } else {
            host.internal_ipv4.map(IpAddr::V4)
        };
        ips.extend(other);
    }
    Ok(ips)
}

/// What kubeadm itself would refuse, found before any node is touched; each error names the
/// config field.
fn validate(inventory: &Inventory, config: &Config, version: &str) -> Result<(), PlanError> {
    let reject = |field: &str, value: String, reason: String| PlanError::Kubeadm {
        field: field.to_owned(),
        value,
        reason,
    };
    if kubeadm_api(version).is_none() {
        return Err(reject(
            "bundle kubeadm",
            version.to_owned(),
            "kk writes kubeadm configs v1beta3 (v1.22 to v1.30) and v1beta4 (v1.31 on)".to_owned(),
        ));
    }
    if let Some(wanted) = &config.kubernetes.kube_version
        && wanted.to_string() != version
    {
        return Err(reject(
            "spec.kubernetes.kube_version",
            wanted.to_string(),
            format!("the bundle's kubeadm is {version} and deploys only its own version"),
        ));
    }
    let cni = &config.cni;
    // kubeadm's ValidateServiceSubnetSize: at most 2^20 addresses (an IPv4 /12, an IPv6 /108).
    for range in cni.service_cidr.ranges() {
        let floor = if range.is_ipv4() { 12 } else { 108 };
        if range.prefix() < floor {
            return Err(reject(
                "spec.cni.service_cidr",
                range.to_string(),
                format!("the service range is too large: its prefix must be /{floor} or longer"),
            ));
        }
    }
    // kubeadm's ValidatePodSubnetNodeMask: each node's range lies inside the pod range and is
    // at most 16 bits smaller.
    for range in cni.pod_cidr.ranges() {
        let (field, mask) = if range.is_ipv4() {
            ("spec.cni.ipv4_mask_size", cni.ipv4_mask_size)
        } else {
            ("spec.cni.ipv6_mask_size", cni.ipv6_mask_size)
        };
        if mask <= range.prefix() || mask - range.prefix() > 16 {
            return Err(reject(
                field,
                mask.to_string(),
                format!(
                    "the node mask must be longer than the pod range `{range}` by 1 to 16 bits"
                ),
            ));
        }
    }
    inventory.check_node_names()?;
    Ok(())
}

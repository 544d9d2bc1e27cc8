//! The Kubernetes part of the plan: who initialises, who joins, how the control-plane endpoint
//! is reached, which charts go in — and kubeadm's own validation, done here, so that a config
//! the bundle's kubeadm would reject never reaches a node.

use std::net::IpAddr;

use serde::Serialize;

use super::{
    Action, BinaryFetch, ChartInstall, ChartValues, Content, Phase, Step, add_step, address_of,
};
use crate::error::PlanError;
use crate::install::render::kubernetes::kubeadm_api;
use crate::inventory::{Config, EndpointKind, EtcdDeploymentType, Inventory, NetworkPlugin, Role};

/// How the cluster's Kubernetes is set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KubernetesPlan {
    /// The version of the bundle's kubeadm (`v1.33.0`).
    pub version: String,
    /// The control planes with their addresses, in inventory order; the first runs `kubeadm init`.
    pub control_planes: Vec<(String, IpAddr)>,
    /// The workers (cluster nodes that are not control planes).
    pub workers: Vec<(String, IpAddr)>,
    /// `control_plane_endpoint.host`.
    pub endpoint_host: String,
    /// `control_plane_endpoint.port`, which every API server listens on too.
    pub endpoint_port: u16,
    /// etcd as kubeadm's static pods (`etcd.deployment_type: internal`).
    pub stacked_etcd: bool,
    /// The kube-vip image, with `type: kube-vip`.
    pub kube_vip_image: Option<String>,
    /// The haproxy image, with `type: haproxy`.
    pub haproxy_image: Option<String>,
    /// The registry host of the bundle's `calico/node` image (Calico's `Installation.spec.registry`).
    pub calico_registry: Option<String>,
    binaries: Vec<BinaryFetch>,
    helm: Option<BinaryFetch>,
    charts: Vec<(Phase, String, ChartInstall)>,
}

impl KubernetesPlan {
    /// The plan for `version`, the version of the bundle's kubeadm.
    pub(super) fn new(
        inventory: &Inventory,
        config: &Config,
        content: &Content,
        version: &str,
    ) -> Result<Self, PlanError> {
        validate(inventory, config, version)?;
        let with_address = |hosts: Vec<&crate::inventory::Host>| {
            hosts
                .into_iter()
                .map(|host| Ok((host.name.clone(), address_of(host)?)))
                .collect::<Result<Vec<_>, PlanError>>()
        };
        let control_planes = with_address(inventory.role_members(Role::ControlPlane))?;
        if control_planes.is_empty() {
            return Err(PlanError::NoControlPlane);
        }
        let workers = with_address(
            inventory
                .group_members(crate::inventory::K8S_CLUSTER)
                .into_iter()
                .filter(|host| !host.roles.is_control_plane())
                .collect(),
        )?;
        let endpoint = &config.kubernetes.control_plane_endpoint;
        let kube_vip_image = match endpoint.kind {
            EndpointKind::KubeVip(_) => Some(content.image_named("kube-vip/kube-vip")?),
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
        if let Some((chart, namespace)) = cni_chart(config.cni.plugin)? {
            charts.push((
                Phase::Network,
                "cni".to_owned(),
                ChartInstall {
                    release: chart.to_owned(),
                    namespace: namespace.to_owned(),
                    fetch: content.chart(chart)?,
                    values: ChartValues::Cni,
                },
            ));
        }
        for addon in &config.addons {
            charts.push((
                Phase::Addons,
                addon.name.clone(),
                ChartInstall {
                    release: addon.name.clone(),
                    namespace: addon.namespace.clone(),
                    fetch: content.chart(&addon.chart)?,
                    values: ChartValues::Addon {
                        file: addon.values_file.clone(),
                        set: addon.set.clone(),
                    },
                },
            ));
        }
        let helm = if charts.is_empty() {
            None
        } else {
            Some(content.binary("helm", "/usr/local/bin", &["helm"])?)
        };
        Ok(Self {
            version: version.to_owned(),
            control_planes,
            workers,
            endpoint_host: endpoint.host.clone(),
            endpoint_port: endpoint.port,
            stacked_etcd: config.etcd.deployment_type == EtcdDeploymentType::Internal,
            kube_vip_image,
            haproxy_image,
            calico_registry: content.image_host_of("calico/node"),
            binaries,
            helm,
            charts,
        })
    }

    /// The control plane that runs `kubeadm init`.
    pub fn first_control_plane(&self) -> &str {
        &self.control_planes[0].0
    }

    /// `host:port` of the control-plane endpoint.
    pub fn endpoint(&self) -> String {
        if self.endpoint_host.contains(':') {
            format!("[{}]:{}", self.endpoint_host, self.endpoint_port)
        } else {
            format!("{}:{}", self.endpoint_host, self.endpoint_port)
        }
    }

    /// The kubernetes, network and addons steps.
    pub(super) fn steps(&self, config: &Config) -> Vec<Step> {
        let names = |list: &[(String, IpAddr)]| -> Vec<String> {
            list.iter().map(|(name, _)| name.clone()).collect()
        };
        let control_planes = names(&self.control_planes);
        let workers = names(&self.workers);
        let first = vec![self.first_control_plane().to_owned()];
        let others = control_planes[1..].to_vec();
        let all: Vec<String> = control_planes.iter().chain(&workers).cloned().collect();
        let kube_vip = matches!(
            config.kubernetes.control_plane_endpoint.kind,
            EndpointKind::KubeVip(_)
        );
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
        if let Some(helm) = &self.helm {
            let fetch = Action::Fetch {
                binaries: vec![helm.clone()],
            };
            add(Phase::Network, "helm", fetch, &first);
        }
        for (phase, what, chart) in &self.charts {
            let action = Action::Chart {
                chart: Box::new(chart.clone()),
            };
            add(*phase, what, action, &first);
        }
        steps
    }
}

/// The chart and namespace of a network plugin; `None` for `none`.
fn cni_chart(plugin: NetworkPlugin) -> Result<Option<(&'static str, &'static str)>, PlanError> {
    Ok(match plugin {
        NetworkPlugin::Calico => Some(("tigera-operator", "tigera-operator")),
        NetworkPlugin::Cilium => Some(("cilium", "kube-system")),
        NetworkPlugin::Flannel => Some(("flannel", "kube-flannel")),
        NetworkPlugin::None => None,
        other => {
            return Err(PlanError::UnsupportedCni {
                plugin: other.as_str(),
            });
        }
    })
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

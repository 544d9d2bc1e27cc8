//! The charts the plan installs and their values, made when the plan is: the CNI's values
//! rendered from the config, an addon's read from its values file. A values file that cannot be
//! read, or an image the CNI's values need that the bundle lacks, is a plan error, raised
//! before any node is touched rather than after the cluster is up.

use std::net::IpAddr;

use bundle_spec::charts::{
    ClusterRanges, CniChart, MULTUS_IMAGE_PATH, MULTUS_MANIFEST_BINARY, cni_values,
};

use super::content::CHARTS_DIR;
use super::{ChartInstall, ChartValues, Content, MultusInstall, NodeLabel};
use crate::install::error::PlanError;
use crate::install::render::multus::MULTUS_MANIFEST_FILE;
use crate::inventory::{Addon, ClusterCidr, Config, MultiCni, NetworkPlugin};

/// The label Kube-OVN's chart selects the nodes of OVN's databases by (its
/// `MASTER_NODES_LABEL`), which its installation steps put on the control planes.
const KUBE_OVN_MASTER_LABEL: &str = "kube-ovn/role=master";

/// The network plugin's install: its chart, and the label its nodes need first.
#[derive(Debug)]
pub(super) struct CniInstall {
    /// The chart with its rendered values.
    pub(super) chart: ChartInstall,
    /// A label the chart's workloads select, put on the nodes before the chart.
    pub(super) label: Option<NodeLabel>,
}

/// The cluster's nodes as the CNI's values need them.
pub(super) struct CniNodes<'a> {
    /// The control planes, by inventory name, with their addresses.
    pub(super) control_planes: &'a [(String, IpAddr)],
    /// How many Kubernetes nodes there are.
    pub(super) nodes: usize,
}

/// The CNI's chart with its rendered values; `None` for `cni.type: none`.
pub(super) fn cni(
    config: &Config,
    content: &Content,
    nodes: &CniNodes<'_>,
) -> Result<Option<CniInstall>, PlanError> {
    let plugin = config.cni.plugin;
    let mut label = None;
    let (chart, namespace, values) = match plugin {
        NetworkPlugin::Calico => {
            // Calico's operator pulls every Calico image from one registry
            // (`Installation.spec.registry`): the one the bundle's `calico/node` is named by.
            let registry =
                content
                    .image_host_of("calico/node")
                    .ok_or(PlanError::MissingCniImage {
                        image: "calico/node",
                        cni: plugin.as_str(),
                    })?;
            (
                "tigera-operator",
                "tigera-operator",
                CniChart::Calico { registry },
            )
        }
        NetworkPlugin::Cilium => ("cilium", "kube-system", CniChart::Cilium),
        NetworkPlugin::Flannel => ("flannel", "kube-flannel", CniChart::Flannel),
        // The chart puts its objects in `kube-system` whatever the release's namespace. It
        // makes one subnet, of one family (`init`): a second family would give pods nothing.
        NetworkPlugin::Hybridnet if config.cni.pod_cidr.is_dual_stack() => {
            return Err(PlanError::CniSingleStack {
                cni: plugin.as_str(),
                pod_cidr: config.cni.pod_cidr.to_string(),
            });
        }
        NetworkPlugin::Hybridnet => (
            "hybridnet",
            "kube-system",
            CniChart::Hybridnet {
                control_planes: nodes.control_planes.len(),
                nodes: nodes.nodes,
            },
        ),
        // `kubeovn-system` is the release's namespace, as KubeKey's; the chart's objects stay
        // in its `namespace` value, `kube-system`, which Kube-OVN's code expects (FACTS.md).
        NetworkPlugin::KubeOvn => {
            label = Some(NodeLabel {
                label: KUBE_OVN_MASTER_LABEL.to_owned(),
                nodes: nodes
                    .control_planes
                    .iter()
                    .map(|(name, _)| name.clone())
                    .collect(),
            });
            let master_nodes = nodes.control_planes.iter().map(|(_, ip)| *ip).collect();
            (
                "kube-ovn",
                "kubeovn-system",
                CniChart::KubeOvn { master_nodes },
            )
        }
        NetworkPlugin::None => return Ok(None),
    };
    let cni_config = &config.cni;
    let (pods, services) = (
        ranges(&cni_config.pod_cidr),
        ranges(&cni_config.service_cidr),
    );
    let yaml = cni_values(
        &values,
        &ClusterRanges {
            pods: &pods,
            services: &services,
            node_mask_v4: cni_config.ipv4_mask_size,
            node_mask_v6: cni_config.ipv6_mask_size,
        },
    );
    Ok(Some(CniInstall {
        chart: ChartInstall {
            release: chart.to_owned(),
            namespace: namespace.to_owned(),
            fetch: content.chart(chart)?,
            values: ChartValues::Cni { yaml },
        },
        label,
    }))
}

/// Multus for `cni.multi_cni: multus`: the bundle's manifest, its image, and the primary
/// CNI's configuration file as the delegate; `None` without multus. Refused without a primary
/// CNI, and when the bundle lacks the manifest or the image (found here, before any node is
/// touched; the phase checks the rendered manifest's images too).
pub(super) fn multus(
    config: &Config,
    content: &Content,
) -> Result<Option<MultusInstall>, PlanError> {
    if config.cni.multi_cni == MultiCni::None {
        return Ok(None);
    }
    let delegate = primary_conf_file(config.cni.plugin).ok_or(PlanError::MultusWithoutCni)?;
    let fetch = content
        .binary(MULTUS_MANIFEST_BINARY, CHARTS_DIR, &[MULTUS_MANIFEST_FILE])
        .map_err(|_| PlanError::MissingMultus {
            what: format!("binary `{MULTUS_MANIFEST_BINARY}` (multus's manifest)"),
        })?;
    let image = content
        .image_named(MULTUS_IMAGE_PATH)
        .map_err(|_| PlanError::MissingMultus {
            what: format!("image `{MULTUS_IMAGE_PATH}`"),
        })?;
    Ok(Some(MultusInstall {
        fetch,
        image,
        delegate: delegate.to_owned(),
    }))
}

/// The file the primary CNI writes in `/etc/cni/net.d`, which multus delegates to (FACTS.md
/// of the catalog says where each name comes from); `None` for `cni.type: none`.
fn primary_conf_file(plugin: NetworkPlugin) -> Option<&'static str> {
    match plugin {
        NetworkPlugin::Calico => Some("10-calico.conflist"),
        NetworkPlugin::Cilium => Some("05-cilium.conflist"),
        NetworkPlugin::Flannel => Some("10-flannel.conflist"),
        NetworkPlugin::Hybridnet => Some("06-hybridnet.conflist"),
        NetworkPlugin::KubeOvn => Some("01-kube-ovn.conflist"),
        NetworkPlugin::None => None,
    }
}

/// A cluster range as `(network, prefix)` pairs, one per family.
fn ranges(cidr: &ClusterCidr) -> Vec<(IpAddr, u8)> {
    cidr.ranges()
        .map(|range| (range.address(), range.prefix()))
        .collect()
}

/// An addon's chart with its values file read (`{}` without one).
pub(super) fn addon(addon: &Addon, content: &Content) -> Result<ChartInstall, PlanError> {
    let fetch = content.chart(&addon.chart)?;
    let yaml = match &addon.values_file {
        None => "{}\n".to_owned(),
        Some(path) => std::fs::read_to_string(path).map_err(|source| PlanError::ValuesFile {
            addon: addon.name.clone(),
            path: path.clone(),
            source,
        })?,
    };
    Ok(ChartInstall {
        release: addon.name.clone(),
        namespace: addon.namespace.clone(),
        fetch,
        values: ChartValues::Addon {
            file: addon.values_file.clone(),
            yaml,
            set: addon.set.clone(),
        },
    })
}

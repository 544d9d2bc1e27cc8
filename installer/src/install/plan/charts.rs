//! The charts the plan installs and their values, made when the plan is: the CNI's values
//! rendered from the config, an addon's read from its values file. A values file that cannot be
//! read, or an image the CNI's values need that the bundle lacks, is a plan error, raised
//! before any node is touched rather than after the cluster is up.

use bundle_spec::charts::{CniChart, cni_values};

use super::{ChartInstall, ChartValues, Content};
use crate::install::error::PlanError;
use crate::inventory::{Addon, Config, NetworkPlugin};

/// The CNI's chart with its rendered values; `None` for `cni.type: none`.
pub(super) fn cni(config: &Config, content: &Content) -> Result<Option<ChartInstall>, PlanError> {
    let plugin = config.cni.plugin;
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
        NetworkPlugin::None => return Ok(None),
        other => {
            return Err(PlanError::UnsupportedCni {
                plugin: other.as_str(),
            });
        }
    };
    let cni_config = &config.cni;
    let subnets: Vec<_> = cni_config
        .pod_cidr
        .ranges()
        .map(|range| (range.address(), range.prefix()))
        .collect();
    let yaml = cni_values(
        &values,
        &subnets,
        cni_config.ipv4_mask_size,
        cni_config.ipv6_mask_size,
    );
    Ok(Some(ChartInstall {
        release: chart.to_owned(),
        namespace: namespace.to_owned(),
        fetch: content.chart(chart)?,
        values: ChartValues::Cni { yaml },
    }))
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

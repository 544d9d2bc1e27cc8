//! The NFS part of the plan: the server on the host of the `nfs` group (its share directory and
//! the clients its export allows), and the nfs-subdir-external-provisioner chart over it when
//! `storage_class.nfs.enabled`.

use std::net::IpAddr;

use serde::Serialize;

use super::{ChartInstall, ChartValues, Content, address_of};
use crate::install::error::PlanError;
use crate::inventory::{Config, Inventory, K8S_CLUSTER, Role};

/// The provisioner's chart in the bundle (the catalog's entry for `storage: [nfs]`).
pub const PROVISIONER_CHART: &str = "nfs-subdir-external-provisioner";

/// The NFS server kk sets up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NfsPlan {
    /// The inventory name of the `nfs` host.
    pub node: String,
    /// Its address, which the provisioner mounts from.
    pub ip: IpAddr,
    /// The exported directory (`nfs.share_dir`, without a trailing slash).
    pub share_dir: String,
    /// The clients the export allows: every `k8s_cluster` node's address, in inventory order
    /// (narrower than KubeKey's `*`).
    pub clients: Vec<IpAddr>,
}

impl NfsPlan {
    /// The server of the inventory's `nfs` group; `None` without one. The precheck holds the
    /// group to exactly one host; the plan takes the first.
    pub(super) fn new(inventory: &Inventory, config: &Config) -> Result<Option<Self>, PlanError> {
        let Some(host) = inventory.role_members(Role::Nfs).into_iter().next() else {
            return Ok(None);
        };
        let clients = inventory
            .group_members(K8S_CLUSTER)
            .into_iter()
            .map(address_of)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Self {
            node: host.name.clone(),
            ip: address_of(host)?,
            // Without the trailing slash KubeKey's default has: the one spelling of the path
            // in the exports, the provisioner's mounts and the record.
            share_dir: config.nfs.share_dir.trim_end_matches('/').to_owned(),
            clients,
        }))
    }
}

/// The provisioner's chart when `storage_class.nfs.enabled`, with its values: the NFS host's
/// address, the share directory and whether its class is the default.
pub(super) fn provisioner(
    config: &Config,
    nfs: Option<&NfsPlan>,
    content: &Content,
) -> Result<Option<ChartInstall>, PlanError> {
    let class = config.storage_class.nfs;
    if !class.enabled {
        return Ok(None);
    }
    let nfs = nfs.ok_or(PlanError::NfsClassWithoutServer)?;
    let fetch = content
        .chart(PROVISIONER_CHART)
        .map_err(|_| PlanError::MissingNfsProvisioner {
            chart: PROVISIONER_CHART,
        })?;
    if config
        .addons
        .iter()
        .any(|addon| addon.name == PROVISIONER_CHART)
    {
        return Err(PlanError::AddonNameTaken {
            name: PROVISIONER_CHART,
        });
    }
    Ok(Some(ChartInstall {
        release: PROVISIONER_CHART.to_owned(),
        namespace: "kube-system".to_owned(),
        fetch,
        values: ChartValues::StorageClass {
            yaml: provisioner_values(nfs.ip, &nfs.share_dir, class.default),
        },
    }))
}

/// The provisioner's values file. Strings are written as JSON strings (valid YAML) so that an
/// IPv6 address or an unusual path stays one scalar.
fn provisioner_values(server: IpAddr, path: &str, default_class: bool) -> String {
    let quoted = |text: &str| serde_json::Value::String(text.to_owned()).to_string();
    format!(
        "nfs:\n  server: {server}\n  path: {path}\nstorageClass:\n  defaultClass: {default_class}\n",
        server = quoted(&server.to_string()),
        path = quoted(path),
    )
}

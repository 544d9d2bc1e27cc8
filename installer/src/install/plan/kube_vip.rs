//! kube-vip as the plan sets it up (`control_plane_endpoint.type: kube-vip`): the image, the
//! virtual address, the kubeconfig it starts with, and how each control plane announces the
//! address. Only the interface that holds a node's address is found on the node itself.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use crate::install::render::kubernetes::paths::{ADMIN_CONF, SUPER_ADMIN_CONF};
use crate::install::render::kubernetes::{VipMode, kube_vip_needs_super_admin};
use crate::inventory::{KubeVip, KubeVipMode};

/// The AS every control plane announces the address from, and peers with (KubeKey's).
const BGP_ASN: u32 = 65000;

/// kube-vip on the control planes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KubeVipPlan {
    /// The bundle's kube-vip image.
    pub image: String,
    /// The virtual address.
    pub address: IpAddr,
    /// The API server's port.
    pub port: u16,
    /// The kubeconfig kube-vip uses on the first control plane until `kubeadm init` is done:
    /// from v1.29 `admin.conf` has no rights until init has bound its group, so
    /// `super-admin.conf`.
    pub bootstrap_kubeconfig: String,
    /// By control plane: how it announces the address.
    pub nodes: BTreeMap<String, VipAnnounce>,
}

/// How one control plane announces the virtual address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VipAnnounce {
    /// The interface the address is bound to.
    pub interface: VipInterface,
    /// ARP, or BGP with this node's router ID and peers.
    pub mode: VipMode,
}

/// Which interface kube-vip binds the address to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VipInterface {
    /// This one (`lo` in BGP mode, as KubeKey and kube-vip's docs do: every node holds the
    /// address, and no interface should answer ARP for it).
    Named {
        /// The interface.
        name: String,
    },
    /// The one that holds `address` (ARP answers there), found on the node.
    Holding {
        /// The node's plan address.
        address: IpAddr,
    },
}

impl KubeVipPlan {
    /// kube-vip for `vip` on `control_planes` (name, address), with the API server on `port`
    /// and the bundle's Kubernetes `version`.
    pub(super) fn new(
        vip: &KubeVip,
        image: String,
        port: u16,
        version: &str,
        control_planes: &[(String, IpAddr)],
    ) -> Self {
        let nodes = control_planes
            .iter()
            .map(|(name, ip)| {
                let announce = match vip.mode {
                    KubeVipMode::Arp => VipAnnounce {
                        interface: VipInterface::Holding { address: *ip },
                        mode: VipMode::Arp,
                    },
                    KubeVipMode::Bgp => VipAnnounce {
                        interface: VipInterface::Named {
                            name: "lo".to_owned(),
                        },
                        mode: VipMode::Bgp {
                            router_id: *ip,
                            peers: control_planes
                                .iter()
                                .filter(|(other, _)| other != name)
                                .map(|(_, ip)| *ip)
                                .collect(),
                            asn: BGP_ASN,
                        },
                    },
                };
                (name.clone(), announce)
            })
            .collect();
        let bootstrap_kubeconfig = if kube_vip_needs_super_admin(version) {
            SUPER_ADMIN_CONF
        } else {
            ADMIN_CONF
        };
        Self {
            image,
            address: vip.address,
            port,
            bootstrap_kubeconfig: bootstrap_kubeconfig.to_owned(),
            nodes,
        }
    }
}

//! What both binaries need to know about the Helm charts of a bundle: the values the CNI chart
//! is installed with ([`cni_values`]) and the images a rendered chart names that a bundle lacks
//! ([`missing_images`]), and the names a bundle carries multus by ([`MULTUS_MANIFEST_BINARY`],
//! [`MULTUS_IMAGE_PATH`]).
//!
//! Both sides render the same chart with the same values: `kk-install` renders it on the first
//! control plane and refuses to apply a chart that names an image the bundle lacks; `kk-bundle`
//! renders it at build time so the same failure is found before the bundle leaves the connected
//! side. One owner for the values and the comparison keeps the two checks from drifting apart.

mod cni;
mod images;
mod multus;

pub use cni::{
    ClusterRanges, CniChart, DEFAULT_IPV4_MASK_SIZE, DEFAULT_IPV6_MASK_SIZE, DEFAULT_POD_SUBNET,
    DEFAULT_SERVICE_SUBNET, cni_values,
};
pub use images::missing_images;
pub use multus::{MULTUS_IMAGE_PATH, MULTUS_MANIFEST_BINARY};

//! How a bundle carries multus, the secondary CNI without a chart: its manifest as a binary and
//! its image. The builder's catalog adds both with `multiCni: multus`; the installer's plan and
//! precheck find them by these names.

/// The bundle's binary that is multus's manifest (upstream's `deployments/multus-daemonset.yml`
/// at the release tag, the catalog's name).
pub const MULTUS_MANIFEST_BINARY: &str = "multus";

/// The repository path of multus's image (`ghcr.io/k8snetworkplumbingwg/multus-cni`), by
/// which the bundle's image is found whatever its tag.
pub const MULTUS_IMAGE_PATH: &str = "k8snetworkplumbingwg/multus-cni";

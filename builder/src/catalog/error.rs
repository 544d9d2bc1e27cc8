//! The error of expanding `spec.kubernetes` through the version catalog.

/// `spec.kubernetes` cannot be expanded into the binaries, images and charts of its release.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// `spec.kubernetes` names a minor release the version catalog does not describe.
    #[error(
        "kubernetes `{version}` is not in the version catalog; supported minors: {supported}; hint: pick one of them, or drop `spec.kubernetes` and list the binaries and images yourself"
    )]
    KubernetesNotInCatalog {
        /// The version asked for, e.g. `v1.28.4`.
        version: String,
        /// The supported minors, each in backticks.
        supported: String,
    },
    /// `spec.kubernetes` names a patch release newer than the catalog has verified.
    #[error(
        "kubernetes `{version}` is newer than the version catalog knows (its newest {minor} release is `{latest}`); hint: use `{latest}`, or a kk-bundle whose catalog covers `{version}`"
    )]
    KubernetesPatchUnknown {
        /// The version asked for, e.g. `v1.31.99`.
        version: String,
        /// Its minor, e.g. `v1.31`.
        minor: String,
        /// The newest patch release of that minor the catalog knows, e.g. `v1.31.14`.
        latest: String,
    },
    /// `spec.kubernetes.components` chooses a component the cluster does not have.
    #[error(
        "component `{name}` is not part of a cluster with container runtime `{runtime}`; hint: remove it from `spec.kubernetes.components`"
    )]
    ComponentNotInCluster {
        /// The component.
        name: String,
        /// The cluster's container runtime.
        runtime: String,
    },
    /// A chosen version of a component whose downloads the catalog pins by sha256 (upstream
    /// publishes no checksum file) is not one it has pinned.
    #[error(
        "component `{name}` {version} has no sha256 in the version catalog (upstream publishes no checksum file for it); hint: choose one of {pinned}, or list the binary in `spec.binaries` with its sha256"
    )]
    ComponentNotPinned {
        /// The component.
        name: String,
        /// The version chosen.
        version: String,
        /// The versions the catalog pins, comma-separated.
        pinned: String,
    },
    /// A bug: the catalog shipped with kk-bundle breaks an invariant the expansion relies on.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
}

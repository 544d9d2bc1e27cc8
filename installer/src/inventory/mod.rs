//! The inventory (which machines, in which groups) and the config (what to install on them),
//! read from KubeKey v4-shaped YAML so that people coming from KubeKey bring their files.
//!
//! # How the types fit
//!
//! [`Inventory::from_path`] reads a `kind: Inventory` into [`Host`]s (each with a
//! [`Connector`], internal addresses, its [`Roles`] and its other keys as variables) and
//! [`Group`]s (nested groups resolved: [`Inventory::group_members`]). [`Config::from_path`]
//! reads a `kind: Config` into one struct per section ([`KubernetesConfig`], [`EtcdConfig`],
//! [`CriConfig`], [`CniConfig`] with its [`ClusterCidr`]s, [`ImageRegistry`],
//! [`PrecheckConfig`]); [`Config::default`] is the config of a user who gives none. Holding
//! either means every check below passed. Both keep the keys kk does not read
//! ([`Host::vars`], [`Config::extra`]) and report likely typos as [`Warning`]s.
//!
//! Both accept `apiVersion` `kubekey.kubesphere.io/v1` (KubeKey v4) or `install.kk.io/v1alpha1`
//! ([`API_VERSIONS`]); `apiVersion` and `kind` are checked first, so a file of another version
//! or kind (a config passed as the inventory) is reported as such.
//!
//! # How parsing works, and why
//!
//! As for the bundle manifest (`bundle_spec::manifest`, whose YAML helpers this module uses):
//! raw types mirror the YAML with every value a check may reject wrapped in
//! [`serde_saphyr::Spanned`], then validation builds the public types, so every error starts
//! with the `file:line:column` of the offending node. Booleans are strict, duplicate keys are
//! errors, and only the first error is reported.
//!
//! Unknown keys are where this module parts from the manifest. A manifest is kk's own format,
//! so an unknown key there is an error. A KubeKey config carries dozens of keys kk does not
//! read (image tags, kubelet flags, storage classes…), so here they are **kept** — in
//! [`Host::vars`], [`Group::vars`] or [`Config::extra`] — and never fail. A typo would then fall
//! back to a default unnoticed (`kube_verison`), so an unknown key close to a key kk reads at
//! the same place (the manifest's Jaro-Winkler "did you mean") becomes a [`Warning`] with its
//! location, for the caller to print. Values are another matter: an unknown `cni.type` or a bad
//! CIDR is an error, with "did you mean" where it applies.
//!
//! # Decisions worth knowing
//!
//! - **Dual stack.** `pod_cidr`/`service_cidr` take `v4,v6` and KubeKey's documented `v4/v6`
//!   (`10.233.64.0/18/fd85::/108`): split on `,` first; a lone part with three `/` is cut at
//!   its second (see [`ClusterCidr`]). Either family may come first; ranges with host bits set
//!   are refused with the network address suggested.
//! - **Connectors.** A host without `connector` is reached over SSH at its `internal_ipv4`,
//!   else `internal_ipv6`, else its name, as `root` on port 22; `localhost` without a
//!   connector type, or `type: local`, runs locally. Empty strings (`internal_ipv6: ""`, as
//!   KubeKey files often have) count as absent.
//! - **Groups.** A host no group lists is an error (it would never be installed), as are a
//!   group naming an unknown host or group, and a cycle of nested groups. Without a
//!   `k8s_cluster` group, it is implied as `kube_control_plane` + `kube_worker`; with one,
//!   every control-plane node and worker must be in it. Members are ordered as written, so the
//!   first control-plane node listed is the first one set up.
//! - **Addresses.** Two hosts with the same internal address are an error; `internal_ipv4`
//!   must hold an IPv4 address and `internal_ipv6` an IPv6 one.
//! - **Config values.** Only literal values are read: KubeKey's `{{ … }}` templates are not
//!   evaluated, so a template where kk reads a value is reported as invalid. KubeKey's
//!   `kube_vip` spelling of the endpoint type, `kubeovn`, `other` (no CNI) and an empty
//!   `image_registry.type` are read as `kube-vip`, `kube-ovn`, `none` and `kk`.
//! - **Units.** `cluster_require.minimal_*_memory_mb` are megabytes, as named (KubeKey
//!   compares them to kB).
//! - **Secrets.** Host passwords are [`Password`]s, never printed; the external registry's
//!   password is only named by an environment variable.

#![warn(missing_docs)]

mod cidr;
mod config;
mod config_check;
mod document;
mod error;
mod groups;
mod hosts;
#[allow(clippy::module_inception)] // `inventory::inventory` holds the `Inventory` type itself.
mod inventory;
mod inventory_check;
mod network;
mod raw;
mod section;

#[cfg(test)]
mod error_table;
#[cfg(test)]
mod tests;

pub use cidr::{Cidr, CidrError, ClusterCidr};
pub use config::{
    Addon, CniConfig, Config, ControlPlaneEndpoint, CriConfig, EndpointKind, EtcdConfig,
    EtcdDeploymentType, ExternalRegistry, ImageRegistry, KernelVersion, KubeProxyMode, KubeVip,
    KubeVipMode, KubernetesConfig, MultiCni, NetworkPlugin, NfsConfig, NfsStorageClass,
    PrecheckConfig, RegistryAddress, StorageClassConfig,
};
pub use document::{API_VERSIONS, Warning};
pub use error::InventoryError;
pub use hosts::is_node_name;
pub use inventory::{
    Connector, Group, Host, Inventory, K8S_CLUSTER, Password, Role, Roles, SshConnector,
};

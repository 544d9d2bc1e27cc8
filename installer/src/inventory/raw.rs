//! The inventory and config exactly as written: [`section!`] structs mirroring the YAML, every
//! value a later check may reject wrapped in [`Spanned`] so the error can point at it.
//!
//! Everything is optional here, including what is required: validation reports a missing field
//! at the mapping that lacks it, and fills in defaults for the rest.

use std::collections::BTreeMap;

use bundle_spec::manifest::{ContainerRuntime, SpannedMap};
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::config::{EtcdDeploymentType, KubeProxyMode, KubeVipMode, MultiCni, NetworkPlugin};
use super::section::section;

/// `apiVersion` and `kind` alone, read before the full parse so that a file of another
/// version or kind is reported as such rather than as a shape error.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawHeader {
    pub(super) api_version: Option<Spanned<String>>,
    pub(super) kind: Option<Spanned<String>>,
}

section! {
    /// `metadata`: only the name is read.
    struct RawMetadata {
        "name" => name: Option<String>,
    }
}

section! {
    /// A `kind: Inventory` document.
    struct RawInventoryDocument {
        "apiVersion" => api_version: Option<Spanned<String>>,
        "kind" => kind: Option<Spanned<String>>,
        "metadata" => metadata: Option<RawMetadata>,
        "spec" => spec: Option<Spanned<RawInventorySpec>>,
    }
}

section! {
    /// `spec` of an inventory.
    struct RawInventorySpec {
        "hosts" => hosts: Option<Spanned<SpannedMap<Spanned<Option<RawHost>>>>>,
        "groups" => groups: Option<SpannedMap<Spanned<Option<RawGroup>>>>,
        "vars" => vars: Option<BTreeMap<String, Value>>,
    }
}

section! {
    /// `spec.hosts.<name>`: every key but these is a host variable.
    struct RawHost {
        "connector" => connector: Option<Spanned<RawConnector>>,
        "internal_ipv4" => internal_ipv4: Option<Spanned<String>>,
        "internal_ipv6" => internal_ipv6: Option<Spanned<String>>,
    }
}

section! {
    /// `spec.hosts.<name>.connector`.
    struct RawConnector {
        "type" => kind: Option<Spanned<ConnectorType>>,
        "host" => host: Option<Spanned<String>>,
        "port" => port: Option<Spanned<i64>>,
        "user" => user: Option<Spanned<String>>,
        "password" => password: Option<String>,
        "private_key" => private_key: Option<String>,
    }
}

/// `connector.type`: KubeKey's `kubernetes` and `prometheus` connectors are not supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum ConnectorType {
    Ssh,
    Local,
}

section! {
    /// `spec.groups.<name>`.
    struct RawGroup {
        "hosts" => hosts: Option<Vec<Spanned<String>>>,
        "groups" => groups: Option<Vec<Spanned<String>>>,
        "vars" => vars: Option<BTreeMap<String, Value>>,
    }
}

section! {
    /// A `kind: Config` document.
    struct RawConfigDocument {
        "apiVersion" => api_version: Option<Spanned<String>>,
        "kind" => kind: Option<Spanned<String>>,
        "metadata" => metadata: Option<RawMetadata>,
        "spec" => spec: Option<RawConfigSpec>,
    }
}

section! {
    /// `spec` of a config.
    struct RawConfigSpec {
        "kubernetes" => kubernetes: Option<RawKubernetes>,
        "etcd" => etcd: Option<RawEtcd>,
        "cri" => cri: Option<RawCri>,
        "cni" => cni: Option<Spanned<RawCni>>,
        "image_registry" => image_registry: Option<Spanned<RawImageRegistry>>,
        "cluster_require" => cluster_require: Option<RawClusterRequire>,
        "addons" => addons: Option<Vec<Spanned<RawAddon>>>,
        "nfs" => nfs: Option<RawNfs>,
        "storage_class" => storage_class: Option<RawStorageClass>,
        "trusted_keys" => trusted_keys: Option<Vec<Spanned<String>>>,
    }
}

section! {
    /// `spec.nfs`.
    struct RawNfs {
        "share_dir" => share_dir: Option<Spanned<String>>,
    }
}

section! {
    /// `spec.storage_class`: only `nfs` is read (KubeKey's `local` is kept).
    struct RawStorageClass {
        "nfs" => nfs: Option<RawNfsStorageClass>,
    }
}

section! {
    /// `spec.storage_class.nfs`.
    struct RawNfsStorageClass {
        "enabled" => enabled: Option<bool>,
        "default" => default: Option<bool>,
    }
}

section! {
    /// `spec.addons[]`: a chart of the bundle to install after the network, KubeKey-shaped.
    struct RawAddon {
        "name" => name: Option<Spanned<String>>,
        "namespace" => namespace: Option<Spanned<String>>,
        "sources" => sources: Option<Spanned<RawAddonSources>>,
    }
}

section! {
    /// `spec.addons[].sources`.
    struct RawAddonSources {
        "chart" => chart: Option<Spanned<RawAddonChart>>,
    }
}

section! {
    /// `spec.addons[].sources.chart`: the chart by its name in the bundle, and its values.
    struct RawAddonChart {
        "name" => name: Option<Spanned<String>>,
        "values" => values: Option<Vec<Spanned<String>>>,
        "valuesFile" => values_file: Option<Spanned<String>>,
    }
}

section! {
    /// `spec.kubernetes`.
    struct RawKubernetes {
        "kube_version" => kube_version: Option<Spanned<String>>,
        "control_plane_endpoint" => control_plane_endpoint: Option<Spanned<RawEndpoint>>,
        "kube_proxy" => kube_proxy: Option<RawKubeProxy>,
    }
}

section! {
    /// `spec.kubernetes.control_plane_endpoint`.
    struct RawEndpoint {
        "type" => kind: Option<Spanned<EndpointType>>,
        "host" => host: Option<Spanned<String>>,
        "port" => port: Option<Spanned<i64>>,
        "kube_vip" => kube_vip: Option<Spanned<RawKubeVip>>,
    }
}

/// `control_plane_endpoint.type`. KubeKey documents `kube-vip` and its defaults write
/// `kube_vip`; both are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum EndpointType {
    Local,
    #[serde(rename = "kube-vip", alias = "kube_vip")]
    KubeVip,
    Haproxy,
}

section! {
    /// `spec.kubernetes.control_plane_endpoint.kube_vip`.
    struct RawKubeVip {
        "address" => address: Option<Spanned<String>>,
        "mode" => mode: Option<KubeVipMode>,
    }
}

section! {
    /// `spec.kubernetes.kube_proxy`.
    struct RawKubeProxy {
        "mode" => mode: Option<KubeProxyMode>,
    }
}

section! {
    /// `spec.etcd`.
    struct RawEtcd {
        "deployment_type" => deployment_type: Option<EtcdDeploymentType>,
    }
}

section! {
    /// `spec.cri`.
    struct RawCri {
        "container_manager" => container_manager: Option<ContainerRuntime>,
    }
}

section! {
    /// `spec.cni`.
    struct RawCni {
        "type" => kind: Option<NetworkPlugin>,
        "multi_cni" => multi_cni: Option<MultiCni>,
        "pod_cidr" => pod_cidr: Option<Spanned<String>>,
        "service_cidr" => service_cidr: Option<Spanned<String>>,
        "max_pods" => max_pods: Option<Spanned<i64>>,
        "ipv4_mask_size" => ipv4_mask_size: Option<Spanned<i64>>,
        "ipv6_mask_size" => ipv6_mask_size: Option<Spanned<i64>>,
    }
}

section! {
    /// `spec.image_registry`.
    struct RawImageRegistry {
        "type" => kind: Option<RegistryType>,
        "address" => address: Option<Spanned<String>>,
        "username" => username: Option<Spanned<String>>,
        "password_env" => password_env: Option<Spanned<String>>,
        "ca_file" => ca_file: Option<Spanned<String>>,
        "harbor" => harbor: Option<Spanned<bool>>,
        "auth" => auth: Option<Spanned<RawRegistryAuth>>,
        "upstream_fallback" => upstream_fallback: Option<bool>,
    }
}

section! {
    /// `spec.image_registry.auth`: KubeKey's registry address (its credentials are kept, unread).
    struct RawRegistryAuth {
        "registry" => registry: Option<Spanned<String>>,
    }
}

/// `image_registry.type`. KubeKey's empty `type` (install no registry) reads as `kk`: an
/// airgapped cluster needs the bundle's images served from somewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum RegistryType {
    #[serde(alias = "")]
    Kk,
    External,
}

section! {
    /// `spec.cluster_require`: the precheck's thresholds, under KubeKey's names.
    struct RawClusterRequire {
        "allow_unsupported_distribution_setup" => allow_unsupported_distribution_setup: Option<bool>,
        "minimal_master_memory_mb" => minimal_master_memory_mb: Option<Spanned<u64>>,
        "minimal_node_memory_mb" => minimal_node_memory_mb: Option<Spanned<u64>>,
        "min_kernel_version" => min_kernel_version: Option<Spanned<String>>,
    }
}

//! The errors of reading an inventory or a config.

use std::path::PathBuf;

use bundle_spec::diagnostics::cut;

use super::cidr::CidrError;

/// An inventory or config that cannot be read, parsed or validated.
///
/// Every variant but [`InventoryError::Read`] starts its message with the `file:line:column` of
/// the offending YAML node.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InventoryError {
    /// The file could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The path given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML of the expected shape (syntax, types, unknown values…).
    #[error(transparent)]
    Yaml(#[from] bundle_spec::diagnostics::YamlError),
    /// A required field is absent.
    #[error("{at}: missing required field `{field}`")]
    MissingField {
        /// The mapping that lacks it.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field's name.
        field: &'static str,
    },
    /// `apiVersion` is not one kk reads.
    #[error(
        "{at}: unsupported apiVersion `{found}`; hint: use `kubekey.kubesphere.io/v1` or `install.kk.io/v1alpha1`", found = cut(.found))]
    UnsupportedApiVersion {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        found: String,
    },
    /// `kind` is not the kind of file expected here.
    #[error(
        "{at}: kind `{found}` where `{expected}` was expected{}",
        kind_hint(found), found = cut(.found))]
    WrongKind {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        found: String,
        /// `Inventory` or `Config`.
        expected: &'static str,
    },
    /// `spec.hosts` is empty.
    #[error("{at}: the inventory has no hosts; hint: add one under `spec.hosts`")]
    NoHosts {
        /// Where `hosts` is.
        at: bundle_spec::diagnostics::SourceLocation,
    },
    /// A host name cannot name a node's files.
    #[error(
        "{at}: invalid host name `{name}`; hint: use letters, digits, `-`, `_` and `.`, as node names need", name = cut(.name))]
    InvalidHostName {
        /// Where the name is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The name as written.
        name: String,
    },
    /// A host of `k8s_cluster` whose name kubeadm refuses as a node name.
    #[error(
        "{at}: host `{}` is in `k8s_cluster`, so it names a kubernetes node, and a node name is a lowercase RFC 1123 subdomain; hint: rename the host (lowercase letters, digits, `-` and `.`, starting and ending with a letter or digit)",
        cut(.name)
    )]
    InvalidNodeName {
        /// Where the host's name is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The name as written.
        name: String,
    },
    /// An address does not parse.
    #[error("{at}: invalid {family} address `{value}` in `{field}`", value = cut(.value))]
    InvalidIp {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field, e.g. `internal_ipv4`.
        field: &'static str,
        /// The value as written.
        value: String,
        /// `IPv4`, `IPv6` or `IP`.
        family: &'static str,
    },
    /// An address of the other family.
    #[error(
        "{at}: `{value}` in `{field}` is an {found} address; hint: write it in `{right_field}`", value = cut(.value))]
    WrongIpFamily {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field it is in.
        field: &'static str,
        /// The value as written.
        value: String,
        /// Its family.
        found: &'static str,
        /// The field for that family.
        right_field: &'static str,
    },
    /// A port outside 1 – 65535.
    #[error("{at}: invalid port `{value}` in `{field}`; hint: use a number from 1 to 65535")]
    InvalidPort {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field, e.g. `connector.port`.
        field: &'static str,
        /// The value as written.
        value: i64,
    },
    /// An addon's field is invalid.
    #[error("{at}: addon `{field}` `{value}`: {reason}; hint: see `spec.addons` in the README", value = cut(.value))]
    InvalidAddon {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field.
        field: &'static str,
        /// The value as written.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A machine name that is neither an IP address nor a DNS name.
    #[error("{at}: invalid host `{value}` in `{field}`; hint: write an IP address or a DNS name", value = cut(.value))]
    InvalidHost {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field.
        field: &'static str,
        /// The value as written.
        value: String,
    },
    /// Two hosts have the same internal address.
    #[error(
        "{at}: host `{host}` has {} `{address}`, which host `{first_host}` already has at {first}; hint: each node needs its own address",
        if address.is_ipv4() { "internal_ipv4" } else { "internal_ipv6" }, host = cut(.host), first_host = cut(.first_host))]
    DuplicateAddress {
        /// Where the repetition is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The address.
        address: std::net::IpAddr,
        /// The host repeating it.
        host: String,
        /// The host that has it first.
        first_host: String,
        /// Where that one is.
        first: bundle_spec::diagnostics::SourceLocation,
    },
    /// A group lists a host `spec.hosts` does not define.
    #[error(
        "{at}: group `{group}` lists host `{host}`, which `spec.hosts` does not define{}",
        did_you_mean(suggestion.as_deref()), group = cut(.group), host = cut(.host))]
    UnknownHost {
        /// Where the entry is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The group.
        group: String,
        /// The host name as written.
        host: String,
        /// The defined host closest to it, if one is close.
        suggestion: Option<String>,
    },
    /// A group nests a group `spec.groups` does not define.
    #[error(
        "{at}: group `{group}` nests group `{member}`, which `spec.groups` does not define{}",
        did_you_mean(suggestion.as_deref()), group = cut(.group), member = cut(.member))]
    UnknownGroup {
        /// Where the entry is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The nesting group.
        group: String,
        /// The group name as written.
        member: String,
        /// The defined group closest to it, if one is close.
        suggestion: Option<String>,
    },
    /// Nested groups form a cycle.
    #[error("{at}: groups nest each other in a cycle: {cycle}; hint: remove one of these nestings", cycle = cut(.cycle))]
    GroupCycle {
        /// Where the nesting closing the cycle is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The groups on the cycle, `` `a` → `b` → `a` ``.
        cycle: String,
    },
    /// A host no group lists.
    #[error(
        "{at}: host `{host}` is in no group, so nothing would be installed on it; hint: list it in a group such as `kube_worker`, or remove it", host = cut(.host))]
    HostInNoGroup {
        /// Where the host is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The host.
        host: String,
    },
    /// A control-plane node or worker outside `k8s_cluster`.
    #[error(
        "{at}: host `{host}` is in `{group}` but not in `k8s_cluster`, so it would get no kubelet; hint: add `{group}` to the `groups` of `k8s_cluster`", host = cut(.host))]
    NotInCluster {
        /// Where `k8s_cluster` is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The host.
        host: String,
        /// `kube_control_plane` or `kube_worker`.
        group: &'static str,
    },
    /// `kubernetes.kube_version` is not `vMAJOR.MINOR.PATCH`.
    #[error(
        "{at}: invalid kube_version `{version}`; hint: write `vMAJOR.MINOR.PATCH`, e.g. `v1.31.4`", version = cut(.version))]
    InvalidKubeVersion {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        version: String,
    },
    /// A pod or service range does not parse.
    #[error("{at}: invalid `{field}` `{value}`", value = cut(.value))]
    InvalidCidr {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// `cni.pod_cidr` or `cni.service_cidr`.
        field: &'static str,
        /// The value as written.
        value: String,
        /// What is wrong with it.
        #[source]
        source: CidrError,
    },
    /// The service range overlaps the pod range.
    #[error(
        "{at}: service range `{service}` overlaps pod range `{pod}`; hint: choose disjoint `cni.pod_cidr` and `cni.service_cidr`"
    )]
    CidrOverlap {
        /// Where the service range is (or `cni`, when it is the default).
        at: bundle_spec::diagnostics::SourceLocation,
        /// The pod range.
        pod: crate::inventory::Cidr,
        /// The service range.
        service: crate::inventory::Cidr,
    },
    /// A node's pod range would be larger than the whole pod range.
    #[error(
        "{at}: `{field}` {mask} gives each node a larger range than pod range `{pod_cidr}`; hint: use a mask size of at least {}",
        pod_cidr.prefix()
    )]
    MaskTooWide {
        /// Where the mask size is (or the pod range, when the mask is the default).
        at: bundle_spec::diagnostics::SourceLocation,
        /// `cni.ipv4_mask_size` or `cni.ipv6_mask_size`.
        field: &'static str,
        /// The mask size.
        mask: u8,
        /// The pod range.
        pod_cidr: crate::inventory::Cidr,
    },
    /// A number outside what the field allows.
    #[error("{at}: `{field}` is {value}; hint: use a number from {min} to {max}")]
    OutOfRange {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field.
        field: &'static str,
        /// The value.
        value: i64,
        /// The least allowed.
        min: i64,
        /// The most allowed.
        max: i64,
    },
    /// A node's pod range cannot hold `max_pods` pods.
    #[error(
        "{at}: `cni.max_pods` {max_pods} is more than the {addresses} pod addresses a /{mask} node range holds; hint: lower `cni.max_pods` or `{field}`"
    )]
    TooManyPods {
        /// Where the mask size is (or the pod range, when the mask is the default).
        at: bundle_spec::diagnostics::SourceLocation,
        /// `max_pods`.
        max_pods: u32,
        /// The mask size's field.
        field: &'static str,
        /// The mask size.
        mask: u8,
        /// The usable addresses of a node range.
        addresses: u64,
    },
    /// `cluster_require.min_kernel_version` is not a kernel version.
    #[error(
        "{at}: invalid min_kernel_version `{version}`; hint: write `MAJOR.MINOR[.PATCH]`, e.g. `4.19`", version = cut(.version))]
    InvalidKernelVersion {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        version: String,
    },
    /// `nfs.share_dir` is not an absolute path an `/etc/exports` line can hold.
    #[error(
        "{at}: invalid nfs.share_dir `{dir}`; hint: write an absolute path without spaces, quotes or `..`, e.g. `/share/`", dir = cut(.dir))]
    InvalidShareDir {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        dir: String,
    },
    /// `image_registry.address` is not `host[:port]`.
    #[error(
        "{at}: invalid registry address `{address}`; hint: write `host[:port]` in lowercase, e.g. `harbor.example.com:443`", address = cut(.address))]
    InvalidRegistryAddress {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        address: String,
    },
    /// Only one of `username` and `password_env` is set.
    #[error(
        "{at}: `image_registry` sets only one of `username` and `password_env`; hint: set both, or neither"
    )]
    IncompleteCredentials {
        /// Where `image_registry` is.
        at: bundle_spec::diagnostics::SourceLocation,
    },
    /// `password_env` is not an environment variable name.
    #[error(
        "{at}: invalid environment variable name `{name}`; hint: use letters, digits and `_`, not starting with a digit", name = cut(.name))]
    InvalidEnvName {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The value as written.
        name: String,
    },
    /// `image_registry.ca_file` is empty.
    #[error(
        "{at}: `image_registry.ca_file` is empty; hint: give the PEM file of the CA the registry's certificate chains to, or remove `ca_file` to trust the system's CAs"
    )]
    EmptyCaFile {
        /// Where the value is.
        at: bundle_spec::diagnostics::SourceLocation,
    },
    /// A setting of an external registry without `type: external`.
    #[error(
        "{at}: `image_registry.{field}` is only read with `type: external`; hint: add `type: external`, or remove `{field}` to use kk's own registry"
    )]
    RegistryFieldNeedsExternal {
        /// Where the field is.
        at: bundle_spec::diagnostics::SourceLocation,
        /// The field.
        field: &'static str,
    },
}

/// `; did you mean `x`?` when there is a suggestion.
fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!("; did you mean `{s}`?"))
}

/// What to do when an inventory is given for a config or the reverse.
fn kind_hint(found: &str) -> &'static str {
    match found {
        "Inventory" => "; hint: this is an inventory, pass it as the inventory file",
        "Config" => "; hint: this is a config, pass it as the config file",
        _ => "",
    }
}

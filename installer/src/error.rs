//! Errors of the installer library.

use std::path::PathBuf;

// The install's errors live beside it; re-exported so `crate::error::X` names every error.
pub use crate::install::error::{InstallError, PlanError, StepError};

// ---------------------------------------------------------------------------------------------
// Registry: opening a bundle store to serve it (`crate::registry`).
// ---------------------------------------------------------------------------------------------

/// A bundle store cannot be served by the registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A file of the store could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The directory is not an OCI image layout.
    #[error("`{}` is not an OCI image layout: it has no `oci-layout` file", dir.display())]
    NotALayout {
        /// The directory.
        dir: PathBuf,
    },
    /// `index.json` or a manifest is not the JSON document it should be.
    #[error("`{}` is not a valid OCI index or manifest", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A descriptor's digest is not `sha256:` and 64 lowercase hex digits.
    #[error("`{}` lists a descriptor with digest `{digest}`, which this registry cannot serve", path.display())]
    Digest {
        /// The file holding the descriptor.
        path: PathBuf,
        /// The digest as written.
        digest: String,
        /// Why.
        #[source]
        source: bundle_spec::digest::InvalidDigest,
    },
    /// A ref name in `index.json` is not a fully qualified reference with a valid name.
    #[error(
        "`index.json` names an artifact `{ref_name}`, which is not a fully qualified reference `host/path:tag` or `host/path@digest`"
    )]
    RefName {
        /// The ref name.
        ref_name: String,
    },
    /// Two artifacts would be served under the same repository and tag.
    #[error("`{first}` and `{second}` would both be served as `{repository}:{tag}`")]
    TagConflict {
        /// The repository name.
        repository: String,
        /// The tag.
        tag: String,
        /// The first ref name.
        first: String,
        /// The second ref name.
        second: String,
    },
    /// A manifest that `index.json` lists is not in the store.
    #[error("`index.json` lists manifest `{digest}`, but `{}` does not exist", path.display())]
    MissingManifest {
        /// The manifest digest.
        digest: String,
        /// Where its blob should be.
        path: PathBuf,
    },
    /// A manifest blob is larger than a manifest may be.
    #[error("manifest `{digest}` is {size} bytes, more than the {limit} bytes a manifest may have")]
    ManifestTooLarge {
        /// The manifest digest.
        digest: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

// ---------------------------------------------------------------------------------------------
// Push: copying a bundle store into an existing registry (`crate::push`).
// ---------------------------------------------------------------------------------------------

/// A bundle store could not be pushed to a registry.
///
/// No variant carries a password: registries never echo credentials, and the user name is
/// the only part of them an error names.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// A file of the store could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A manifest of the store is not JSON.
    #[error("`{}` is not a valid OCI index or manifest", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A manifest names a config or layer blob the store does not have.
    #[error(
        "manifest `{manifest}` of `{repository}` needs blob `{digest}`, which is not in the store; hint: unpack the bundle again"
    )]
    MissingBlob {
        /// The store repository.
        repository: String,
        /// The manifest naming the blob.
        manifest: String,
        /// The missing blob.
        digest: String,
    },
    /// The CA file given to trust the registry cannot be used.
    #[error("cannot use `{}` as the CA certificate of the registry", path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The HTTP client for the registry could not be set up.
    #[error("cannot set up a client for registry `{registry}`")]
    Client {
        /// The registry (`host[:port]`).
        registry: String,
        /// Why.
        #[source]
        source: Box<oci_client::errors::OciDistributionError>,
    },
    /// The registry refused the credentials, or asked for some and none were given.
    #[error("registry `{registry}` refused access{}; hint: {}", user_text(username.as_deref()), user_hint(username.as_deref()))]
    Unauthorized {
        /// The registry (`host[:port]`).
        registry: String,
        /// The user name sent, if any.
        username: Option<String>,
    },
    /// The registry (Harbor) has no project for the first path component.
    #[error(
        "registry `{registry}` has no project `{project}` (needed for `{repository}`); hint: create the project `{project}` in Harbor first"
    )]
    ProjectMissing {
        /// The registry (`host[:port]`).
        registry: String,
        /// The project: the first component of the repository.
        project: String,
        /// The repository being pushed.
        repository: String,
    },
    /// The registry refused an index because platforms the store omitted are missing.
    #[error(
        "registry `{registry}` refused the index `{reference}`: the bundle omitted its platforms {missing} and this registry requires every platform of an index; hint: build the bundle with all platforms of the image, or push to a registry that accepts partial indexes"
    )]
    IncompleteIndex {
        /// The registry (`host[:port]`).
        registry: String,
        /// The target reference of the index.
        reference: String,
        /// The omitted platforms, comma-separated, each in backticks.
        missing: String,
        /// The registry's answer.
        #[source]
        source: Box<oci_client::errors::OciDistributionError>,
    },
    /// Checking for or uploading a blob failed.
    #[error("cannot push blob `{digest}` to `{registry}/{repository}`")]
    Blob {
        /// The registry (`host[:port]`).
        registry: String,
        /// The target repository.
        repository: String,
        /// The blob.
        digest: String,
        /// Why.
        #[source]
        source: Box<oci_client::errors::OciDistributionError>,
    },
    /// Pushing or checking a manifest failed.
    #[error("cannot push manifest `{digest}` as `{reference}`")]
    Manifest {
        /// The target reference.
        reference: String,
        /// The manifest.
        digest: String,
        /// Why.
        #[source]
        source: Box<oci_client::errors::OciDistributionError>,
    },
    /// The registry stores a manifest under another digest than the store's.
    #[error(
        "registry answers `{actual}` for `{reference}`, but the pushed manifest is `{expected}`; hint: the registry rewrote the manifest, so digest references will not resolve there"
    )]
    DigestMismatch {
        /// The target reference.
        reference: String,
        /// The stored digest.
        expected: String,
        /// The digest the registry answered.
        actual: String,
    },
    /// Credentials would cross the network in clear text, and no one said that was fine.
    #[error(
        "refusing to send the password of user `{username}` to `{registry}` over plain HTTP, where anyone on the path can read it; hint: give the registry TLS (`--ca` to trust its CA), or, on a network you trust, pass `--allow-plain-http-password`"
    )]
    PasswordOverPlainHttp {
        /// The registry (`host[:port]`).
        registry: String,
        /// The user name (never the password).
        username: String,
    },
}

/// The words naming the user, when a user name was sent.
fn user_text(username: Option<&str>) -> String {
    username.map_or_else(String::new, |u| format!(" to user `{u}`"))
}

/// What to do about a refusal, depending on whether credentials were sent.
fn user_hint(username: Option<&str>) -> &'static str {
    if username.is_some() {
        "check the user name and password, and that the user may push"
    } else {
        "the registry needs credentials: give a user name and password"
    }
}

// ---------------------------------------------------------------------------------------------
// Nodes: SSH connections, commands and uploads (`crate::ssh`).
// ---------------------------------------------------------------------------------------------

/// A node could not be reached, or a command or upload on it failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SshError {
    /// No connection could be made.
    #[error("cannot connect to node `{node}` at `{address}`: {reason}")]
    Connect {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// Why.
        reason: String,
    },
    /// The host key is not in `known_hosts`.
    #[error(
        "node `{node}` at `{address}` has a host key `known_hosts` does not know ({fingerprint}); hint: check the fingerprint on the node's console (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`), then add it to `{}` or rerun with `--accept-new-host-keys`",
        known_hosts.display()
    )]
    UnknownHostKey {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// The key's SHA256 fingerprint.
        fingerprint: String,
        /// The file consulted.
        known_hosts: PathBuf,
    },
    /// The host key differs from the recorded one.
    #[error(
        "node `{node}` at `{address}` presents a different host key ({fingerprint}) from the one recorded at `{}` line {line}: refusing to connect; hint: if the node was reinstalled, remove that line (`ssh-keygen -R` the host) and connect again",
        known_hosts.display()
    )]
    ChangedHostKey {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// The new key's SHA256 fingerprint.
        fingerprint: String,
        /// The file consulted.
        known_hosts: PathBuf,
        /// The 1-based line holding the recorded key.
        line: usize,
    },
    /// `known_hosts` could not be read or written.
    #[error("cannot check the host key of node `{node}` against `{}`: {reason}", known_hosts.display())]
    HostKeyCheck {
        /// The inventory name.
        node: String,
        /// The file.
        known_hosts: PathBuf,
        /// Why.
        reason: String,
    },
    /// Authentication failed.
    #[error("node `{node}` refused user `{user}`: {reason}")]
    Auth {
        /// The inventory name.
        node: String,
        /// The login user.
        user: String,
        /// Why (never a password).
        reason: String,
    },
    /// The connection broke while a command ran.
    #[error(
        "lost node `{node}` while running `{command}`: {reason}; hint: rerun, finished steps are skipped"
    )]
    Lost {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// Why.
        reason: String,
    },
    /// A command did not finish in time.
    #[error("`{command}` on node `{node}` did not finish within {seconds}s")]
    Timeout {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// The limit.
        seconds: u64,
    },
    /// A command printed more than a command of kk ever does.
    #[error(
        "`{command}` on node `{node}` printed more than {limit} bytes on {stream}; it was ended there (node output is held in memory, and no step of kk prints that much)"
    )]
    OutputTooLarge {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// `stdout` or `stderr`.
        stream: &'static str,
        /// The limit.
        limit: usize,
    },
    /// A command exited with an error.
    #[error("`{command}` failed on node `{node}` (exit {}):\n{output}", code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string()))]
    CommandFailed {
        /// The inventory name.
        node: String,
        /// The command.
        command: String,
        /// Its exit code; `None` for a signal.
        code: Option<u32>,
        /// What it printed.
        output: String,
    },
    /// An upload failed or arrived damaged.
    #[error("cannot upload `{path}` to node `{node}`: {reason}")]
    Upload {
        /// The inventory name.
        node: String,
        /// The path on the node.
        path: String,
        /// Why.
        reason: String,
    },
    /// A local file to upload cannot be read.
    #[error("cannot read `{}`", path.display())]
    LocalFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The node's facts hold a value no machine has.
    #[error("node `{node}` reports facts kk cannot use: {source}")]
    Facts {
        /// The inventory name.
        node: String,
        /// What is wrong.
        #[source]
        source: FactsError,
    },
    /// `known_hosts` names the host with a key of another algorithm than the one it offers.
    #[error(
        "node `{node}` at `{address}` offers a {offered} host key ({fingerprint}), but `{}` line {line} records a {recorded} key for it: refusing to connect, as for a changed key; hint: if the node's keys were regenerated, remove that line (`ssh-keygen -R` the host) and connect again",
        known_hosts.display()
    )]
    HostKeyAlgorithmChanged {
        /// The inventory name.
        node: String,
        /// `host:port`.
        address: String,
        /// The algorithm of the key the node offers, e.g. `ssh-ed25519`.
        offered: String,
        /// The offered key's SHA256 fingerprint.
        fingerprint: String,
        /// The algorithm recorded, e.g. `ssh-rsa`.
        recorded: String,
        /// The file consulted.
        known_hosts: PathBuf,
        /// The 1-based line holding the recorded key.
        line: usize,
    },
}

// ---------------------------------------------------------------------------------------------
// Facts: what the fact-gathering script printed on a node (`crate::facts`).
// ---------------------------------------------------------------------------------------------

/// The output of the fact-gathering script holds a value no machine has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FactsError {
    /// A number beyond what the field can hold.
    #[error(
        "`{field}` of `{file}` is `{value}`, more than any machine has; hint: check `{file}` on the node, kk reads it as printed"
    )]
    OutOfRange {
        /// The file on the node, e.g. `/proc/meminfo`.
        file: &'static str,
        /// The field, e.g. `MemTotal`.
        field: &'static str,
        /// The value as printed.
        value: String,
    },
}

// ---------------------------------------------------------------------------------------------
// Inventory and config: the KubeKey-shaped files saying where and what to install
// (`crate::inventory`).
// ---------------------------------------------------------------------------------------------

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
    Yaml(#[from] bundle_spec::manifest::YamlError),
    /// A required field is absent.
    #[error("{at}: missing required field `{field}`")]
    MissingField {
        /// The mapping that lacks it.
        at: bundle_spec::manifest::SourceLocation,
        /// The field's name.
        field: &'static str,
    },
    /// `apiVersion` is not one kk reads.
    #[error(
        "{at}: unsupported apiVersion `{found}`; hint: use `kubekey.kubesphere.io/v1` or `install.kk.io/v1alpha1`"
    )]
    UnsupportedApiVersion {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The value as written.
        found: String,
    },
    /// `kind` is not the kind of file expected here.
    #[error(
        "{at}: kind `{found}` where `{expected}` was expected{}",
        kind_hint(found)
    )]
    WrongKind {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The value as written.
        found: String,
        /// `Inventory` or `Config`.
        expected: &'static str,
    },
    /// `spec.hosts` is empty.
    #[error("{at}: the inventory has no hosts; hint: add one under `spec.hosts`")]
    NoHosts {
        /// Where `hosts` is.
        at: bundle_spec::manifest::SourceLocation,
    },
    /// A host name cannot name a node's files.
    #[error(
        "{at}: invalid host name `{name}`; hint: use letters, digits, `-`, `_` and `.`, as node names need"
    )]
    InvalidHostName {
        /// Where the name is.
        at: bundle_spec::manifest::SourceLocation,
        /// The name as written.
        name: String,
    },
    /// An address does not parse.
    #[error("{at}: invalid {family} address `{value}` in `{field}`")]
    InvalidIp {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The field, e.g. `internal_ipv4`.
        field: &'static str,
        /// The value as written.
        value: String,
        /// `IPv4`, `IPv6` or `IP`.
        family: &'static str,
    },
    /// An address of the other family.
    #[error(
        "{at}: `{value}` in `{field}` is an {found} address; hint: write it in `{right_field}`"
    )]
    WrongIpFamily {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
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
        at: bundle_spec::manifest::SourceLocation,
        /// The field, e.g. `connector.port`.
        field: &'static str,
        /// The value as written.
        value: i64,
    },
    /// An addon's field is invalid.
    #[error("{at}: addon `{field}` `{value}`: {reason}; hint: see `spec.addons` in the README")]
    InvalidAddon {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The field.
        field: &'static str,
        /// The value as written.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A machine name that is neither an IP address nor a DNS name.
    #[error("{at}: invalid host `{value}` in `{field}`; hint: write an IP address or a DNS name")]
    InvalidHost {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The field.
        field: &'static str,
        /// The value as written.
        value: String,
    },
    /// Two hosts have the same internal address.
    #[error(
        "{at}: host `{host}` has {} `{address}`, which host `{first_host}` already has at {first}; hint: each node needs its own address",
        if address.is_ipv4() { "internal_ipv4" } else { "internal_ipv6" }
    )]
    DuplicateAddress {
        /// Where the repetition is.
        at: bundle_spec::manifest::SourceLocation,
        /// The address.
        address: std::net::IpAddr,
        /// The host repeating it.
        host: String,
        /// The host that has it first.
        first_host: String,
        /// Where that one is.
        first: bundle_spec::manifest::SourceLocation,
    },
    /// A group lists a host `spec.hosts` does not define.
    #[error(
        "{at}: group `{group}` lists host `{host}`, which `spec.hosts` does not define{}",
        did_you_mean(suggestion.as_deref())
    )]
    UnknownHost {
        /// Where the entry is.
        at: bundle_spec::manifest::SourceLocation,
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
        did_you_mean(suggestion.as_deref())
    )]
    UnknownGroup {
        /// Where the entry is.
        at: bundle_spec::manifest::SourceLocation,
        /// The nesting group.
        group: String,
        /// The group name as written.
        member: String,
        /// The defined group closest to it, if one is close.
        suggestion: Option<String>,
    },
    /// Nested groups form a cycle.
    #[error("{at}: groups nest each other in a cycle: {cycle}; hint: remove one of these nestings")]
    GroupCycle {
        /// Where the nesting closing the cycle is.
        at: bundle_spec::manifest::SourceLocation,
        /// The groups on the cycle, `` `a` → `b` → `a` ``.
        cycle: String,
    },
    /// A host no group lists.
    #[error(
        "{at}: host `{host}` is in no group, so nothing would be installed on it; hint: list it in a group such as `kube_worker`, or remove it"
    )]
    HostInNoGroup {
        /// Where the host is.
        at: bundle_spec::manifest::SourceLocation,
        /// The host.
        host: String,
    },
    /// A control-plane node or worker outside `k8s_cluster`.
    #[error(
        "{at}: host `{host}` is in `{group}` but not in `k8s_cluster`, so it would get no kubelet; hint: add `{group}` to the `groups` of `k8s_cluster`"
    )]
    NotInCluster {
        /// Where `k8s_cluster` is.
        at: bundle_spec::manifest::SourceLocation,
        /// The host.
        host: String,
        /// `kube_control_plane` or `kube_worker`.
        group: &'static str,
    },
    /// `kubernetes.kube_version` is not `vMAJOR.MINOR.PATCH`.
    #[error(
        "{at}: invalid kube_version `{version}`; hint: write `vMAJOR.MINOR.PATCH`, e.g. `v1.31.4`"
    )]
    InvalidKubeVersion {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The value as written.
        version: String,
    },
    /// A pod or service range does not parse.
    #[error("{at}: invalid `{field}` `{value}`")]
    InvalidCidr {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
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
        at: bundle_spec::manifest::SourceLocation,
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
        at: bundle_spec::manifest::SourceLocation,
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
        at: bundle_spec::manifest::SourceLocation,
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
        at: bundle_spec::manifest::SourceLocation,
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
        "{at}: invalid min_kernel_version `{version}`; hint: write `MAJOR.MINOR[.PATCH]`, e.g. `4.19`"
    )]
    InvalidKernelVersion {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The value as written.
        version: String,
    },
    /// `image_registry.address` is not `host[:port]`.
    #[error(
        "{at}: invalid registry address `{address}`; hint: write `host[:port]` in lowercase, e.g. `harbor.example.com:443`"
    )]
    InvalidRegistryAddress {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The value as written.
        address: String,
    },
    /// Only one of `username` and `password_env` is set.
    #[error(
        "{at}: `image_registry` sets only one of `username` and `password_env`; hint: set both, or neither"
    )]
    IncompleteCredentials {
        /// Where `image_registry` is.
        at: bundle_spec::manifest::SourceLocation,
    },
    /// `password_env` is not an environment variable name.
    #[error(
        "{at}: invalid environment variable name `{name}`; hint: use letters, digits and `_`, not starting with a digit"
    )]
    InvalidEnvName {
        /// Where the value is.
        at: bundle_spec::manifest::SourceLocation,
        /// The value as written.
        name: String,
    },
    /// A setting of an external registry without `type: external`.
    #[error(
        "{at}: `image_registry.{field}` is only read with `type: external`; hint: add `type: external`, or remove `{field}` to use kk's own registry"
    )]
    RegistryFieldNeedsExternal {
        /// Where the field is.
        at: bundle_spec::manifest::SourceLocation,
        /// The field.
        field: &'static str,
    },
}

/// What is wrong with an address range (`cni.pod_cidr`, `cni.service_cidr`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidrError {
    /// Nothing is written.
    #[error("empty value; hint: write `address/length`, e.g. `10.233.64.0/18`")]
    Empty,
    /// A range without `/`.
    #[error("`{value}` has no prefix length; hint: write `address/length`, e.g. `10.233.64.0/18`")]
    NoPrefix {
        /// The range as written.
        value: String,
    },
    /// The part before `/` is not an address.
    #[error("`{value}` is not an IP address")]
    Address {
        /// The address as written.
        value: String,
    },
    /// The part after `/` is not a prefix length of the address's family.
    #[error("prefix length `{prefix}` is not a number from 0 to {max}")]
    Prefix {
        /// The prefix as written.
        prefix: String,
        /// 32 or 128.
        max: u8,
    },
    /// The address has bits set beyond the prefix.
    #[error("host bits are set; did you mean `{network}`?")]
    HostBits {
        /// The network the prefix gives.
        network: crate::inventory::Cidr,
    },
    /// More than a dual-stack pair.
    #[error(
        "more than two ranges; hint: a dual-stack value is one IPv4 and one IPv6 range, written `v4,v6` or `v4/v6`"
    )]
    TooManyRanges,
    /// A pair of the same family.
    #[error("both ranges are {family}; hint: a dual-stack value is one IPv4 and one IPv6 range")]
    SameFamily {
        /// `IPv4` or `IPv6`.
        family: &'static str,
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

// ---------------------------------------------------------------------------------------------
// Hooks: the operator's pre_install/post_install scripts (`crate::hooks`).
// ---------------------------------------------------------------------------------------------

/// A hook script could not be run, or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The script exited with an error: the install stops here.
    #[error("hook `{script}` failed on node `{node}` (exit {}); the install stops here:\n{output}", code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string()))]
    Failed {
        /// The inventory name.
        node: String,
        /// The script's path on the node.
        script: String,
        /// Its exit code; `None` for a signal.
        code: Option<u32>,
        /// What it printed.
        output: String,
    },
    /// The node could not be reached or the script not copied.
    #[error(transparent)]
    Ssh(#[from] SshError),
}

// ---------------------------------------------------------------------------------------------
// Fetch: a node takes a binary from kk's registry (`crate::fetch`).
// ---------------------------------------------------------------------------------------------

/// A node could not fetch or install a binary from the registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// A local file could not be read or written.
    #[error("cannot write or read `{}`", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The CA file holds no usable certificate.
    #[error("`{}` is not a PEM CA certificate; hint: pass the installation's `ca.crt`", path.display())]
    Ca {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The reference is not `repository:tag`.
    #[error("`{0}` is not a reference `repository:tag`")]
    Reference(String),
    /// The registry could not be reached.
    #[error(
        "cannot reach `{url}`; hint: check that kk-registry.service runs and that the node resolves and trusts the registry"
    )]
    Http {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// The registry answered with an error status.
    #[error("`{url}` answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// A manifest is not what a binary artifact is.
    #[error("the manifest of `{reference}` cannot be used: {reason}")]
    Manifest {
        /// The reference.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The index has no entry for this node's platform.
    #[error(
        "`{reference}` has no `{platform}` entry; hint: build the bundle with `--platform {platform}`"
    )]
    NoPlatform {
        /// The reference.
        reference: String,
        /// The node's platform.
        platform: String,
    },
    /// The registry served a manifest the bundle does not list.
    #[error(
        "the registry served `{reference}` as `{digest}`, which the bundle does not list; the node refuses it"
    )]
    UnexpectedManifest {
        /// The reference.
        reference: String,
        /// The digest served.
        digest: String,
    },
    /// The blob's size or digest is wrong.
    #[error("blob `{digest}` is not what the manifest says: {reason}")]
    Blob {
        /// The blob's digest.
        digest: String,
        /// What was received.
        reason: String,
    },
    /// The release archive cannot be read.
    #[error("cannot read the archive `{name}`")]
    Archive {
        /// The archive's file name.
        name: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Programs asked for are not in the archive.
    #[error("the archive `{name}` holds no `{missing}`")]
    NotInArchive {
        /// The archive's file name.
        name: String,
        /// The programs missing.
        missing: String,
    },
}

impl FetchError {
    /// A closure turning an I/O error on `path` into [`FetchError::Io`].
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_owned();
        move |source| Self::Io { path, source }
    }
}

// ---------------------------------------------------------------------------------------------
// PKI: the cluster's certificates in the installer's work dir (`crate::pki`).
// ---------------------------------------------------------------------------------------------

/// The cluster's certificates cannot be made, or those already there cannot be kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// No control plane to name in the apiserver certificate.
    #[error(
        "the cluster has no control plane, so there is no apiserver certificate to make; hint: put at least one host in `kube_control_plane`"
    )]
    NoControlPlane,
    /// The registry has neither a DNS name nor an address.
    #[error(
        "the registry has no DNS name or IP address for its certificate; hint: give the names the nodes reach it by"
    )]
    NoRegistryName,
    /// An etcd member name that is not a DNS name (it names a directory and a SAN).
    #[error(
        "etcd member name `{name}` is not a DNS name, so it cannot name its certificates' directory; hint: use letters, digits, `-` and `.`"
    )]
    MemberName {
        /// The name as given.
        name: String,
    },
    /// Two etcd members with the same name.
    #[error("etcd member `{name}` is listed twice; hint: each member needs its own name")]
    DuplicateMember {
        /// The name.
        name: String,
    },
    /// A SAN that is neither an IP address nor a DNS name.
    #[error(
        "`{value}` cannot go in the {certificate} certificate: it is neither an IP address nor a DNS name"
    )]
    BadSan {
        /// Which certificate (`apiserver`, `registry`).
        certificate: &'static str,
        /// The value as given.
        value: String,
    },
    /// A file could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file or directory could not be written.
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// One file of a pair without the other.
    #[error("`{}` exists but `{}` does not; kk will not replace half a pair; hint: restore `{}`, or delete `{}` to have both made anew (for a CA, everything it signed must then be remade too)", present.display(), missing.display(), missing.display(), present.display())]
    HalfPair {
        /// The file there.
        present: PathBuf,
        /// The file missing.
        missing: PathBuf,
    },
    /// A certificate file that is not a PEM X.509 certificate.
    #[error("`{}` is not a PEM certificate: {reason}", path.display())]
    CertParse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A key file kk cannot read.
    #[error("`{}` is not a PEM private key kk can use (RSA or ECDSA)", path.display())]
    KeyParse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
    /// `sa.pub` is not a PEM public key.
    #[error("`{}` is not a PEM public key: {reason}", path.display())]
    PublicKeyParse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A CA file that is not a CA certificate.
    #[error("`{}` is not a CA certificate (it has no `CA:TRUE` basic constraint)", path.display())]
    NotCa {
        /// The file.
        path: PathBuf,
    },
    /// A key that does not belong to the certificate beside it.
    #[error("`{}` is not the key of `{}`; hint: restore the right key, or delete both files to have them made anew", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate (or `sa.pub`).
        cert: PathBuf,
        /// The key.
        key: PathBuf,
    },
    /// A leaf certificate its CA did not sign.
    #[error("`{}` is not signed by `{}`; hint: delete `{}` and its key to have them made anew by this CA", cert.display(), ca.display(), cert.display())]
    NotSignedBy {
        /// The leaf certificate.
        cert: PathBuf,
        /// The CA certificate.
        ca: PathBuf,
    },
    /// A leaf certificate whose CA is gone.
    #[error("`{}` exists but its CA `{}` does not; hint: restore the CA, or delete `{}` and its key to have them made anew", leaf.display(), ca.display(), leaf.display())]
    CaMissing {
        /// The leaf certificate.
        leaf: PathBuf,
        /// The CA certificate looked for.
        ca: PathBuf,
    },
    /// A leaf certificate that lacks names the cluster now needs.
    #[error("`{}` does not name {missing}, which the cluster now needs; kk does not reissue certificates by itself; hint: delete `{}` and its key to have them made anew, then copy them to the nodes again", path.display(), path.display())]
    SansMissing {
        /// The certificate.
        path: PathBuf,
        /// The missing names, in backticks, comma-separated.
        missing: String,
    },
    /// A key or certificate could not be made.
    #[error("cannot make `{}`", path.display())]
    Sign {
        /// The file it was for.
        path: PathBuf,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
}

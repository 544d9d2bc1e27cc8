//! The public shape of a `kind: Inventory` document: hosts, groups and roles.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use bundle_spec::diagnostics::SourceLocation;
use serde_json::Value;

use super::Warning;

/// The machines to install on and what each is for: a KubeKey-shaped `kind: Inventory`,
/// validated (every host in a group, every group reference resolved, no cycle, no address
/// used twice).
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    pub(super) source_name: String,
    pub(super) name: Option<String>,
    pub(super) hosts: Vec<Host>,
    pub(super) groups: Vec<Group>,
    pub(super) vars: BTreeMap<String, Value>,
    pub(super) warnings: Vec<Warning>,
}

impl Inventory {
    /// The name given for the source (a path or file name), for display.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// `metadata.name`, if given.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Every host, in file order.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|host| host.name == name)
    }

    /// Every group, in file order; `k8s_cluster` last if the file does not define it.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|group| group.name == name)
    }

    /// The hosts of group `name`, nested groups resolved: its own `hosts` in order, then each
    /// nested group's members in order, each host once. Empty for a group not defined.
    pub fn group_members(&self, name: &str) -> Vec<&Host> {
        self.group(name).map_or_else(Vec::new, |group| {
            group
                .members
                .iter()
                .map(|&index| &self.hosts[index])
                .collect()
        })
    }

    /// The hosts with `role`, in [`Inventory::group_members`] order.
    pub fn role_members(&self, role: Role) -> Vec<&Host> {
        self.group_members(role.group())
    }

    /// `spec.vars`: variables for every host, as written.
    pub fn vars(&self) -> &BTreeMap<String, Value> {
        &self.vars
    }

    /// Keys that look like misspellings of keys kk reads (kept, but probably not meant).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }
}

/// One machine of the inventory (`spec.hosts.<name>`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Host {
    /// The inventory name: a lowercase DNS name, used as the node name and in hook script
    /// names (`pre_install_<name>.sh`).
    pub name: String,
    /// How kk runs commands on it.
    pub connector: Connector,
    /// `internal_ipv4`: the address the cluster uses for it.
    pub internal_ipv4: Option<Ipv4Addr>,
    /// `internal_ipv6`.
    pub internal_ipv6: Option<Ipv6Addr>,
    /// What it is for, from the well-known groups it is in (nested groups resolved).
    pub roles: Roles,
    /// Every other key of the host, as written (connector keys kk does not read are kept as
    /// `connector.<key>`).
    pub vars: BTreeMap<String, Value>,
    /// Where the host's name is in the file.
    pub location: SourceLocation,
}

/// How kk reaches a host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Connector {
    /// Commands run on this machine: `connector.type: local`, or a host named `localhost`
    /// without a connector type.
    Local,
    /// Commands run over SSH (the default).
    Ssh(SshConnector),
}

/// `connector` of an SSH host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SshConnector {
    /// `host`; default the host's `internal_ipv4`, else its `internal_ipv6`, else its name.
    pub host: String,
    /// `port`; default 22.
    pub port: u16,
    /// `user`; default `root`.
    pub user: String,
    /// `password`, if given (KubeKey files carry it in clear; kk never prints it).
    pub password: Option<Password>,
    /// `private_key`: the path of the key file, as written.
    pub private_key: Option<PathBuf>,
}

/// A password, never shown: `Debug` prints `<redacted>`, and there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(pub(super) String);

impl Password {
    /// Wraps a password read from elsewhere (an environment variable, a prompt).
    pub fn new(password: impl Into<String>) -> Self {
        Self(password.into())
    }

    /// The password itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// One group of the inventory (`spec.groups.<name>`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Group {
    /// The group's name.
    pub name: String,
    /// `hosts`: the hosts listed directly.
    pub hosts: Vec<String>,
    /// `groups`: the groups nested directly.
    pub groups: Vec<String>,
    /// `vars`, as written.
    pub vars: BTreeMap<String, Value>,
    /// Where the group's name is in the file (for an implied `k8s_cluster`, `spec.groups`).
    pub location: SourceLocation,
    /// Indexes into the inventory's hosts, resolved and ordered.
    pub(super) members: Vec<usize>,
}

/// What a host is for: one per well-known group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// `kube_control_plane`.
    ControlPlane,
    /// `kube_worker`.
    Worker,
    /// `etcd`.
    Etcd,
    /// `image_registry`.
    ImageRegistry,
    /// `nfs`.
    Nfs,
}

impl Role {
    /// Every role, in the order above.
    pub const ALL: [Self; 5] = [
        Self::ControlPlane,
        Self::Worker,
        Self::Etcd,
        Self::ImageRegistry,
        Self::Nfs,
    ];

    /// The group that gives the role.
    pub fn group(self) -> &'static str {
        match self {
            Self::ControlPlane => "kube_control_plane",
            Self::Worker => "kube_worker",
            Self::Etcd => "etcd",
            Self::ImageRegistry => "image_registry",
            Self::Nfs => "nfs",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.group())
    }
}

/// The group of every Kubernetes node, control plane and workers, which gets a container
/// runtime and a kubelet. Implied as `kube_control_plane` + `kube_worker` when not defined.
pub const K8S_CLUSTER: &str = "k8s_cluster";

/// The set of [`Role`]s of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Roles(u8);

impl Roles {
    /// Whether the set has `role`.
    pub fn contains(self, role: Role) -> bool {
        self.0 & Self::bit(role) != 0
    }

    /// The roles, in [`Role::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Role> {
        Role::ALL
            .into_iter()
            .filter(move |role| self.contains(*role))
    }

    /// In `kube_control_plane`.
    pub fn is_control_plane(self) -> bool {
        self.contains(Role::ControlPlane)
    }

    /// In `kube_worker`.
    pub fn is_worker(self) -> bool {
        self.contains(Role::Worker)
    }

    /// In `etcd`.
    pub fn is_etcd(self) -> bool {
        self.contains(Role::Etcd)
    }

    /// In `image_registry`.
    pub fn is_image_registry(self) -> bool {
        self.contains(Role::ImageRegistry)
    }

    /// In `nfs`.
    pub fn is_nfs(self) -> bool {
        self.contains(Role::Nfs)
    }

    pub(super) fn insert(&mut self, role: Role) {
        self.0 |= Self::bit(role);
    }

    fn bit(role: Role) -> u8 {
        1 << role as u8
    }
}

//! The registry every node pulls from, decided with the plan: kk's own on an inventory host,
//! or the operator's (`image_registry.type: external`), which the install pushes the bundle
//! into, with its CA and the credentials nodes use.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use super::address_of;
use super::content::Content;
use crate::install::error::PlanError;
use crate::install::render::Mirror;
use crate::inventory::{Config, ExternalRegistry, ImageRegistry, Inventory, Role};

/// The registry every node pulls from: kk's own or the operator's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryPlan {
    /// `host:port` as every node reaches it (`host` alone for an external registry on 443).
    pub address: String,
    /// The host part of `address`.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether containerd may try an image's own registry when the registry does not answer
    /// (`image_registry.upstream_fallback`; never in an airgap).
    pub upstream_fallback: bool,
    /// The CA file on every node that the registry's certificate chains to (`hosts.toml`'s
    /// `ca`, `kk-install fetch --ca`): the cluster CA for kk's, the copy of `ca_file` for an
    /// external one, else the node's system bundle.
    pub ca: String,
    /// Who serves it.
    pub server: RegistryServer,
    /// Each inventory host's mirrors, `host:port` in the order its `hosts.toml` lists them,
    /// when several hosts serve kk's registry: every host's IP, rotated by the node's place in
    /// the inventory so the first choice spreads over the hosts (containerd tries the
    /// `[host]` tables in file order and falls back to the next). Empty when one address
    /// serves every node ([`RegistryPlan::address`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub mirrors: BTreeMap<String, Vec<String>>,
}

/// Who serves the registry the nodes pull from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RegistryServer {
    /// kk's registry, `kk-registry.service` on every host of `image_registry` (else on the
    /// first control plane), each serving the same store unpacked from the bundle.
    Kk {
        /// The hosts, in inventory order; `/etc/hosts` maps the registry's name to the first.
        hosts: Vec<RegistryHost>,
    },
    /// The operator's registry, which the install pushes the bundle into.
    External(ExternalPlan),
}

/// A host serving kk's registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryHost {
    /// Its inventory name.
    pub node: String,
    /// Its address, on which the registry listens.
    pub ip: IpAddr,
}

/// An external registry as the install uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExternalPlan {
    /// Whether it is a Harbor: its projects are created before the push.
    pub harbor: bool,
    /// The CA file on the installer machine (`image_registry.ca_file`), copied to
    /// [`RegistryPlan::ca`] on every node.
    pub ca_file: Option<std::path::PathBuf>,
    /// The Harbor projects the push needs: the first path component of every repository of the
    /// bundle (`docker.io`, `registry.k8s.io`, `kk.internal`).
    pub projects: Vec<String>,
    /// The bundle's image platforms, in its order: where the registry refuses an index the
    /// bundle has only some platforms of, its tags name the first of these it has.
    pub platforms: Vec<String>,
}

/// Credentials for a registry, as the plan keeps them: the password is named, never held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistryAuth {
    /// The registry host as containerd keys its `registry.configs` by (`host[:port]`).
    pub host: String,
    /// The user name.
    pub username: String,
    /// The installer machine's environment variable holding the password.
    pub password_env: String,
}

/// Where every node keeps the CA of an external registry.
pub const EXTERNAL_REGISTRY_CA: &str = "/etc/kk/pki/external-registry-ca.crt";

/// The system's CA bundle on Debian and Ubuntu nodes, trusted for an external registry
/// without `ca_file`.
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

impl RegistryPlan {
    /// The registry as every image host's mirror in `node`'s `hosts.toml` (containerd's and
    /// dockerd's): its mirrors in the node's order.
    pub fn mirror(&self, node: &str) -> Mirror<'_> {
        Mirror {
            address: &self.address,
            hosts: self.mirrors_for(node),
            ca: &self.ca,
            upstream_fallback: self.upstream_fallback,
            external: self.external().is_some(),
        }
    }

    /// The registry addresses `node` tries, in order: its [`RegistryPlan::mirrors`], else the
    /// one [`RegistryPlan::address`].
    pub fn mirrors_for(&self, node: &str) -> &[String] {
        self.mirrors
            .get(node)
            .map_or(std::slice::from_ref(&self.address), Vec::as_slice)
    }

    /// The hosts serving kk's registry; none with an external registry.
    pub fn hosts(&self) -> &[RegistryHost] {
        match &self.server {
            RegistryServer::Kk { hosts } => hosts,
            RegistryServer::External(_) => &[],
        }
    }

    /// The inventory names of [`RegistryPlan::hosts`].
    pub fn nodes(&self) -> Vec<String> {
        self.hosts().iter().map(|host| host.node.clone()).collect()
    }

    /// The external registry, if that is what the nodes pull from.
    pub fn external(&self) -> Option<&ExternalPlan> {
        match &self.server {
            RegistryServer::External(external) => Some(external),
            RegistryServer::Kk { .. } => None,
        }
    }
}

/// The registry: the external one, or kk's on every host of `image_registry`, else on the
/// first control plane.
pub(super) fn registry_plan(
    inventory: &Inventory,
    config: &Config,
    content: &Content,
) -> Result<RegistryPlan, PlanError> {
    if let ImageRegistry::External(external) = &config.image_registry {
        return Ok(external_plan(external, config, content));
    }
    let mut members = inventory.role_members(Role::ImageRegistry);
    if members.is_empty() {
        members.extend(
            inventory
                .role_members(Role::ControlPlane)
                .into_iter()
                .take(1),
        );
    }
    if members.is_empty() {
        return Err(PlanError::NoRegistryHost);
    }
    let hosts = members
        .iter()
        .map(|host| {
            Ok(RegistryHost {
                node: host.name.clone(),
                ip: address_of(host)?,
            })
        })
        .collect::<Result<Vec<_>, PlanError>>()?;
    let address = &config.registry_address;
    Ok(RegistryPlan {
        address: address.to_string(),
        host: address.host.clone(),
        port: address.port,
        upstream_fallback: config.upstream_fallback,
        ca: crate::install::render::paths::TRUST_CA.to_owned(),
        mirrors: rotated_mirrors(inventory, &hosts, address.port),
        server: RegistryServer::Kk { hosts },
    })
}

/// Every inventory host's mirror list when several hosts serve the registry: each host's
/// `ip:port`, starting at the one whose place matches the node's place in the inventory.
fn rotated_mirrors(
    inventory: &Inventory,
    hosts: &[RegistryHost],
    port: u16,
) -> BTreeMap<String, Vec<String>> {
    if hosts.len() < 2 {
        return BTreeMap::new();
    }
    let addresses: Vec<String> = hosts
        .iter()
        .map(|host| std::net::SocketAddr::new(host.ip, port).to_string())
        .collect();
    inventory
        .hosts()
        .iter()
        .enumerate()
        .map(|(index, node)| {
            let mut order = addresses.clone();
            order.rotate_left(index % addresses.len());
            (node.name.clone(), order)
        })
        .collect()
}

/// The operator's registry: nodes pull from it by the address as written, trusting its CA
/// (copied to every node) or their own CAs.
fn external_plan(external: &ExternalRegistry, config: &Config, content: &Content) -> RegistryPlan {
    let (host, port) = split_host_port(&external.address);
    RegistryPlan {
        address: external.address.clone(),
        host,
        port,
        upstream_fallback: config.upstream_fallback,
        ca: if external.ca_file.is_some() {
            EXTERNAL_REGISTRY_CA
        } else {
            SYSTEM_CA_BUNDLE
        }
        .to_owned(),
        mirrors: BTreeMap::new(),
        server: RegistryServer::External(ExternalPlan {
            harbor: external.harbor,
            ca_file: external.ca_file.clone(),
            projects: content.projects(),
            platforms: content.platforms.clone(),
        }),
    }
}

/// The credentials of an external registry that needs them: the user name and the variable
/// holding the password (kk's registry needs none).
pub(super) fn registry_auth(config: &Config) -> Vec<RegistryAuth> {
    match &config.image_registry {
        ImageRegistry::External(ExternalRegistry {
            address,
            username: Some(username),
            password_env: Some(password_env),
            ..
        }) => vec![RegistryAuth {
            host: address.clone(),
            username: username.clone(),
            password_env: password_env.clone(),
        }],
        _ => Vec::new(),
    }
}

/// The host (IPv6 without brackets) and port of an address the config checked as
/// `host[:port]`; an HTTPS registry without a port is on 443.
pub(super) fn split_host_port(address: &str) -> (String, u16) {
    let after_bracket = address.find(']').unwrap_or(0);
    match address[after_bracket..].rfind(':') {
        Some(offset) => {
            let colon = after_bracket + offset;
            let host = address[..colon]
                .trim_start_matches('[')
                .trim_end_matches(']');
            let port = address[colon + 1..].parse().unwrap_or(HTTPS_PORT);
            (host.to_owned(), port)
        }
        None => (
            address
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            HTTPS_PORT,
        ),
    }
}

/// The port of an HTTPS registry whose address names none.
const HTTPS_PORT: u16 = 443;

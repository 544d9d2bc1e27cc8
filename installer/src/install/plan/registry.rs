//! The registry every node pulls from, decided with the plan: kk's own on an inventory host,
//! or the operator's (`image_registry.type: external`), which the install pushes the bundle
//! into, with its CA and the credentials nodes use.

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
}

/// Who serves the registry the nodes pull from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RegistryServer {
    /// kk's registry, `kk-registry.service` on an inventory host.
    Kk {
        /// The inventory name of the host that serves it.
        node: String,
        /// That host's address, which `/etc/hosts` maps the registry's name to.
        ip: IpAddr,
    },
    /// The operator's registry, which the install pushes the bundle into.
    External(ExternalPlan),
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
    /// The registry as every image host's mirror in `hosts.toml` (containerd's and dockerd's).
    pub fn mirror(&self) -> Mirror<'_> {
        Mirror {
            address: &self.address,
            ca: &self.ca,
            upstream_fallback: self.upstream_fallback,
            external: self.external().is_some(),
        }
    }

    /// The inventory host serving kk's registry; `None` with an external registry.
    pub fn node(&self) -> Option<&str> {
        match &self.server {
            RegistryServer::Kk { node, .. } => Some(node),
            RegistryServer::External(_) => None,
        }
    }

    /// The external registry, if that is what the nodes pull from.
    pub fn external(&self) -> Option<&ExternalPlan> {
        match &self.server {
            RegistryServer::External(external) => Some(external),
            RegistryServer::Kk { .. } => None,
        }
    }
}

/// The registry: the external one, or kk's on the first host of `image_registry`, else on the
/// first control plane.
pub(super) fn registry_plan(
    inventory: &Inventory,
    config: &Config,
    content: &Content,
) -> Result<RegistryPlan, PlanError> {
    if let ImageRegistry::External(external) = &config.image_registry {
        return Ok(external_plan(external, config, content));
    }
    let host = inventory
        .role_members(Role::ImageRegistry)
        .into_iter()
        .next()
        .or_else(|| {
            inventory
                .role_members(Role::ControlPlane)
                .into_iter()
                .next()
        })
        .ok_or(PlanError::NoRegistryHost)?;
    let address = &config.registry_address;
    Ok(RegistryPlan {
        address: address.to_string(),
        host: address.host.clone(),
        port: address.port,
        upstream_fallback: config.upstream_fallback,
        ca: crate::install::render::paths::TRUST_CA.to_owned(),
        server: RegistryServer::Kk {
            node: host.name.clone(),
            ip: address_of(host)?,
        },
    })
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

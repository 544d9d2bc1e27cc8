//! `spec.hosts`: names, addresses and connectors.

use std::collections::{BTreeMap, HashMap};
use std::net::{AddrParseError, IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use bundle_spec::diagnostics::SourceLocation;
use bundle_spec::manifest::SpannedMap;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::InventoryError;
use super::document::{Context, is_host, port};
use super::inventory::{Connector, Host, Password, Roles, SshConnector};
use super::raw::{ConnectorType, RawConnector, RawHost};

/// The name KubeKey runs on the local machine when no connector type is given.
const LOCALHOST: &str = "localhost";

/// `spec.hosts`, in file order, with no address used twice.
pub(super) fn validate(
    cx: &mut Context,
    raw: Spanned<SpannedMap<Spanned<Option<RawHost>>>>,
) -> Result<Vec<Host>, InventoryError> {
    if raw.value.0.is_empty() {
        return Err(InventoryError::NoHosts { at: cx.at(&raw) });
    }
    let mut seen = SeenAddresses::default();
    raw.value
        .0
        .into_iter()
        .map(|(name, host)| self::host(cx, &mut seen, name, host.value.unwrap_or_default()))
        .collect()
}

fn host(
    cx: &mut Context,
    seen: &mut SeenAddresses,
    name: Spanned<String>,
    raw: RawHost,
) -> Result<Host, InventoryError> {
    let location = cx.at(&name);
    if !is_safe_name(&name.value) {
        return Err(InventoryError::InvalidHostName {
            at: location,
            name: name.value,
        });
    }
    let ipv4 = internal_ipv4(cx, raw.internal_ipv4.as_ref())?;
    let ipv6 = internal_ipv6(cx, raw.internal_ipv6.as_ref())?;
    let internal_ipv4 = ipv4.as_ref().map(|(ip, _)| *ip);
    let internal_ipv6 = ipv6.as_ref().map(|(ip, _)| *ip);
    for (address, at) in [
        ipv4.map(|(ip, at)| (IpAddr::V4(ip), at)),
        ipv6.map(|(ip, at)| (IpAddr::V6(ip), at)),
    ]
    .into_iter()
    .flatten()
    {
        seen.insert(address, &name.value, at)?;
    }
    let mut vars = BTreeMap::new();
    let default_target = internal_ipv4
        .map(|ip| ip.to_string())
        .or_else(|| internal_ipv6.map(|ip| ip.to_string()))
        .unwrap_or_else(|| name.value.clone());
    let connector = connector(cx, &name.value, raw.connector, default_target, &mut vars)?;
    cx.keep(raw.extra, RawHost::FIELDS, "", &mut vars);
    Ok(Host {
        name: name.value,
        connector,
        internal_ipv4,
        internal_ipv6,
        roles: Roles::default(),
        vars,
        location,
    })
}

/// Each address with the host and location that has it first.
#[derive(Default)]
struct SeenAddresses(HashMap<IpAddr, (String, SourceLocation)>);

impl SeenAddresses {
    fn insert(
        &mut self,
        address: IpAddr,
        host: &str,
        at: SourceLocation,
    ) -> Result<(), InventoryError> {
        if let Some((first_host, first)) = self.0.get(&address) {
            return Err(InventoryError::DuplicateAddress {
                at,
                address,
                host: host.to_owned(),
                first_host: first_host.clone(),
                first: first.clone(),
            });
        }
        self.0.insert(address, (host.to_owned(), at));
        Ok(())
    }
}

/// A non-empty address field, parsed: KubeKey files often leave `internal_ipv6: ""`.
/// Gives the text as written (trimmed) beside the parse result, for the error naming it.
fn address<'a>(
    cx: &Context,
    raw: Option<&'a Spanned<String>>,
) -> Option<(&'a str, Result<IpAddr, AddrParseError>, SourceLocation)> {
    let raw = raw.filter(|raw| !raw.value.trim().is_empty())?;
    let text = raw.value.trim();
    Some((text, text.parse(), cx.at(raw)))
}

fn internal_ipv4(
    cx: &Context,
    raw: Option<&Spanned<String>>,
) -> Result<Option<(Ipv4Addr, SourceLocation)>, InventoryError> {
    let Some((text, parsed, at)) = address(cx, raw) else {
        return Ok(None);
    };
    match parsed {
        Ok(IpAddr::V4(ip)) => Ok(Some((ip, at))),
        Ok(IpAddr::V6(ip)) => Err(wrong_family(at, "internal_ipv4", ip.to_string(), "IPv6")),
        Err(_) => Err(invalid_ip(at, "internal_ipv4", text.to_owned(), "IPv4")),
    }
}

fn internal_ipv6(
    cx: &Context,
    raw: Option<&Spanned<String>>,
) -> Result<Option<(Ipv6Addr, SourceLocation)>, InventoryError> {
    let Some((text, parsed, at)) = address(cx, raw) else {
        return Ok(None);
    };
    match parsed {
        Ok(IpAddr::V6(ip)) => Ok(Some((ip, at))),
        Ok(IpAddr::V4(ip)) => Err(wrong_family(at, "internal_ipv6", ip.to_string(), "IPv4")),
        Err(_) => Err(invalid_ip(at, "internal_ipv6", text.to_owned(), "IPv6")),
    }
}

fn invalid_ip(
    at: SourceLocation,
    field: &'static str,
    value: String,
    family: &'static str,
) -> InventoryError {
    InventoryError::InvalidIp {
        at,
        field,
        value,
        family,
    }
}

fn wrong_family(
    at: SourceLocation,
    field: &'static str,
    value: String,
    found: &'static str,
) -> InventoryError {
    let right_field = if found == "IPv4" {
        "internal_ipv4"
    } else {
        "internal_ipv6"
    };
    InventoryError::WrongIpFamily {
        at,
        field,
        value,
        found,
        right_field,
    }
}

/// The connector: local for `type: local` or an untyped `localhost`, else SSH to `host`
/// (default `default_target`). Keys kk does not read go to `vars` as `connector.<key>`.
fn connector(
    cx: &mut Context,
    name: &str,
    raw: Option<Spanned<RawConnector>>,
    default_target: String,
    vars: &mut BTreeMap<String, Value>,
) -> Result<Connector, InventoryError> {
    let raw = raw.map(|raw| raw.value).unwrap_or_default();
    cx.keep(raw.extra, RawConnector::FIELDS, "connector.", vars);
    let local = match raw.kind.map(|kind| kind.value) {
        Some(ConnectorType::Local) => true,
        Some(ConnectorType::Ssh) => false,
        None => name == LOCALHOST,
    };
    if local {
        return Ok(Connector::Local);
    }
    let host = match raw.host {
        Some(host) => ssh_target(cx, host)?,
        None => default_target,
    };
    let port = raw
        .port
        .map_or(Ok(22), |value| port(cx, &value, "connector.port"))?;
    let nonempty = |text: Option<String>| text.filter(|text| !text.is_empty());
    Ok(Connector::Ssh(SshConnector {
        host,
        port,
        user: raw
            .user
            .map(|user| user.value)
            .filter(|user| !user.is_empty())
            .unwrap_or_else(|| "root".to_owned()),
        password: nonempty(raw.password).map(Password),
        private_key: nonempty(raw.private_key).map(PathBuf::from),
    }))
}

/// `connector.host`: an IP address or a DNS name (any case, as SSH resolves it).
fn ssh_target(cx: &Context, raw: Spanned<String>) -> Result<String, InventoryError> {
    if is_host(&raw.value) {
        Ok(raw.value)
    } else {
        Err(InventoryError::InvalidHost {
            at: cx.at(&raw),
            field: "connector.host",
            value: raw.value,
        })
    }
}

/// Whether an inventory name can name a node's files: hook scripts
/// (`pre_install_<name>.sh`), logs and facts carry it. Whether it is a valid host name is the
/// precheck's `os.hostname` rule, so that a bad name is reported with every other problem of
/// its node rather than stopping the reading of the whole inventory.
fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// kubeadm's node name rule: an RFC 1123 subdomain (lowercase labels of letters, digits and `-`,
/// not starting or ending with `-`, at most 63 characters each and 253 in all).
pub fn is_node_name(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

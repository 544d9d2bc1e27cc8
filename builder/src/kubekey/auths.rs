//! `spec.registry.auths`: how to reach each registry, without its password.

use serde_saphyr::Spanned;

use super::KubeKeyError;
use super::node::Node;
use super::read::Reader;

/// One `spec.registries` entry.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct RegistryPart {
    pub(super) host: String,
    pub(super) plain_http: bool,
    pub(super) insecure_skip_verify: bool,
    /// The username and the variable holding the password.
    pub(super) credentials: Option<(String, String)>,
}

pub(super) fn registry(
    reader: &mut Reader,
    node: Option<&Spanned<Node>>,
) -> Result<Vec<RegistryPart>, KubeKeyError> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    let fields = reader.fields(node, "spec.registry", &["auths"])?;
    let mut registries = Vec::new();
    for (host, settings) in reader.entries(fields.get("auths"), "spec.registry.auths")? {
        registries.push(auth(reader, host, settings)?);
    }
    Ok(registries)
}

fn auth(
    reader: &mut Reader,
    host: &Spanned<String>,
    node: &Spanned<Node>,
) -> Result<RegistryPart, KubeKeyError> {
    let path = format!("spec.registry.auths.\"{}\"", host.value);
    let fields = reader.fields(
        node,
        &path,
        &[
            "username",
            "password",
            "certsPath",
            "skipTLSVerify",
            "plainHTTP",
        ],
    )?;
    let flag = |reader: &Reader, name: &str| -> Result<bool, KubeKeyError> {
        Ok(reader.text(fields.get(name), &format!("{path}.{name}"))? == Some("true"))
    };
    let plain_http = flag(reader, "plainHTTP")?;
    let mut insecure_skip_verify = flag(reader, "skipTLSVerify")?;
    if plain_http && insecure_skip_verify {
        // kk refuses TLS settings on a plain-HTTP registry; plain HTTP says all there is.
        insecure_skip_verify = false;
    }
    if let Some(certs) = reader.text(fields.get("certsPath"), &format!("{path}.certsPath"))? {
        let at = fields.get("certsPath").unwrap_or(node);
        reader.warn(
            at,
            format!("`{path}.certsPath` `{certs}` is not carried: kk takes one PEM file of CA certificates; set `caFile` in `spec.registries.\"{}\"`", host.value),
        );
    }
    let username = reader.text(fields.get("username"), &format!("{path}.username"))?;
    let password = fields.get("password");
    let has_password = reader
        .text(password, &format!("{path}.password"))?
        .is_some();
    let credentials = match (username, password) {
        (Some(username), Some(password)) if has_password => {
            let variable = password_env(&host.value);
            reader.warn(
                password,
                format!("`{path}.password` is not copied (a bundle stores its manifest): kk reads it from `{variable}` at build time; set that variable"),
            );
            Some((username.to_owned(), variable))
        }
        (Some(username), _) => {
            reader.warn(
                fields.get("username").unwrap_or(node),
                format!("`{path}.username` `{username}` has no password; the registry is used without credentials"),
            );
            None
        }
        (None, Some(password)) if has_password => {
            reader.warn(
                password,
                format!(
                    "`{path}.password` has no username; the registry is used without credentials"
                ),
            );
            None
        }
        _ => None,
    };
    Ok(RegistryPart {
        host: host.value.clone(),
        plain_http,
        insecure_skip_verify,
        credentials,
    })
}

/// The environment variable that holds `host`'s password: `KK_REGISTRY_PASSWORD_` and the
/// host in capitals, every other character `_`.
fn password_env(host: &str) -> String {
    let suffix: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("KK_REGISTRY_PASSWORD_{suffix}")
}

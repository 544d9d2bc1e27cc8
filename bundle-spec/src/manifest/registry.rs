//! `spec.registries`: how the builder reaches each source registry.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::SpannedMap;
use super::raw::RawRegistry;
use super::url::is_host_port;

/// Settings for reaching one source registry, keyed in [`super::Spec::registries`] by the
/// `host[:port]` that image references name (`docker.io` for Docker Hub).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistryConfig {
    /// Fetch this registry's content from `host[:port]` instead. References (and so the
    /// bundle) keep the original registry name.
    pub mirror: Option<String>,
    /// Speak plain HTTP instead of HTTPS.
    pub plain_http: bool,
    /// Accept any TLS certificate.
    pub insecure_skip_verify: bool,
    /// Credentials for basic/token authentication.
    pub credentials: Option<Credentials>,
    /// A PEM file of CA certificates to trust in addition to the system's.
    pub ca_file: Option<PathBuf>,
}

/// A username and the environment variable holding the password.
///
/// Only the variable's name is in the manifest, because the manifest is stored verbatim in
/// every bundle built from it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The username.
    pub username: String,
    /// The environment variable to read the password from at build time.
    pub password_env: String,
}

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &SpannedMap<Spanned<RawRegistry>>,
) -> Result<BTreeMap<String, RegistryConfig>, ManifestError> {
    raw.0
        .iter()
        .map(|(host, settings)| {
            check_host(file, host)?;
            Ok((host.value.clone(), validate(file, &host.value, settings)?))
        })
        .collect()
}

fn validate(
    file: &Arc<str>,
    host: &str,
    raw: &Spanned<RawRegistry>,
) -> Result<RegistryConfig, ManifestError> {
    let at = || SourceLocation::of(file, raw);
    let settings = &raw.value;
    if let Some(mirror) = &settings.mirror {
        check_host(file, mirror)?;
    }
    if settings.plain_http && (settings.insecure_skip_verify || settings.ca_file.is_some()) {
        return Err(ManifestError::TlsWithPlainHttp {
            at: at(),
            registry: host.to_owned(),
        });
    }
    let credentials = match (&settings.username, &settings.password_env) {
        (Some(username), Some(password_env)) => Some(Credentials {
            username: username.clone(),
            password_env: env_name(file, password_env)?,
        }),
        (None, None) => None,
        _ => {
            return Err(ManifestError::IncompleteCredentials {
                at: at(),
                registry: host.to_owned(),
            });
        }
    };
    Ok(RegistryConfig {
        mirror: settings.mirror.as_ref().map(|mirror| mirror.value.clone()),
        plain_http: settings.plain_http,
        insecure_skip_verify: settings.insecure_skip_verify,
        credentials,
        ca_file: settings.ca_file.clone(),
    })
}

fn check_host(file: &Arc<str>, raw: &Spanned<String>) -> Result<(), ManifestError> {
    if is_host_port(&raw.value) {
        Ok(())
    } else {
        Err(ManifestError::InvalidRegistryHost {
            at: SourceLocation::of(file, raw),
            host: raw.value.clone(),
        })
    }
}

/// Whether `name` is a portable environment variable name: letters, digits and `_`, not
/// starting with a digit.
pub fn is_env_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|first| !first.is_ascii_digit())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

fn env_name(file: &Arc<str>, raw: &Spanned<String>) -> Result<String, ManifestError> {
    let name = &raw.value;
    if is_env_name(name) {
        Ok(name.clone())
    } else {
        Err(ManifestError::InvalidEnvName {
            at: SourceLocation::of(file, raw),
            name: name.clone(),
        })
    }
}

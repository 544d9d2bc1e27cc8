//! The error of copying a bundle store into an existing registry.

use std::path::PathBuf;

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
    /// A call to the registry's API (login, Harbor's projects) got no answer.
    #[error(
        "cannot {what} at registry `{registry}`; hint: check the address, the CA and that the registry runs"
    )]
    Api {
        /// The registry (`host[:port]`).
        registry: String,
        /// What was being done.
        what: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// The registry answered an API call with an unexpected status.
    #[error(
        "registry `{registry}` answered {status} to `{what}`; hint: check that `{registry}` is a registry (it should answer `/v2/`)"
    )]
    ApiStatus {
        /// The registry (`host[:port]`).
        registry: String,
        /// The call.
        what: String,
        /// The HTTP status.
        status: u16,
    },
    /// Harbor refused to look up or create a project.
    #[error(
        "Harbor `{registry}` refused to {verb} project `{project}` ({status}: {message}); hint: create the project `{project}` in Harbor by hand, or give a user who may create projects"
    )]
    HarborProject {
        /// The registry (`host[:port]`).
        registry: String,
        /// The project.
        project: String,
        /// `look up` or `create`.
        verb: &'static str,
        /// The HTTP status.
        status: u16,
        /// Harbor's message.
        message: String,
    },
    /// The environment variable that should hold the password is not set.
    #[error(
        "the password of user `{username}` for registry `{registry}` is read from `{variable}`, which is not set; hint: export `{variable}` in the installer's environment"
    )]
    PasswordUnset {
        /// The registry (`host[:port]`).
        registry: String,
        /// The user.
        username: String,
        /// The variable.
        variable: String,
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

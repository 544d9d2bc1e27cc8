//! How to reach a registry: mirror, protocol, TLS and credentials, one client per host.
//!
//! oci-client applies TLS settings to a whole client, so each registry host gets its own client
//! built from the manifest's `registries` entry for that host. A mirror replaces the host of a
//! reference (`docker.io/library/busybox` is fetched as `<mirror>/library/busybox`), the way
//! containerd's `hosts.toml` mirrors work, and the mirror's own entry decides how to talk to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use base64::Engine as _;
use bundle_spec::manifest::RegistryConfig;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::fetch::blocking;
use crate::resolve::ResolveError;

/// Clients and credentials for every registry a build talks to.
#[derive(Clone)]
pub struct RegistryAccess {
    settings: BTreeMap<String, RegistryConfig>,
    docker_auths: BTreeMap<String, (String, String)>,
    clients: Arc<Mutex<BTreeMap<String, HostClient>>>,
}

/// A host's client, set up by the first request that needs it while the others wait for it.
type HostClient = Arc<tokio::sync::OnceCell<Client>>;

impl std::fmt::Debug for RegistryAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials are never printed.
        f.debug_struct("RegistryAccess")
            .field("hosts", &self.settings.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl RegistryAccess {
    /// Access as the manifest's `registries` section describes, with credentials from the
    /// user's `~/.docker/config.json` where the manifest names none.
    pub fn new(settings: &BTreeMap<String, RegistryConfig>) -> Result<Self, ResolveError> {
        let docker_auths = docker_config_path()
            .map_or_else(|| Ok(BTreeMap::new()), |path| read_docker_auths(&path))?;
        Ok(Self {
            settings: settings.clone(),
            docker_auths,
            clients: Arc::default(),
        })
    }

    /// The reference to fetch `source` from: the mirror's, if its registry has one.
    pub fn fetch_reference(&self, source: &Reference) -> Reference {
        let Some(mirror) = self
            .settings
            .get(source.registry())
            .and_then(|s| s.mirror.clone())
        else {
            return source.clone();
        };
        match (source.tag(), source.digest()) {
            (Some(tag), Some(digest)) => Reference::with_tag_and_digest(
                mirror,
                source.repository().to_owned(),
                tag.to_owned(),
                digest.to_owned(),
            ),
            (None, Some(digest)) => {
                Reference::with_digest(mirror, source.repository().to_owned(), digest.to_owned())
            }
            (tag, None) => Reference::with_tag(
                mirror,
                source.repository().to_owned(),
                tag.unwrap_or("latest").to_owned(),
            ),
        }
    }

    /// Access to `host` over plain HTTP, anonymously: for tests against a local server.
    #[cfg(test)]
    pub(crate) fn plain_http(host: &str) -> Self {
        Self {
            settings: tests::settings(&format!(r#"{{"{host}": {{plainHTTP: true}}}}"#)),
            docker_auths: BTreeMap::new(),
            clients: Arc::default(),
        }
    }

    /// The client for the registry `reference` lives on. The first request for a host (or
    /// [`prepare`](Self::prepare), ahead of it) sets its client up off the async workers, since
    /// that reads the host's CA file and the system's roots; requests for the same host
    /// meanwhile wait for that one client instead of each building their own (a build resolving
    /// seven images of one registry built seven, each parsing every system root certificate
    /// twice, on the path to its first request).
    pub async fn client(&self, reference: &Reference) -> Result<Client, ResolveError> {
        self.host_client(reference.registry().to_owned()).await
    }

    /// Starts setting up, on the blocking pool, the clients of the registries `sources` are
    /// fetched from. Each set-up parses the system's root certificates twice (oci-client's
    /// doing), some milliseconds on one core before a build's first request; begun here, it
    /// runs beside the rest of the build's start. A set-up that fails is left to the first
    /// request for that host, which makes it again and reports the error.
    pub fn prepare<'a>(&self, sources: impl IntoIterator<Item = &'a Reference>) {
        let hosts: BTreeSet<String> = sources
            .into_iter()
            .map(|source| self.fetch_reference(source).registry().to_owned())
            .collect();
        for host in hosts {
            let access = self.clone();
            tokio::spawn(async move { access.host_client(host).await.map(drop) });
        }
    }

    async fn host_client(&self, host: String) -> Result<Client, ResolveError> {
        let cell = Arc::clone(self.clients()?.entry(host.clone()).or_default());
        let client = cell
            .get_or_try_init(|| async {
                let access = self.clone();
                blocking("setting up a registry client", move || {
                    access.client_config(&host).map(Client::new)
                })
                .await?
            })
            .await?;
        Ok(client.clone())
    }

    fn clients(&self) -> Result<MutexGuard<'_, BTreeMap<String, HostClient>>, ResolveError> {
        self.clients
            .lock()
            .map_err(|_| ResolveError::Internal("registry client table poisoned".into()))
    }

    fn client_config(&self, host: &str) -> Result<ClientConfig, ResolveError> {
        let settings = self.settings.get(host);
        let mut config = ClientConfig {
            protocol: if settings.is_some_and(|s| s.plain_http) {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            accept_invalid_certificates: settings.is_some_and(|s| s.insecure_skip_verify),
            user_agent: concat!("kk-bundle/", env!("CARGO_PKG_VERSION")),
            max_concurrent_download: 4,
            connect_timeout: Some(std::time::Duration::from_secs(30)),
            read_timeout: Some(std::time::Duration::from_secs(120)),
            ..ClientConfig::default()
        };
        if let Some(ca) = settings.and_then(|s| s.ca_file.as_ref()) {
            let data = std::fs::read(ca).map_err(|source| ResolveError::File {
                path: ca.clone(),
                source,
            })?;
            config.extra_root_certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            });
        }
        Ok(config)
    }

    /// The credentials for the registry `reference` lives on.
    pub fn auth(&self, reference: &Reference) -> Result<RegistryAuth, ResolveError> {
        let host = reference.registry();
        if let Some(credentials) = self.settings.get(host).and_then(|s| s.credentials.as_ref()) {
            let password = std::env::var(&credentials.password_env).map_err(|_| {
                ResolveError::PasswordEnv {
                    registry: host.to_owned(),
                    variable: credentials.password_env.clone(),
                }
            })?;
            return Ok(RegistryAuth::Basic(credentials.username.clone(), password));
        }
        let docker_host = if host == "docker.io" {
            "https://index.docker.io/v1/"
        } else {
            host
        };
        Ok(self
            .docker_auths
            .get(docker_host)
            .or_else(|| self.docker_auths.get(host))
            .map_or(RegistryAuth::Anonymous, |(user, password)| {
                RegistryAuth::Basic(user.clone(), password.clone())
            }))
    }
}

fn docker_config_path() -> Option<PathBuf> {
    let path = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|home| home.join(".docker")))?
        .join("config.json");
    path.exists().then_some(path)
}

/// The `auths` of a Docker client config: host → (user, password), from the base64 `auth` field.
fn read_docker_auths(
    path: &std::path::Path,
) -> Result<BTreeMap<String, (String, String)>, ResolveError> {
    #[derive(serde::Deserialize)]
    struct DockerConfig {
        #[serde(default)]
        auths: BTreeMap<String, DockerAuth>,
    }
    #[derive(serde::Deserialize)]
    struct DockerAuth {
        auth: Option<String>,
    }
    let text = std::fs::read(path).map_err(|source| ResolveError::File {
        path: path.to_owned(),
        source,
    })?;
    let config: DockerConfig =
        serde_json::from_slice(&text).map_err(|e| ResolveError::DockerConfig {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    let mut auths = BTreeMap::new();
    for (host, auth) in config.auths {
        let Some(encoded) = auth.auth else { continue };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| ResolveError::DockerConfig {
                path: path.to_owned(),
                reason: format!("the `auth` of `{host}` is not base64 of `user:password`"),
            })?;
        if let Some((user, password)) = decoded.split_once(':') {
            auths.insert(host, (user.to_owned(), password.to_owned()));
        }
    }
    Ok(auths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_auths_are_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"auths":{"registry.example:5000":{"auth":"dXNlcjpwYTpzcw=="},"x":{}}}"#,
        )
        .unwrap();
        let auths = read_docker_auths(&path).unwrap();
        assert_eq!(
            auths["registry.example:5000"],
            ("user".to_owned(), "pa:ss".to_owned())
        );
        assert!(!auths.contains_key("x"));
        std::fs::write(&path, r#"{"auths":{"h":{"auth":"!!"}}}"#).unwrap();
        assert!(
            read_docker_auths(&path)
                .unwrap_err()
                .to_string()
                .contains("`h`")
        );
    }

    /// Registry settings as a manifest gives them.
    pub(super) fn settings(registries: &str) -> BTreeMap<String, RegistryConfig> {
        let text = format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: t}}\nspec:\n  images: [docker.io/library/busybox:1.36]\n  registries: {registries}\n"
        );
        let manifest = bundle_spec::manifest::Manifest::from_str_named(&text, "t.yaml").unwrap();
        manifest.spec().registries.clone()
    }

    #[test]
    fn mirrors_replace_the_host_only() {
        let settings = settings(
            r#"{docker.io: {mirror: "127.0.0.1:5000"}, "127.0.0.1:5000": {plainHTTP: true}}"#,
        );
        let access = RegistryAccess {
            settings,
            docker_auths: BTreeMap::new(),
            clients: Arc::default(),
        };
        let source: Reference = "docker.io/library/busybox:1.36".parse().unwrap();
        assert_eq!(
            access.fetch_reference(&source).whole(),
            "127.0.0.1:5000/library/busybox:1.36"
        );
        let pinned: Reference = format!("docker.io/library/busybox@sha256:{}", "a".repeat(64))
            .parse()
            .unwrap();
        assert_eq!(access.fetch_reference(&pinned).registry(), "127.0.0.1:5000");
        let other: Reference = "quay.io/a/b:1".parse().unwrap();
        assert_eq!(access.fetch_reference(&other).whole(), "quay.io/a/b:1");
        assert!(matches!(
            access.client_config("127.0.0.1:5000").unwrap().protocol,
            ClientProtocol::Http
        ));
        assert!(matches!(
            access.client_config("quay.io").unwrap().protocol,
            ClientProtocol::Https
        ));
    }

    /// `prepare` sets up the client of the host an image is fetched from (its mirror's), and
    /// a set-up that failed is made again by the first request, which reports the error.
    #[tokio::test]
    async fn prepared_clients_are_the_mirrors_and_a_failed_one_is_reported_by_the_first_request() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing-ca.pem");
        let settings = settings(&format!(
            r#"{{docker.io: {{mirror: "127.0.0.1:5000"}}, "127.0.0.1:5000": {{plainHTTP: true}}, "bad.example": {{caFile: "{}"}}}}"#,
            missing.display()
        ));
        let access = RegistryAccess {
            settings,
            docker_auths: BTreeMap::new(),
            clients: Arc::default(),
        };
        let mirrored: Reference = "docker.io/library/busybox:1.36".parse().unwrap();
        let bad: Reference = "bad.example/a:1".parse().unwrap();
        access.prepare([&mirrored, &bad]);
        let waiting = std::time::Instant::now();
        while !access
            .clients()
            .unwrap()
            .get("127.0.0.1:5000")
            .is_some_and(|cell| cell.initialized())
        {
            assert!(
                waiting.elapsed() < std::time::Duration::from_secs(60),
                "the mirror's client was not set up"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert!(!access.clients().unwrap().contains_key("docker.io"));
        let Err(error) = access.client(&bad).await else {
            panic!("a client for `bad.example` without its CA file");
        };
        assert!(error.to_string().contains("missing-ca.pem"), "{error}");
    }

    #[test]
    fn credentials_come_from_the_named_environment_variable() {
        let settings =
            settings(r#"{"r.example": {username: u, passwordEnv: KK_TEST_SURELY_UNSET_PASSWORD}}"#);
        let access = RegistryAccess {
            settings,
            docker_auths: BTreeMap::new(),
            clients: Arc::default(),
        };
        let reference: Reference = "r.example/a:1".parse().unwrap();
        let err = access.auth(&reference).unwrap_err().to_string();
        assert!(
            err.contains("KK_TEST_SURELY_UNSET_PASSWORD") && err.contains("r.example"),
            "{err}"
        );
    }
}

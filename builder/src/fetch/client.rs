//! One `reqwest::Client` per TLS configuration: the default one, and one for each host with an
//! extra CA file or with certificate verification turned off.
//!
//! TLS settings are per client in reqwest, so a host's settings need a client of its own. The
//! host is the one actually connected to, i.e. after file mirrors were applied: the settings
//! describe a server, not the upstream that names the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use reqwest::{Certificate, Client};
use url::Url;

use super::FetchError;
use super::FetchOptions;
use super::retry::Timing;

/// The clients, by host.
#[derive(Debug, Clone)]
pub(crate) struct Clients {
    default: Client,
    by_host: BTreeMap<String, Client>,
}

impl Clients {
    pub(crate) fn new(options: &FetchOptions, timing: Timing) -> Result<Self, FetchError> {
        let default = builder(timing).build().map_err(client_error)?;
        let hosts: BTreeSet<&String> = options
            .ca_files
            .keys()
            .chain(&options.insecure_hosts)
            .collect();
        let mut by_host = BTreeMap::new();
        for host in hosts {
            let mut builder = builder(timing);
            if let Some(path) = options.ca_files.get(host) {
                builder = builder.tls_certs_merge(certificates(host, path)?);
            }
            if options.insecure_hosts.contains(host) {
                builder = builder.tls_danger_accept_invalid_certs(true);
            }
            by_host.insert(host.clone(), builder.build().map_err(client_error)?);
        }
        Ok(Self { default, by_host })
    }

    /// The client for `url`'s server: by `host:port`, then by host, else the default.
    pub(crate) fn for_url(&self, url: &Url) -> &Client {
        let host = url.host_str().unwrap_or_default();
        let with_port = url.port().map(|port| format!("{host}:{port}"));
        with_port
            .and_then(|authority| self.by_host.get(&authority))
            .or_else(|| self.by_host.get(host))
            .unwrap_or(&self.default)
    }
}

fn builder(timing: Timing) -> reqwest::ClientBuilder {
    Client::builder()
        .user_agent(concat!("kk-bundle/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(timing.connect)
        .read_timeout(timing.stall)
}

fn certificates(host: &str, path: &Path) -> Result<Vec<Certificate>, FetchError> {
    let ca_error = |source: Box<dyn std::error::Error + Send + Sync>| FetchError::CaFile {
        host: host.to_owned(),
        path: path.to_owned(),
        source,
    };
    let pem = std::fs::read(path).map_err(|error| ca_error(Box::new(error)))?;
    let certificates =
        Certificate::from_pem_bundle(&pem).map_err(|error| ca_error(Box::new(error)))?;
    if certificates.is_empty() {
        return Err(ca_error("no certificate found".into()));
    }
    Ok(certificates)
}

fn client_error(source: reqwest::Error) -> FetchError {
    FetchError::HttpClient { source }
}

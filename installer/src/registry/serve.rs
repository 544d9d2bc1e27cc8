//! Serving a store: the address is bound first, so a busy port fails before anything says it
//! serves, and the failure names the address.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

use super::Store;

/// The registry could not start, or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    // The cause follows the message (`…: Address already in use`), so no hint after it.
    #[error("cannot listen on `{address}`")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The certificate or its key could not be loaded.
    #[error("cannot load the certificate `{}` and its key `{}`", cert.display(), key.display())]
    Tls {
        /// The certificate (chain), PEM.
        cert: PathBuf,
        /// Its private key, PEM.
        key: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server failed after it started.
    #[error("the registry on `{address}` stopped")]
    Stopped {
        /// The address it served.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The certificate and key the registry serves TLS with.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate (chain), PEM.
    pub cert: PathBuf,
    /// Its private key, PEM.
    pub key: PathBuf,
}

/// A socket listening on `address`, ready for [`serve`].
pub fn bind(address: SocketAddr) -> Result<TcpListener, ServeError> {
    let bind_error = |source| ServeError::Bind { address, source };
    let listener = TcpListener::bind(address).map_err(bind_error)?;
    // tokio takes over the socket only in non-blocking mode.
    listener.set_nonblocking(true).map_err(bind_error)?;
    Ok(listener)
}

/// Serves `store` (read from the directory `served`) on `listener` (from [`bind`]) until the
/// process ends: HTTPS with `tls`, plain HTTP without. Logs the address once it serves.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    served: &Path,
    tls: Option<&TlsFiles>,
) -> Result<(), ServeError> {
    let address = listener.local_addr().map_err(|source| ServeError::Bind {
        address: SocketAddr::from(([0, 0, 0, 0], 0)),
        source,
    })?;
    let served = served.display();
    let app = super::router(store).into_make_service();
    let http =
        axum_server::from_tcp(listener).map_err(|source| ServeError::Bind { address, source })?;
    // Without TCP_NODELAY the last small segment of a response waits for the client's delayed
    // ACK (up to 40 ms on Linux): one client pulling a layer would see that on every blob.
    let no_delay = axum_server::accept::NoDelayAcceptor;
    let stopped = |source| ServeError::Stopped { address, source };
    if let Some(files) = tls {
        let config = tls_config(files).await?;
        tracing::info!("serving {served} on https://{address}");
        let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(config).acceptor(no_delay);
        http.acceptor(acceptor).serve(app).await.map_err(stopped)
    } else {
        tracing::info!("serving {served} on http://{address}");
        http.acceptor(no_delay).serve(app).await.map_err(stopped)
    }
}

/// The server's TLS from `files`, with aws-lc's primitives.
async fn tls_config(files: &TlsFiles) -> Result<axum_server::tls_rustls::RustlsConfig, ServeError> {
    // The node agent links rustls with ring too, so rustls cannot pick a process-wide provider
    // from its features any more (it would panic): name the one kk-install uses.
    let _already = rustls::crypto::aws_lc_rs::default_provider().install_default();
    axum_server::tls_rustls::RustlsConfig::from_pem_file(&files.cert, &files.key)
        .await
        .map_err(|source| ServeError::Tls {
            cert: files.cert.clone(),
            key: files.key.clone(),
            source,
        })
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_tls_config_loads_although_two_crypto_providers_are_linked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let issued =
            rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).expect("certificate");
        let files = super::TlsFiles {
            cert: dir.path().join("registry.crt"),
            key: dir.path().join("registry.key"),
        };
        std::fs::write(&files.cert, issued.cert.pem()).expect("write");
        std::fs::write(&files.key, issued.signing_key.serialize_pem()).expect("write");
        let config = super::tls_config(&files).await.expect("a TLS config");
        assert!(!config.get_inner().alpn_protocols.is_empty());
    }

    #[test]
    fn a_busy_address_is_refused_naming_it() {
        let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = busy.local_addr().expect("address");
        let error = super::bind(address).expect_err("the port is taken");
        let message = error.to_string();
        assert!(message.contains(&format!("`{address}`")), "{message}");
        assert!(
            std::error::Error::source(&error).is_some(),
            "the cause is kept"
        );
    }
}

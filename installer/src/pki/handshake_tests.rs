//! The certificates in real TLS handshakes (rustls with webpki, in memory): etcd's mutual TLS
//! against `etcd/ca.crt`, the registry and the apiserver against `ca.crt` — and the refusals
//! when a certificate comes from another CA or does not name the host.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection,
};

use super::tests::spec3;
use super::{RegistryNames, ensure, issue_registry_cert};

/// A PKI made once and held in memory (file name → PEM), so the tests share its keys.
type Tree = BTreeMap<String, Vec<u8>>;

fn read_tree(dir: &Path) -> Tree {
    let mut tree = Tree::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            todo.extend(
                fs::read_dir(&path)
                    .expect("ls")
                    .map(|e| e.expect("entry").path()),
            );
        } else {
            let name = path
                .strip_prefix(dir)
                .expect("under dir")
                .to_string_lossy()
                .into_owned();
            tree.insert(name, fs::read(&path).expect("read"));
        }
    }
    tree
}

fn make_tree() -> Tree {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    read_tree(tmp.path())
}

/// The cluster's PKI.
fn ours() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(make_tree)
}

/// Another cluster's PKI, made the same way: its CAs are not ours.
fn theirs() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(make_tree)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn chain(tree: &Tree, base: &str) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let cert = CertificateDer::from_pem_slice(&tree[&format!("{base}.crt")]).expect("cert");
    let key = PrivateKeyDer::from_pem_slice(&tree[&format!("{base}.key")]).expect("key");
    (vec![cert], key)
}

fn roots(tree: &Tree, ca: &str) -> Arc<RootCertStore> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(&tree[ca]).expect("ca"))
        .expect("root");
    Arc::new(roots)
}

/// A server presenting `server` (tree, base), asking for a client certificate from `client_ca`
/// when given.
fn server(server: (&Tree, &str), client_ca: Option<(&Tree, &str)>) -> ServerConfig {
    let (certs, key) = chain(server.0, server.1);
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions");
    let builder = match client_ca {
        Some((tree, ca)) => builder.with_client_cert_verifier(
            WebPkiClientVerifier::builder_with_provider(roots(tree, ca), provider())
                .build()
                .expect("verifier"),
        ),
        None => builder.with_no_client_auth(),
    };
    builder.with_single_cert(certs, key).expect("server config")
}

/// A client trusting `ca` (tree, file), presenting `client` (tree, base) when given.
fn client(ca: (&Tree, &str), client: Option<(&Tree, &str)>) -> ClientConfig {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots(ca.0, ca.1));
    match client {
        Some((tree, base)) => {
            let (certs, key) = chain(tree, base);
            builder
                .with_client_auth_cert(certs, key)
                .expect("client config")
        }
        None => builder.with_no_client_auth(),
    }
}

/// Runs a handshake in memory between the two; the first error of either side is the result.
fn handshake(server: ServerConfig, client: ClientConfig, name: &str) -> Result<(), rustls::Error> {
    let name = ServerName::try_from(name.to_owned()).expect("server name");
    let mut client = Connection::from(ClientConnection::new(Arc::new(client), name)?);
    let mut server = Connection::from(ServerConnection::new(Arc::new(server))?);
    for _ in 0..20 {
        transfer(&mut client, &mut server)?;
        transfer(&mut server, &mut client)?;
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
    }
    Err(rustls::Error::General(
        "the handshake did not finish".to_owned(),
    ))
}

fn transfer(from: &mut Connection, to: &mut Connection) -> Result<(), rustls::Error> {
    let mut bytes = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut bytes).expect("write to memory");
    }
    let mut reader = bytes.as_slice();
    while !reader.is_empty() {
        to.read_tls(&mut reader).expect("read from memory");
        to.process_new_packets()?;
    }
    Ok(())
}

#[test]
fn etcd_mutual_tls_works_with_every_name_of_the_member() {
    let ours = ours();
    for name in ["cp1", "localhost", "10.0.0.1", "127.0.0.1", "::1"] {
        let server = server(
            (ours, "etcd/members/cp1/server"),
            Some((ours, "etcd/ca.crt")),
        );
        for client_cert in ["etcd/healthcheck-client", "apiserver-etcd-client"] {
            let client = client((ours, "etcd/ca.crt"), Some((ours, client_cert)));
            handshake(server.clone(), client, name)
                .unwrap_or_else(|e| panic!("{name} with {client_cert}: {e}"));
        }
    }
    // Peers are both client and server of each other.
    let server = server((ours, "etcd/members/cp2/peer"), Some((ours, "etcd/ca.crt")));
    let client = client((ours, "etcd/ca.crt"), Some((ours, "etcd/members/cp3/peer")));
    handshake(server, client, "10.0.0.2").expect("peer to peer");
}

#[test]
fn etcd_refuses_certificates_of_another_ca_and_names_it_lacks() {
    let (ours, theirs) = (ours(), theirs());
    let server_ours = || {
        server(
            (ours, "etcd/members/cp1/server"),
            Some((ours, "etcd/ca.crt")),
        )
    };
    let cases = [
        (
            "client of another CA",
            server_ours(),
            client(
                (ours, "etcd/ca.crt"),
                Some((theirs, "etcd/healthcheck-client")),
            ),
            "cp1",
        ),
        (
            "server of another CA",
            server(
                (theirs, "etcd/members/cp1/server"),
                Some((ours, "etcd/ca.crt")),
            ),
            client(
                (ours, "etcd/ca.crt"),
                Some((ours, "etcd/healthcheck-client")),
            ),
            "cp1",
        ),
        (
            "no client certificate",
            server_ours(),
            client((ours, "etcd/ca.crt"), None),
            "cp1",
        ),
        (
            "another member's name",
            server_ours(),
            client(
                (ours, "etcd/ca.crt"),
                Some((ours, "etcd/healthcheck-client")),
            ),
            "cp2",
        ),
        (
            "a client certificate as server",
            server(
                (ours, "etcd/healthcheck-client"),
                Some((ours, "etcd/ca.crt")),
            ),
            client((ours, "etcd/ca.crt"), Some((ours, "apiserver-etcd-client"))),
            "cp1",
        ),
    ];
    for (case, server, client, name) in cases {
        assert!(
            handshake(server, client, name).is_err(),
            "{case} was accepted"
        );
    }
}

#[test]
fn the_registry_is_trusted_through_ca_crt_by_name_and_address_only() {
    let (ours, theirs) = (ours(), theirs());
    for name in ["registry.kk.internal", "10.0.0.1"] {
        let server = server((ours, "registry"), None);
        handshake(server, client((ours, "ca.crt"), None), name).expect(name);
    }
    let refused = [
        ("another name", (ours, "ca.crt"), "other.kk.internal"),
        ("another CA", (theirs, "ca.crt"), "registry.kk.internal"),
        ("the etcd CA", (ours, "etcd/ca.crt"), "registry.kk.internal"),
    ];
    for (case, ca, name) in refused {
        let server = server((ours, "registry"), None);
        assert!(handshake(server, client(ca, None), name).is_err(), "{case}");
    }
}

#[test]
fn the_apiserver_serves_the_kubernetes_names_and_takes_kubeadm_clients() {
    let ours = ours();
    for name in [
        "kubernetes.default.svc.cluster.local",
        "10.233.0.1",
        "lb.kk.internal",
        "cp3",
    ] {
        let server = server((ours, "apiserver"), Some((ours, "ca.crt")));
        let client = client((ours, "ca.crt"), Some((ours, "apiserver-kubelet-client")));
        handshake(server, client, name).expect(name);
    }
    let server = server((ours, "apiserver"), Some((ours, "front-proxy-ca.crt")));
    let client = client((ours, "ca.crt"), Some((ours, "front-proxy-client")));
    handshake(server, client, "kubernetes").expect("front proxy client");
}

/// A leaf signed later by the CA read back from disk chains like one signed at creation.
#[test]
fn a_registry_cert_reissued_by_a_reloaded_ca_is_trusted() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let names = RegistryNames::parse(&["mirror.kk.internal".to_owned()]);
    issue_registry_cert(tmp.path(), &names).expect("reissue");
    let tree = read_tree(tmp.path());
    let server = server((&tree, "registry"), None);
    handshake(
        server,
        client((&tree, "ca.crt"), None),
        "mirror.kk.internal",
    )
    .expect("trusted");
}

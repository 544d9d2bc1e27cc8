//! A fetch across several registry hosts, against kk's own registry served over TLS in
//! process: the first host a closed port, the second serving.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;

use bundle_spec::Sha256Digest;
use bundle_spec::oci::{EMPTY_CONFIG, EMPTY_CONFIG_MEDIA_TYPE, MANIFEST_MEDIA_TYPE};
use bundle_spec::test_support::{HandLayout, descriptor, manifest_bytes, named};
use serde_json::json;

use crate::fetch::{FetchError, FetchRequest, fetch, ping};
use crate::pki::{RegistryNames, issue_registry_cert};
use crate::registry::{Store, TlsFiles, bind, serve};

const REFERENCE: &str = "kk.internal/binaries/etcd:v1";
const CONTENT: &[u8] = b"the etcd binary";

/// A store holding [`REFERENCE`] (one layer, [`CONTENT`]); its manifest's digest.
fn store(root: &Path) -> Sha256Digest {
    let layout = HandLayout::new(root);
    let manifest = manifest_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": layout.blob_descriptor(EMPTY_CONFIG_MEDIA_TYPE, EMPTY_CONFIG),
        "layers": [layout.blob_descriptor("application/octet-stream", CONTENT)],
    }));
    let digest = layout.put_blob(&manifest);
    layout.write_index(&[named(
        descriptor(MANIFEST_MEDIA_TYPE, digest, manifest.len()),
        REFERENCE,
    )]);
    digest
}

/// Serves `root` over TLS on a loopback port with a certificate for 127.0.0.1 signed by the
/// CA in `pki` (from within a tokio runtime); the address.
fn serving(root: &Path, pki: &Path) -> SocketAddr {
    let cert = issue_registry_cert(pki, &RegistryNames::parse(&["127.0.0.1".to_owned()]))
        .expect("issues the registry certificate");
    let listener = bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).expect("binds");
    let address = listener.local_addr().expect("address");
    let store = Store::open(root).expect("opens the store");
    let served = root.to_owned();
    let tls = TlsFiles {
        cert: cert.cert,
        key: cert.key,
    };
    tokio::spawn(async move { serve(listener, store, &served, Some(&tls)).await });
    address
}

/// A loopback port nothing listens on.
fn closed_port() -> String {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    let address = listener.local_addr().expect("address");
    drop(listener);
    address.to_string()
}

fn request(dir: &Path, registries: Vec<String>, expect: Sha256Digest) -> FetchRequest {
    FetchRequest {
        registries,
        ca: dir.join("pki/ca.crt"),
        reference: REFERENCE.to_owned(),
        expect: vec![expect],
        into: dir.join("bin"),
        files: vec!["etcd".to_owned()],
        stamp_dir: dir.join("stamps"),
        auth_file: None,
    }
}

#[tokio::test]
async fn a_closed_first_host_falls_back_to_the_next_and_the_digests_still_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = store(&dir.path().join("store"));
    let up = serving(&dir.path().join("store"), &dir.path().join("pki")).to_string();
    let down = closed_port();
    let hosts = vec![down.clone(), up.clone()];

    ping(
        std::slice::from_ref(&up),
        &dir.path().join("pki/ca.crt"),
        None,
        std::time::Duration::from_secs(30),
    )
    .await
    .expect("the serving host answers");
    let fetched = fetch(&request(dir.path(), hosts.clone(), manifest))
        .await
        .expect("the second host serves");
    assert_eq!(fetched.manifest, manifest.to_string());
    assert_eq!(fetched.downloaded, CONTENT.len() as u64);
    assert_eq!(
        std::fs::read(dir.path().join("bin/etcd")).expect("installed"),
        CONTENT
    );

    // A manifest the bundle does not list is refused from whichever host answers, and the
    // refusal ends the fetch (it is not a host being unavailable).
    let mut elsewhere = request(dir.path(), hosts.clone(), Sha256Digest::of(b"another"));
    elsewhere.stamp_dir = dir.path().join("other-stamps");
    let error = fetch(&elsewhere).await.expect_err("not listed");
    assert!(
        matches!(error, FetchError::UnexpectedManifest { .. }),
        "{error}"
    );

    // Every host must answer a ping, not just one.
    let error = ping(
        &hosts,
        &dir.path().join("pki/ca.crt"),
        None,
        std::time::Duration::ZERO,
    )
    .await
    .expect_err("the closed host does not answer");
    assert!(error.to_string().contains(&down), "{error}");
}

#[tokio::test]
async fn when_no_host_answers_the_error_names_them_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    issue_registry_cert(
        &dir.path().join("pki"),
        &RegistryNames::parse(&["127.0.0.1".to_owned()]),
    )
    .expect("a CA to trust");
    let hosts = vec![closed_port(), closed_port()];
    let error = fetch(&request(dir.path(), hosts.clone(), Sha256Digest::of(b"m")))
        .await
        .expect_err("nothing serves");
    let message = error.to_string();
    assert!(
        matches!(&error, FetchError::Unavailable { last: Some(_), .. }),
        "{message}"
    );
    for host in &hosts {
        assert!(message.contains(host.as_str()), "{message}");
    }
    // With one host, its own error.
    let error = fetch(&request(
        dir.path(),
        hosts[..1].to_vec(),
        Sha256Digest::of(b"m"),
    ))
    .await
    .expect_err("nothing serves");
    assert!(matches!(error, FetchError::Http { .. }), "{error}");
}

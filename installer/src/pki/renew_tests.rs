//! [`renew`] on a master copy made by [`ensure`](super::super::ensure).

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::*;
use crate::pki::ensure;
use crate::pki::tests::spec3;

const DAY: u64 = 86_400;

/// (notBefore, notAfter, subject, SANs, public key) of `dir/file`.
fn facts(dir: &Path, file: &str) -> (i64, i64, String, String, Vec<u8>) {
    let bytes = fs::read(dir.join(file)).expect("read");
    let pem = x509_parser::pem::parse_x509_pem(&bytes).expect("pem").1;
    let x509 = pem.parse_x509().expect("x509");
    let validity = x509.validity();
    let sans = format!("{:?}", verify::sans(&x509));
    (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
        x509.subject().to_string(),
        sans,
        x509.public_key().raw.to_vec(),
    )
}

fn seconds(time: SystemTime) -> i64 {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).expect("clock");
    since.as_secs().cast_signed()
}

#[test]
fn renew_keeps_key_and_names_and_moves_the_validity_to_now() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let file = "etcd/members/cp2/peer.crt";
    let before = facts(tmp.path(), file);
    let key_before = fs::read(tmp.path().join("etcd/members/cp2/peer.key")).expect("key");
    let later = SystemTime::now() + Duration::from_secs(200 * DAY);

    let renewed = renew(tmp.path(), &["etcd-peer"], later).expect("renew");

    let files: Vec<_> = renewed.iter().map(|r| r.file.clone()).collect();
    assert_eq!(
        files,
        ["cp1", "cp2", "cp3"].map(|m| PathBuf::from(format!("etcd/members/{m}/peer.crt")))
    );
    let after = facts(tmp.path(), file);
    assert_eq!(
        after.0,
        seconds(later) - 300,
        "not before: the renewal's time"
    );
    assert_eq!(after.1, seconds(later) + 365 * DAY.cast_signed());
    assert!(after.1 > before.1, "not after moved forward");
    assert_eq!(
        (&after.2, &after.3, &after.4),
        (&before.2, &before.3, &before.4)
    );
    let key_after = fs::read(tmp.path().join("etcd/members/cp2/peer.key")).expect("key");
    assert_eq!(key_after, key_before, "the key file is untouched");
    // Still signed by the etcd CA, with its own key: what `ensure` accepts.
    ensure(tmp.path(), &spec3()).expect("the renewed tree is sound");
}

#[test]
fn each_name_renews_its_files_and_nothing_else() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let later = SystemTime::now() + Duration::from_secs(DAY);
    for (name, files) in [
        ("apiserver", vec!["apiserver.crt"]),
        (
            "apiserver-kubelet-client",
            vec!["apiserver-kubelet-client.crt"],
        ),
        ("front-proxy-client", vec!["front-proxy-client.crt"]),
        ("apiserver-etcd-client", vec!["apiserver-etcd-client.crt"]),
        (
            "etcd-healthcheck-client",
            vec!["etcd/healthcheck-client.crt"],
        ),
        (
            "etcd-server",
            vec![
                "etcd/members/cp1/server.crt",
                "etcd/members/cp2/server.crt",
                "etcd/members/cp3/server.crt",
            ],
        ),
        ("registry", vec!["registry.crt"]),
    ] {
        let renewed = renew(tmp.path(), &[name], later).expect(name);
        let got: Vec<_> = renewed.iter().map(|r| r.file.clone()).collect();
        let want: Vec<_> = files.iter().map(PathBuf::from).collect();
        assert_eq!(got, want, "{name}");
        assert!(renewed.iter().all(|r| r.name == name), "{name}");
    }
    let ca = facts(tmp.path(), "ca.crt");
    assert!(ca.0 < seconds(SystemTime::now()), "the CA is not renewed");
}

#[test]
fn unknown_and_absent_names_are_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut spec = spec3();
    spec.registry = None;
    ensure(tmp.path(), &spec).expect("ensure");
    let now = SystemTime::now();
    for (names, expected) in [
        (
            vec!["admin.conf"],
            "`admin.conf` is not a certificate kk renews",
        ),
        (vec!["ca"], "`ca` is not a certificate kk renews"),
        (vec!["registry"], "`registry` is not in kk's master copy"),
    ] {
        let err = renew(tmp.path(), &names, now).expect_err("refused");
        assert!(err.to_string().contains(expected), "{names:?}: {err}");
    }
    assert!(!holds(tmp.path(), "registry").expect("holds"));
    assert!(holds(tmp.path(), "etcd-server").expect("holds"));
}

#[test]
fn a_leaf_whose_key_is_gone_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let registry_before = fs::read(tmp.path().join("registry.crt")).expect("read");
    fs::remove_file(tmp.path().join("apiserver.key")).expect("rm");
    let later = SystemTime::now() + Duration::from_secs(DAY);

    let err = renew(tmp.path(), &["registry", "apiserver"], later).expect_err("refused");

    assert!(
        matches!(&err, PkiError::HalfPair { missing, .. } if missing.ends_with("apiserver.key")),
        "{err}"
    );
    let registry_after = fs::read(tmp.path().join("registry.crt")).expect("read");
    assert_eq!(registry_after, registry_before, "checked before any write");
}

#[test]
fn a_leaf_its_ca_did_not_sign_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let other = tempfile::tempdir().expect("tmp");
    ensure(other.path(), &spec3()).expect("ensure");
    for ext in ["crt", "key"] {
        let file = format!("front-proxy-client.{ext}");
        fs::copy(other.path().join(&file), tmp.path().join(&file)).expect("copy");
    }
    let err = renew(tmp.path(), &["front-proxy-client"], SystemTime::now()).expect_err("refused");
    assert!(matches!(err, PkiError::NotSignedBy { .. }), "{err}");
}

#[test]
fn ca_expiries_are_the_three_cas() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let now = seconds(SystemTime::now());
    let cas = ca_expiries(tmp.path()).expect("cas");
    let files: Vec<_> = cas.iter().map(|ca| ca.file.clone()).collect();
    assert_eq!(
        files,
        ["ca.crt", "front-proxy-ca.crt", "etcd/ca.crt"].map(PathBuf::from)
    );
    for ca in cas {
        assert!(
            (ca.not_after - now - 3650 * DAY.cast_signed()).abs() < 60,
            "{ca:?}"
        );
    }
}

/// The install's certificates start when the install makes them (K2s#981): `ensure` takes no
/// time from anywhere but the clock (the plan's [`PkiSpec`](crate::pki::PkiSpec) has none),
/// and the registry's certificate, made by `registry cert`, does the same.
#[test]
fn the_registry_certificate_starts_at_the_time_it_is_made() {
    let tmp = tempfile::tempdir().expect("tmp");
    let names = crate::pki::RegistryNames::parse(&["registry.kk.internal".to_owned()]);
    let made = crate::pki::issue_registry_cert(tmp.path(), &names).expect("cert");
    let now = seconds(SystemTime::now());
    for file in [&made.cert, &made.ca_cert] {
        let name = file
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let (not_before, ..) = facts(tmp.path(), &name);
        assert!((now - 300 - not_before).abs() < 60, "{name}: {not_before}");
    }
}

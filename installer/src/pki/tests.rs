//! [`ensure`] on a real directory: the files, their modes, reruns, refusals, and what the
//! certificates say.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use x509_parser::certificate::X509Certificate;
use x509_parser::public_key::PublicKey;

use super::*;

pub(super) fn member(name: &str, ip: &str) -> Member {
    Member {
        name: name.to_owned(),
        ips: vec![ip.parse().expect("ip")],
    }
}

/// 3 control planes that are also the 3 etcd members.
pub(crate) fn spec3() -> PkiSpec {
    let nodes = vec![
        member("cp1", "10.0.0.1"),
        member("cp2", "10.0.0.2"),
        member("cp3", "10.0.0.3"),
    ];
    PkiSpec {
        cluster_domain: "cluster.local".to_owned(),
        control_planes: nodes.clone(),
        etcd_members: nodes,
        endpoint_host: "lb.kk.internal".to_owned(),
        service_ips: vec!["10.233.0.1".parse().expect("ip")],
        extra_apiserver_sans: vec!["10.0.0.100".to_owned()],
        registry: Some(RegistryNames {
            dns: vec!["registry.kk.internal".to_owned()],
            ips: vec!["10.0.0.1".parse().expect("ip")],
        }),
    }
}

/// Every file and directory under `dir` with its bytes (directories: empty) and mode.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut all = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(path) = todo.pop() {
        let meta = fs::metadata(&path).expect("metadata");
        let mode = meta.mode() & 0o7777;
        if meta.is_dir() {
            for entry in fs::read_dir(&path).expect("ls") {
                todo.push(entry.expect("entry").path());
            }
            all.insert(path, (Vec::new(), mode));
        } else {
            all.insert(path.clone(), (fs::read(&path).expect("read"), mode));
        }
    }
    all
}

fn pem_of(dir: &Path, file: &str) -> x509_parser::pem::Pem {
    let bytes = fs::read(dir.join(file)).expect("read cert");
    x509_parser::pem::parse_x509_pem(&bytes).expect("pem").1
}

/// The expected files under the master copy, with their modes.
fn expected_files() -> Vec<(String, u32)> {
    let mut files = vec![("sa.key".to_owned(), 0o600), ("sa.pub".to_owned(), 0o600)];
    let mut bases: Vec<String> = [
        "ca",
        "front-proxy-ca",
        "front-proxy-client",
        "apiserver",
        "apiserver-kubelet-client",
        "apiserver-etcd-client",
        "etcd/ca",
        "etcd/healthcheck-client",
        "registry",
    ]
    .map(str::to_owned)
    .to_vec();
    for name in ["cp1", "cp2", "cp3"] {
        bases.push(format!("etcd/members/{name}/server"));
        bases.push(format!("etcd/members/{name}/peer"));
    }
    for base in bases {
        files.push((format!("{base}.crt"), 0o644));
        files.push((format!("{base}.key"), 0o600));
    }
    files
}

#[test]
fn ensure_makes_every_file_with_its_mode_and_a_rerun_changes_no_byte() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("work/pki");
    let started = Instant::now();
    let issued = ensure(&dir, &spec3()).expect("ensure");
    eprintln!(
        "ensure, 3 control planes + 3 etcd members: {:?}",
        started.elapsed()
    );

    let files = snapshot(&dir);
    let expected = expected_files();
    for (file, mode) in &expected {
        let got = files.get(&dir.join(file)).map(|(_, m)| *m);
        assert_eq!(got, Some(*mode), "{file}");
    }
    for sub in [
        "",
        "etcd",
        "etcd/members",
        "etcd/members/cp1",
        "etcd/members/cp3",
    ] {
        assert_eq!(files[&dir.join(sub)].1, 0o700, "dir `{sub}`");
    }
    let plain_files = files.values().filter(|(b, _)| !b.is_empty()).count();
    assert_eq!(
        plain_files,
        expected.len(),
        "stray files: {:?}",
        files.keys()
    );
    let mut created = issued.created().to_vec();
    created.sort();
    let mut all: Vec<PathBuf> = expected.iter().map(|(f, _)| dir.join(f)).collect();
    all.sort();
    assert_eq!(created, all);
    assert_eq!(
        issued.ca_cert_pem().as_bytes(),
        fs::read(dir.join("ca.crt")).expect("ca")
    );

    let again = ensure(&dir, &spec3()).expect("rerun");
    assert!(again.created().is_empty(), "{:?}", again.created());
    assert_eq!(snapshot(&dir), files, "a rerun changed the master copy");
    assert_eq!(again.ca_cert_pem(), issued.ca_cert_pem());
}

#[test]
fn node_files_name_kubeadms_paths_and_exist() {
    let tmp = tempfile::tempdir().expect("tmp");
    let issued = ensure(tmp.path(), &spec3()).expect("ensure");
    let remote = |files: Vec<NodeFile>| -> Vec<(String, u32)> {
        files
            .into_iter()
            .map(|f| {
                let mode = fs::metadata(&f.local).expect("local file").mode() & 0o777;
                assert_eq!(mode, f.mode, "{}", f.local.display());
                (f.remote, f.mode)
            })
            .collect()
    };
    let pki = |f: &str, mode| (format!("/etc/kubernetes/pki/{f}"), mode);
    let mut expected = Vec::new();
    for base in [
        "ca",
        "front-proxy-ca",
        "front-proxy-client",
        "apiserver",
        "apiserver-kubelet-client",
        "apiserver-etcd-client",
    ] {
        expected.push(pki(&format!("{base}.crt"), 0o644));
        expected.push(pki(&format!("{base}.key"), 0o600));
    }
    expected.extend([
        pki("sa.key", 0o600),
        pki("sa.pub", 0o600),
        pki("etcd/ca.crt", 0o644),
    ]);
    assert_eq!(remote(issued.control_plane_files()), expected);

    let etcd = issued.etcd_member_files("cp2");
    assert_eq!(
        remote(etcd.clone()),
        [
            pki("etcd/ca.crt", 0o644),
            pki("etcd/server.crt", 0o644),
            pki("etcd/server.key", 0o600),
            pki("etcd/peer.crt", 0o644),
            pki("etcd/peer.key", 0o600),
            pki("etcd/healthcheck-client.crt", 0o644),
            pki("etcd/healthcheck-client.key", 0o600),
        ]
    );
    assert_eq!(
        etcd[1].local,
        tmp.path().join("etcd/members/cp2/server.crt")
    );
    assert!(issued.etcd_member_files("cp9").is_empty());
    assert_eq!(
        remote(issued.registry_files()),
        [
            ("/etc/kk/pki/registry.crt".to_owned(), 0o644),
            ("/etc/kk/pki/registry.key".to_owned(), 0o600),
        ]
    );
    assert_eq!(
        remote(issued.trust_files()),
        [("/etc/kk/pki/ca.crt".to_owned(), 0o644)]
    );
}

/// A lone file of a pair in an empty directory: refused, naming the missing file, and
/// nothing else written.
#[test]
fn half_a_pair_is_refused_and_nothing_is_written() {
    let cases = [
        ("ca.crt", "ca.key"),
        ("ca.key", "ca.crt"),
        ("front-proxy-ca.crt", "front-proxy-ca.key"),
        ("etcd/ca.key", "etcd/ca.crt"),
        ("sa.pub", "sa.key"),
        ("apiserver.key", "apiserver.crt"),
        ("etcd/members/cp2/peer.crt", "etcd/members/cp2/peer.key"),
        ("registry.crt", "registry.key"),
    ];
    for (present, missing) in cases {
        let tmp = tempfile::tempdir().expect("tmp");
        let file = tmp.path().join(present);
        fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        fs::write(&file, "whatever").expect("write");
        let before = snapshot(tmp.path());
        let err = ensure(tmp.path(), &spec3()).expect_err(present);
        assert!(
            matches!(&err, PkiError::HalfPair { missing: m, .. } if *m == tmp.path().join(missing)),
            "{present}: {err}"
        );
        assert!(err.to_string().contains(missing), "{err}");
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{present}: something was written"
        );
    }
}

/// Damages a tree; the second argument copies a file from another tree.
type Damage = fn(&Path, &dyn Fn(&str, &Path));

/// Damage to a complete tree: refused, naming the file, and not a byte changed.
#[test]
fn an_unsound_existing_pair_is_refused_and_nothing_is_written() {
    let other = tempfile::tempdir().expect("tmp");
    ensure(other.path(), &spec3()).expect("other tree");
    let copy = |from: &str, to: &Path| {
        fs::copy(other.path().join(from), to.join(from)).expect("copy");
    };
    let cases: [(&str, Damage, &str); 6] = [
        ("ca.key removed", |d, _| rm(d, "ca.key"), "ca.key"),
        (
            "another CA's leaf",
            |d, c| {
                c("apiserver.crt", d);
                c("apiserver.key", d);
            },
            "is not signed by",
        ),
        (
            "another key",
            |d, c| c("etcd/members/cp1/peer.key", d),
            "is not the key of",
        ),
        ("sa.pub of another key", |d, c| c("sa.pub", d), "sa.pub"),
        (
            "etcd CA gone",
            |d, _| {
                rm(d, "etcd/ca.crt");
                rm(d, "etcd/ca.key");
            },
            "but its CA",
        ),
        (
            "a leaf as the CA",
            |d, _| {
                fs::copy(d.join("apiserver.crt"), d.join("ca.crt")).expect("cp");
                fs::copy(d.join("apiserver.key"), d.join("ca.key")).expect("cp");
            },
            "is not a CA certificate",
        ),
    ];
    for (case, damage, message) in cases {
        let tmp = tempfile::tempdir().expect("tmp");
        ensure(tmp.path(), &spec3()).expect("ensure");
        damage(tmp.path(), &copy);
        let before = snapshot(tmp.path());
        let err = ensure(tmp.path(), &spec3()).expect_err(case);
        assert!(err.to_string().contains(message), "{case}: {err}");
        assert_eq!(
            snapshot(tmp.path()),
            before,
            "{case}: something was written"
        );
    }
}

fn rm(dir: &Path, file: &str) {
    fs::remove_file(dir.join(file)).expect("rm");
}

#[test]
fn a_leaf_lacking_new_sans_is_reissued_with_its_key_and_a_deleted_one_made() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let mut grown = spec3();
    grown.control_planes.push(member("cp4", "10.0.0.4"));
    let key = fs::read(tmp.path().join("apiserver.key")).expect("key");
    let cert = fs::read(tmp.path().join("apiserver.crt")).expect("cert");
    let issued = ensure(tmp.path(), &grown).expect("cp4 added");
    assert_eq!(issued.reissued(), [PathBuf::from("apiserver.crt")]);
    assert!(issued.created().is_empty(), "{:?}", issued.created());
    assert_eq!(
        fs::read(tmp.path().join("apiserver.key")).expect("key"),
        key
    );
    assert_ne!(
        fs::read(tmp.path().join("apiserver.crt")).expect("cert"),
        cert
    );
    // The reissued certificate names cp4 now, is sound, and is kept from then on.
    let again = ensure(tmp.path(), &grown).expect("again");
    assert!(again.reissued().is_empty() && again.created().is_empty());

    rm(tmp.path(), "apiserver.crt");
    rm(tmp.path(), "apiserver.key");
    let issued = ensure(tmp.path(), &grown).expect("made anew");
    assert_eq!(
        issued.created(),
        [
            tmp.path().join("apiserver.key"),
            tmp.path().join("apiserver.crt")
        ]
    );

    grown.etcd_members.push(member("cp4", "10.0.0.4"));
    let issued = ensure(tmp.path(), &grown).expect("new member");
    let mut created = issued.created().to_vec();
    created.sort();
    let member_dir = tmp.path().join("etcd/members/cp4");
    assert_eq!(
        created,
        ["peer.crt", "peer.key", "server.crt", "server.key"].map(|f| member_dir.join(f))
    );
}

#[test]
fn a_bad_member_name_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("pki");
    let mut spec = spec3();
    spec.etcd_members.push(member("../evil", "10.0.0.9"));
    let err = ensure(&dir, &spec).expect_err("bad name");
    assert!(err.to_string().contains("`../evil`"), "{err}");
    assert!(!dir.exists());
}

/// (file, CN, O, serverAuth, clientAuth).
const SUBJECTS: [(&str, &str, Option<&str>, bool, bool); 10] = [
    ("apiserver.crt", "kube-apiserver", None, true, false),
    (
        "apiserver-kubelet-client.crt",
        "kube-apiserver-kubelet-client",
        Some("kubeadm:cluster-admins"),
        false,
        true,
    ),
    (
        "front-proxy-client.crt",
        "front-proxy-client",
        None,
        false,
        true,
    ),
    (
        "apiserver-etcd-client.crt",
        "kube-apiserver-etcd-client",
        None,
        false,
        true,
    ),
    (
        "etcd/healthcheck-client.crt",
        "kube-etcd-healthcheck-client",
        None,
        false,
        true,
    ),
    ("etcd/members/cp1/server.crt", "cp1", None, true, true),
    ("etcd/members/cp2/peer.crt", "cp2", None, true, true),
    ("registry.crt", "kk-registry", None, true, false),
    ("ca.crt", "kubernetes", None, false, false),
    ("front-proxy-ca.crt", "front-proxy-ca", None, false, false),
];

fn cn(x509: &X509Certificate<'_>) -> Option<String> {
    let cn = x509.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_owned)
}

fn org(x509: &X509Certificate<'_>) -> Option<String> {
    let o = x509.subject().iter_organization().next()?;
    o.as_str().ok().map(str::to_owned)
}

#[test]
fn subjects_usages_keys_and_validity_are_kubeadms() {
    let tmp = tempfile::tempdir().expect("tmp");
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        .cast_signed();
    ensure(tmp.path(), &spec3()).expect("ensure");
    for (file, common_name, organization, server, client) in SUBJECTS {
        let pem = pem_of(tmp.path(), file);
        let x509 = pem.parse_x509().expect("x509");
        assert_eq!(cn(&x509).as_deref(), Some(common_name), "{file}");
        assert_eq!(org(&x509).as_deref(), organization, "{file}");
        let is_ca = file.ends_with("ca.crt");
        assert_eq!(x509.is_ca(), is_ca, "{file}");
        let ku = x509.key_usage().expect("ku").expect("has key usage").value;
        assert!(ku.digital_signature() && ku.key_encipherment(), "{file}");
        assert_eq!(ku.key_cert_sign(), is_ca, "{file}");
        let eku = x509
            .extended_key_usage()
            .expect("eku")
            .map(|e| e.value.clone());
        let (s, c) = eku.map_or((false, false), |e| (e.server_auth, e.client_auth));
        assert_eq!((s, c), (server, client), "{file}: serverAuth, clientAuth");
        let PublicKey::RSA(rsa) = x509.public_key().parsed().expect("key") else {
            panic!("{file}: not RSA");
        };
        assert_eq!(rsa.key_size(), 2048, "{file}");
        let validity = x509.validity();
        let (from, to) = (
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        );
        let days = if is_ca { 3650 } else { 365 };
        assert!(
            (now - 300 - from).abs() < 60,
            "{file}: not before {from}, now {now}"
        );
        assert!(
            (now + days * 86_400 - to).abs() < 60,
            "{file}: not after {to}"
        );
    }
}

#[test]
fn leaves_are_signed_by_their_ca_and_name_its_key() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    for (leaf, ca) in [
        ("apiserver.crt", "ca.crt"),
        ("registry.crt", "ca.crt"),
        ("front-proxy-client.crt", "front-proxy-ca.crt"),
        ("etcd/members/cp3/server.crt", "etcd/ca.crt"),
        ("apiserver-etcd-client.crt", "etcd/ca.crt"),
    ] {
        let (leaf_pem, ca_pem) = (pem_of(tmp.path(), leaf), pem_of(tmp.path(), ca));
        let (leaf_x, ca_x) = (
            leaf_pem.parse_x509().expect("x"),
            ca_pem.parse_x509().expect("x"),
        );
        leaf_x
            .verify_signature(Some(ca_x.public_key()))
            .expect("signed by its CA");
        assert_eq!(leaf_x.issuer(), ca_x.subject(), "{leaf}");
        let aki = leaf_x
            .iter_extensions()
            .find_map(|e| match e.parsed_extension() {
                x509_parser::extensions::ParsedExtension::AuthorityKeyIdentifier(aki) => {
                    aki.key_identifier.as_ref().map(|k| k.0.to_vec())
                }
                _ => None,
            });
        let ski = ca_x
            .iter_extensions()
            .find_map(|e| match e.parsed_extension() {
                x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(ski) => {
                    Some(ski.0.to_vec())
                }
                _ => None,
            });
        assert!(ski.is_some() && aki == ski, "{leaf}: authority key id");
    }
    // sa.pub is the public half of sa.key, as a PEM `PUBLIC KEY`.
    let public = fs::read_to_string(tmp.path().join("sa.pub")).expect("sa.pub");
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
    let key =
        rcgen::KeyPair::from_pem(&fs::read_to_string(tmp.path().join("sa.key")).expect("key"))
            .expect("sa.key");
    assert_eq!(key.public_key_pem(), public);
}

#[test]
fn sans_of_apiserver_etcd_and_registry() {
    let tmp = tempfile::tempdir().expect("tmp");
    ensure(tmp.path(), &spec3()).expect("ensure");
    let cases: [(&str, &[&str], &[&str]); 5] = [
        (
            "apiserver.crt",
            &[
                "cp1",
                "cp2",
                "cp3",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "lb.kk.internal",
            ],
            &[
                "10.233.0.1",
                "10.0.0.1",
                "10.0.0.2",
                "10.0.0.3",
                "10.0.0.100",
            ],
        ),
        (
            "etcd/members/cp1/server.crt",
            &["cp1", "localhost"],
            &["10.0.0.1", "127.0.0.1", "::1"],
        ),
        (
            "etcd/members/cp2/peer.crt",
            &["cp2", "localhost"],
            &["10.0.0.2", "127.0.0.1", "::1"],
        ),
        ("registry.crt", &["registry.kk.internal"], &["10.0.0.1"]),
        ("ca.crt", &["kubernetes"], &[]),
    ];
    for (file, dns, ips) in cases {
        let pem = pem_of(tmp.path(), file);
        let (got_dns, got_ips) = verify::sans(&pem.parse_x509().expect("x509"));
        assert_eq!(got_dns, dns, "{file}");
        let got_ips: Vec<String> = got_ips.iter().map(ToString::to_string).collect();
        assert_eq!(got_ips, ips, "{file}");
    }
}

#[test]
fn an_existing_ecdsa_ca_from_an_older_kk_is_kept_and_signs_the_rest() {
    let tmp = tempfile::tempdir().expect("tmp");
    let key = rcgen::KeyPair::generate().expect("ecdsa key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
    let cert = params.self_signed(&key).expect("ca");
    fs::write(tmp.path().join("ca.crt"), cert.pem()).expect("ca.crt");
    fs::write(tmp.path().join("ca.key"), key.serialize_pem()).expect("ca.key");
    let issued = ensure(tmp.path(), &spec3()).expect("ensure");
    assert_eq!(issued.ca_cert_pem(), cert.pem());
    assert!(!issued.created().contains(&tmp.path().join("ca.crt")));
    ensure(tmp.path(), &spec3()).expect("the leaves it signed verify on a rerun");
}

#[test]
fn registry_cert_reuses_the_ca_and_replaces_the_serving_pair() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("pki");
    let names = RegistryNames::parse(&["127.0.0.1".to_owned(), "localhost".to_owned()]);
    assert_eq!(names.dns, ["localhost"]);
    let first = issue_registry_cert(&dir, &names).expect("first");
    assert_eq!(first.ca_cert, dir.join("ca.crt"));
    let ca = fs::read(&first.ca_cert).expect("ca");
    let cert = fs::read(&first.cert).expect("cert");
    let other = RegistryNames::parse(&["registry.example".to_owned()]);
    let second = issue_registry_cert(&dir, &other).expect("second");
    assert_eq!(fs::read(&second.ca_cert).expect("ca"), ca, "the CA changed");
    assert_ne!(fs::read(&second.cert).expect("cert"), cert, "not reissued");
    let pem = pem_of(&dir, "registry.crt");
    assert_eq!(
        verify::sans(&pem.parse_x509().expect("x509")).0,
        ["registry.example"]
    );
    // ensure accepts what `registry cert` made, when the names agree.
    let mut spec = spec3();
    spec.registry = Some(other);
    let issued = ensure(&dir, &spec).expect("ensure");
    assert!(!issued.created().contains(&dir.join("registry.crt")));

    rm(&dir, "ca.key");
    let err = issue_registry_cert(&dir, &names).expect_err("half a CA");
    assert!(matches!(err, PkiError::HalfPair { .. }), "{err}");
}

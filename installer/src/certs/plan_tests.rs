//! Which names go to whom, and each node's share of a renewal.

use super::*;

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// A master copy with external etcd and kk's registry.
fn external(name: &str) -> bool {
    KK_CERTIFICATES.contains(&name)
}

/// A master copy with stacked etcd (no member certificates) and an external registry.
fn stacked(name: &str) -> bool {
    !matches!(name, "etcd-server" | "etcd-peer" | "registry")
}

#[test]
fn names_are_kks_or_kubeadms() {
    for (all, names, holds, kk, kubeadm) in [
        (
            true,
            &[][..],
            external as fn(&str) -> bool,
            &KK_CERTIFICATES[..],
            &KUBECONFIGS[..],
        ),
        (
            true,
            &[],
            stacked,
            &[
                "apiserver",
                "apiserver-kubelet-client",
                "front-proxy-client",
                "apiserver-etcd-client",
                "etcd-healthcheck-client",
            ][..],
            &[
                "etcd-healthcheck-client",
                "etcd-server",
                "etcd-peer",
                "admin.conf",
                "super-admin.conf",
                "controller-manager.conf",
                "scheduler.conf",
            ][..],
        ),
        (
            false,
            &["apiserver", "admin.conf"],
            external,
            &["apiserver"],
            &["admin.conf"],
        ),
        (false, &["etcd-server"], external, &["etcd-server"], &[]),
        (
            false,
            &["etcd-server"],
            stacked,
            &["etcd-server"],
            &["etcd-server"],
        ),
        (
            false,
            &["registry", "registry"],
            external,
            &["registry"],
            &[],
        ),
    ] {
        let selection = select(all, &strings(names), |n| Ok(holds(n))).expect("select");
        assert_eq!(selection.kk, kk, "{names:?}");
        assert_eq!(selection.kubeadm, kubeadm, "{names:?}");
    }
}

#[test]
fn unknown_names_and_no_names_are_refused() {
    let err = select(false, &strings(&["ca"]), |n| Ok(external(n))).expect_err("ca");
    assert!(
        err.to_string().contains("`ca` is not a certificate"),
        "{err}"
    );
    assert!(matches!(
        select(false, &[], |n| Ok(external(n))),
        Err(CertsError::NothingAsked)
    ));
}

fn facts(name: &str, control_plane: bool, files: &[(&str, &str)]) -> NodeFacts {
    NodeFacts {
        name: name.to_owned(),
        control_plane,
        files: files
            .iter()
            .map(|(f, d)| ((*f).to_owned(), (*d).to_owned()))
            .collect(),
    }
}

fn renewed(name: &'static str, file: &str) -> Renewed {
    Renewed {
        name,
        file: PathBuf::from(file),
    }
}

/// A node's plan as (node, `local -> remote` files, kubeadm's names, restarts).
type Summary = (String, Vec<String>, Vec<&'static str>, Vec<Restart>);

#[test]
fn each_node_gets_the_master_copys_files_it_has_and_kubeadms_names() {
    let dir = Path::new("/work/pki");
    let selection = Selection {
        kk: vec!["apiserver", "etcd-server", "registry"],
        kubeadm: vec!["admin.conf", "scheduler.conf"],
    };
    let renewed = [
        renewed("apiserver", "apiserver.crt"),
        renewed("etcd-server", "etcd/members/e1/server.crt"),
        renewed("etcd-server", "etcd/members/e2/server.crt"),
        renewed("registry", "registry.crt"),
    ];
    let keys: BTreeMap<PathBuf, String> = [
        ("apiserver.crt", "a"),
        ("etcd/members/e1/server.crt", "s1"),
        ("etcd/members/e2/server.crt", "s2"),
        ("registry.crt", "r"),
    ]
    .into_iter()
    .map(|(f, d)| (PathBuf::from(f), d.to_owned()))
    .collect();
    let nodes = [
        facts(
            "cp1",
            true,
            &[
                ("/etc/kubernetes/pki/apiserver.crt", "a"),
                ("/etc/kubernetes/admin.conf", "x"),
                ("/etc/kubernetes/scheduler.conf", "x"),
                ("/etc/kk/pki/registry.crt", "r"),
            ],
        ),
        // A file kubeadm made on the node (another key) is not kk's to replace.
        facts(
            "cp2",
            true,
            &[("/etc/kubernetes/pki/apiserver.crt", "other")],
        ),
        facts(
            "e1",
            false,
            &[("/etc/kubernetes/pki/etcd/server.crt", "s1")],
        ),
        // e2's file is e2's own: e1's renewed certificate never goes there.
        facts(
            "e2",
            false,
            &[("/etc/kubernetes/pki/etcd/server.crt", "s2")],
        ),
        facts("w1", false, &[]),
    ];

    let plans = plan(dir, &selection, &renewed, &keys, &nodes);

    let summary: Vec<Summary> = plans
        .into_iter()
        .map(|p| {
            let files = p
                .files
                .iter()
                .map(|(l, r)| format!("{} -> {r}", l.display()))
                .collect();
            (p.node, files, p.kubeadm, p.restarts)
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "cp1".to_owned(),
                vec![
                    "/work/pki/apiserver.crt -> /etc/kubernetes/pki/apiserver.crt".to_owned(),
                    "/work/pki/registry.crt -> /etc/kk/pki/registry.crt".to_owned(),
                ],
                vec!["admin.conf", "scheduler.conf"],
                vec![
                    Restart::StaticPod("kube-apiserver"),
                    Restart::StaticPod("kube-scheduler"),
                    Restart::Registry
                ],
            ),
            (
                "e1".to_owned(),
                vec![
                    "/work/pki/etcd/members/e1/server.crt -> /etc/kubernetes/pki/etcd/server.crt"
                        .to_owned()
                ],
                vec![],
                vec![Restart::Etcd],
            ),
            (
                "e2".to_owned(),
                vec![
                    "/work/pki/etcd/members/e2/server.crt -> /etc/kubernetes/pki/etcd/server.crt"
                        .to_owned()
                ],
                vec![],
                vec![Restart::Etcd],
            ),
        ]
    );
}

#[test]
fn master_copy_files_map_to_kubeadms_and_kks_paths() {
    for (file, node, path) in [
        (
            "apiserver.crt",
            "cp1",
            Some("/etc/kubernetes/pki/apiserver.crt"),
        ),
        (
            "etcd/healthcheck-client.crt",
            "e1",
            Some("/etc/kubernetes/pki/etcd/healthcheck-client.crt"),
        ),
        (
            "etcd/members/e1/peer.crt",
            "e1",
            Some("/etc/kubernetes/pki/etcd/peer.crt"),
        ),
        ("etcd/members/e1/peer.crt", "e2", None),
        ("registry.crt", "r", Some("/etc/kk/pki/registry.crt")),
    ] {
        assert_eq!(
            node_path(Path::new(file), node).as_deref(),
            path,
            "{file} on {node}"
        );
    }
}

#[test]
fn a_renewed_certificate_keeps_its_key_id_and_other_certificates_differ() {
    let tmp = tempfile::tempdir().expect("tmp");
    crate::pki::ensure(tmp.path(), &crate::pki::tests::spec3()).expect("ensure");
    let id = |file: &str| {
        let text = std::fs::read_to_string(tmp.path().join(file)).expect("read");
        key_id(&text).expect("a certificate")
    };
    let before = id("apiserver.crt");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(86_400);
    crate::pki::renew(tmp.path(), &["apiserver"], later).expect("renew");
    assert_eq!(id("apiserver.crt"), before);
    assert_ne!(id("registry.crt"), before);
    assert_eq!(key_id("not a certificate"), None);
}

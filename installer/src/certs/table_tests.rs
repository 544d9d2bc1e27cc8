//! Rows from a node's dump, and the table they print.

use base64::Engine as _;
use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair};

use super::*;

/// 2026-11-27 00:00 UTC.
const NOW: i64 = 1_795_737_600;

/// A self-signed certificate for `cn` (a CA with `ca`), valid until `not_after` (y, m, d).
fn cert(cn: &str, org: Option<&str>, ca: bool, not_after: (i32, u8, u8)) -> String {
    let mut params = CertificateParams::default();
    // The default names a CN of rcgen's own, which would keep its place before the O.
    params.distinguished_name = DistinguishedName::new();
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.distinguished_name.push(DnType::CommonName, cn);
    if ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    let key = KeyPair::generate().expect("key");
    params.self_signed(&key).expect("cert").pem()
}

fn dump() -> String {
    let admin = cert(
        "kubernetes-admin",
        Some("kubeadm:cluster-admins"),
        false,
        (2026, 12, 10),
    );
    let kubeconfig = format!(
        "apiVersion: v1\nusers:\n- name: kubernetes-admin\n  user:\n    client-certificate-data: {}\n    client-key-data: eHl6\n",
        base64::engine::general_purpose::STANDARD.encode(admin)
    );
    format!(
        "==> /etc/kubernetes/pki/apiserver.crt\n{}\n==> /etc/kubernetes/pki/ca.crt\n{}\n==> /etc/kubernetes/admin.conf\n{kubeconfig}\n==> /etc/kubernetes/pki/front-proxy-client.crt\n{}\n==> /etc/kubernetes/scheduler.conf\nusers:\n- user:\n    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem\n",
        cert("kube-apiserver", None, false, (2027, 11, 27)),
        cert("kubernetes", None, true, (2027, 6, 1)),
        cert("front-proxy-client", None, false, (2026, 11, 1)),
    )
}

#[test]
fn a_dump_gives_a_row_per_certificate_with_days_left_and_status() {
    let rows = rows("cp1", &dump(), NOW).expect("rows");
    let got: Vec<(&str, &str, i64, Status, bool)> = rows
        .iter()
        .map(|r| {
            (
                r.path.as_str(),
                r.subject.as_str(),
                r.days_left,
                r.status,
                r.ca,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "/etc/kubernetes/pki/apiserver.crt",
                "CN=kube-apiserver",
                365,
                Status::Ok,
                false
            ),
            (
                "/etc/kubernetes/pki/ca.crt",
                "CN=kubernetes",
                186,
                Status::Expiring,
                true
            ),
            (
                "/etc/kubernetes/admin.conf",
                "O=kubeadm:cluster-admins, CN=kubernetes-admin",
                13,
                Status::Expiring,
                false
            ),
            (
                "/etc/kubernetes/pki/front-proxy-client.crt",
                "CN=front-proxy-client",
                -26,
                Status::Expired,
                false
            ),
        ]
    );
}

#[test]
fn a_file_that_is_no_certificate_names_node_and_path() {
    let err = rows("cp2", "==> /etc/kk/pki/registry.crt\nnot a pem\n", NOW).expect_err("bad");
    let text = err.to_string();
    assert!(
        text.contains("`cp2`") && text.contains("`/etc/kk/pki/registry.crt`"),
        "{text}"
    );
}

#[test]
fn the_table_is_sorted_by_node_and_path_and_marks_what_needs_care() {
    let mut all = rows("cp2", &dump(), NOW).expect("rows");
    all.extend(rows("cp1", &dump(), NOW).expect("rows"));
    insta::assert_snapshot!(render(&all));
}

#[test]
fn json_has_the_same_rows() {
    let rows = rows("cp1", &dump(), NOW).expect("rows");
    let json = serde_json::to_value(&rows).expect("json");
    assert_eq!(json.as_array().map(Vec::len), Some(4));
    assert_eq!(json[3]["status"], "expired");
    assert_eq!(json[1]["days_left"], 186);
}

#[test]
fn files_listed_by_name_only_are_each_a_file() {
    let dump = "==> /etc/kubernetes/admin.conf\n==> /etc/kubernetes/super-admin.conf\n==> /etc/kk/pki/registry.crt\nPEM\nlines\n\n==> /etc/kubernetes/scheduler.conf\n";
    assert_eq!(
        files(dump),
        [
            ("/etc/kubernetes/admin.conf", ""),
            ("/etc/kubernetes/super-admin.conf", ""),
            ("/etc/kk/pki/registry.crt", "PEM\nlines\n\n"),
            ("/etc/kubernetes/scheduler.conf", ""),
        ]
    );
}

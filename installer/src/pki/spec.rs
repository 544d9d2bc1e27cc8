//! The catalogue: which certificates a [`PkiSpec`] needs, each with kubeadm's file name, common
//! name, organisation, extended key usages and subject alternative names.
//!
//! The values are those of kubeadm's `certlist.go` and `pkiutil` (v1.29 and later): the
//! kubelet client is in `kubeadm:cluster-admins` (no longer `system:masters`), the etcd clients
//! have no organisation, etcd's server and peer certificates are both server and client
//! certificates. The apiserver certificate is kubeadm's, widened to every control plane: kubeadm
//! makes one per node with that node's name and address, kk makes one that every control plane
//! shares, so one master copy serves them all.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use super::PkiError;
use super::{Member, PkiSpec, RegistryNames};

/// kubeadm's group for the apiserver's kubelet client (`ClusterAdminsGroupAndClusterRoleBinding`).
pub(super) const CLUSTER_ADMINS: &str = "kubeadm:cluster-admins";

/// One of the three certificate authorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CaId {
    /// `ca`: the cluster CA (apiserver, kubelets, kubeconfigs, and the kk registry).
    Cluster,
    /// `front-proxy-ca`: the aggregation layer's client CA.
    FrontProxy,
    /// `etcd/ca`: everything etcd.
    Etcd,
}

impl CaId {
    /// The path of its files under the PKI directory, without `.crt`/`.key`.
    pub(super) fn base(self) -> &'static str {
        match self {
            Self::Cluster => "ca",
            Self::FrontProxy => "front-proxy-ca",
            Self::Etcd => "etcd/ca",
        }
    }

    /// kubeadm's common name for it.
    pub(super) fn common_name(self) -> &'static str {
        match self {
            Self::Cluster => "kubernetes",
            Self::FrontProxy => "front-proxy-ca",
            Self::Etcd => "etcd-ca",
        }
    }
}

/// What a leaf certificate is for (its extended key usages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Usage {
    /// `serverAuth` only.
    Server,
    /// `clientAuth` only.
    Client,
    /// `serverAuth` and `clientAuth` (etcd's server and peer certificates).
    Both,
}

/// One leaf certificate to have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LeafSpec {
    /// Path under the PKI directory, without `.crt`/`.key`.
    pub(super) base: PathBuf,
    /// The CA that signs it.
    pub(super) ca: CaId,
    /// Subject common name.
    pub(super) common_name: String,
    /// Subject organisation, if any.
    pub(super) organization: Option<String>,
    /// Extended key usages.
    pub(super) usage: Usage,
    /// DNS subject alternative names, sorted and deduplicated.
    pub(super) dns: Vec<String>,
    /// IP subject alternative names, deduplicated, in order.
    pub(super) ips: Vec<IpAddr>,
}

impl LeafSpec {
    fn client(base: &str, ca: CaId, common_name: &str, organization: Option<&str>) -> Self {
        Self {
            base: PathBuf::from(base),
            ca,
            common_name: common_name.to_owned(),
            organization: organization.map(str::to_owned),
            usage: Usage::Client,
            dns: Vec::new(),
            ips: Vec::new(),
        }
    }
}

/// Every leaf certificate `spec` needs, after checking its names.
pub(super) fn leaves(spec: &PkiSpec) -> Result<Vec<LeafSpec>, PkiError> {
    if spec.control_planes.is_empty() {
        return Err(PkiError::NoControlPlane);
    }
    check_members(&spec.etcd_members)?;
    let mut leaves = vec![
        apiserver(spec)?,
        LeafSpec::client(
            "apiserver-kubelet-client",
            CaId::Cluster,
            "kube-apiserver-kubelet-client",
            Some(CLUSTER_ADMINS),
        ),
        LeafSpec::client(
            "front-proxy-client",
            CaId::FrontProxy,
            "front-proxy-client",
            None,
        ),
        LeafSpec::client(
            "apiserver-etcd-client",
            CaId::Etcd,
            "kube-apiserver-etcd-client",
            None,
        ),
        LeafSpec::client(
            "etcd/healthcheck-client",
            CaId::Etcd,
            "kube-etcd-healthcheck-client",
            None,
        ),
    ];
    if let Some(names) = &spec.registry {
        leaves.push(registry(names)?);
    }
    for member in &spec.etcd_members {
        leaves.push(etcd_member(member, "server"));
        leaves.push(etcd_member(member, "peer"));
    }
    Ok(leaves)
}

/// The directory of an etcd member's server and peer certificates.
pub(super) fn member_dir(name: &str) -> PathBuf {
    PathBuf::from("etcd/members").join(name)
}

/// kubeadm's `GetAPIServerAltNames`, for every control plane at once.
fn apiserver(spec: &PkiSpec) -> Result<LeafSpec, PkiError> {
    let mut sans = Sans::default();
    for name in [
        "kubernetes".to_owned(),
        "kubernetes.default".to_owned(),
        "kubernetes.default.svc".to_owned(),
        format!("kubernetes.default.svc.{}", spec.cluster_domain),
    ] {
        sans.add("apiserver", &name)?;
    }
    sans.ips.extend(spec.service_ips.iter().copied());
    for member in &spec.control_planes {
        sans.add("apiserver", &member.name)?;
        sans.ips.extend(member.ips.iter().copied());
    }
    sans.add("apiserver", &spec.endpoint_host)?;
    for extra in &spec.extra_apiserver_sans {
        sans.add("apiserver", extra)?;
    }
    Ok(sans.into_leaf(LeafSpec {
        base: PathBuf::from("apiserver"),
        ca: CaId::Cluster,
        common_name: "kube-apiserver".to_owned(),
        organization: None,
        usage: Usage::Server,
        dns: Vec::new(),
        ips: Vec::new(),
    }))
}

/// kubeadm's `getAltNames` for etcd: the member's name and `localhost`, its addresses and both
/// loopbacks. The common name is the member's name, as kubeadm's node name.
fn etcd_member(member: &Member, kind: &str) -> LeafSpec {
    let mut ips = member.ips.clone();
    ips.extend([
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ]);
    let sans = Sans {
        dns: BTreeSet::from([member.name.to_ascii_lowercase(), "localhost".to_owned()]),
        ips,
    };
    sans.into_leaf(LeafSpec {
        base: member_dir(&member.name).join(kind),
        ca: CaId::Etcd,
        common_name: member.name.clone(),
        organization: None,
        usage: Usage::Both,
        dns: Vec::new(),
        ips: Vec::new(),
    })
}

/// The kk registry's serving certificate, signed by the cluster CA that every node trusts.
pub(super) fn registry(names: &RegistryNames) -> Result<LeafSpec, PkiError> {
    if names.dns.is_empty() && names.ips.is_empty() {
        return Err(PkiError::NoRegistryName);
    }
    let mut sans = Sans::default();
    for name in &names.dns {
        sans.add("registry", name)?;
    }
    sans.ips.extend(names.ips.iter().copied());
    Ok(sans.into_leaf(LeafSpec {
        base: PathBuf::from("registry"),
        ca: CaId::Cluster,
        common_name: "kk-registry".to_owned(),
        organization: None,
        usage: Usage::Server,
        dns: Vec::new(),
        ips: Vec::new(),
    }))
}

/// Member names become directory names and SANs: they must be DNS names (so no `/`, no `..`)
/// and unique.
fn check_members(members: &[Member]) -> Result<(), PkiError> {
    let mut seen = BTreeSet::new();
    for member in members {
        if !is_dns_name(&member.name) || member.name.starts_with('*') {
            return Err(PkiError::MemberName {
                name: member.name.clone(),
            });
        }
        if !seen.insert(member.name.to_ascii_lowercase()) {
            return Err(PkiError::DuplicateMember {
                name: member.name.clone(),
            });
        }
    }
    Ok(())
}

/// A certificate's subject alternative names while they are gathered.
#[derive(Debug, Default)]
struct Sans {
    dns: BTreeSet<String>,
    ips: Vec<IpAddr>,
}

impl Sans {
    /// Adds `value` as an IP address if it is one, else as a DNS name.
    fn add(&mut self, certificate: &'static str, value: &str) -> Result<(), PkiError> {
        if let Ok(ip) = value.parse::<IpAddr>() {
            self.ips.push(ip);
        } else if is_dns_name(value) {
            self.dns.insert(value.to_ascii_lowercase());
        } else {
            return Err(PkiError::BadSan {
                certificate,
                value: value.to_owned(),
            });
        }
        Ok(())
    }

    /// `leaf` with these names, IPs deduplicated in first-seen order (as kubeadm does).
    fn into_leaf(self, leaf: LeafSpec) -> LeafSpec {
        let mut ips = Vec::with_capacity(self.ips.len());
        for ip in self.ips {
            if !ips.contains(&ip) {
                ips.push(ip);
            }
        }
        LeafSpec {
            dns: self.dns.into_iter().collect(),
            ips,
            ..leaf
        }
    }
}

/// A DNS name as a SAN may hold one: dot-separated labels of letters, digits, `-` and `_`, at
/// most 63 bytes each and 253 in all; the first label may be `*`.
pub(super) fn is_dns_name(value: &str) -> bool {
    let label = |(i, label): (usize, &str)| {
        (i == 0 && label == "*")
            || (!label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    };
    !value.is_empty() && value.len() <= 253 && value.split('.').enumerate().all(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, ip: &str) -> Member {
        Member {
            name: name.to_owned(),
            ips: vec![ip.parse().expect("ip")],
        }
    }

    fn spec() -> PkiSpec {
        PkiSpec {
            cluster_domain: "cluster.local".to_owned(),
            control_planes: vec![member("cp1", "10.0.0.1"), member("cp2", "10.0.0.2")],
            etcd_members: vec![member("cp1", "10.0.0.1")],
            endpoint_host: "lb.example.com".to_owned(),
            service_ips: vec!["10.233.0.1".parse().expect("ip")],
            extra_apiserver_sans: vec!["10.0.0.100".to_owned(), "CP1".to_owned()],
            registry: Some(RegistryNames {
                dns: vec!["registry.local".to_owned()],
                ips: vec!["10.0.0.1".parse().expect("ip")],
            }),
        }
    }

    #[test]
    fn apiserver_sans_cover_every_control_plane_and_kubernetes_names_once() {
        let leaf = apiserver(&spec()).expect("apiserver");
        assert_eq!(
            leaf.dns,
            [
                "cp1",
                "cp2",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "lb.example.com"
            ]
        );
        let ips: Vec<String> = leaf.ips.iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["10.233.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.100"]);
    }

    #[test]
    fn etcd_member_sans_are_kubeadms() {
        let leaf = etcd_member(&member("etcd-1", "192.168.1.5"), "peer");
        assert_eq!(leaf.base, PathBuf::from("etcd/members/etcd-1/peer"));
        assert_eq!(leaf.common_name, "etcd-1");
        assert_eq!(leaf.dns, ["etcd-1", "localhost"]);
        let ips: Vec<String> = leaf.ips.iter().map(ToString::to_string).collect();
        assert_eq!(ips, ["192.168.1.5", "127.0.0.1", "::1"]);
    }

    #[test]
    fn names_that_are_not_path_components_or_dns_names_are_refused() {
        for bad in [
            "", ".", "..", "a/b", "../etc", "a..b", "-a", "a b", "*", "é",
        ] {
            let mut spec = spec();
            spec.etcd_members = vec![member(bad, "10.0.0.9")];
            assert!(
                matches!(leaves(&spec), Err(PkiError::MemberName { .. })),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn duplicate_members_and_bad_sans_are_refused() {
        let mut dup = spec();
        dup.etcd_members = vec![member("a", "10.0.0.1"), member("A", "10.0.0.2")];
        assert!(matches!(
            leaves(&dup),
            Err(PkiError::DuplicateMember { .. })
        ));
        let mut bad = spec();
        bad.extra_apiserver_sans = vec!["not a name".to_owned()];
        let err = leaves(&bad).expect_err("bad SAN");
        assert!(err.to_string().contains("`not a name`"), "{err}");
        let mut none = spec();
        none.registry = Some(RegistryNames::default());
        assert!(matches!(leaves(&none), Err(PkiError::NoRegistryName)));
        // An external registry has its own certificate: kk makes none for it.
        let mut external = spec();
        external.registry = None;
        let names: Vec<PathBuf> = leaves(&external)
            .expect("leaves")
            .into_iter()
            .map(|leaf| leaf.base)
            .collect();
        assert!(!names.contains(&PathBuf::from("registry")), "{names:?}");
        let mut no_cp = spec();
        no_cp.control_planes.clear();
        assert!(matches!(leaves(&no_cp), Err(PkiError::NoControlPlane)));
    }

    #[test]
    fn dns_names() {
        for (name, ok) in [
            ("a", true),
            ("node-1.example.com", true),
            ("*.example.com", true),
            ("a_b", true),
            ("a.*", false),
            ("a..b", false),
            ("a.", false),
            (&"x".repeat(64), false),
        ] {
            assert_eq!(is_dns_name(name), ok, "{name}");
        }
    }
}

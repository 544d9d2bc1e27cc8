//! `network.proxy`: a proxy in a node's environment leaves the cluster's own traffic direct.
//!
//! kubeadm, run by kk, inherits the environment of kk's commands and copies its proxy
//! variables into the control-plane static pods; an operator's `kubectl` and `kubeadm` run in
//! a login shell. With `HTTP_PROXY` or `HTTPS_PROXY` set there, Go programs send every request
//! whose host `NO_PROXY` does not cover to the proxy: an airgapped proxy cannot reach the API
//! server, the nodes, Services or Pods, so joins, webhooks and aggregated APIs break. So
//! `NO_PROXY` must cover every node's address, the service and pod ranges and the
//! control-plane endpoint.
//!
//! Coverage follows Go's `golang.org/x/net/http/httpproxy` (what kubeadm, the kubelet and
//! containerd use): `NO_PROXY` (else `no_proxy`) is a comma-separated list of `*`, CIDRs
//! (`10.0.0.0/8`, host bits allowed), IPs and domain names, each with an optional `:port`; an
//! IP is covered by an equal IP entry or a CIDR holding it, a range by a CIDR holding all of
//! it, a name by the name itself or a parent domain (`example.com` and `.example.com` cover
//! `a.example.com`; only the former covers `example.com`). An entry with a port covers that
//! port only, so never a whole address.

use std::fmt::{self, Write as _};
use std::net::IpAddr;

use super::super::{CheckResult, Node};
use crate::facts::PROXY_SOURCES;
use crate::inventory::Cidr;

/// How many uncovered values a message lists before counting the rest.
const SHOWN: usize = 8;

/// What a request goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// An address, any port.
    Ip(IpAddr),
    /// Every address of a range, any port.
    Range(Cidr),
    /// A host name (or an IP written as the endpoint's host) and a port.
    Host(String, u16),
}

impl Target {
    /// Whether Go never proxies requests to it whatever `NO_PROXY` says: `localhost` and
    /// loopback addresses.
    fn always_direct(&self) -> bool {
        match self {
            Self::Ip(ip) => ip.is_loopback(),
            Self::Range(_) => false,
            Self::Host(host, _) => {
                host.eq_ignore_ascii_case("localhost")
                    || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
            }
        }
    }
}

/// A value `NO_PROXY` must cover, with what it is for messages.
#[derive(Debug, Clone)]
struct Required {
    target: Target,
    /// What the value is, for messages: ``node `node2` ``, `the service range`…
    what: String,
}

impl fmt::Display for Required {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::Ip(ip) => write!(f, "`{ip}` ({})", self.what),
            Target::Range(range) => write!(f, "`{range}` ({})", self.what),
            Target::Host(host, _) => write!(f, "`{host}` ({})", self.what),
        }
    }
}

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `*`.
    All,
    /// `address/prefix`, masked.
    Cidr(IpAddr, u8),
    /// An IP, with a port or not.
    Ip(IpAddr, Option<u16>),
    /// A domain: `.example.com` as `.example.com` with `exact: false`; `example.com` as
    /// `.example.com` with `exact: true` (it also covers `example.com` itself).
    Domain {
        suffix: String,
        exact: bool,
        port: Option<u16>,
    },
}

/// `NO_PROXY`'s entries, as Go's `httpproxy` parses them; unparsable ones are dropped.
fn entries(no_proxy: &str) -> Vec<Entry> {
    no_proxy
        .split(',')
        .map(|entry| entry.trim().to_ascii_lowercase())
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| {
            if entry == "*" {
                return Some(Entry::All);
            }
            if let Some((address, prefix)) = entry.split_once('/') {
                let address: IpAddr = address.parse().ok()?;
                let width = if address.is_ipv4() { 32 } else { 128 };
                let prefix: u8 = prefix.parse().ok().filter(|p| *p <= width)?;
                return Some(Entry::Cidr(masked(address, prefix), prefix));
            }
            let (host, port) = split_port(&entry);
            if let Ok(ip) = host.parse::<IpAddr>() {
                return Some(Entry::Ip(ip, port));
            }
            let host = host.strip_prefix('*').unwrap_or(host);
            let (suffix, exact) = match host.strip_prefix('.') {
                Some(_) => (host.to_owned(), false),
                None => (format!(".{host}"), true),
            };
            (suffix.len() > 1).then_some(Entry::Domain {
                suffix,
                exact,
                port,
            })
        })
        .collect()
}

/// `host:port`, `[v6]:port`, `[v6]`, or a bare host (a bare IPv6 address included).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        return (host, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    if entry.parse::<IpAddr>().is_ok() {
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

/// The address as a 128-bit number, IPv4 in the low 32 bits.
fn bits(address: IpAddr) -> u128 {
    match address {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// `address` with the bits after `prefix` cleared.
fn masked(address: IpAddr, prefix: u8) -> IpAddr {
    let width: u32 = if address.is_ipv4() { 32 } else { 128 };
    let host_bits = width - u32::from(prefix);
    let mask = u128::MAX.checked_shl(host_bits).unwrap_or(0);
    let network = bits(address) & mask;
    match address {
        // The network of an IPv4 address fits 32 bits.
        IpAddr::V4(_) => IpAddr::V4(u32::try_from(network).unwrap_or(0).into()),
        IpAddr::V6(_) => IpAddr::V6(network.into()),
    }
}

/// Whether CIDR `network/prefix` holds `address`.
fn holds(network: IpAddr, prefix: u8, address: IpAddr) -> bool {
    network.is_ipv4() == address.is_ipv4() && masked(address, prefix) == network
}

impl Entry {
    /// Whether requests to `target` go direct by this entry.
    fn covers(&self, target: &Target) -> bool {
        match (self, target) {
            (Self::All, _) => true,
            (Self::Cidr(network, prefix), Target::Ip(ip)) => holds(*network, *prefix, *ip),
            (Self::Cidr(network, prefix), Target::Range(range)) => {
                *prefix <= range.prefix() && holds(*network, *prefix, range.address())
            }
            (Self::Ip(address, None), Target::Ip(ip)) => address == ip,
            (Self::Ip(address, port), Target::Host(host, wanted)) => {
                host.parse::<IpAddr>().ok() == Some(*address) && port.is_none_or(|p| p == *wanted)
            }
            (Self::Cidr(network, prefix), Target::Host(host, _)) => host
                .parse::<IpAddr>()
                .is_ok_and(|ip| holds(*network, *prefix, ip)),
            (
                Self::Domain {
                    suffix,
                    exact,
                    port,
                },
                Target::Host(host, wanted),
            ) => {
                let host = host.to_ascii_lowercase();
                host.parse::<IpAddr>().is_err()
                    && (host.ends_with(suffix.as_str()) || (*exact && host == suffix[1..]))
                    && port.is_none_or(|p| p == *wanted)
            }
            _ => false,
        }
    }
}

/// What `NO_PROXY` must cover: every inventory host's addresses, the service and pod ranges,
/// the control-plane endpoint.
fn required(node: &Node) -> Vec<Required> {
    let cx = node.cx;
    let mut required = Vec::new();
    for host in cx.inventory.hosts() {
        let addresses = host
            .internal_ipv4
            .map(IpAddr::V4)
            .into_iter()
            .chain(host.internal_ipv6.map(IpAddr::V6));
        for address in addresses {
            required.push(Required {
                target: Target::Ip(address),
                what: format!("node `{}`", host.name),
            });
        }
    }
    let cni = &cx.config.cni;
    for (ranges, what) in [
        (cni.service_cidr, "the service range"),
        (cni.pod_cidr, "the pod range"),
    ] {
        for range in ranges.ranges() {
            required.push(Required {
                target: Target::Range(range),
                what: what.to_owned(),
            });
        }
    }
    let endpoint = &cx.config.kubernetes.control_plane_endpoint;
    required.push(Required {
        target: Target::Host(endpoint.host.clone(), endpoint.port),
        what: "the control-plane endpoint".to_owned(),
    });
    required
}

/// `network.proxy`: where `HTTP_PROXY` or `HTTPS_PROXY` (either case) is set on the node (kk's
/// commands' environment, a login shell's, `/etc/environment`), `NO_PROXY` (else `no_proxy`)
/// of the same environment covers every node's address, the service and pod ranges and the
/// control-plane endpoint.
pub(super) fn proxy(node: &Node) -> CheckResult {
    const ID: &str = "network.proxy";
    let name = node.name();
    let facts = node.facts;
    let required = required(node);
    let mut problems = Vec::new();
    let mut with_proxy = Vec::new();
    for source in PROXY_SOURCES {
        let proxies: Vec<&str> = ["http_proxy", "https_proxy"]
            .iter()
            .filter_map(|var| facts.proxy_var(source, var))
            .map(|(spelling, _)| spelling)
            .collect();
        if proxies.is_empty() {
            continue;
        }
        let set = proxies
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(" and ");
        let place = place(source);
        with_proxy.push(place);
        let Some((spelling, no_proxy)) = facts.proxy_var(source, "no_proxy") else {
            problems.push(format!(
                "{set} is set in {place}, but `NO_PROXY` is not, so the cluster's own traffic would go to the proxy"
            ));
            continue;
        };
        let entries = entries(no_proxy);
        let uncovered: Vec<&Required> = required
            .iter()
            .filter(|r| !r.target.always_direct() && !entries.iter().any(|e| e.covers(&r.target)))
            .collect();
        if !uncovered.is_empty() {
            problems.push(format!(
                "{set} is set in {place}, but `{spelling}` does not cover {}",
                shown(&uncovered)
            ));
        }
    }
    if with_proxy.is_empty() {
        return CheckResult::pass(ID, "no proxy set");
    }
    if problems.is_empty() {
        return CheckResult::pass(
            ID,
            format!(
                "a proxy is set in {}; `NO_PROXY` covers the nodes, the service and pod ranges and the control-plane endpoint",
                with_proxy.join(", ")
            ),
        );
    }
    CheckResult::fail(
        ID,
        format!(
            "node `{name}`: {}; fix: add the node addresses (or their network as a CIDR), the service and pod ranges and the control-plane endpoint's host to `NO_PROXY` and `no_proxy` there, or unset the proxy",
            problems.join("; ")
        ),
    )
}

/// A source of [`PROXY_SOURCES`] in words.
fn place(source: &str) -> &'static str {
    match source {
        "session" => "the environment kk's commands run in",
        "login shell" => "a login shell's environment",
        "/etc/environment" => "/etc/environment",
        _ => "the environment",
    }
}

/// The first [`SHOWN`] of `values`, and how many more.
fn shown(values: &[&Required]) -> String {
    let mut text = values
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if values.len() > SHOWN {
        let _ = write!(text, " and {} more", values.len() - SHOWN);
    }
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::super::Status::{Fail, Pass};
    use super::super::super::fixtures::{Fixture, config, expect};
    use super::*;

    fn set(fixture: &mut Fixture, node: &str, source: &str, vars: &[(&str, &str)]) {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        fixture.node(node).proxy_env.insert(source.to_owned(), vars);
    }

    /// Go's matching, entry by entry.
    #[test]
    fn entries_cover_as_go_matches() {
        let ip = |s: &str| Target::Ip(s.parse().expect(s));
        let range = |s: &str| Target::Range(s.parse().expect(s));
        let host = |s: &str, port| Target::Host(s.to_owned(), port);
        let table: &[(&str, Target, bool)] = &[
            ("*", ip("10.0.0.1"), true),
            ("10.0.0.1", ip("10.0.0.1"), true),
            ("10.0.0.1", ip("10.0.0.2"), false),
            ("10.0.0.0/24", ip("10.0.0.2"), true),
            // Host bits are allowed, as in Go's net.ParseCIDR.
            ("10.0.0.7/24", ip("10.0.0.2"), true),
            ("10.0.0.0/24", ip("10.0.1.2"), false),
            ("10.233.0.0/16", range("10.233.64.0/18"), true),
            ("10.233.0.0/18", range("10.233.0.0/18"), true),
            ("10.233.0.0/19", range("10.233.0.0/18"), false),
            ("10.233.0.1", range("10.233.0.0/18"), false),
            ("10.0.0.1:22", ip("10.0.0.1"), false),
            ("fd00::/8", ip("fd00::2"), true),
            ("fd00::2", ip("fd00::2"), true),
            ("[fd00::2]", ip("fd00::2"), true),
            ("[fd00::2]:6443", ip("fd00::2"), false),
            ("10.0.0.0/8", ip("fd00::2"), false),
            (
                "lb.kubesphere.local",
                host("lb.kubesphere.local", 6443),
                true,
            ),
            (".kubesphere.local", host("lb.kubesphere.local", 6443), true),
            (
                "*.kubesphere.local",
                host("lb.kubesphere.local", 6443),
                true,
            ),
            ("kubesphere.local", host("lb.kubesphere.local", 6443), true),
            (
                ".lb.kubesphere.local",
                host("lb.kubesphere.local", 6443),
                false,
            ),
            (
                "lb.kubesphere.local:6443",
                host("lb.kubesphere.local", 6443),
                true,
            ),
            (
                "lb.kubesphere.local:8443",
                host("lb.kubesphere.local", 6443),
                false,
            ),
            (
                "LB.KubeSphere.Local",
                host("lb.kubesphere.local", 6443),
                true,
            ),
            ("sphere.local", host("lb.kubesphere.local", 6443), false),
            ("10.0.0.100", host("10.0.0.100", 6443), true),
            ("10.0.0.0/24", host("10.0.0.100", 6443), true),
            ("10.0.0.100", host("lb.kubesphere.local", 6443), false),
            ("", ip("10.0.0.1"), false),
        ];
        for (no_proxy, target, covered) in table {
            let found = entries(no_proxy).iter().any(|e| e.covers(target));
            assert_eq!(found, *covered, "{no_proxy} {target:?}");
        }
    }

    /// The rule on node2 of the fixture (10.0.0.1–3, default ranges 10.233.0.0/18 and
    /// 10.233.64.0/18, endpoint `lb.kubesphere.local`): the variables of one source, the
    /// status, and words of the message.
    #[test]
    fn no_proxy_covers_the_cluster_where_a_proxy_is_set() {
        const ALL: &str = "10.0.0.0/24,10.233.0.0/17,.kubesphere.local";
        type Row = (
            &'static str,
            &'static [(&'static str, &'static str)],
            bool,
            &'static [&'static str],
        );
        let table: &[Row] = &[
            ("session", &[], true, &["no proxy set"]),
            (
                "session",
                &[("no_proxy", "10.0.0.1")],
                true,
                &["no proxy set"],
            ),
            ("session", &[("HTTPS_PROXY", "")], true, &["no proxy set"]),
            (
                "session",
                &[("https_proxy", "http://proxy:3128"), ("no_proxy", ALL)],
                true,
                &["kk's commands"],
            ),
            (
                "session",
                &[("HTTP_PROXY", "http://proxy:3128")],
                false,
                &[
                    "node `node2`",
                    "`HTTP_PROXY` is set",
                    "`NO_PROXY` is not",
                    "fix:",
                ],
            ),
            (
                "login shell",
                &[
                    ("http_proxy", "http://proxy:3128"),
                    ("no_proxy", "localhost,127.0.0.1,10.0.0.1,10.0.0.2"),
                ],
                false,
                &[
                    "a login shell's",
                    "`no_proxy` does not cover `10.0.0.3` (node `node3`)",
                    "`10.233.0.0/18` (the service range)",
                    "`10.233.64.0/18` (the pod range)",
                    "`lb.kubesphere.local` (the control-plane endpoint)",
                ],
            ),
            (
                "/etc/environment",
                &[("HTTPS_PROXY", "http://proxy:3128"), ("NO_PROXY", "*")],
                true,
                &["/etc/environment"],
            ),
            // Go reads `NO_PROXY` before `no_proxy`: a complete lower-case one does not help.
            (
                "session",
                &[
                    ("HTTPS_PROXY", "http://proxy:3128"),
                    ("NO_PROXY", "10.0.0.0/24"),
                    ("no_proxy", ALL),
                ],
                false,
                &["`NO_PROXY` does not cover `10.233.0.0/18`"],
            ),
            // A covering CIDR counts; IPs one by one too.
            (
                "session",
                &[
                    ("HTTPS_PROXY", "http://proxy:3128"),
                    (
                        "NO_PROXY",
                        "10.0.0.1, 10.0.0.2 ,10.0.0.3,10.233.0.0/18,10.233.64.0/18,lb.kubesphere.local",
                    ),
                ],
                true,
                &[],
            ),
        ];
        for (source, vars, passes, words) in table {
            let mut fixture = Fixture::three_nodes();
            set(&mut fixture, "node2", source, vars);
            let result = fixture.on("node2", "network.proxy");
            expect(&result, if *passes { Pass } else { Fail }, words);
            // Other nodes are judged on their own environment.
            expect(
                &fixture.on("node1", "network.proxy"),
                Pass,
                &["no proxy set"],
            );
        }
    }

    #[test]
    fn long_lists_are_counted() {
        let values: Vec<Required> = (1..=10)
            .map(|i| Required {
                target: Target::Ip(IpAddr::from([10, 0, 0, i])),
                what: format!("node `n{i}`"),
            })
            .collect();
        let refs: Vec<&Required> = values.iter().collect();
        let text = shown(&refs);
        assert!(
            text.starts_with("`10.0.0.1` (node `n1`), `10.0.0.2`"),
            "{text}"
        );
        assert!(
            text.ends_with("`10.0.0.8` (node `n8`) and 2 more"),
            "{text}"
        );
        assert_eq!(
            shown(&refs[..2]),
            "`10.0.0.1` (node `n1`), `10.0.0.2` (node `n2`)"
        );
    }

    #[test]
    fn every_node_address_and_both_families_of_a_dual_stack_cluster() {
        let mut fixture = Fixture::three_nodes();
        fixture.config = config(
            "  cni: {pod_cidr: '10.233.64.0/18,fd85:ee78:d8a6:8600::/56', service_cidr: '10.233.0.0/18,fd85:ee78:d8a6:8000::/108'}\n",
        );
        set(
            &mut fixture,
            "node1",
            "session",
            &[
                ("HTTPS_PROXY", "http://***@proxy:3128"),
                ("NO_PROXY", "10.0.0.0/8,lb.kubesphere.local"),
            ],
        );
        expect(
            &fixture.on("node1", "network.proxy"),
            Fail,
            &[
                "`fd85:ee78:d8a6:8000::/108` (the service range)",
                "`fd85:ee78:d8a6:8600::/56` (the pod range)",
            ],
        );
        let result = fixture.on("node1", "network.proxy");
        assert!(!result.message.contains("10.0.0.2"), "{}", result.message);
        // An endpoint given as an IP is an address to cover like the nodes'.
        let mut fixture = Fixture::three_nodes();
        set(
            &mut fixture,
            "node1",
            "session",
            &[
                ("HTTPS_PROXY", "http://proxy:3128"),
                ("NO_PROXY", "example.com"),
            ],
        );
        fixture.config = config("  kubernetes: {control_plane_endpoint: {host: 10.0.0.1}}\n");
        expect(
            &fixture.on("node1", "network.proxy"),
            Fail,
            &[
                "`10.0.0.1` (node `node1`)",
                "`10.0.0.1` (the control-plane endpoint)",
            ],
        );
        // Go never proxies `localhost` or loopback addresses.
        for host in ["localhost", "127.0.0.1"] {
            fixture.config = config(&format!(
                "  kubernetes: {{control_plane_endpoint: {{host: {host}}}}}\n"
            ));
            let result = fixture.on("node1", "network.proxy");
            assert!(
                !result.message.contains("control-plane endpoint)"),
                "{}",
                result.message
            );
        }
    }
}

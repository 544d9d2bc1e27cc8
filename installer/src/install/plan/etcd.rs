//! How an etcd member starts: bootstrapping the cluster with the other members of the plan,
//! joining a cluster that already runs (etcd's runtime reconfiguration: `member add` on a
//! healthy member, then the new member starts with `initial-cluster-state: existing` and the
//! current members plus itself), or restarting on its own data.
//!
//! The decision is made here from what the etcd step found on the node (its data directory)
//! and in the running cluster (`etcdctl member list`); the etcd phase only gathers those facts
//! and executes the decision.

use std::net::IpAddr;

/// A member as `etcdctl member list` (simple format) prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedMember {
    /// The member ID, hexadecimal (what `member remove` takes).
    pub id: String,
    /// Whether it has started (an added member is `unstarted` until it first runs).
    pub started: bool,
    /// Its name; empty until it has started.
    pub name: String,
    /// Its peer URLs, comma-separated.
    pub peer_urls: String,
}

/// Parses `etcdctl member list` output (`id, status, name, peer urls, client urls, learner`);
/// lines that are not members (warnings) are skipped.
pub fn parse_member_list(text: &str) -> Vec<ListedMember> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(", ").map(str::trim).collect();
            let [id, status, name, peer_urls, ..] = fields.as_slice() else {
                return None;
            };
            let hex = !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit());
            (hex && matches!(*status, "started" | "unstarted")).then(|| ListedMember {
                id: (*id).to_owned(),
                started: *status == "started",
                name: (*name).to_owned(),
                peer_urls: (*peer_urls).to_owned(),
            })
        })
        .collect()
}

/// The peer URL kk gives the member at `ip`.
pub fn peer_url(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(ip) => format!("https://{ip}:2380"),
        IpAddr::V6(ip) => format!("https://[{ip}]:2380"),
    }
}

/// The member of `listed` with `url` among its peer URLs.
pub fn listed_at<'a>(listed: &'a [ListedMember], url: &str) -> Option<&'a ListedMember> {
    listed
        .iter()
        .find(|member| member.peer_urls.split(',').any(|u| u == url))
}

/// How a member starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdStart {
    /// On its own data: the bootstrap settings of its `/etc/etcd.env` are kept as they are,
    /// since etcd reads `initial-cluster*` only when a member first starts — rewriting them
    /// would restart a healthy member for nothing.
    OwnData,
    /// With every member of the plan (`initial-cluster-state: new`): no cluster runs yet.
    Bootstrap,
    /// Joining the running cluster (`initial-cluster-state: existing`).
    Join {
        /// Whether `member add` is still needed (a rerun after a kill between `member add`
        /// and the start finds the member listed, unstarted, and only starts it).
        add: bool,
        /// `name=peer-url,…` of the current members plus this one.
        initial_cluster: String,
    },
}

/// How the member `name` at `ip` starts, from whether it has data and the members of the
/// running cluster (`None` when no other member answered healthy). `plan` names the members
/// of the plan, to name a listed member that has not started yet.
pub fn etcd_start(
    name: &str,
    ip: IpAddr,
    has_data: bool,
    running: Option<&[ListedMember]>,
    plan: &[(String, IpAddr)],
) -> EtcdStart {
    if has_data {
        return EtcdStart::OwnData;
    }
    let Some(listed) = running else {
        return EtcdStart::Bootstrap;
    };
    let own = peer_url(ip);
    let add = listed_at(listed, &own).is_none();
    let mut cluster: Vec<String> = listed
        .iter()
        .map(|member| {
            let first = member.peer_urls.split(',').next().unwrap_or_default();
            let named = plan
                .iter()
                .find(|(_, ip)| peer_url(*ip) == first)
                .map(|(planned, _)| planned.as_str());
            let member_name = if member.name.is_empty() {
                named.unwrap_or(name)
            } else {
                member.name.as_str()
            };
            format!("{member_name}={}", member.peer_urls)
        })
        .collect();
    if add {
        cluster.push(format!("{name}={own}"));
    }
    EtcdStart::Join {
        add,
        initial_cluster: cluster.join(","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTED: &str = "\
8e9e05c52164694d, started, node1, https://10.0.0.1:2380, https://10.0.0.1:2379, false
91bc3c398fb3c146, started, node2, https://10.0.0.2:2380, https://10.0.0.2:2379, false
{\"level\":\"warn\",\"msg\":\"noise\"}
";

    fn plan() -> Vec<(String, IpAddr)> {
        ["10.0.0.1", "10.0.0.2", "10.0.0.5"]
            .iter()
            .enumerate()
            .map(|(i, ip)| (format!("node{}", [1, 2, 5][i]), ip.parse().expect("ip")))
            .collect()
    }

    #[test]
    fn member_list_lines_are_parsed_and_noise_skipped() {
        let listed = parse_member_list(&format!(
            "{LISTED}a8266ecf031671f3, unstarted, , https://10.0.0.5:2380, , false\n"
        ));
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[0].id, "8e9e05c52164694d");
        assert!(listed[1].started && listed[1].name == "node2");
        assert!(!listed[2].started && listed[2].name.is_empty());
        assert_eq!(
            listed_at(&listed, "https://10.0.0.5:2380"),
            Some(&listed[2])
        );
        assert_eq!(listed_at(&listed, "https://10.0.0.9:2380"), None);
    }

    #[test]
    fn how_a_member_starts() {
        let plan = plan();
        let ip5: IpAddr = "10.0.0.5".parse().expect("ip");
        let running = parse_member_list(LISTED);
        let added = parse_member_list(&format!(
            "{LISTED}a8266ecf031671f3, unstarted, , https://10.0.0.5:2380, , false\n"
        ));
        let cluster = "node1=https://10.0.0.1:2380,node2=https://10.0.0.2:2380,\
                       node5=https://10.0.0.5:2380";
        let cases: [(&str, bool, Option<&[ListedMember]>, EtcdStart); 5] = [
            (
                "data, cluster running",
                true,
                Some(&running),
                EtcdStart::OwnData,
            ),
            ("data, nothing running", true, None, EtcdStart::OwnData),
            (
                "no data, nothing running",
                false,
                None,
                EtcdStart::Bootstrap,
            ),
            (
                "no data, cluster running without it",
                false,
                Some(&running),
                EtcdStart::Join {
                    add: true,
                    initial_cluster: cluster.to_owned(),
                },
            ),
            (
                "added before a kill, not started",
                false,
                Some(&added),
                EtcdStart::Join {
                    add: false,
                    initial_cluster: cluster.to_owned(),
                },
            ),
        ];
        for (case, has_data, running, want) in cases {
            assert_eq!(
                etcd_start("node5", ip5, has_data, running, &plan),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn an_ipv6_peer_url_is_bracketed() {
        assert_eq!(
            peer_url("fd00::5".parse().expect("ip")),
            "https://[fd00::5]:2380"
        );
    }
}

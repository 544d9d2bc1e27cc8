//! The cluster as the installer meets it: every node of the inventory connected, its facts
//! gathered, the measurements the precheck needs taken.
//!
//! This is the glue between the inventory (who), [`crate::ssh`] (how to reach them),
//! [`crate::facts`] (what they are) and [`crate::precheck`] (whether the install can work).
//! Nodes are reached in parallel, `concurrency` at a time; a node that cannot be reached — a
//! refused or changed host key above all — stops everything before any check runs, since a
//! precheck that skips a node would pass a cluster it never saw.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use bundle_spec::member::MemberKind;
use bundle_spec::{ArtifactKind, Bundle};
use serde::Deserialize;

use crate::facts::{self, Facts};
use crate::inventory::{self, Config, EndpointKind, Inventory};
use crate::precheck::{BundleFacts, ClusterFacts};
use crate::ssh::SshError;
use crate::ssh::{Auth, Connector, HostKeyPolicy, Node, NodeLog, Target, Timeouts, fan_out};

/// How the installer reaches the nodes: the global flags of `kk-install`.
#[derive(Debug, Clone)]
pub struct Reach {
    /// Host keys to trust, and whether to record new ones.
    pub host_keys: HostKeyPolicy,
    /// Nodes worked on at once.
    pub concurrency: usize,
    /// Where per-node logs (`logs/<node>.log`) and facts (`facts/<node>.json`) go.
    pub work_dir: PathBuf,
}

/// The SSH targets of every host of `inventory`, in inventory order.
pub fn targets(inventory: &Inventory) -> Vec<Target> {
    inventory
        .hosts()
        .iter()
        .map(|host| Target {
            name: host.name.clone(),
            connector: match &host.connector {
                inventory::Connector::Local => Connector::Local,
                inventory::Connector::Ssh(ssh) => Connector::Ssh {
                    host: ssh.host.clone(),
                    port: ssh.port,
                    user: ssh.user.clone(),
                    auth: auth_of(ssh),
                },
            },
        })
        .collect()
}

/// Checks every private key file the inventory names (it exists, it is closed to group and
/// others) before any node is reached.
pub fn check_keys(inventory: &Inventory) -> Result<(), crate::ssh::KeyFileError> {
    for host in inventory.hosts() {
        if let inventory::Connector::Ssh(ssh) = &host.connector
            && let Some(key) = &ssh.private_key
        {
            crate::ssh::check_key_file(&host.name, key)?;
        }
    }
    Ok(())
}

/// A given key first, then a given password; else the agent when one runs, else the user's
/// default key (as `ssh` would try them).
fn auth_of(ssh: &inventory::SshConnector) -> Auth {
    if let Some(key) = &ssh.private_key {
        return Auth::Key(key.clone());
    }
    if let Some(password) = &ssh.password {
        return Auth::Password(password.clone());
    }
    if std::env::var_os("SSH_AUTH_SOCK").is_some() {
        return Auth::Agent;
    }
    let ssh_dir = dirs_home().join(".ssh");
    let default = ["id_ed25519", "id_ecdsa", "id_rsa"]
        .iter()
        .map(|name| ssh_dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| ssh_dir.join("id_ed25519"));
    Auth::Key(default)
}

fn dirs_home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from)
}

/// Connects to every node; the first node that cannot be reached (in inventory order) is the
/// error.
pub async fn connect(inventory: &Inventory, reach: &Reach) -> Result<Vec<Node>, SshError> {
    let targets = targets(inventory);
    let logs = reach.work_dir.join("logs");
    let connected = fan_out(&targets, reach.concurrency, |target| {
        connect_one(target, reach, &logs)
    })
    .await;
    connected.into_iter().collect()
}

/// Connects to every node and gathers its facts (recorded as [`gather`] does), one future per
/// node: a node's facts are asked for as soon as it is connected, not after the last node's
/// handshake, and `--jobs` bounds nodes rather than two rounds of waves. The first node that
/// failed (in inventory order) is the error.
pub async fn connect_and_gather(
    inventory: &Inventory,
    reach: &Reach,
) -> Result<(Vec<Node>, BTreeMap<String, Facts>), SshError> {
    let targets = targets(inventory);
    let logs = reach.work_dir.join("logs");
    let gathered = fan_out(&targets, reach.concurrency, |target| {
        let logs = &logs;
        async move {
            let node = connect_one(target, reach, logs).await?;
            let facts = facts::gather(&node).await?;
            Ok::<_, SshError>((node, facts))
        }
    })
    .await;
    let mut nodes = Vec::with_capacity(gathered.len());
    let mut by_node = BTreeMap::new();
    for result in gathered {
        let (node, facts) = result?;
        record(&reach.work_dir, node.name(), &facts);
        by_node.insert(node.name().to_owned(), facts);
        nodes.push(node);
    }
    Ok((nodes, by_node))
}

async fn connect_one(target: &Target, reach: &Reach, logs: &Path) -> Result<Node, SshError> {
    // A log that cannot be opened must not stop the install; the run goes on unlogged.
    let log = NodeLog::open(logs, &target.name).unwrap_or_else(|_| NodeLog::discard());
    Node::connect(target, &reach.host_keys, Timeouts::default(), log).await
}

/// Gathers every node's facts and records them as `facts/<node>.json` in the work directory.
pub async fn gather(nodes: &[&Node], reach: &Reach) -> Result<BTreeMap<String, Facts>, SshError> {
    let gathered = fan_out(nodes, reach.concurrency, |node| facts::gather(node)).await;
    let mut by_node = BTreeMap::new();
    for (node, facts) in nodes.iter().zip(gathered) {
        let facts = facts?;
        record(&reach.work_dir, node.name(), &facts);
        by_node.insert(node.name().to_owned(), facts);
    }
    Ok(by_node)
}

/// Writes a node's facts for the operator (and as fixtures for rule tests); best effort.
fn record(work_dir: &Path, node: &str, facts: &Facts) {
    let dir = work_dir.join("facts");
    if std::fs::create_dir_all(&dir).is_ok()
        && let Ok(json) = serde_json::to_vec_pretty(facts)
    {
        let _ = std::fs::write(dir.join(format!("{node}.json")), json);
    }
}

/// What the precheck measures beyond the facts: the etcd disk (fio, on etcd members that have
/// it) and whether the kube-vip address already answers.
pub async fn measure(
    inventory: &Inventory,
    config: &Config,
    nodes: &[&Node],
    facts: &BTreeMap<String, Facts>,
    fio_size: &str,
) -> ClusterFacts {
    // The hosts that will run etcd: the `etcd` group, or the control planes when it is stacked.
    let etcd: Vec<&str> = crate::precheck::etcd_members(inventory, config)
        .iter()
        .map(|h| h.name.as_str())
        .collect();
    let members: Vec<&Node> = nodes
        .iter()
        .copied()
        .filter(|n| etcd.contains(&n.name()))
        .filter(|n| facts.get(n.name()).is_some_and(|f| f.has_command("fio")))
        .collect();
    // Every member at once: each measures its own disk, and one after another made the check
    // take members × the fio run.
    let measured = fan_out(&members, members.len(), |node| fsync_p99(node, fio_size)).await;
    let etcd_fsync_p99_seconds = members
        .iter()
        .zip(measured)
        .filter_map(|(node, p99)| Some((node.name().to_owned(), p99?)))
        .collect();
    let endpoint = &config.kubernetes.control_plane_endpoint;
    let vip_answers = match &endpoint.kind {
        EndpointKind::KubeVip(vip) => {
            Some(answers(probe_addresses(vip.address, endpoint.port)).await)
        }
        _ => None,
    };
    ClusterFacts {
        vip_answers,
        etcd_fsync_p99_seconds,
    }
}

/// etcd's disk check: sequential 2300-byte writes, each followed by fdatasync, in a scratch
/// directory under `/var/lib` (where etcd keeps its data); the p99 fdatasync latency.
async fn fsync_p99(node: &Node, size: &str) -> Option<f64> {
    let command = format!(
        "d=$(mktemp -d /var/lib/kk-fio.XXXXXX) && \
         fio --rw=write --ioengine=sync --fdatasync=1 --directory=\"$d\" --size={size} --bs=2300 \
         --name=etcd-fsync --output-format=json; rc=$?; rm -rf \"$d\"; exit $rc"
    );
    let output = node.run(&command).await.ok()?;
    if !output.success() {
        return None;
    }
    fio_p99(&output.stdout_text())
}

/// `jobs[0].sync.lat_ns.percentile["99.000000"]` of fio's JSON, in seconds.
fn fio_p99(json: &str) -> Option<f64> {
    #[derive(Deserialize)]
    struct Report {
        jobs: Vec<Job>,
    }
    #[derive(Deserialize)]
    struct Job {
        sync: Sync,
    }
    #[derive(Deserialize)]
    struct Sync {
        lat_ns: Latency,
    }
    #[derive(Deserialize)]
    struct Latency {
        percentile: BTreeMap<String, f64>,
    }
    // fio may print notes before its JSON.
    let start = json.find('{')?;
    let report: Report = serde_json::from_str(&json[start..]).ok()?;
    let nanos = report
        .jobs
        .first()?
        .sync
        .lat_ns
        .percentile
        .get("99.000000")?;
    Some(nanos / 1e9)
}

/// SSH's port: a machine holding the address most likely answers there.
const SSH_PORT: u16 = 22;

/// Where the VIP probe knocks for `address`: the API server's port of the control-plane
/// endpoint (what would clash with kube-vip), then SSH.
fn probe_addresses(address: IpAddr, api_server_port: u16) -> Vec<SocketAddr> {
    let mut ports = vec![api_server_port];
    if api_server_port != SSH_PORT {
        ports.push(SSH_PORT);
    }
    ports
        .into_iter()
        .map(|port| SocketAddr::new(address, port))
        .collect()
}

/// Whether anything answers at one of `addresses`: a TCP connection that is accepted or
/// actively refused means a machine holds the address.
async fn answers(addresses: Vec<SocketAddr>) -> bool {
    tokio::task::spawn_blocking(move || {
        addresses.iter().any(|address| {
            match TcpStream::connect_timeout(address, Duration::from_secs(1)) {
                Ok(_) => true,
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionRefused,
            }
        })
    })
    .await
    .unwrap_or(false)
}

/// What the precheck needs to know about the bundle, from its verified header.
pub fn bundle_facts(bundle: &Bundle) -> BundleFacts {
    let description = bundle.description();
    let mut platforms: Vec<String> = description
        .artifacts
        .iter()
        .filter_map(|a| a.platform.clone())
        .collect();
    platforms.sort();
    platforms.dedup();
    let of_kind = |kind: ArtifactKind| -> Vec<String> {
        let mut names: Vec<String> = description
            .artifacts
            .iter()
            .filter(|a| a.kind == kind)
            .map(|a| {
                if kind == ArtifactKind::Image {
                    a.reference.clone()
                } else {
                    a.name.clone()
                }
            })
            .collect();
        names.dedup();
        names
    };
    let kubernetes_version = description
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Binary && a.name == "kubeadm")
        .map(|a| a.version.clone());
    BundleFacts {
        platforms,
        kubernetes_version,
        content_bytes: bundle.content_size(),
        blobs: bundle
            .checksums()
            .iter()
            .filter_map(|(path, _)| match path.kind() {
                MemberKind::Blob(digest) => Some(digest.hex()),
                _ => None,
            })
            .collect(),
        binaries: of_kind(ArtifactKind::Binary),
        images: of_kind(ArtifactKind::Image),
        packages: description.packages.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::{fio_p99, probe_addresses};

    #[test]
    fn the_vip_probe_knocks_at_the_endpoint_port_then_ssh() {
        let vip = "10.0.0.100".parse().expect("ip");
        for (port, expected) in [
            (6443, &["10.0.0.100:6443", "10.0.0.100:22"][..]),
            (8443, &["10.0.0.100:8443", "10.0.0.100:22"][..]),
            (22, &["10.0.0.100:22"][..]),
        ] {
            let addresses: Vec<String> = probe_addresses(vip, port)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(addresses, expected, "{port}");
        }
    }

    #[test]
    fn reads_the_p99_fdatasync_latency_of_fio() {
        let json = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"fio version":"fio-3.33","jobs":[{"jobname":"etcd-fsync","sync":{"total_ios":0,
 "lat_ns":{"min":1,"mean":2.0,"percentile":{"90.000000":3000000,"99.000000":5472256,"99.900000":9000000}}}}]}"#;
        let p99 = fio_p99(json).expect("p99");
        assert!((p99 - 0.005_472_256).abs() < 1e-12, "{p99}");
        assert_eq!(fio_p99("fio: no space left"), None);
    }
}

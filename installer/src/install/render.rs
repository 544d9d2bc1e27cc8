//! The files the install writes on nodes, rendered from the plan. Pure text in, text out, so
//! each format is table-tested against what the program reading it expects.

use std::fmt::Write as _;
use std::net::IpAddr;

pub mod docker;
pub mod kubernetes;
pub mod multus;

/// Where node-side files live: the contract tests and operators rely on.
pub mod paths {
    /// The CA every node trusts kk's registry with (containerd's `hosts.toml`, `kk-install fetch`).
    pub const TRUST_CA: &str = "/etc/kk/pki/ca.crt";
    /// The registry's serving certificate and key, on the registry host.
    pub const REGISTRY_CERT: &str = "/etc/kk/pki/registry.crt";
    /// The registry's key.
    pub const REGISTRY_KEY: &str = "/etc/kk/pki/registry.key";
    /// The content store the registry serves.
    pub const STORE: &str = "/var/lib/kk/store";
    /// Where an uploaded bundle waits to be unpacked (removed afterwards).
    pub const INCOMING: &str = "/var/lib/kk/incoming";
    /// The registry host's kk-install (`unpack`, `registry serve`).
    pub const KK_INSTALL: &str = "/usr/local/bin/kk-install";
    /// The node agent (`kk-node fetch`, `kk-node ping`), on every node.
    pub const KK_NODE: &str = "/usr/local/bin/kk-node";
    /// containerd's mirror directory.
    pub const CERTS_D: &str = "/etc/containerd/certs.d";
    /// `username:password` of an external registry (root only), for `kk-install fetch` and
    /// the probe pull.
    pub const REGISTRY_AUTH: &str = "/etc/kk/registry-auth";
    /// The drop-ins kk's containerd config imports (other tools' settings, e.g. a GPU runtime).
    pub const CONTAINERD_DROP_INS: &str = "/etc/containerd/conf.d";
    /// The record of what kk did on the node.
    pub const INSTALLED: &str = "/etc/kubekey/installed.json";
    /// etcd's certificates.
    pub const ETCD_PKI: &str = "/etc/kubernetes/pki/etcd";
}

/// Major version of a containerd version string (`1.7.24`, `v2.0.4`).
pub fn containerd_major(version: &str) -> Option<u32> {
    version
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// `/etc/containerd/config.toml` in the config version the bundled containerd reads: version 2
/// for containerd 1.x, version 3 (the CRI plugin split in two) for 2.x. The CRI plugin uses the
/// systemd cgroup driver (as the kubelet is configured), the pause image by its original name,
/// and `certs.d` for registry hosts, where kk's registry is every host's mirror.
///
/// It imports the drop-ins of [`paths::CONTAINERD_DROP_INS`] (where other tools put their
/// settings, as on EKS and Gardener nodes): the install then checks the merged result, so a
/// drop-in may add a runtime but not take kk's settings away unnoticed.
pub fn containerd_config(major: u32, pause_image: &str) -> String {
    let certs_d = paths::CERTS_D;
    let drop_ins = paths::CONTAINERD_DROP_INS;
    if major >= 2 {
        format!(
            "# Written by kk-install: containerd 2.x (config version 3).\n\
             version = 3\n\
             imports = ['{drop_ins}/*.toml']\n\n\
             [plugins.'io.containerd.cri.v1.images']\n\
             \x20 snapshotter = 'overlayfs'\n\n\
             [plugins.'io.containerd.cri.v1.images'.pinned_images]\n\
             \x20 sandbox = '{pause_image}'\n\n\
             [plugins.'io.containerd.cri.v1.images'.registry]\n\
             \x20 config_path = '{certs_d}'\n\n\
             [plugins.'io.containerd.cri.v1.runtime'.containerd]\n\
             \x20 default_runtime_name = 'runc'\n\n\
             [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n\
             \x20 runtime_type = 'io.containerd.runc.v2'\n\n\
             [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n\
             \x20 BinaryName = '/usr/local/sbin/runc'\n\
             \x20 SystemdCgroup = true\n"
        )
    } else {
        let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
        format!(
            "# Written by kk-install: containerd 1.x (config version 2).\n\
             version = 2\n\
             imports = [\"{drop_ins}/*.toml\"]\n\n\
             [{cri}]\n\
             \x20 sandbox_image = \"{pause_image}\"\n\n\
             [{cri}.containerd]\n\
             \x20 snapshotter = \"overlayfs\"\n\
             \x20 default_runtime_name = \"runc\"\n\n\
             [{cri}.containerd.runtimes.runc]\n\
             \x20 runtime_type = \"io.containerd.runc.v2\"\n\n\
             [{cri}.containerd.runtimes.runc.options]\n\
             \x20 BinaryName = \"/usr/local/sbin/runc\"\n\
             \x20 SystemdCgroup = true\n\n\
             [{cri}.registry]\n\
             \x20 config_path = \"{certs_d}\"\n"
        )
    }
}

/// The upstream server of a registry host, as containerd would reach it without a mirror.
fn upstream_server(host: &str) -> String {
    match host {
        "docker.io" => "https://registry-1.docker.io".to_owned(),
        _ => format!("https://{host}"),
    }
}

/// The registry every image host is mirrored to, as [`hosts_toml`] writes it (the plan's
/// `RegistryPlan::mirror` gives it).
#[derive(Debug, Clone, Copy)]
pub struct Mirror<'a> {
    /// `host:port` of the registry by its name (`server` without `upstream_fallback`).
    pub address: &'a str,
    /// The registry hosts, `host:port`, each a `[host]` table in this order (containerd tries
    /// them in file order, the next when one fails); none: the one `address`.
    pub hosts: &'a [String],
    /// The CA file the node trusts it with.
    pub ca: &'a str,
    /// Whether containerd may fall back to the image host's own server.
    pub upstream_fallback: bool,
    /// An external registry, which holds the images under `<host>/…`; kk's registry is asked
    /// with `?ns=<host>` instead.
    pub external: bool,
}

/// `/etc/containerd/certs.d/<host>/hosts.toml`: the plan's registry is the mirror for `host`,
/// trusted through its CA ([`Mirror::ca`]), never with `skip_verify`. Pulls keep the
/// original names. kk's registry is asked with `?ns=<host>`; an external registry holds the
/// images under `<host>/…` (as the push put them), so its mirror URL carries that path and
/// `override_path` keeps containerd from adding its own `/v2`.
///
/// containerd falls back to `server` when no mirror answers. Unless `upstream_fallback`, that is
/// the registry too: a pull then fails there, naming the image, instead of trying the internet
/// from a machine that has no way out.
pub fn hosts_toml(host: &str, registry: &Mirror<'_>) -> String {
    let server = if registry.upstream_fallback {
        upstream_server(host)
    } else {
        format!("https://{}", registry.address)
    };
    let (which, override_path) = if registry.external {
        ("the external registry", "\x20 override_path = true\n")
    } else {
        ("kk's registry", "")
    };
    let mut text = format!(
        "# Written by kk-install: pulls of {host} images go to {which}.\n\
         server = \"{server}\"\n"
    );
    for address in mirror_addresses(registry) {
        let _ = write!(
            text,
            "\n[host.\"{mirror}\"]\n\
             \x20 capabilities = [\"pull\", \"resolve\"]\n\
             \x20 ca = \"{ca}\"\n{override_path}",
            mirror = host_url(host, address, registry.external),
            ca = registry.ca,
        );
    }
    text
}

/// The `[host."…"]` key of the first mirror in [`hosts_toml`] for `host` (an external
/// registry has only one).
pub fn mirror_url(host: &str, registry: &Mirror<'_>) -> String {
    let first = mirror_addresses(registry)
        .next()
        .unwrap_or(registry.address);
    host_url(host, first, registry.external)
}

/// [`Mirror::hosts`], or the one [`Mirror::address`] when it names none.
fn mirror_addresses<'a>(registry: &Mirror<'a>) -> impl Iterator<Item = &'a str> {
    let one = registry.hosts.is_empty().then_some(registry.address);
    registry.hosts.iter().map(String::as_str).chain(one)
}

/// The `[host."…"]` key of the mirror at `address`: an external registry's URL carries the
/// host's path, kk's registry is asked with `?ns=<host>`.
fn host_url(host: &str, address: &str, external: bool) -> String {
    if external {
        format!("https://{address}/v2/{host}")
    } else {
        format!("https://{address}")
    }
}

/// The CRI plugin's credentials for each registry host of `auth` (`host`, `username`,
/// `password`), appended to [`containerd_config`]: `registry.configs."<host>".auth` of
/// `io.containerd.grpc.v1.cri` for containerd 1.x (config version 2), of
/// `io.containerd.cri.v1.images` for 2.x (version 3) — the tables containerd's registry
/// documentation gives for each. `hosts.toml` has no place for credentials; the CRI looks
/// them up by the host it pulls from, the mirror's. Empty without credentials.
pub fn containerd_registry_auth(major: u32, auth: &[(&str, &str, &str)]) -> String {
    let plugin = if major >= 2 {
        "io.containerd.cri.v1.images"
    } else {
        "io.containerd.grpc.v1.cri"
    };
    let mut text = String::new();
    for (host, username, password) in auth {
        let _ = write!(
            text,
            "\n[plugins.\"{plugin}\".registry.configs.\"{host}\".auth]\n\
             \x20 username = {username}\n\
             \x20 password = {password}\n",
            username = toml_string(username),
            password = toml_string(password),
        );
    }
    text
}

/// `text` as a TOML basic string (a password may hold quotes or backslashes).
fn toml_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(quoted, "\\u{:04X}", u32::from(c));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// `/etc/crictl.yaml`.
pub fn crictl_yaml() -> &'static str {
    "runtime-endpoint: unix:///run/containerd/containerd.sock\n\
     image-endpoint: unix:///run/containerd/containerd.sock\n\
     timeout: 10\n"
}

/// containerd's service: the kubelet's CRI with the containerd runtime.
pub const CONTAINERD_UNIT: &str = "containerd.service";

/// `containerd.service`, shaped like upstream's.
pub fn containerd_unit() -> &'static str {
    "# Written by kk-install (upstream's containerd.service).\n\
     [Unit]\n\
     Description=containerd container runtime\n\
     Documentation=https://containerd.io\n\
     After=network.target local-fs.target dbus.service\n\n\
     [Service]\n\
     ExecStartPre=-/sbin/modprobe overlay\n\
     ExecStart=/usr/local/bin/containerd\n\
     Type=notify\n\
     Delegate=yes\n\
     KillMode=process\n\
     Restart=always\n\
     RestartSec=5\n\
     LimitNPROC=infinity\n\
     LimitCORE=infinity\n\
     TasksMax=infinity\n\
     OOMScoreAdjust=-999\n\n\
     [Install]\n\
     WantedBy=multi-user.target\n"
}

/// `kk-registry.service`: this same binary serving the store read-only over TLS.
pub fn registry_unit(listen: &str) -> String {
    format!(
        "# Written by kk-install.\n\
         [Unit]\n\
         Description=kk registry: the bundle's images, binaries and charts, read-only\n\
         After=network-online.target\n\
         Wants=network-online.target\n\n\
         [Service]\n\
         ExecStart={kk} registry serve --store {store} --listen {listen} --tls-cert {cert} --tls-key {key}\n\
         Restart=on-failure\n\
         RestartSec=2\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        kk = paths::KK_INSTALL,
        store = paths::STORE,
        cert = paths::REGISTRY_CERT,
        key = paths::REGISTRY_KEY,
    )
}

/// The address `kk-registry.service` listens on for `port`: every address of the host's family.
pub fn registry_listen(host_ip: IpAddr, port: u16) -> String {
    match host_ip {
        IpAddr::V4(_) => format!("0.0.0.0:{port}"),
        IpAddr::V6(_) => format!("[::]:{port}"),
    }
}

/// `etcd.service`: the member's settings come from `/etc/etcd.env`.
pub fn etcd_unit() -> &'static str {
    "# Written by kk-install.\n\
     [Unit]\n\
     Description=etcd key-value store\n\
     Documentation=https://etcd.io\n\
     After=network-online.target\n\
     Wants=network-online.target\n\n\
     [Service]\n\
     Type=notify\n\
     EnvironmentFile=/etc/etcd.env\n\
     ExecStart=/usr/local/bin/etcd\n\
     Restart=always\n\
     RestartSec=5\n\
     LimitNOFILE=65536\n\n\
     [Install]\n\
     WantedBy=multi-user.target\n"
}

/// A URL host: an IPv6 address in brackets.
fn url_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    }
}

/// `/etc/etcd.env` of `member` in a cluster of `members` (name, address), with TLS and
/// client-certificate authentication for clients and peers.
pub fn etcd_env(member: &str, ip: IpAddr, members: &[(String, IpAddr)]) -> String {
    let cluster = members
        .iter()
        .map(|(name, ip)| format!("{name}=https://{}:2380", url_host(*ip)))
        .collect::<Vec<_>>()
        .join(",");
    etcd_env_of(member, ip, &cluster, "new")
}

/// `/etc/etcd.env` of `member` joining a running cluster: `initial_cluster` names the current
/// members plus itself, and the state is `existing`.
pub fn etcd_env_joining(member: &str, ip: IpAddr, initial_cluster: &str) -> String {
    etcd_env_of(member, ip, initial_cluster, "existing")
}

/// The bootstrap settings etcd reads only when a member first starts.
const ETCD_BOOTSTRAP_KEYS: [&str; 2] = ["ETCD_INITIAL_CLUSTER=", "ETCD_INITIAL_CLUSTER_STATE="];

/// `rendered` with the bootstrap settings (`ETCD_INITIAL_CLUSTER*`) of `current`, the member's
/// file as it is: a member with data ignores them, so a member added later changes nothing in
/// the others' files (and restarts none of them).
pub fn etcd_env_keeping_bootstrap(rendered: &str, current: &str) -> String {
    let kept = |key: &str| current.lines().find(|line| line.starts_with(key));
    let mut text = String::new();
    for line in rendered.lines() {
        let line = ETCD_BOOTSTRAP_KEYS
            .iter()
            .find(|key| line.starts_with(*key))
            .and_then(|key| kept(key))
            .unwrap_or(line);
        text.push_str(line);
        text.push('\n');
    }
    text
}

fn etcd_env_of(member: &str, ip: IpAddr, cluster: &str, state: &str) -> String {
    let host = url_host(ip);
    let pki = paths::ETCD_PKI;
    let loopback = if ip.is_ipv4() { "127.0.0.1" } else { "[::1]" };
    format!(
        "# Written by kk-install.\n\
         ETCD_NAME={member}\n\
         ETCD_DATA_DIR=/var/lib/etcd\n\
         ETCD_LISTEN_PEER_URLS=https://{host}:2380\n\
         ETCD_INITIAL_ADVERTISE_PEER_URLS=https://{host}:2380\n\
         ETCD_LISTEN_CLIENT_URLS=https://{host}:2379,https://{loopback}:2379\n\
         ETCD_ADVERTISE_CLIENT_URLS=https://{host}:2379\n\
         ETCD_INITIAL_CLUSTER={cluster}\n\
         ETCD_INITIAL_CLUSTER_STATE={state}\n\
         ETCD_INITIAL_CLUSTER_TOKEN=kk-etcd\n\
         ETCD_CERT_FILE={pki}/server.crt\n\
         ETCD_KEY_FILE={pki}/server.key\n\
         ETCD_TRUSTED_CA_FILE={pki}/ca.crt\n\
         ETCD_CLIENT_CERT_AUTH=true\n\
         ETCD_PEER_CERT_FILE={pki}/peer.crt\n\
         ETCD_PEER_KEY_FILE={pki}/peer.key\n\
         ETCD_PEER_TRUSTED_CA_FILE={pki}/ca.crt\n\
         ETCD_PEER_CLIENT_CERT_AUTH=true\n"
    )
}

/// The client URL of every member (kube-apiserver's `etcd.external.endpoints`).
pub fn etcd_client_urls(members: &[(String, IpAddr)]) -> Vec<String> {
    members
        .iter()
        .map(|(_, ip)| format!("https://{}:2379", url_host(*ip)))
        .collect()
}

/// The client URLs of every member, comma-separated (`etcdctl --endpoints`).
pub fn etcd_endpoints(members: &[(String, IpAddr)]) -> String {
    etcd_client_urls(members).join(",")
}

/// `/etc/modules-load.d/kk.conf`.
pub fn modules_conf() -> &'static str {
    "# Written by kk-install: what containerd and the kubelet need.\noverlay\nbr_netfilter\n"
}

/// The sysctls the os phase sets, with their values.
pub fn sysctls(ipv6: bool) -> Vec<(&'static str, &'static str)> {
    let mut list = vec![
        ("net.ipv4.ip_forward", "1"),
        ("net.bridge.bridge-nf-call-iptables", "1"),
    ];
    if ipv6 {
        list.push(("net.ipv6.conf.all.forwarding", "1"));
        list.push(("net.bridge.bridge-nf-call-ip6tables", "1"));
    }
    list
}

/// `/etc/sysctl.d/99-kk.conf`.
pub fn sysctl_conf(ipv6: bool) -> String {
    let mut text =
        "# Written by kk-install: forwarding and bridge netfilter for Kubernetes.\n".to_owned();
    for (key, value) in sysctls(ipv6) {
        let _ = writeln!(text, "{key} = {value}");
    }
    text
}

/// Marks of the block kk owns in `/etc/hosts` (and `/etc/exports`).
pub const HOSTS_BEGIN: &str = "# BEGIN kk-install";
/// End of the block.
pub const HOSTS_END: &str = "# END kk-install";

/// `/etc/hosts` with kk's block (every node; the registry's name) replacing any earlier one;
/// the rest of the file is kept as it was. No entries: the block is taken out (reset).
pub fn hosts_file(current: &str, entries: &[(IpAddr, Vec<String>)]) -> String {
    let lines: Vec<String> = entries
        .iter()
        .map(|(ip, names)| format!("{ip} {}", names.join(" ")))
        .collect();
    with_block(current, &lines)
}

/// `/etc/hosts` with the lines naming `name` taken out of kk's block (`delete-node`); the file
/// as it is when the block has none.
pub fn hosts_file_without(current: &str, name: &str) -> String {
    let mut inside = false;
    let mut kept = Vec::new();
    let mut dropped = false;
    for line in current.lines() {
        match line.trim() {
            HOSTS_BEGIN => inside = true,
            HOSTS_END => inside = false,
            entry if inside => {
                if entry.split_whitespace().skip(1).any(|n| n == name) {
                    dropped = true;
                } else {
                    kept.push(line.to_owned());
                }
            }
            _ => {}
        }
    }
    if dropped {
        with_block(current, &kept)
    } else {
        current.to_owned()
    }
}

/// The options of kk's export: read-write, synchronous writes (a volume's data is on disk when
/// the client is told so), and no subtree check (the provisioner's per-volume directories are
/// renamed when archived, which the check would turn into stale handles).
pub const EXPORT_OPTIONS: &str = "rw,sync,no_subtree_check";

/// `/etc/exports` with kk's block (`dir` exported to each of `clients`, one entry each)
/// replacing any earlier one; the operator's own lines are kept. No clients: the block is
/// taken out (reset).
pub fn exports_file(current: &str, dir: &str, clients: &[IpAddr]) -> String {
    if clients.is_empty() {
        return with_block(current, &[]);
    }
    let mut line = dir.to_owned();
    for client in clients {
        let _ = write!(line, " {client}({EXPORT_OPTIONS})");
    }
    with_block(current, &[line])
}

/// `current` without kk's marked block (reset of `/etc/hosts` and `/etc/exports`).
pub fn without_block(current: &str) -> String {
    with_block(current, &[])
}

/// `current` with kk's marked block holding `lines` in place of any earlier one, at the end;
/// the rest of the file as it was. No lines: no block.
fn with_block(current: &str, lines: &[String]) -> String {
    let mut kept = String::new();
    let mut inside = false;
    for line in current.lines() {
        match line.trim() {
            HOSTS_BEGIN => inside = true,
            HOSTS_END => inside = false,
            _ if !inside => {
                kept.push_str(line);
                kept.push('\n');
            }
            _ => {}
        }
    }
    let mut text = kept.trim_end_matches('\n').to_owned();
    text.push('\n');
    if lines.is_empty() {
        return text;
    }
    text.push_str(HOSTS_BEGIN);
    text.push('\n');
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(HOSTS_END);
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;

//! The gathering script and the parsers of its sections.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::{Facts, Listener, OsRelease};

/// The commands whose presence the rules check (kubeadm's preflight list, and what the install
/// and the etcd disk check use).
const COMMANDS: &str = "ip iptables mount nsenter ebtables ethtool socat tc touch conntrack \
                        sha256sum fio sudo ipvsadm";

/// The script run on every node; it only reads. `{commands}` is filled with the commands the
/// rules look for.
pub const GATHER_SCRIPT: &str = r#"export LC_ALL=C
s() { printf '\n@@%s\n' "$1"; }
s clock; date +%s.%N
s os-release; cat /etc/os-release 2>/dev/null
s kernel; uname -r
s machine; uname -m
s cpus; nproc 2>/dev/null || getconf _NPROCESSORS_ONLN
s meminfo; cat /proc/meminfo
s hostname; hostname
# getaddrinfo (`ahosts`), not `hosts`: the latter asks DNS for an IPv6 address even when
# /etc/hosts answers, and an airgapped resolver makes that wait out its timeout.
s resolves; if timeout 5 getent ahosts "$(hostname)" >/dev/null 2>&1; then echo yes; else echo no; fi
s addresses; ip -o addr show 2>/dev/null
s tcp; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null
s sysctls
for k in net/ipv4/ip_forward net/ipv6/conf/all/forwarding net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables; do
  [ -r "/proc/sys/$k" ] && printf '%s=%s\n' "$k" "$(cat "/proc/sys/$k")"
done
s modules; cut -d' ' -f1 /proc/modules 2>/dev/null
s cgroup; stat -fc %T /sys/fs/cgroup 2>/dev/null
s commands
for c in {commands}; do command -v "$c" >/dev/null 2>&1 && echo "$c"; done
s versions
for p in kubelet etcd containerd docker runc; do
  command -v "$p" >/dev/null 2>&1 && printf '%s=%s\n' "$p" "$("$p" --version 2>&1 | head -n 1)"
done
command -v kubeadm >/dev/null 2>&1 && printf 'kubeadm=%s\n' "$(kubeadm version -o short 2>&1 | head -n 1)"
s manifests; ls -1A /etc/kubernetes/manifests 2>/dev/null
s etcd-data; if [ -n "$(ls -A /var/lib/etcd 2>/dev/null)" ]; then echo yes; else echo no; fi
s disk
for d in / /var/lib /usr/local/bin /etc /opt; do
  p=$d; while [ ! -e "$p" ]; do p=$(dirname "$p"); done
  printf '%s %s\n' "$d" "$(df -P -B1 "$p" | awk 'NR==2 {print $4}')"
done
s uid; id -u
s end
"#;

/// The script with its placeholders filled.
pub(crate) fn gather_script() -> String {
    GATHER_SCRIPT.replace("{commands}", COMMANDS)
}

impl Facts {
    /// Parses the output of the gathering script. Sections that are missing or unreadable
    /// leave their field at its default, which the rules then report (an empty kernel version
    /// fails the kernel rule, naming what was found).
    pub fn parse(output: &str) -> Self {
        let sections = split_sections(output);
        let text = |name: &str| sections.get(name).map_or("", |s| s.trim());
        let (memory_bytes, swap_bytes) = meminfo(text("meminfo"));
        Self {
            os: os_release(text("os-release")),
            kernel: text("kernel").to_owned(),
            machine: text("machine").to_owned(),
            cpus: text("cpus").parse().unwrap_or(0),
            memory_bytes,
            swap_bytes,
            hostname: text("hostname").to_owned(),
            hostname_resolves: text("resolves") == "yes",
            addresses: addresses(text("addresses")),
            listening: listeners(text("tcp")),
            sysctls: key_values(text("sysctls"))
                .map(|(k, v)| (k.replace('/', "."), v.to_owned()))
                .collect(),
            modules: lines(text("modules")),
            cgroup_fs: text("cgroup").to_owned(),
            commands: lines(text("commands")),
            versions: key_values(text("versions"))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            static_pods: lines(text("manifests")),
            etcd_data_present: text("etcd-data") == "yes",
            free_bytes: text("disk")
                .lines()
                .filter_map(|line| {
                    let (path, free) = line.split_once(' ')?;
                    Some((path.to_owned(), free.trim().parse().ok()?))
                })
                .collect(),
            clock: text("clock").parse().unwrap_or(0.0),
            uid: text("uid").parse().unwrap_or(u32::MAX),
            clock_offset: 0.0,
        }
    }
}

/// Whether the output is complete: the script's last section marker arrived.
pub(crate) fn is_complete(output: &str) -> bool {
    output.lines().any(|line| line == "@@end")
}

fn split_sections(output: &str) -> BTreeMap<&str, &str> {
    let mut sections = BTreeMap::new();
    let mut rest = output;
    while let Some(start) = rest.find("\n@@") {
        let after = &rest[start + 3..];
        let (name, body) = after.split_once('\n').unwrap_or((after, ""));
        let end = body.find("\n@@").map_or(body.len(), |i| i + 1);
        sections.insert(name.trim(), &body[..end]);
        rest = &body[end.saturating_sub(1)..];
    }
    sections
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn key_values(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines().filter_map(|line| line.split_once('='))
}

fn os_release(text: &str) -> OsRelease {
    let mut os = OsRelease::default();
    for (key, value) in key_values(text) {
        let value = value.trim().trim_matches('"').to_owned();
        match key.trim() {
            "ID" => os.id = value,
            "VERSION_ID" => os.version_id = value,
            "PRETTY_NAME" => os.pretty_name = value,
            _ => {}
        }
    }
    os
}

/// `MemTotal` and `SwapTotal` of `/proc/meminfo`, in bytes (the file says `kB`, meaning KiB).
fn meminfo(text: &str) -> (u64, u64) {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("MemTotal"), field("SwapTotal"))
}

/// `ip -o addr show`: `2: eth0    inet 10.0.0.5/24 brd … scope global eth0 …`.
fn addresses(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [_, name, family, cidr, ..] = fields.as_slice()
            && (*family == "inet" || *family == "inet6")
        {
            let address = cidr.split('/').next().unwrap_or(cidr);
            found
                .entry(
                    name.trim_end_matches(':')
                        .split('@')
                        .next()
                        .unwrap_or(name)
                        .to_owned(),
                )
                .or_default()
                .push(address.to_owned());
        }
    }
    found
}

/// Listening sockets of `/proc/net/tcp` and `/proc/net/tcp6` (state `0A`).
fn listeners(text: &str) -> Vec<Listener> {
    let mut found: Vec<Listener> = text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state) = (fields.get(1)?, fields.get(3)?);
            if *state != "0A" {
                return None;
            }
            let (address, port) = local.split_once(':')?;
            Some(Listener {
                address: kernel_address(address)?,
                port: u16::from_str_radix(port, 16).ok()?,
            })
        })
        .collect();
    found.sort_by(|a, b| (a.port, &a.address).cmp(&(b.port, &b.address)));
    found.dedup();
    found
}

/// An address as `/proc/net/tcp*` prints it: 32-bit words in hex, each in host (little-endian)
/// byte order.
fn kernel_address(hex: &str) -> Option<String> {
    let words: Vec<u32> = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok())
        .collect::<Option<_>>()?;
    match words.as_slice() {
        [v4] => Some(Ipv4Addr::from(v4.swap_bytes()).to_string()),
        [a, b, c, d] => {
            let bits = (u128::from(a.swap_bytes()) << 96)
                | (u128::from(b.swap_bytes()) << 64)
                | (u128::from(c.swap_bytes()) << 32)
                | u128::from(d.swap_bytes());
            Some(Ipv6Addr::from(bits).to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output of the script on a lab node (trimmed where long).
    const NODE: &str = r#"
@@os-release
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian

@@kernel
6.1.0-18-amd64

@@machine
x86_64

@@cpus
2

@@meminfo
MemTotal:       24624464 kB
MemFree:        20000000 kB
SwapTotal:             0 kB

@@hostname
node1

@@resolves
no

@@addresses
1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
2: eth0@if9    inet 10.250.0.11/16 brd 10.250.255.255 scope global eth0\       valid_lft forever
2: eth0@if9    inet6 fe80::1/64 scope link \       valid_lft forever preferred_lft forever

@@tcp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:192B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0B00FA0A:0016 0C00FA0A:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1
   0: 00000000000000000000000001000000:1A0B 00000000000000000000000000000000:0000 0A 0 0 0 0 0 4 1

@@sysctls
net/ipv4/ip_forward=1
net/bridge/bridge-nf-call-iptables=1

@@modules
overlay
br_netfilter

@@cgroup
tmpfs

@@commands
ip
mount
touch

@@versions
etcd=etcd Version: 3.4.23
containerd=containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1

@@manifests
kube-apiserver.yaml

@@etcd-data
yes

@@disk
/ 53687091200
/var/lib 53687091200

@@clock
1795000000.250000000

@@uid
0

@@end
"#;

    #[test]
    fn parses_every_section_of_a_node() {
        let facts = Facts::parse(NODE);
        assert_eq!(facts.os.id, "debian");
        assert_eq!(facts.os.version_id, "12");
        assert_eq!(facts.os.pretty_name, "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(facts.kernel, "6.1.0-18-amd64");
        assert_eq!(facts.arch(), "amd64");
        assert_eq!(facts.cpus, 2);
        assert_eq!(facts.memory_bytes, 24_624_464 * 1024);
        assert_eq!(facts.swap_bytes, 0);
        assert_eq!(facts.hostname, "node1");
        assert!(!facts.hostname_resolves);
        assert!(facts.has_address("10.250.0.11"));
        assert!(facts.has_address("fe80::1"));
        assert_eq!(facts.addresses["eth0"], ["10.250.0.11", "fe80::1"]);
        let ports: Vec<(u16, &str)> = facts
            .listening
            .iter()
            .map(|l| (l.port, l.address.as_str()))
            .collect();
        assert_eq!(ports, [(22, "0.0.0.0"), (6443, "127.0.0.1"), (6667, "::1")]);
        assert_eq!(facts.sysctl("net.ipv4.ip_forward"), Some("1"));
        assert_eq!(facts.sysctl("net.ipv6.conf.all.forwarding"), None);
        assert_eq!(facts.modules, ["overlay", "br_netfilter"]);
        assert_eq!(facts.cgroup_fs, "tmpfs");
        assert!(facts.has_command("mount") && !facts.has_command("socat"));
        assert_eq!(facts.versions["etcd"], "etcd Version: 3.4.23");
        assert_eq!(facts.static_pods, ["kube-apiserver.yaml"]);
        assert!(facts.etcd_data_present);
        assert_eq!(facts.free_bytes["/var/lib"], 53_687_091_200);
        assert!((facts.clock - 1_795_000_000.25).abs() < 1e-6);
        assert_eq!(facts.uid, 0);
        assert!(is_complete(NODE));
    }

    #[test]
    fn kernel_addresses_decode_in_host_byte_order() {
        for (hex, address) in [
            ("0100007F", Some("127.0.0.1")),
            ("0B00FA0A", Some("10.250.0.11")),
            ("00000000000000000000000001000000", Some("::1")),
            (
                "0000000000000000FFFF00000B00FA0A",
                Some("::ffff:10.250.0.11"),
            ),
            ("XYZ", None),
        ] {
            assert_eq!(kernel_address(hex).as_deref(), address, "{hex}");
        }
    }

    #[test]
    fn missing_sections_stay_empty() {
        let facts = Facts::parse("\n@@kernel\n6.8.0\n");
        assert_eq!(facts.kernel, "6.8.0");
        assert!(facts.os.id.is_empty() && facts.listening.is_empty());
        assert_eq!(facts.uid, u32::MAX);
        assert!(!is_complete("\n@@kernel\n6.8.0\n"));
    }

    #[test]
    fn the_script_names_every_command_of_the_rules() {
        let script = gather_script();
        assert!(!script.contains("{commands}"));
        for command in ["conntrack", "socat", "ebtables", "fio"] {
            assert!(script.contains(command), "{command}");
        }
    }
}

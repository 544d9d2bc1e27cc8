//! The gathering script and the parsers of its sections.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use bundle_spec::packages::resolve::Installed;

use super::{DpkgPackage, Facts, Listener, OsRelease, PROXY_SOURCES};
use crate::ssh::FactsError;

/// The commands whose presence the rules check (kubeadm's preflight list of every version kk
/// installs, and what the install and the etcd disk check use).
const COMMANDS: &str = "ip iptables mount nsenter ebtables ethtool socat tc touch conntrack \
                        crictl sha256sum fio sudo ipvsadm mount.nfs exportfs";

/// The script run on every node; it only reads. `{commands}` is filled with the commands the
/// rules look for, `{name}` with the node's inventory name (shell-quoted).
///
/// It starts as few processes as it can (one `grep` reads every small file, one `df` every
/// path): on a node, a process costs about as much as reading a file, and a precheck of many
/// nodes sharing a hypervisor pays for each of them on every node.
pub const GATHER_SCRIPT: &str = r#"export LC_ALL=C
s() { printf '\n@@%s\n' "$1"; }
s clock; date +%s.%N
s files
grep -H '' /etc/os-release /proc/meminfo /proc/net/tcp /proc/net/tcp6 /proc/modules \
  /proc/filesystems /proc/sys/kernel/osrelease /proc/sys/kernel/arch /proc/sys/kernel/hostname \
  /proc/self/status /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv6/conf/all/forwarding \
  /proc/sys/net/ipv6/conf/default/forwarding /proc/sys/net/bridge/bridge-nf-call-iptables \
  /proc/sys/net/bridge/bridge-nf-call-ip6tables 2>/dev/null
# /proc/sys/kernel/arch is younger than some supported kernels.
[ -r /proc/sys/kernel/arch ] || { s machine; uname -m; }
s cpus; nproc 2>/dev/null || getconf _NPROCESSORS_ONLN
# The inventory name, which the install makes the host name and the Kubernetes node name.
# getaddrinfo (`ahosts`), not `hosts`: the latter asks DNS for an IPv6 address even when
# /etc/hosts answers, and an airgapped resolver makes that wait out its timeout.
n={name}
s resolves; echo "$n"; if timeout 5 getent ahosts "$n" >/dev/null 2>&1; then echo yes; else echo no; fi
# Proxy variables only (the rest of an environment may hold secrets), credentials masked.
m='s#://.*@#://***@#'
s "proxy session"; env | grep -iE '^(https?|no)_proxy=' | sed -e "$m"
s "proxy login shell"; timeout 5 sh -lc env </dev/null 2>/dev/null | grep -iE '^(https?|no)_proxy=' | sed -e "$m"
s "proxy /etc/environment"
grep -iE '^[[:space:]]*(export[[:space:]]+)?(https?|no)_proxy=' /etc/environment 2>/dev/null | sed -e "$m"
s addresses; ip -o addr show 2>/dev/null
s cgroup; if [ -e /sys/fs/cgroup/cgroup.controllers ]; then echo cgroup2fs; elif [ -d /sys/fs/cgroup/cpu ] || [ -d /sys/fs/cgroup/memory ]; then echo tmpfs; fi
s commands
for c in {commands}; do command -v "$c" >/dev/null 2>&1 && echo "$c"; done
for p in kubelet etcd containerd docker; do
  command -v "$p" >/dev/null 2>&1 && s "version $p" && "$p" --version 2>&1
done
command -v kubeadm >/dev/null 2>&1 && s "version kubeadm" && kubeadm version -o short 2>&1
# The node's package state, where dpkg is the package manager (the section's presence says so).
command -v dpkg-query >/dev/null 2>&1 && s dpkg &&
  dpkg-query -W -f='${Package}\t${Version}\t${Provides}\t${db:Status-Status}\n' 2>/dev/null
# Whether the kernel can serve NFS: `nfsd` in /proc/filesystems (files above) once loaded, or
# the module (or built in) for the running kernel; read without starting a process.
s nfsd-module; r=; read -r r </proc/sys/kernel/osrelease 2>/dev/null
if grep -qs 'nfsd\.ko' "/lib/modules/$r/modules.dep" "/lib/modules/$r/modules.builtin"; then echo yes; else echo no; fi
s manifests
for f in /etc/kubernetes/manifests/* /etc/kubernetes/manifests/.[!.]*; do [ -e "$f" ] && echo "${f##*/}"; done
s etcd-data; d=no
for f in /var/lib/etcd/* /var/lib/etcd/.[!.]*; do [ -e "$f" ] && d=yes && break; done
echo "$d"
s disk-paths
set --
for d in / /var/lib /usr/local/bin /etc /opt; do
  p=$d; while [ ! -e "$p" ]; do p=${p%/*}; p=${p:-/}; done
  echo "$d"; set -- "$@" "$p"
done
s df; df -P -B1 "$@" 2>/dev/null
s end
"#;

/// The script with its placeholders filled, for the node named `name` in the inventory.
pub(crate) fn gather_script(name: &str) -> String {
    let quoted = format!("'{}'", name.replace('\'', r"'\''"));
    GATHER_SCRIPT
        .replace("{commands}", COMMANDS)
        .replace("{name}", &quoted)
}

impl Facts {
    /// Parses the output of the gathering script. Sections that are missing or unreadable
    /// leave their field at its default, which the rules then report (an empty kernel version
    /// fails the kernel rule, naming what was found).
    ///
    /// The output is the node's, so untrusted: any text parses without panicking, and a value
    /// no machine can have (a `MemTotal` whose bytes overflow 64 bits) is refused rather than
    /// wrapped or clamped into something a rule would believe.
    pub fn parse(output: &str) -> Result<Self, FactsError> {
        let sections = split_sections(output);
        let text = |name: &str| sections.get(name).map_or("", |s| s.trim());
        let files = files(text("files"));
        let file = |name: &str| files.get(name).map_or("", String::as_str);
        let meminfo = file("/proc/meminfo");
        let memory_bytes = meminfo_bytes(meminfo, "MemTotal")?;
        let swap_bytes = meminfo_bytes(meminfo, "SwapTotal")?;
        let machine = match file("/proc/sys/kernel/arch").trim() {
            "" => text("machine"),
            arch => arch,
        };
        let tcp = format!("{}\n{}", file("/proc/net/tcp"), file("/proc/net/tcp6"));
        let resolves = resolves(text("resolves"));
        Ok(Self {
            os: os_release(file("/etc/os-release")),
            kernel: file("/proc/sys/kernel/osrelease").trim().to_owned(),
            machine: machine.to_owned(),
            cpus: text("cpus").parse().unwrap_or(0),
            memory_bytes,
            swap_bytes,
            hostname: file("/proc/sys/kernel/hostname").trim().to_owned(),
            resolved_name: resolves.0.to_owned(),
            name_resolves: resolves.1,
            addresses: addresses(text("addresses")),
            listening: listeners(&tcp),
            sysctls: files
                .iter()
                .filter_map(|(path, value)| {
                    let name = path.strip_prefix("/proc/sys/")?.replace('/', ".");
                    Some((name, value.trim().to_owned()))
                })
                .collect(),
            modules: file("/proc/modules")
                .lines()
                .filter_map(|line| line.split_whitespace().next())
                .map(str::to_owned)
                .collect(),
            // `nodev\toverlay`, `\text4`: the name is the last field.
            filesystems: file("/proc/filesystems")
                .lines()
                .filter_map(|line| line.split_whitespace().last())
                .map(str::to_owned)
                .collect(),
            cgroup_fs: text("cgroup").to_owned(),
            commands: lines(text("commands")),
            versions: sections
                .iter()
                .filter_map(|(name, body)| {
                    let program = name.strip_prefix("version ")?;
                    let first = body.trim().lines().next().unwrap_or_default();
                    Some((program.to_owned(), first.trim().to_owned()))
                })
                .collect(),
            dpkg: sections.contains_key("dpkg"),
            installed_packages: dpkg_packages(text("dpkg")),
            nfsd: file("/proc/filesystems")
                .lines()
                .any(|line| line.split_whitespace().last() == Some("nfsd"))
                || text("nfsd-module") == "yes",
            static_pods: lines(text("manifests")),
            etcd_data_present: text("etcd-data") == "yes",
            free_bytes: free_bytes(text("disk-paths"), text("df")),
            // `inf` and `NaN` parse as floats; no clock reads either.
            clock: text("clock")
                .parse()
                .ok()
                .filter(|c: &f64| c.is_finite())
                .unwrap_or(0.0),
            // The status of the `grep` that read it: the same user as the script.
            uid: file("/proc/self/status")
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next())
                .and_then(|uid| uid.parse().ok())
                .unwrap_or(u32::MAX),
            proxy_env: PROXY_SOURCES
                .iter()
                .map(|source| {
                    let vars = proxy_vars(text(&format!("proxy {source}")));
                    ((*source).to_owned(), vars)
                })
                .filter(|(_, vars)| !vars.is_empty())
                .collect(),
            clock_offset: 0.0,
        })
    }
}

/// The `resolves` section: the name looked up, then `yes` or `no`. Output recorded before the
/// name was printed has the answer alone (about the current host name): the name is empty.
fn resolves(text: &str) -> (&str, bool) {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    match lines[..] {
        [name, answer] => (name, answer == "yes"),
        [answer] => ("", answer == "yes"),
        _ => ("", false),
    }
}

/// `NAME=value` lines of proxy variables (`export NAME="value"` in `/etc/environment`), by
/// name as spelled; other names are dropped, credentials in URLs masked.
fn proxy_vars(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line
                .strip_prefix("export")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .map_or(line, str::trim_start);
            let (name, value) = line.split_once('=')?;
            let name = name.trim();
            let known = ["http_proxy", "https_proxy", "no_proxy"]
                .iter()
                .any(|known| name.eq_ignore_ascii_case(known));
            if !known {
                return None;
            }
            let value = value.trim();
            let value = ['"', '\'']
                .iter()
                .find_map(|q| value.strip_prefix(*q)?.strip_suffix(*q))
                .unwrap_or(value);
            Some((name.to_owned(), mask_credentials(value)))
        })
        .collect()
}

/// `scheme://user:secret@host` as `scheme://***@host`: proxy URLs may carry a password, and
/// facts are recorded in the work directory.
fn mask_credentials(value: &str) -> String {
    match (value.find("://"), value.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &value[..scheme], &value[at..])
        }
        _ => value.to_owned(),
    }
}

/// `dpkg-query -W -f='${Package}\t${Version}\t${Provides}\t${db:Status-Status}\n'`: the
/// packages whose status is `installed`, by name, as the package resolver reads them (its
/// parser: one reading of dpkg's state for the precheck and the install).
fn dpkg_packages(text: &str) -> BTreeMap<String, DpkgPackage> {
    Installed::from_dpkg_query(text)
        .packages
        .into_iter()
        .map(|(name, package)| {
            let package = DpkgPackage {
                version: package.version,
                provides: package.provides.trim().to_owned(),
            };
            (name, package)
        })
        .collect()
}

/// `grep -H '' FILE…` output: each file's lines, by file name.
fn files(text: &str) -> BTreeMap<String, String> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines() {
        if let Some((path, content)) = line.split_once(':') {
            let file = files.entry(path.to_owned()).or_default();
            file.push_str(content);
            file.push('\n');
        }
    }
    files
}

/// Free bytes by requested path: the paths, one a line, and `df -P -B1` of the existing
/// directory each one stands for, in the same order (column 4 is the available space).
fn free_bytes(paths: &str, df: &str) -> BTreeMap<String, u64> {
    let available = df
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().nth(3).and_then(|v| v.parse().ok()));
    paths
        .lines()
        .zip(available)
        .filter_map(|(path, free)| Some((path.to_owned(), free?)))
        .collect()
}

/// Whether the output is complete: the script's last section marker arrived.
pub(crate) fn is_complete(output: &str) -> bool {
    output.lines().any(|line| line == "@@end")
}

/// The sections of the script's output by name: a line `@@name` after the first line starts
/// one, whose body runs to the next such line. Every cut is at a line start, so at a `\n`
/// boundary: the output may hold any UTF-8 (a host name, an os-release field) and never splits
/// inside a character.
fn split_sections(output: &str) -> BTreeMap<&str, &str> {
    let mut sections = BTreeMap::new();
    // The open section: its name and where its body starts.
    let mut open: Option<(&str, usize)> = None;
    let mut offset = 0;
    for line in output.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let Some(name) = line.strip_prefix("@@").filter(|_| start > 0) else {
            continue;
        };
        if let Some((previous, body)) = open.take() {
            sections.insert(previous, &output[body..start]);
        }
        open = Some((name.trim(), offset));
    }
    if let Some((name, body)) = open {
        sections.insert(name, &output[body..]);
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

/// Field `name` of `/proc/meminfo` in bytes (the file says `kB`, meaning KiB); 0 when absent
/// or unreadable, refused when its bytes overflow 64 bits.
fn meminfo_bytes(text: &str, name: &'static str) -> Result<u64, FactsError> {
    let Some(kib) = text
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    else {
        return Ok(0);
    };
    kib.checked_mul(1024).ok_or_else(|| FactsError::OutOfRange {
        file: "/proc/meminfo",
        field: name,
        value: format!("{kib} kB"),
    })
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
@@clock
1795000000.250000000

@@files
/etc/os-release:PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
/etc/os-release:NAME="Debian GNU/Linux"
/etc/os-release:VERSION_ID="12"
/etc/os-release:ID=debian
/proc/meminfo:MemTotal:       24624464 kB
/proc/meminfo:MemFree:        20000000 kB
/proc/meminfo:SwapTotal:             0 kB
/proc/net/tcp:  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
/proc/net/tcp:   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
/proc/net/tcp:   1: 0100007F:192B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
/proc/net/tcp:   2: 0B00FA0A:0016 0C00FA0A:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1
/proc/net/tcp6:   0: 00000000000000000000000001000000:1A0B 00000000000000000000000000000000:0000 0A 0 0 0 0 0 4 1
/proc/modules:overlay 151552 0 - Live 0x0000000000000000
/proc/modules:br_netfilter 32768 0 - Live 0x0000000000000000
/proc/sys/kernel/osrelease:6.1.0-18-amd64
/proc/sys/kernel/hostname:node1
/proc/self/status:Name:   grep
/proc/self/status:Uid:    0       0       0       0
/proc/sys/net/ipv4/ip_forward:1
/proc/sys/net/bridge/bridge-nf-call-iptables:1

@@machine
x86_64

@@cpus
2

@@resolves
node1
no

@@proxy session
https_proxy=http://***@proxy.example:3128
NO_PROXY=10.250.0.0/16,.cluster.local

@@proxy login shell

@@proxy /etc/environment
export HTTP_PROXY="http://proxy.example:3128"

@@addresses
1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
2: eth0@if9    inet 10.250.0.11/16 brd 10.250.255.255 scope global eth0\       valid_lft forever
2: eth0@if9    inet6 fe80::1/64 scope link \       valid_lft forever preferred_lft forever

@@cgroup
tmpfs

@@commands
ip
mount
touch

@@version etcd
etcd Version: 3.4.23
Git SHA: Not provided (use ./build instead of go build)

@@version containerd
containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1

@@dpkg
base-files	12.4+deb12u5		installed
libc6	2.36-9+deb12u4		installed
mawk	1.3.4.20200120-3.1	awk	installed
iptables	1.8.9-2		config-files

@@nfsd-module
no

@@manifests
kube-apiserver.yaml

@@etcd-data
yes

@@disk-paths
/
/var/lib
/opt

@@df
Filesystem       1-blocks        Used    Available Capacity Mounted on
/dev/vda     270000000000 10000000000 53687091200      16% /
/dev/vda     270000000000 10000000000 53687091200      16% /
/dev/vdb      10000000000  1000000000  9000000000      10% /

@@end
"#;

    #[test]
    fn parses_every_section_of_a_node() {
        let facts = Facts::parse(NODE).expect("parses");
        assert_eq!(facts.os.id, "debian");
        assert_eq!(facts.os.version_id, "12");
        assert_eq!(facts.os.pretty_name, "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(facts.kernel, "6.1.0-18-amd64");
        assert_eq!(facts.arch(), "amd64");
        assert_eq!(facts.cpus, 2);
        assert_eq!(facts.memory_bytes, 24_624_464 * 1024);
        assert_eq!(facts.swap_bytes, 0);
        assert_eq!(facts.hostname, "node1");
        assert_eq!(facts.resolved_name, "node1");
        assert!(!facts.name_resolves);
        assert_eq!(
            facts.proxy_var("session", "https_proxy"),
            Some(("https_proxy", "http://***@proxy.example:3128"))
        );
        assert_eq!(
            facts.proxy_var("session", "no_proxy"),
            Some(("NO_PROXY", "10.250.0.0/16,.cluster.local"))
        );
        assert_eq!(
            facts.proxy_var("/etc/environment", "http_proxy"),
            Some(("HTTP_PROXY", "http://proxy.example:3128"))
        );
        assert_eq!(facts.proxy_var("login shell", "http_proxy"), None);
        assert!(!facts.proxy_env.contains_key("login shell"));
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
        assert!(facts.dpkg && !facts.nfsd);
        assert_eq!(
            facts.installed_packages.keys().collect::<Vec<_>>(),
            ["base-files", "libc6", "mawk"]
        );
        assert_eq!(facts.installed_packages["mawk"].provides, "awk");
        assert_eq!(facts.static_pods, ["kube-apiserver.yaml"]);
        assert!(facts.etcd_data_present);
        assert_eq!(facts.free_bytes["/var/lib"], 53_687_091_200);
        assert_eq!(facts.free_bytes["/opt"], 9_000_000_000);
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
        let facts = Facts::parse(
            "\n@@files\n/proc/sys/kernel/osrelease:6.8.0\n/proc/sys/kernel/arch:aarch64\n",
        )
        .expect("parses");
        assert_eq!((facts.kernel.as_str(), facts.arch()), ("6.8.0", "arm64"));
        assert!(facts.os.id.is_empty() && facts.listening.is_empty());
        assert_eq!(facts.uid, u32::MAX);
        assert!(!is_complete(
            "\n@@files\n/proc/sys/kernel/osrelease:6.8.0\n"
        ));
    }

    /// Node output is untrusted: multibyte text anywhere, cut anywhere, never panics, and each
    /// section keeps exactly its body.
    #[test]
    fn multibyte_output_never_splits_a_character() {
        let table: &[(&str, &str, &str)] = &[
            // (output, section, expected trimmed body)
            ("\n@@cgroup\né", "cgroup", "é"),
            ("\n@@cgroup\n日本語", "cgroup", "日本語"),
            ("\n@@cgroup\n🦀\n@@resolves\nyes\n", "cgroup", "🦀"),
            ("\n@@cgroup\n🦀\n@@resolves\nyes\n", "resolves", "yes"),
            ("\n@@ключ\nзначение\n", "ключ", "значение"),
            ("\n@@é", "é", ""),
            ("é\n@@cgroup\nx", "cgroup", "x"),
            // A `@@` inside a line, or on the first line, starts nothing.
            ("@@cgroup\nx\n@@end\n", "cgroup", ""),
            ("\n@@cgroup\nä@@b\n", "cgroup", "ä@@b"),
        ];
        for (output, section, body) in table {
            let sections = split_sections(output);
            assert_eq!(
                sections.get(section).map(|b| b.trim()).unwrap_or_default(),
                *body,
                "{output:?}"
            );
        }
        // Every prefix of a multibyte-laden output parses (cuts inside a character are not
        // valid `str`s, so every char boundary).
        let text =
            format!("{NODE}\n@@version kubelet\nKubernetes v1.31.4 — ünïcödé ✓\n@@cgroup\n日本");
        for (cut, _) in text.char_indices() {
            let _ = Facts::parse(&text[..cut]);
        }
        let facts = Facts::parse(
            "\n@@files\n/proc/sys/kernel/hostname:nœud-é\n/etc/os-release:PRETTY_NAME=\"Débian ✓\"\n\n@@commands\nip\n🦀\n",
        )
        .expect("parses");
        assert_eq!(facts.hostname, "nœud-é");
        assert_eq!(facts.os.pretty_name, "Débian ✓");
        assert_eq!(facts.commands, ["ip", "🦀"]);
    }

    #[test]
    fn absurd_numbers_are_refused_or_ignored_never_wrapped() {
        let meminfo = |mem: &str, swap: &str| {
            Facts::parse(&format!(
                "\n@@files\n/proc/meminfo:MemTotal: {mem}\n/proc/meminfo:SwapTotal: {swap}\n"
            ))
        };
        let max_kib = u64::MAX / 1024;
        for (mem, swap, expected) in [
            ("2048 kB", "0 kB", Ok((2048 * 1024, 0))),
            (
                &format!("{max_kib} kB") as &str,
                "0 kB",
                Ok((max_kib * 1024, 0)),
            ),
            (&format!("{} kB", max_kib + 1), "0 kB", Err("MemTotal")),
            ("1 kB", &format!("{} kB", u64::MAX), Err("SwapTotal")),
            // Not numbers, or beyond u64: unreadable, so 0 (the memory rule then fails).
            ("99999999999999999999999 kB", "-1 kB", Ok((0, 0))),
            ("١٢٣ kB", "½ kB", Ok((0, 0))),
            ("", "", Ok((0, 0))),
        ] {
            let parsed = meminfo(mem, swap);
            match expected {
                Ok(bytes) => {
                    let facts = parsed.unwrap_or_else(|e| panic!("{mem} {swap}: {e}"));
                    assert_eq!(
                        (facts.memory_bytes, facts.swap_bytes),
                        bytes,
                        "{mem} {swap}"
                    );
                }
                Err(field) => {
                    // What `gather` reports: the node, the file and the field.
                    let error = crate::ssh::SshError::Facts {
                        node: "node1".to_owned(),
                        source: parsed.expect_err(mem),
                    }
                    .to_string();
                    for words in ["node `node1`", &format!("`{field}`"), "/proc/meminfo"] {
                        assert!(error.contains(words), "{error} lacks {words}");
                    }
                }
            }
        }
        for (clock, expected) in [
            ("1795000000.5", 1_795_000_000.5),
            ("inf", 0.0),
            ("NaN", 0.0),
            ("-inf", 0.0),
            ("1e999", 0.0),
        ] {
            let facts = Facts::parse(&format!("\n@@clock\n{clock}\n")).expect("parses");
            assert!(
                (facts.clock - expected).abs() < 1e-6,
                "{clock}: {}",
                facts.clock
            );
        }
        let facts = Facts::parse("\n@@cpus\n99999999999\n@@files\n/proc/net/tcp:   0: 0100007F:FFFFFF 00000000:0000 0A\n")
            .expect("parses");
        assert_eq!(facts.cpus, 0);
        assert!(facts.listening.is_empty());
    }

    /// The name looked up, and output recorded before it was printed.
    #[test]
    fn resolves_names_what_was_looked_up() {
        for (body, name, resolves) in [
            ("node1\nyes", "node1", true),
            ("node1\nno", "node1", false),
            ("yes", "", true),
            ("no", "", false),
            ("", "", false),
            ("a\nb\nyes", "", false),
        ] {
            let facts = Facts::parse(&format!("\n@@resolves\n{body}\n")).expect("parses");
            assert_eq!(
                (facts.resolved_name.as_str(), facts.name_resolves),
                (name, resolves),
                "{body:?}"
            );
        }
        // Facts recorded before: `hostnameResolves`, no `resolvedName`, no `proxyEnv`.
        let mut json = serde_json::to_value(Facts::default()).expect("json");
        let object = json.as_object_mut().expect("object");
        for key in ["resolvedName", "nameResolves", "proxyEnv"] {
            assert!(object.remove(key).is_some(), "{key}");
        }
        object.insert("hostnameResolves".to_owned(), serde_json::Value::Bool(true));
        let facts: Facts = serde_json::from_value(json).expect("old facts read");
        assert!(facts.name_resolves && facts.resolved_name.is_empty());
    }

    /// Proxy variables only, any case, `export` and quotes as `/etc/environment` may have
    /// them; credentials masked (the script masks them too, before they reach a log).
    #[test]
    fn proxy_variables_are_kept_alone_and_masked() {
        let vars = proxy_vars(
            "http_proxy=http://user:secret@proxy:3128\n\
             export HTTPS_PROXY='http://proxy:3128'\n\
             \texport  no_proxy=\"10.0.0.0/8, .local\"\n\
             PATH=/usr/bin\n\
             exporthttp_proxy=x\n\
             ftp_proxy=http://proxy:21\n\
             No_Proxy=mixed\n\
             garbage\n",
        );
        let expected: Vec<(&str, &str)> = vec![
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("No_Proxy", "mixed"),
            ("http_proxy", "http://***@proxy:3128"),
            ("no_proxy", "10.0.0.0/8, .local"),
        ];
        let found: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(found, expected);
        for (value, masked) in [
            ("http://u:p@proxy:3128", "http://***@proxy:3128"),
            ("http://u:p@ss@proxy:3128", "http://***@proxy:3128"),
            ("http://proxy:3128", "http://proxy:3128"),
            ("10.0.0.0/8,a@b", "10.0.0.0/8,a@b"),
        ] {
            assert_eq!(mask_credentials(value), masked, "{value}");
        }
    }

    /// dpkg-query's lines: installed packages only, by name, with their `Provides`; anything
    /// else (other states, short lines) is left out.
    #[test]
    fn dpkg_query_keeps_the_installed_packages() {
        let table: &[(&str, &[(&str, &str, &str)])] = &[
            ("", &[]),
            (
                "socat\t1.7.4.4-2\t\tinstalled\n",
                &[("socat", "1.7.4.4-2", "")],
            ),
            (
                "mawk\t1.3.4-3.1\tawk\tinstalled\n",
                &[("mawk", "1.3.4-3.1", "awk")],
            ),
            (
                "libc6\t2.36-9\tlibc6-abi (= 2.36), glibc\tinstalled\n",
                &[("libc6", "2.36-9", "libc6-abi (= 2.36), glibc")],
            ),
            ("nfs-common\t1:2.6.2-4\t\tconfig-files\n", &[]),
            ("ethtool\t1:6.1-1\t\thalf-installed\n", &[]),
            ("ethtool\t1:6.1-1\t\tnot-installed\n", &[]),
            ("garbage line\n\tinstalled\n", &[]),
            ("a\t1\tinstalled\n", &[]),
        ];
        for (text, expected) in table {
            let found = dpkg_packages(text);
            let found: Vec<(&str, &str, &str)> = found
                .iter()
                .map(|(name, p)| (name.as_str(), p.version.as_str(), p.provides.as_str()))
                .collect();
            assert_eq!(found, *expected, "{text:?}");
        }
    }

    /// dpkg and nfsd from their sections, and facts recorded before them still read.
    #[test]
    fn dpkg_and_nfsd_sections() {
        for (output, dpkg, packages, nfsd) in [
            ("\n@@end\n", false, 0, false),
            ("\n@@dpkg\n@@end\n", true, 0, false),
            ("\n@@dpkg\nsocat\t1.7\t\tinstalled\n", true, 1, false),
            ("\n@@nfsd-module\nyes\n", false, 0, true),
            ("\n@@nfsd-module\nno\n", false, 0, false),
            ("\n@@files\n/proc/filesystems:nodev\tnfsd\n", false, 0, true),
            ("\n@@files\n/proc/filesystems:nodev\tnfs\n", false, 0, false),
        ] {
            let facts = Facts::parse(output).expect("parses");
            assert_eq!(
                (facts.dpkg, facts.installed_packages.len(), facts.nfsd),
                (dpkg, packages, nfsd),
                "{output:?}"
            );
        }
        let mut json = serde_json::to_value(Facts::default()).expect("json");
        let object = json.as_object_mut().expect("object");
        for key in ["dpkg", "installedPackages", "nfsd"] {
            assert!(object.remove(key).is_some(), "{key}");
        }
        let facts: Facts = serde_json::from_value(json).expect("old facts read");
        assert!(!facts.dpkg && facts.installed_packages.is_empty() && !facts.nfsd);
    }

    /// `uname -m` as Debian names the architecture; the distribution as the package sets do;
    /// the installed packages as the resolver reads them.
    #[test]
    fn debian_names_of_the_node() {
        for (machine, arch) in [
            ("x86_64", Some("amd64")),
            ("aarch64", Some("arm64")),
            ("armv7l", Some("armhf")),
            ("armv6l", Some("armel")),
            ("i686", Some("i386")),
            ("ppc64le", Some("ppc64el")),
            ("s390x", Some("s390x")),
            ("riscv64", Some("riscv64")),
            ("mips", None),
            ("", None),
        ] {
            let facts = Facts {
                machine: machine.to_owned(),
                ..Facts::default()
            };
            assert_eq!(facts.deb_arch(), arch, "{machine}");
        }
        let mut facts = Facts::parse(NODE).expect("parses");
        assert_eq!(
            facts.distro().map(|d| d.to_string()).as_deref(),
            Some("debian-12")
        );
        let installed = facts.installed();
        assert_eq!(installed.packages.len(), 3);
        assert_eq!(installed.packages["mawk"].provides, "awk");
        assert_eq!(installed.packages["libc6"].version, "2.36-9+deb12u4");
        facts.os.version_id.clear();
        assert_eq!(facts.distro(), None);
    }

    #[test]
    fn the_script_names_every_command_of_the_rules() {
        let script = gather_script("node1");
        assert!(!script.contains("{commands}") && !script.contains("{name}"));
        assert!(script.contains("n='node1'"));
        // A name is one shell word whatever it holds.
        assert!(gather_script("a'b; rm").contains(r"n='a'\''b; rm'"));
        for command in crate::precheck::KUBEADM_COMMANDS.iter().chain(&[
            "fio",
            "mount.nfs",
            "exportfs",
            "dpkg-query",
            "nfsd",
        ]) {
            assert!(script.contains(command), "{command}");
        }
        for file in [
            "/proc/filesystems",
            "/proc/sys/net/ipv6/conf/default/forwarding",
            "/proc/sys/net/bridge/bridge-nf-call-iptables",
            "/proc/sys/net/bridge/bridge-nf-call-ip6tables",
            "/etc/environment",
        ] {
            assert!(script.contains(file), "{file}");
        }
    }
}

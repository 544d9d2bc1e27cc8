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
  /proc/sys/net/bridge/bridge-nf-call-ip6tables /etc/kubekey/installed.json 2>/dev/null
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
# Which process holds each listening port: tells kk's own components from anything else.
s holders; ss -Hltnp 2>/dev/null
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
# kk's store: the name and size of every blob (an unpack skips those, so they need no new room).
s store-blobs; find /var/lib/kk/store/blobs/sha256 -maxdepth 1 -type f -printf '%f %s\n' 2>/dev/null
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
            port_holders: port_holders(text("holders")),
            kk_phases: kk_phases(file("/etc/kubekey/installed.json")),
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
            installed_packages: sections
                .contains_key("dpkg")
                .then(|| dpkg_packages(text("dpkg"))),
            nfsd: file("/proc/filesystems")
                .lines()
                .any(|line| line.split_whitespace().last() == Some("nfsd"))
                || text("nfsd-module") == "yes",
            static_pods: lines(text("manifests")),
            etcd_data_present: text("etcd-data") == "yes",
            free_bytes: free_bytes(text("disk-paths"), text("df")),
            store_blobs: store_blobs(text("store-blobs")),
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

/// The `store-blobs` section: `<hex> <size>` a line; anything else (a temporary file of an
/// unpack under way) is not a blob.
fn store_blobs(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let (hex, size) = line.split_once(' ')?;
            let is_digest = hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            Some((hex.to_owned(), size.trim().parse().ok()?)).filter(|_| is_digest)
        })
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

/// `ss -Hltnp` output: by local port, the first process of `users:(("name",pid=…,fd=…))`. A
/// line naming no process (not permitted to see it) holds nothing here.
fn port_holders(text: &str) -> BTreeMap<u16, String> {
    let mut holders = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // State, Recv-Q, Send-Q, then the local address (`*:6443`, `[::]:5443`, `%lo:53`…).
        let Some(port) = fields
            .get(3)
            .and_then(|local| local.rsplit_once(':'))
            .and_then(|(_, port)| port.parse::<u16>().ok())
        else {
            continue;
        };
        let name = line
            .split_once("users:((\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(name, _)| name);
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            holders.entry(port).or_insert_with(|| name.to_owned());
        }
    }
    holders
}

/// The phases of kk's record (`/etc/kubekey/installed.json`); `None` when absent or not kk's
/// (no `bundle` identity and `phases`).
fn kk_phases(text: &str) -> Option<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Record {
        bundle: String,
        phases: Vec<String>,
    }
    serde_json::from_str::<Record>(text)
        .ok()
        .filter(|record| record.bundle.starts_with("sha256:"))
        .map(|record| record.phases)
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
mod tests;

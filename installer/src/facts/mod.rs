//! What a node is: the facts the precheck rules judge, gathered in one round trip.
//!
//! [`GATHER_SCRIPT`] is one POSIX shell script that prints every fact the rules need in
//! labelled sections (`@@name` lines); [`Facts::parse`] turns that text into [`Facts`]. The
//! script only reads (`/proc`, `/sys`, `/etc/os-release`, the kernel's module lists, `df`,
//! `command -v`, `--version` flags, `dpkg-query -W`): gathering facts never changes a node. Parsing happens here rather than on the node
//! so that the node needs nothing but `sh` and coreutils, and so that every parser is tested
//! from recorded text without a node.
//!
//! [`Facts`] serialises to JSON: `kk-install precheck` records each node's facts in the work
//! directory, and the rules' unit tests start from such recordings.

mod parse;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use bundle_spec::packages::Distro;
use bundle_spec::packages::resolve::{Installed, InstalledPackage};
use serde::{Deserialize, Serialize};

pub use parse::GATHER_SCRIPT;

pub use crate::ssh::FactsError;
use crate::ssh::Node;
use crate::ssh::SshError;

/// Gathers the facts of `node` in one round trip (one command).
pub async fn gather(node: &Node) -> Result<Facts, SshError> {
    let script = parse::gather_script(node.name());
    let before = now();
    let output = node.run_checked(&script).await?;
    let text = output.stdout_text();
    if !parse::is_complete(&text) {
        return Err(SshError::CommandFailed {
            node: node.name().to_owned(),
            command: "the fact-gathering script".to_owned(),
            code: output.code,
            output: format!("its output stopped early:\n{}", output.combined_text()),
        });
    }
    let mut facts = Facts::parse(&text).map_err(|source| SshError::Facts {
        node: node.name().to_owned(),
        source,
    })?;
    facts.clock_offset = clock_offset(facts.clock, before, now());
    Ok(facts)
}

/// How far a node's clock reading `clock` lies outside `[before, after]`, the installer's clock
/// when the command was sent and when its output was in (negative: behind, 0: inside).
///
/// The node read its clock somewhere in that interval, so only a reading outside it is a skew.
/// `clock - before` alone counted the channel's setup as skew: milliseconds on an idle
/// machine, seconds with a hundred nodes connecting at once, which warned of skews that were
/// not there. Not measured: a true skew smaller than the round trip.
fn clock_offset(clock: f64, before: f64, after: f64) -> f64 {
    if clock < before {
        clock - before
    } else if clock > after {
        clock - after
    } else {
        0.0
    }
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Everything the precheck knows about one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// `/etc/os-release`: `ID`, `VERSION_ID`, `PRETTY_NAME`.
    pub os: OsRelease,
    /// `uname -r`.
    pub kernel: String,
    /// `uname -m` (`x86_64`, `aarch64`, …).
    pub machine: String,
    /// Online CPUs.
    pub cpus: u32,
    /// `MemTotal`, in bytes.
    pub memory_bytes: u64,
    /// `SwapTotal`, in bytes.
    pub swap_bytes: u64,
    /// The node's current host name.
    pub hostname: String,
    /// The name looked up for [`Facts::name_resolves`]: the node's inventory name, which the
    /// install makes its host name and Kubernetes node name. Empty in facts recorded before it
    /// was looked up (those looked up the current host name).
    #[serde(default)]
    pub resolved_name: String,
    /// Whether [`Facts::resolved_name`] resolves on the node (`getent ahosts`).
    #[serde(alias = "hostnameResolves")]
    pub name_resolves: bool,
    /// Addresses on the node's interfaces (without prefix length), by interface.
    pub addresses: BTreeMap<String, Vec<String>>,
    /// TCP ports something listens on, with the address it listens on.
    pub listening: Vec<Listener>,
    /// The process holding each listening TCP port, as `ss -ltnp` names its first user (the
    /// kernel's `comm`, at most 15 characters: `kube-apiserver`, `kubelet`, `etcd`), by port.
    /// Empty where `ss` is missing or names no process, and in facts recorded before it was read.
    #[serde(default)]
    pub port_holders: BTreeMap<u16, String>,
    /// The phases kk's own record on the node (`/etc/kubekey/installed.json`, written by every
    /// install) says are done there. `None` where the node has no such record (kk never
    /// installed there), where it is not kk's, and in facts recorded before it was read.
    #[serde(default)]
    pub kk_phases: Option<Vec<String>>,
    /// The sysctls the rules read, by dotted name; absent when the key does not exist.
    pub sysctls: BTreeMap<String, String>,
    /// Loaded kernel modules (`/proc/modules`).
    pub modules: Vec<String>,
    /// File systems the kernel knows (`/proc/filesystems`): shows `overlay` when it is built
    /// in, which `/proc/modules` does not list. Absent from facts recorded before it was read.
    #[serde(default)]
    pub filesystems: Vec<String>,
    /// `cgroup2fs`, `tmpfs` (v1 or hybrid), as `stat -f` names the file system of `/sys/fs/cgroup`.
    pub cgroup_fs: String,
    /// The commands of interest found on `PATH`.
    pub commands: Vec<String>,
    /// Installed versions of kubelet, kubeadm, etcd, containerd, docker, runc (first line of
    /// their version output), by program.
    pub versions: BTreeMap<String, String>,
    /// The packages `dpkg` has installed, by name; `None` where the node has no `dpkg-query`
    /// (its package manager is not dpkg), and in facts recorded before it was read.
    #[serde(default)]
    pub installed_packages: Option<BTreeMap<String, DpkgPackage>>,
    /// Whether the kernel can serve NFS: `nfsd` is a known file system, or the running kernel
    /// has the module (or has it built in). False in facts recorded before it was read.
    #[serde(default)]
    pub nfsd: bool,
    /// Files in `/etc/kubernetes/manifests`.
    pub static_pods: Vec<String>,
    /// Whether `/var/lib/etcd` exists and holds anything.
    pub etcd_data_present: bool,
    /// Free bytes on the file systems of the paths the install writes, by path.
    pub free_bytes: BTreeMap<String, u64>,
    /// The blobs of kk's store on the node (`/var/lib/kk/store/blobs/sha256`): size by hex
    /// digest. Empty where there is no store, and in facts recorded before it was read.
    #[serde(default)]
    pub store_blobs: BTreeMap<String, u64>,
    /// The node's clock, in seconds since the epoch, as the script started.
    pub clock: f64,
    /// Proxy variables (`http_proxy`, `HTTPS_PROXY`, `no_proxy`… as spelled) by where they
    /// were found ([`PROXY_SOURCES`]): the environment kk's commands run in, a login shell's,
    /// `/etc/environment`. Credentials in proxy URLs are masked (`http://***@proxy:3128`).
    #[serde(default)]
    pub proxy_env: BTreeMap<String, BTreeMap<String, String>>,
    /// The uid the commands ran as.
    pub uid: u32,
    /// How far the node's clock is ahead of the installer's (negative: behind), in seconds,
    /// beyond the round trip of the gathering script (see `clock_offset`).
    pub clock_offset: f64,
}

/// Where proxy variables are read, as [`Facts::proxy_env`] names them: the environment the
/// commands kk runs get (what kubeadm, run by kk, inherits), a login shell's (`/etc/profile`,
/// `/etc/profile.d`, the user's profile: what an operator's shell has), and `/etc/environment`
/// (what PAM gives every session).
pub const PROXY_SOURCES: &[&str] = &["session", "login shell", "/etc/environment"];

/// The fields of `/etc/os-release` the rules use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OsRelease {
    /// `ID`, e.g. `debian`, `ubuntu`, `rocky`.
    pub id: String,
    /// `VERSION_ID`, e.g. `12`, `22.04`.
    pub version_id: String,
    /// `PRETTY_NAME`, for messages.
    pub pretty_name: String,
}

/// A package `dpkg` has installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DpkgPackage {
    /// `Version`.
    pub version: String,
    /// `Provides`, as written (empty when none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provides: String,
}

/// A listening TCP socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    /// The local address (`0.0.0.0` and `::` mean all).
    pub address: String,
    /// The port.
    pub port: u16,
}

impl Facts {
    /// The architecture in Go/OCI spelling: `amd64`, `arm64`, or `uname -m` as it is.
    pub fn arch(&self) -> &str {
        match self.machine.as_str() {
            "x86_64" => "amd64",
            "aarch64" | "arm64" => "arm64",
            other => other,
        }
    }

    /// Debian's name for the node's architecture (`amd64`, `arm64`, `armhf`…), from `uname -m`;
    /// `None` for a machine Debian has no port for.
    pub fn deb_arch(&self) -> Option<&'static str> {
        Some(match self.machine.as_str() {
            "x86_64" | "amd64" => "amd64",
            "aarch64" | "arm64" => "arm64",
            "armv7l" | "armv8l" => "armhf",
            "armv6l" | "armv5tel" => "armel",
            "i386" | "i486" | "i586" | "i686" => "i386",
            "ppc64le" => "ppc64el",
            "s390x" => "s390x",
            "riscv64" => "riscv64",
            _ => return None,
        })
    }

    /// The distribution release the node runs (`/etc/os-release` `ID`-`VERSION_ID`), as a
    /// bundle's package sets name it; `None` when either field is missing or malformed.
    pub fn distro(&self) -> Option<Distro> {
        Distro::parse(&format!("{}-{}", self.os.id, self.os.version_id))
    }

    /// Whether dpkg has package `name` installed (at any version).
    pub fn has_package(&self, name: &str) -> bool {
        self.installed_packages
            .as_ref()
            .is_some_and(|packages| packages.contains_key(name))
    }

    /// What dpkg has installed, as the package resolver reads it (nothing without dpkg).
    pub fn installed(&self) -> Installed {
        Installed {
            packages: self
                .installed_packages
                .iter()
                .flatten()
                .map(|(name, package)| {
                    let installed = InstalledPackage {
                        version: package.version.clone(),
                        provides: package.provides.clone(),
                    };
                    (name.clone(), installed)
                })
                .collect(),
        }
    }

    /// Whether something listens on TCP `port` on any address.
    pub fn port_in_use(&self, port: u16) -> Option<&Listener> {
        self.listening.iter().find(|l| l.port == port)
    }

    /// The process holding TCP `port`, as `ss` named it; `None` when unknown.
    pub fn port_holder(&self, port: u16) -> Option<&str> {
        self.port_holders.get(&port).map(String::as_str)
    }

    /// Whether kk's record on the node says `phase` is done there.
    pub fn kk_installed(&self, phase: &str) -> bool {
        self.kk_phases
            .as_ref()
            .is_some_and(|phases| phases.iter().any(|p| p == phase))
    }

    /// Whether `address` is one of the node's interface addresses.
    pub fn has_address(&self, address: &str) -> bool {
        self.addresses.values().flatten().any(|a| a == address)
    }

    /// Whether `command` was found on the node.
    pub fn has_command(&self, command: &str) -> bool {
        self.commands.iter().any(|c| c == command)
    }

    /// A sysctl's value, trimmed.
    pub fn sysctl(&self, name: &str) -> Option<&str> {
        self.sysctls.get(name).map(|v| v.trim())
    }

    /// Proxy variable `name` (`http_proxy`, `https_proxy` or `no_proxy`, in either case) of
    /// `source` ([`PROXY_SOURCES`]) as Go programs (kubeadm, the kubelet, containerd) read it:
    /// the upper-case spelling when set and not empty, else the lower-case one; with the
    /// spelling found. `None` when neither is set to something.
    pub fn proxy_var(&self, source: &str, name: &str) -> Option<(&str, &str)> {
        let vars = self.proxy_env.get(source)?;
        [name.to_ascii_uppercase(), name.to_ascii_lowercase()]
            .into_iter()
            .find_map(|spelling| {
                let (key, value) = vars.get_key_value(&spelling)?;
                let value = value.trim();
                (!value.is_empty()).then_some((key.as_str(), value))
            })
    }

    /// Whether kernel module `name` is available: loaded (`/proc/modules`), or evidently built
    /// in: `overlay` as a known file system, `br_netfilter` by its `net.bridge.*` sysctls
    /// (which exist only with it).
    pub fn has_module(&self, name: &str) -> bool {
        self.modules.iter().any(|m| m == name)
            || match name {
                "overlay" => self.filesystems.iter().any(|f| f == "overlay"),
                "br_netfilter" => self.sysctls.keys().any(|k| k.starts_with("net.bridge.")),
                _ => false,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::clock_offset;

    #[test]
    fn only_a_clock_outside_the_round_trip_is_an_offset() {
        // (node clock, sent, output in, offset)
        let cases = [
            (100.0, 100.0, 100.0, 0.0),
            // A loaded installer: the channel took 3 s to open, the node's clock is right.
            (103.0, 100.0, 103.5, 0.0),
            (100.0, 100.0, 104.0, 0.0),
            (95.0, 100.0, 101.0, -5.0),
            (140.0, 100.0, 110.0, 30.0),
        ];
        for (clock, before, after, offset) in cases {
            assert!(
                (clock_offset(clock, before, after) - offset).abs() < 1e-9,
                "{clock} in [{before}, {after}]: {offset}"
            );
        }
    }
}

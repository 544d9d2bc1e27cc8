//! Operating-system packages a bundle carries for the nodes: the data model shared by the
//! builder (which resolves and downloads them) and the installer (which installs what a node
//! lacks).
//!
//! # How the types fit
//!
//! A bundle carries one [`PackageSet`] per distribution release and architecture it was built
//! for (`debian-12` on `amd64`). A set lists, in install order (every package after the packages
//! it depends on), the [`PackageRecord`]s of the dependency closure of its [`RootPackage`]s: the
//! packages someone asked for, each with the nodes it is for ([`PackageScope`]) and the commands
//! it brings. Each record's `.deb` is an artifact of the bundle's OCI layout
//! ([`crate::layout::ArtifactNamespace::Packages`]), named by [`PackageRecord::reference`].
//!
//! [`control`] reads Debian's control data (the `Packages` index of a repository, the relation
//! fields, version comparison); [`resolve`] computes a closure against what an installation
//! already has: at build time "what every Debian installation has" (`Priority: required`,
//! `Essential: yes`), at install time what `dpkg` says the node has. The same resolver on both
//! sides means the node installs exactly the part of the bundle's closure it lacks.
//!
//! # Why the relation fields stay text
//!
//! `Depends`, `Pre-Depends` and `Provides` are kept as Debian writes them: the description stays
//! readable by anyone who knows Debian's control format, and [`control`] is the one parser.
//!
//! The model names its format ([`PackageFormat`]) so that RPM families fit later: a set of
//! another format would carry its own records and its own resolver.

pub mod control;
pub mod resolve;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Digest;

/// The package format of a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackageFormat {
    /// Debian binary packages (`.deb`), for Debian and Ubuntu.
    Deb,
}

/// A distribution release as `/etc/os-release` names it: `ID` and `VERSION_ID`, written
/// `debian-12`, `ubuntu-24.04`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Distro {
    /// `ID` (`debian`, `ubuntu`).
    pub id: String,
    /// `VERSION_ID` (`12`, `24.04`).
    pub version_id: String,
}

impl Distro {
    /// Parses `ID-VERSION_ID` (`debian-12`, `ubuntu-24.04`): a lowercase id, a dash, a version
    /// of digits and dots.
    pub fn parse(text: &str) -> Option<Self> {
        let (id, version_id) = text.rsplit_once('-')?;
        let id_ok = !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        let version_ok = !version_id.is_empty()
            && version_id.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && !version_id.starts_with('.')
            && !version_id.ends_with('.');
        (id_ok && version_ok).then(|| Self {
            id: id.to_owned(),
            version_id: version_id.to_owned(),
        })
    }

    /// The package format the distribution uses, if kk carries packages for it.
    pub fn format(&self) -> Option<PackageFormat> {
        matches!(self.id.as_str(), "debian" | "ubuntu").then_some(PackageFormat::Deb)
    }
}

impl fmt::Display for Distro {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.id, self.version_id)
    }
}

impl Serialize for Distro {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Distro {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not a distribution like `debian-12`"))
        })
    }
}

/// Debian's name for the architecture of an OCI platform's `arch` (`amd64`, `arm64`, `armhf`…).
pub fn deb_arch(oci_arch: &str, variant: Option<&str>) -> Option<&'static str> {
    Some(match (oci_arch, variant) {
        ("amd64", _) => "amd64",
        ("arm64", _) => "arm64",
        ("arm", Some("v7") | None) => "armhf",
        ("arm", Some("v6" | "v5")) => "armel",
        ("386", _) => "i386",
        ("ppc64le", _) => "ppc64el",
        ("s390x", _) => "s390x",
        ("riscv64", _) => "riscv64",
        _ => return None,
    })
}

/// The packages of one distribution release and architecture that a bundle carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageSet {
    /// The distribution release (`debian-12`).
    pub distro: Distro,
    /// Debian's architecture name (`amd64`).
    pub arch: String,
    /// The package format.
    pub format: PackageFormat,
    /// Where the packages came from, for messages: `URL SUITE` (`http://deb.debian.org/debian
    /// bookworm`).
    pub repository: String,
    /// What was asked for, and for which nodes.
    pub roots: Vec<RootPackage>,
    /// The dependency closure of the roots, leaving out what every installation has, in install
    /// order.
    pub packages: Vec<PackageRecord>,
}

/// A package that was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootPackage {
    /// The package name.
    pub name: String,
    /// The nodes it is for.
    pub scope: PackageScope,
    /// The commands it brings that kk's precheck looks for (`socat`, `exportfs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Why it is in the bundle (`kubeadm`, `ipvs`, `nfs`, `manifest`).
    pub reason: String,
}

/// Which nodes a root package is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageScope {
    /// Every node of the inventory (packages a manifest lists).
    All,
    /// The `k8s_cluster` nodes (kubeadm's commands, IPVS tools, the NFS client).
    Kubernetes,
    /// The host of the `nfs` group (the NFS server).
    NfsServer,
}

/// One `.deb` of a set, with the control fields the resolver reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRecord {
    /// `Package`.
    pub name: String,
    /// `Version`.
    pub version: String,
    /// `Architecture` (`amd64`, or `all`).
    pub architecture: String,
    /// `Depends`, as written (empty when absent).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub depends: String,
    /// `Pre-Depends`, as written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pre_depends: String,
    /// `Provides`, as written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provides: String,
    /// `Multi-Arch`, as written (`same`, `foreign`, `allowed`; empty when absent).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub multi_arch: String,
    /// The `.deb`'s file name (`socat_1.7.4.4-2_amd64.deb`).
    pub filename: String,
    /// The `.deb`'s sha256, as the repository's index gives it.
    pub sha256: Sha256Digest,
    /// The `.deb`'s size in bytes.
    pub size: u64,
    /// The artifact's reference in the bundle
    /// (`kk.internal/packages/debian-12/amd64/socat:1.7.4.4-2`).
    pub reference: String,
}

//! The cluster's certificates, made by kk with rcgen: kubeadm's PKI tree and the kk registry's
//! serving certificate, in one directory (the master copy in the installer's work dir) from
//! which every node gets its share. Pure: no network, no SSH.
//!
//! # How the parts fit
//!
//! - [`PkiSpec`] says what the cluster is: control planes, etcd members, the API endpoint, the
//!   service IPs, the registry's names.
//! - `spec` turns it into the catalogue of leaf certificates, each with kubeadm's file name,
//!   common name, organisation, usages and SANs; the three CAs (`ca`, `front-proxy-ca`,
//!   `etcd/ca`) and `sa.key`/`sa.pub` are fixed.
//! - `tree` runs [`ensure`] in two phases: `inspect` reads and checks every file of the
//!   catalogue already there (with `verify`), and only if all of it is sound does `complete` make
//!   what is missing (with `issue`) and write it (with `store`). A refusal writes nothing.
//! - [`Issued`] then says which file goes where on which node ([`NodeFile`]).
//!
//! Layout of the master copy: kubeadm's names (`ca.*`, `front-proxy-ca.*`,
//! `front-proxy-client.*`, `sa.key`, `sa.pub`, `apiserver.*`, `apiserver-kubelet-client.*`,
//! `apiserver-etcd-client.*`, `etcd/ca.*`, `etcd/healthcheck-client.*`), then each etcd member's
//! `etcd/members/<name>/{server,peer}.*`, and `registry.*` signed by `ca`.
//!
//! # Why
//!
//! - **kubeadm's tree, exactly.** kubeadm finds every certificate in place and keeps it, and
//!   the cluster looks like any kubeadm cluster afterwards (`kubeadm certs check-expiration`
//!   and `kubeadm certs renew` work). So names, subjects, usages, SANs and validity are those of
//!   kubeadm v1.29+ (see `spec` and `issue`); the one change is a single `apiserver` certificate
//!   naming every control plane, which lets one master copy serve them all. `localhost` and
//!   `127.0.0.1` are not in it, as in kubeadm: add them with `extra_apiserver_sans` if a
//!   node-local proxy needs them.
//! - **Made centrally, before any node runs.** No key is copied back from a node, and every
//!   etcd member's certificates exist before the first member starts.
//! - **Never overwritten; reissued only to name what the cluster grew.** A new CA would orphan
//!   everything the old one signed (kubeconfigs, kubelet certificates, the registry trust on
//!   every node). So an existing pair is kept as long as it is sound; one that is not — half a
//!   pair, a key that is not the certificate's, a leaf not signed by its CA — is an error
//!   naming the file, and deleting it to have it remade is the operator's decision. A sound
//!   leaf that lacks SANs the cluster now needs (the apiserver's, once a control plane is
//!   added) is reissued with its own key from its CA and reported in [`Issued::reissued`], so
//!   the install copies it to the nodes that hold the old one and restarts what reads it.
//! - **RSA 2048**, kubeadm's default `encryptionAlgorithm`, which every consumer (kubeadm,
//!   etcd, containerd, old clients) accepts. aws-lc generates it fast enough: a whole tree for
//!   3 control planes and 3 etcd members (16 keys) takes about 1.5 s in a debug build.
//!   Keys are written PKCS#8 (`PRIVATE KEY`), which kubeadm, the Kubernetes components and etcd
//!   all read.
//! - **Serial numbers** are rcgen's: a hash of the certificate's public key. Every certificate
//!   has a fresh key, so serials are unique per CA (what RFC 5280 asks) with no random source of
//!   kk's own.
//! - **Files**: keys 0600 (and `sa.pub`, as kubeadm writes it), certificates 0644, directories
//!   0700; every file written whole through a temporary file, `fsync` and rename.

mod error;
mod issue;
mod renew;
mod spec;
mod store;
mod tree;
mod verify;

#[cfg(test)]
mod handshake_tests;
#[cfg(test)]
pub(crate) mod tests;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use error::PkiError;
pub use renew::{CaExpiry, KK_CERTIFICATES, Renewed, ca_expiries, holds, renew};

/// Where kubeadm keeps the cluster PKI on a node.
pub const KUBERNETES_PKI: &str = "/etc/kubernetes/pki";
/// Where kk keeps its own PKI files on a node (the registry's pair, the CA containerd trusts).
pub const KK_PKI: &str = "/etc/kk/pki";

/// What the cluster's certificates must cover.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PkiSpec {
    /// The cluster's DNS domain, e.g. `cluster.local`.
    pub cluster_domain: String,
    /// The control planes: the apiserver certificate names each one's name and addresses.
    pub control_planes: Vec<Member>,
    /// The etcd members: each gets a server and a peer certificate.
    pub etcd_members: Vec<Member>,
    /// The host of `control_plane_endpoint`: a DNS name or an IP address.
    pub endpoint_host: String,
    /// The first address of each service CIDR, e.g. `10.233.0.1`.
    pub service_ips: Vec<IpAddr>,
    /// More apiserver SANs (DNS names or IP addresses), e.g. a kube-vip address.
    pub extra_apiserver_sans: Vec<String>,
    /// The names of the kk registry's serving certificate; `None` with an external registry,
    /// which has a certificate of its own.
    pub registry: Option<RegistryNames>,
}

/// A node as its certificates name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    /// Its name: a DNS name, which for etcd members is also a directory name.
    pub name: String,
    /// Its addresses.
    pub ips: Vec<IpAddr>,
}

/// The names the kk registry is reached by.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RegistryNames {
    /// DNS names.
    pub dns: Vec<String>,
    /// IP addresses.
    pub ips: Vec<IpAddr>,
}

impl RegistryNames {
    /// Sorts `names` into IP addresses and DNS names (checked when the certificate is made).
    pub fn parse(names: &[String]) -> Self {
        let mut parsed = Self::default();
        for name in names {
            match name.parse::<IpAddr>() {
                Ok(ip) => parsed.ips.push(ip),
                Err(_) => parsed.dns.push(name.clone()),
            }
        }
        parsed
    }
}

/// One file to copy to a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFile {
    /// The file in the master copy.
    pub local: PathBuf,
    /// Its absolute path on the node.
    pub remote: String,
    /// Its mode on the node.
    pub mode: u32,
}

/// The certificates [`ensure`] left in the master copy, and who gets which.
#[derive(Debug, Clone)]
pub struct Issued {
    dir: PathBuf,
    members: Vec<String>,
    ca_cert_pem: String,
    created: Vec<PathBuf>,
    reissued: Vec<PathBuf>,
}

/// Makes every certificate `spec` needs under `dir` (the master copy in the installer's work
/// dir), keeping everything already there.
///
/// Existing pairs are checked first and nothing is written unless all of them are sound: see
/// the module documentation for what is refused.
pub fn ensure(dir: &Path, spec: &PkiSpec) -> Result<Issued, PkiError> {
    let leaves = spec::leaves(spec)?;
    let found = tree::inspect(dir, &leaves)?;
    let completed = tree::complete(dir, &leaves, found, SystemTime::now())?;
    Ok(Issued {
        dir: dir.to_owned(),
        members: spec.etcd_members.iter().map(|m| m.name.clone()).collect(),
        ca_cert_pem: completed.cluster_ca.cert_pem,
        created: completed.created,
        reissued: completed.reissued,
    })
}

impl Issued {
    /// Every file a control plane gets: kubeadm's PKI without etcd's private parts
    /// (`/etc/kubernetes/pki/{ca,front-proxy-ca,front-proxy-client,apiserver,
    /// apiserver-kubelet-client,apiserver-etcd-client}.{crt,key}`, `sa.key`, `sa.pub` and
    /// `etcd/ca.crt`).
    pub fn control_plane_files(&self) -> Vec<NodeFile> {
        let mut files: Vec<NodeFile> = [
            "ca",
            "front-proxy-ca",
            "front-proxy-client",
            "apiserver",
            "apiserver-kubelet-client",
            "apiserver-etcd-client",
        ]
        .into_iter()
        .flat_map(|base| self.pair(base, base))
        .collect();
        files.push(self.file(
            "sa.key",
            &format!("{KUBERNETES_PKI}/sa.key"),
            store::KEY_MODE,
        ));
        files.push(self.file(
            "sa.pub",
            &format!("{KUBERNETES_PKI}/sa.pub"),
            store::KEY_MODE,
        ));
        files.push(self.file(
            "etcd/ca.crt",
            &format!("{KUBERNETES_PKI}/etcd/ca.crt"),
            store::CERT_MODE,
        ));
        files
    }

    /// Every file etcd member `member` gets: `/etc/kubernetes/pki/etcd/{ca.crt,server.*,
    /// peer.*,healthcheck-client.*}`. Empty for a name that is not an etcd member of the spec.
    pub fn etcd_member_files(&self, member: &str) -> Vec<NodeFile> {
        if !self.members.iter().any(|m| m == member) {
            return Vec::new();
        }
        let dir = spec::member_dir(member);
        let mut files = vec![self.file(
            "etcd/ca.crt",
            &format!("{KUBERNETES_PKI}/etcd/ca.crt"),
            store::CERT_MODE,
        )];
        for kind in ["server", "peer"] {
            let local = dir.join(kind).to_string_lossy().into_owned();
            files.extend(self.pair(&local, &format!("etcd/{kind}")));
        }
        files.extend(self.pair("etcd/healthcheck-client", "etcd/healthcheck-client"));
        files
    }

    /// What a control plane also gets when etcd is stacked (kubeadm's static pods): the etcd
    /// CA's key, with which kubeadm makes each member's server and peer certificates.
    pub fn stacked_etcd_files(&self) -> Vec<NodeFile> {
        vec![self.file(
            "etcd/ca.key",
            &format!("{KUBERNETES_PKI}/etcd/ca.key"),
            store::KEY_MODE,
        )]
    }

    /// The registry host's serving pair: `/etc/kk/pki/registry.{crt,key}`.
    pub fn registry_files(&self) -> Vec<NodeFile> {
        vec![
            self.file(
                "registry.crt",
                &format!("{KK_PKI}/registry.crt"),
                store::CERT_MODE,
            ),
            self.file(
                "registry.key",
                &format!("{KK_PKI}/registry.key"),
                store::KEY_MODE,
            ),
        ]
    }

    /// What every node gets: `/etc/kk/pki/ca.crt`, the cluster CA that containerd's
    /// `hosts.toml` trusts for the registry.
    pub fn trust_files(&self) -> Vec<NodeFile> {
        vec![self.file("ca.crt", &format!("{KK_PKI}/ca.crt"), store::CERT_MODE)]
    }

    /// The cluster CA certificate, PEM.
    pub fn ca_cert_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    /// The files this call created, in the order written (empty on a rerun).
    pub fn created(&self) -> &[PathBuf] {
        &self.created
    }

    /// The certificates reissued with their own key because they lacked names the cluster now
    /// needs, relative to [`Issued::dir`] (`apiserver.crt`).
    pub fn reissued(&self) -> &[PathBuf] {
        &self.reissued
    }

    /// The master copy.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `local.crt` and `local.key` to `/etc/kubernetes/pki/remote.{crt,key}`.
    fn pair(&self, local: &str, remote: &str) -> [NodeFile; 2] {
        [
            self.file(
                &format!("{local}.crt"),
                &format!("{KUBERNETES_PKI}/{remote}.crt"),
                store::CERT_MODE,
            ),
            self.file(
                &format!("{local}.key"),
                &format!("{KUBERNETES_PKI}/{remote}.key"),
                store::KEY_MODE,
            ),
        ]
    }

    fn file(&self, local: &str, remote: &str, mode: u32) -> NodeFile {
        NodeFile {
            local: self.dir.join(local),
            remote: remote.to_owned(),
            mode,
        }
    }
}

/// The files [`issue_registry_cert`] wrote or reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryCert {
    /// The cluster CA certificate (`dir/ca.crt`).
    pub ca_cert: PathBuf,
    /// The registry certificate (`dir/registry.crt`).
    pub cert: PathBuf,
    /// Its key (`dir/registry.key`).
    pub key: PathBuf,
}

/// `kk-install registry cert`: (re)issues `dir/registry.{crt,key}` for `names`, signed by the
/// cluster CA `dir/ca.{crt,key}`, which is reused when present and made otherwise.
///
/// Unlike [`ensure`], this replaces an existing registry pair: the operator asked for a
/// certificate for these names. The CA follows [`ensure`]'s rules (half a pair is refused).
pub fn issue_registry_cert(dir: &Path, names: &RegistryNames) -> Result<RegistryCert, PkiError> {
    let leaf = spec::registry(names)?;
    let loaded = tree::inspect_ca(dir, spec::CaId::Cluster)?;
    let now = SystemTime::now();
    let mut created = Vec::new();
    let ca = tree::ready_ca(dir, spec::CaId::Cluster, loaded, now, &mut created)?;
    let paths = tree::make_leaf(dir, &leaf, &ca, now, &mut created, store::write_replacing)?;
    Ok(RegistryCert {
        ca_cert: ca.cert_path,
        cert: paths.cert,
        key: paths.key,
    })
}

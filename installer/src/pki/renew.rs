//! Renewing the leaf certificates of the master copy: the same key, the same names, a new
//! validity from now, signed by the same CA.
//!
//! # Why this way
//!
//! - **The existing certificate is the source of its attributes**, as in `kubeadm certs
//!   renew`: subject, SANs and extended key usages are read from the file being renewed, not
//!   recomputed from today's inventory, so a renewal never changes what a certificate names
//!   (widening the apiserver's SANs is the install's business, with its own checks).
//! - **The key stays.** Only the `.crt` file is replaced; anything pinned to the key (etcd's
//!   peers, a client that pinned the registry's key) keeps working, and a crash between two
//!   writes never leaves a key without its certificate.
//! - **Check everything first, then write.** Every pair asked for is read and checked (its
//!   key is its own, its CA signed it) before the first file is replaced, so a refusal writes
//!   nothing, as with [`ensure`](super::ensure).
//! - **CAs are never renewed here.** A new CA (even with the same key) would have to be
//!   trusted by every kubelet, kubeconfig and containerd before the leaves it signs are used;
//!   that is a rotation, outside what a renewal may do. [`ca_expiries`] reports them instead.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use x509_parser::certificate::X509Certificate;
use x509_parser::x509::AttributeTypeAndValue;

use super::PkiError;
use super::issue;
use super::spec::{CaId, LeafSpec, Usage};
use super::store::{self, CERT_MODE, PairPaths};
use super::tree;
use super::verify::{self, CertFile};

/// The certificates kk holds in its master copy, by kubeadm's names (`kubeadm certs renew
/// NAME`), and `registry` for kk's own registry.
pub const KK_CERTIFICATES: [&str; 8] = [
    "apiserver",
    "apiserver-kubelet-client",
    "front-proxy-client",
    "apiserver-etcd-client",
    "etcd-healthcheck-client",
    "etcd-server",
    "etcd-peer",
    "registry",
];

/// A certificate renewed in the master copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewed {
    /// Its name (one of [`KK_CERTIFICATES`]).
    pub name: &'static str,
    /// Its file, relative to the master copy (`etcd/members/e1/server.crt`).
    pub file: PathBuf,
}

/// A CA certificate of the master copy and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaExpiry {
    /// Its file, relative to the master copy (`ca.crt`).
    pub file: PathBuf,
    /// Its `notAfter`, seconds since the epoch.
    pub not_after: i64,
}

/// Whether `dir` holds certificate `name` (at least one file of it): the install made it.
pub fn holds(dir: &Path, name: &str) -> Result<bool, PkiError> {
    Ok(!bases(dir, name)?.is_empty())
}

/// Renews every certificate of `names` (each one of [`KK_CERTIFICATES`], held in `dir`) with
/// its own key and a validity from `now`; returns the files replaced.
pub fn renew(dir: &Path, names: &[&str], now: SystemTime) -> Result<Vec<Renewed>, PkiError> {
    let mut checked = Vec::new();
    for name in names {
        let (name, ca) = known(name)?;
        let bases = bases(dir, name)?;
        if bases.is_empty() {
            return Err(PkiError::NotHeld {
                name: name.to_owned(),
                dir: dir.to_owned(),
            });
        }
        for base in bases {
            checked.push((name, check(dir, &base, ca)?));
        }
    }
    let mut renewed = Vec::new();
    for (name, pending) in checked {
        let cert_pem = issue::sign_leaf(&pending.leaf, &pending.key, &pending.issuer, now)
            .map_err(|source| PkiError::Sign {
                path: pending.paths.cert.clone(),
                source,
            })?;
        store::write_replacing(&pending.paths.cert, cert_pem.as_bytes(), CERT_MODE)?;
        renewed.push(Renewed {
            name,
            file: pending.leaf.base.with_extension("crt"),
        });
    }
    Ok(renewed)
}

/// The CA certificates of `dir` and their expiries.
pub fn ca_expiries(dir: &Path) -> Result<Vec<CaExpiry>, PkiError> {
    let mut found = Vec::new();
    for ca in [CaId::Cluster, CaId::FrontProxy, CaId::Etcd] {
        if let Some(loaded) = tree::inspect_ca(dir, ca)? {
            let file = PathBuf::from(format!("{}.crt", ca.base()));
            let not_after = loaded.x509(&dir.join(&file))?.validity().not_after;
            found.push(CaExpiry {
                file,
                not_after: not_after.timestamp(),
            });
        }
    }
    Ok(found)
}

/// A pair checked and ready to be signed again.
struct Pending {
    paths: PairPaths,
    leaf: LeafSpec,
    key: rcgen::KeyPair,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// `name` as one of [`KK_CERTIFICATES`], with the CA that signs it.
fn known(name: &str) -> Result<(&'static str, CaId), PkiError> {
    let ca = match name {
        "apiserver" | "apiserver-kubelet-client" | "registry" => CaId::Cluster,
        "front-proxy-client" => CaId::FrontProxy,
        "apiserver-etcd-client" | "etcd-healthcheck-client" | "etcd-server" | "etcd-peer" => {
            CaId::Etcd
        }
        _ => {
            return Err(PkiError::UnknownCertificate {
                name: name.to_owned(),
                known: KK_CERTIFICATES.join("`, `"),
            });
        }
    };
    let name = KK_CERTIFICATES
        .into_iter()
        .find(|known| *known == name)
        .unwrap_or_else(|| unreachable!("`{name}` is matched above"));
    Ok((name, ca))
}

/// The bases (paths without `.crt`/`.key`) of certificate `name` present in `dir`: one, or
/// one per etcd member for `etcd-server` and `etcd-peer`.
fn bases(dir: &Path, name: &str) -> Result<Vec<PathBuf>, PkiError> {
    let candidates = match name {
        "etcd-server" | "etcd-peer" => {
            let kind = name.trim_start_matches("etcd-");
            let members = dir.join("etcd/members");
            let mut found = Vec::new();
            if members.is_dir() {
                let entries = std::fs::read_dir(&members).map_err(|source| PkiError::Read {
                    path: members.clone(),
                    source,
                })?;
                for entry in entries {
                    let entry = entry.map_err(|source| PkiError::Read {
                        path: members.clone(),
                        source,
                    })?;
                    let member = entry.file_name().to_string_lossy().into_owned();
                    found.push(PathBuf::from("etcd/members").join(member).join(kind));
                }
            }
            found.sort();
            found
        }
        "etcd-healthcheck-client" => vec![PathBuf::from("etcd/healthcheck-client")],
        other => vec![PathBuf::from(other)],
    };
    let mut present = Vec::new();
    for base in candidates {
        let paths = PairPaths::new(dir, &base);
        if paths.cert.exists() || paths.key.exists() {
            present.push(base);
        }
    }
    Ok(present)
}

/// Reads the pair `base` and its CA, and checks the key is the certificate's and the CA
/// signed it.
fn check(dir: &Path, base: &Path, ca: CaId) -> Result<Pending, PkiError> {
    let paths = PairPaths::new(dir, base);
    let Some((cert_pem, key_pem)) = store::read_pair(&paths)? else {
        return Err(PkiError::NotHeld {
            name: base.display().to_string(),
            dir: dir.to_owned(),
        });
    };
    let ca_paths = PairPaths::new(dir, Path::new(ca.base()));
    let loaded = tree::inspect_ca(dir, ca)?.ok_or_else(|| PkiError::CaMissing {
        leaf: paths.cert.clone(),
        ca: ca_paths.cert.clone(),
    })?;
    let cert = CertFile::parse(&paths.cert, &cert_pem)?;
    let key = verify::parse_key(&paths.key, &key_pem)?;
    let leaf = from_existing(base, ca, &cert.x509(&paths.cert)?);
    verify::check_leaf(&paths, &cert, &key, (&ca_paths.cert, loaded.cert()), &leaf)?;
    let issuer = loaded.into_issuer(&ca_paths.cert)?;
    Ok(Pending {
        paths,
        leaf,
        key,
        issuer,
    })
}

/// The catalogue entry an existing certificate amounts to: its subject, SANs and usages.
fn from_existing(base: &Path, ca: CaId, x509: &X509Certificate<'_>) -> LeafSpec {
    let eku = x509.extended_key_usage().ok().flatten().map(|e| e.value);
    let usage = match eku.map(|e| (e.server_auth, e.client_auth)) {
        Some((true, false)) => Usage::Server,
        Some((false, true)) => Usage::Client,
        _ => Usage::Both,
    };
    let (dns, ips) = verify::sans(x509);
    LeafSpec {
        base: base.to_owned(),
        ca,
        common_name: first(x509.subject().iter_common_name()).unwrap_or_default(),
        organization: first(x509.subject().iter_organization()),
        usage,
        dns,
        ips,
    }
}

/// The first value of a subject attribute, as text.
fn first<'a>(mut values: impl Iterator<Item = &'a AttributeTypeAndValue<'a>>) -> Option<String> {
    values
        .next()
        .and_then(|value| value.as_str().ok())
        .map(str::to_owned)
}

#[cfg(test)]
#[path = "renew_tests.rs"]
mod tests;

//! The PKI directory as a whole: what is there ([`inspect`]), then what to add ([`complete`]).
//!
//! The two phases are separate so that a refusal writes nothing: [`inspect`] reads and checks
//! every file the catalogue names before [`complete`] creates the first one.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rcgen::{Issuer, KeyPair};
use x509_parser::certificate::X509Certificate;

use super::PkiError;
use super::issue::{self, Made};
use super::spec::{CaId, LeafSpec};
use super::store::{self, CERT_MODE, KEY_MODE, PairPaths};
use super::verify::{self, CertFile};

/// A CA already on disk, checked.
#[derive(Debug)]
pub(super) struct LoadedCa {
    cert_pem: String,
    cert: CertFile,
    key: KeyPair,
}

impl LoadedCa {
    /// Its certificate.
    pub(super) fn cert(&self) -> &CertFile {
        &self.cert
    }

    /// Its certificate, parsed (`path` names it in an error).
    pub(super) fn x509(&self, path: &Path) -> Result<X509Certificate<'_>, PkiError> {
        self.cert.x509(path)
    }

    /// The issuer that signs with it (`path`, its certificate, names it in an error).
    pub(super) fn into_issuer(self, path: &Path) -> Result<Issuer<'static, KeyPair>, PkiError> {
        Issuer::from_ca_cert_der(&self.cert.der().into(), self.key).map_err(|e| {
            PkiError::CertParse {
                path: path.to_owned(),
                reason: e.to_string(),
            }
        })
    }
}

/// A CA ready to sign: its certificate and its issuer.
pub(super) struct ReadyCa {
    /// Where its certificate is.
    pub(super) cert_path: PathBuf,
    /// Its certificate, PEM.
    pub(super) cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for ReadyCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadyCa")
            .field("cert_path", &self.cert_path)
            .finish_non_exhaustive()
    }
}

/// One value per CA.
#[derive(Debug)]
struct PerCa<T> {
    cluster: T,
    front_proxy: T,
    etcd: T,
}

impl<T> PerCa<T> {
    fn try_new(mut f: impl FnMut(CaId) -> Result<T, PkiError>) -> Result<Self, PkiError> {
        Ok(Self {
            cluster: f(CaId::Cluster)?,
            front_proxy: f(CaId::FrontProxy)?,
            etcd: f(CaId::Etcd)?,
        })
    }

    fn try_map<U>(
        self,
        mut f: impl FnMut(CaId, T) -> Result<U, PkiError>,
    ) -> Result<PerCa<U>, PkiError> {
        Ok(PerCa {
            cluster: f(CaId::Cluster, self.cluster)?,
            front_proxy: f(CaId::FrontProxy, self.front_proxy)?,
            etcd: f(CaId::Etcd, self.etcd)?,
        })
    }

    fn get(&self, ca: CaId) -> &T {
        match ca {
            CaId::Cluster => &self.cluster,
            CaId::FrontProxy => &self.front_proxy,
            CaId::Etcd => &self.etcd,
        }
    }
}

/// What [`inspect`] found: the CAs present, whether `sa.*` is, and each leaf.
#[derive(Debug)]
pub(super) struct Found {
    cas: PerCa<Option<LoadedCa>>,
    service_account: bool,
    leaves: Vec<LeafFound>,
}

/// What [`inspect`] found of one leaf.
#[derive(Debug)]
enum LeafFound {
    /// Not there: made.
    Absent,
    /// There and sound: kept.
    Sound,
    /// Sound but lacking names the cluster now needs (a control plane added): reissued with
    /// its own key, so what pinned the key keeps working and the nodes only need the new
    /// certificate.
    Stale(KeyPair),
}

/// What [`complete`] wrote.
#[derive(Debug)]
pub(super) struct Completed {
    /// The cluster CA.
    pub(super) cluster_ca: ReadyCa,
    /// The files made.
    pub(super) created: Vec<PathBuf>,
    /// The certificates reissued with their own key, relative to the directory.
    pub(super) reissued: Vec<PathBuf>,
}

/// Reads and checks every pair of the catalogue that exists; writes nothing.
pub(super) fn inspect(dir: &Path, leaves: &[LeafSpec]) -> Result<Found, PkiError> {
    let cas = PerCa::try_new(|ca| inspect_ca(dir, ca))?;
    let service_account = inspect_service_account(dir)?;
    let leaves = leaves
        .iter()
        .map(|leaf| inspect_leaf(dir, leaf, cas.get(leaf.ca).as_ref()))
        .collect::<Result<Vec<_>, PkiError>>()?;
    Ok(Found {
        cas,
        service_account,
        leaves,
    })
}

/// Makes everything [`inspect`] did not find and reissues the leaves that lack names.
pub(super) fn complete(
    dir: &Path,
    leaves: &[LeafSpec],
    found: Found,
    now: SystemTime,
) -> Result<Completed, PkiError> {
    let mut created = Vec::new();
    let mut reissued = Vec::new();
    let ready = found
        .cas
        .try_map(|ca, loaded| ready_ca(dir, ca, loaded, now, &mut created))?;
    if !found.service_account {
        make_service_account(dir, &mut created)?;
    }
    for (leaf, found) in leaves.iter().zip(found.leaves) {
        let ca = ready.get(leaf.ca);
        match found {
            LeafFound::Sound => {}
            LeafFound::Absent => {
                make_leaf(dir, leaf, ca, now, &mut created, store::write_new)?;
            }
            LeafFound::Stale(key) => {
                let paths = PairPaths::new(dir, &leaf.base);
                let cert_pem = issue::sign_leaf(leaf, &key, &ca.issuer, now).map_err(|source| {
                    PkiError::Sign {
                        path: paths.cert.clone(),
                        source,
                    }
                })?;
                store::write_replacing(&paths.cert, cert_pem.as_bytes(), CERT_MODE)?;
                reissued.push(leaf.base.with_extension("crt"));
            }
        }
    }
    Ok(Completed {
        cluster_ca: ready.cluster,
        created,
        reissued,
    })
}

/// The CA pair `ca`, if present, checked.
pub(super) fn inspect_ca(dir: &Path, ca: CaId) -> Result<Option<LoadedCa>, PkiError> {
    let paths = PairPaths::new(dir, Path::new(ca.base()));
    let Some((cert_pem, key_pem)) = store::read_pair(&paths)? else {
        return Ok(None);
    };
    let cert = CertFile::parse(&paths.cert, &cert_pem)?;
    let key = verify::parse_key(&paths.key, &key_pem)?;
    verify::check_ca(&paths, &cert, &key)?;
    Ok(Some(LoadedCa {
        cert_pem,
        cert,
        key,
    }))
}

/// The CA `ca` ready to sign: `loaded`, or a new one written now.
pub(super) fn ready_ca(
    dir: &Path,
    ca: CaId,
    loaded: Option<LoadedCa>,
    now: SystemTime,
    created: &mut Vec<PathBuf>,
) -> Result<ReadyCa, PkiError> {
    let paths = PairPaths::new(dir, Path::new(ca.base()));
    if let Some(loaded) = loaded {
        let cert_pem = loaded.cert_pem.clone();
        let issuer = loaded.into_issuer(&paths.cert)?;
        return Ok(ReadyCa {
            cert_path: paths.cert,
            cert_pem,
            issuer,
        });
    }
    let (made, issuer) = issue::new_ca(ca, now).map_err(|source| PkiError::Sign {
        path: paths.cert.clone(),
        source,
    })?;
    write_pair(&paths, &made, created, store::write_new)?;
    Ok(ReadyCa {
        cert_path: paths.cert,
        cert_pem: made.cert_pem,
        issuer,
    })
}

/// Signs `leaf` with `ca` and writes it with `write` (refusing or replacing existing files).
pub(super) fn make_leaf(
    dir: &Path,
    leaf: &LeafSpec,
    ca: &ReadyCa,
    now: SystemTime,
    created: &mut Vec<PathBuf>,
    write: fn(&Path, &[u8], u32) -> Result<(), PkiError>,
) -> Result<PairPaths, PkiError> {
    let paths = PairPaths::new(dir, &leaf.base);
    let made = issue::new_leaf(leaf, &ca.issuer, now).map_err(|source| PkiError::Sign {
        path: paths.cert.clone(),
        source,
    })?;
    write_pair(&paths, &made, created, write)?;
    Ok(paths)
}

/// `sa.pub` and `sa.key`, as a pair whose "certificate" is the public key.
fn service_account_paths(dir: &Path) -> PairPaths {
    PairPaths {
        cert: dir.join("sa.pub"),
        key: dir.join("sa.key"),
    }
}

fn inspect_service_account(dir: &Path) -> Result<bool, PkiError> {
    let paths = service_account_paths(dir);
    let Some((public_pem, key_pem)) = store::read_pair(&paths)? else {
        return Ok(false);
    };
    let key = verify::parse_key(&paths.key, &key_pem)?;
    verify::check_public_key(&paths, &public_pem, &key)?;
    Ok(true)
}

fn make_service_account(dir: &Path, created: &mut Vec<PathBuf>) -> Result<(), PkiError> {
    let paths = service_account_paths(dir);
    let key = issue::new_key().map_err(|source| PkiError::Sign {
        path: paths.key.clone(),
        source,
    })?;
    store::ensure_dir(dir)?;
    store::write_new(&paths.key, key.serialize_pem().as_bytes(), KEY_MODE)?;
    created.push(paths.key);
    store::write_new(&paths.cert, key.public_key_pem().as_bytes(), KEY_MODE)?;
    created.push(paths.cert);
    Ok(())
}

fn inspect_leaf(dir: &Path, leaf: &LeafSpec, ca: Option<&LoadedCa>) -> Result<LeafFound, PkiError> {
    let paths = PairPaths::new(dir, &leaf.base);
    let Some((cert_pem, key_pem)) = store::read_pair(&paths)? else {
        return Ok(LeafFound::Absent);
    };
    let ca_path = PairPaths::new(dir, Path::new(leaf.ca.base())).cert;
    let Some(ca) = ca else {
        return Err(PkiError::CaMissing {
            leaf: paths.cert,
            ca: ca_path,
        });
    };
    let cert = CertFile::parse(&paths.cert, &cert_pem)?;
    let key = verify::parse_key(&paths.key, &key_pem)?;
    match verify::check_leaf(&paths, &cert, &key, (&ca_path, &ca.cert), leaf) {
        Ok(()) => Ok(LeafFound::Sound),
        Err(PkiError::SansMissing { .. }) => Ok(LeafFound::Stale(key)),
        Err(error) => Err(error),
    }
}

/// Writes the key, then the certificate: a crash in between leaves a key without its
/// certificate, which the next run reports (never a certificate whose key is lost).
fn write_pair(
    paths: &PairPaths,
    made: &Made,
    created: &mut Vec<PathBuf>,
    write: fn(&Path, &[u8], u32) -> Result<(), PkiError>,
) -> Result<(), PkiError> {
    if let Some(parent) = paths.cert.parent() {
        store::ensure_dir(parent)?;
    }
    write(&paths.key, made.key_pem.as_bytes(), KEY_MODE)?;
    created.push(paths.key.clone());
    write(&paths.cert, made.cert_pem.as_bytes(), CERT_MODE)?;
    created.push(paths.cert.clone());
    Ok(())
}

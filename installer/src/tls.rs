//! `kk-install registry cert`: a CA and a serving certificate for the registry.
//!
//! The certificates are made by [`kk_install::pki`], the one owner of the cluster CA: the CA
//! here is the cluster CA `ca.crt`/`ca.key`, created once with kubeadm's shape and validity and
//! reused afterwards (half a pair is refused, never overwritten). Running the command again for
//! other names signs a new serving certificate with the same CA, so nodes that trust `ca.crt`
//! keep trusting the registry.

use std::path::{Path, PathBuf};

use kk_install::pki::{self, RegistryNames};

/// The files a `registry cert` run leaves in its directory.
#[derive(Debug)]
pub(crate) struct Issued {
    pub(crate) ca_cert: PathBuf,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// Creates (or reuses) `dir/ca.crt` + `dir/ca.key` and issues `dir/registry.crt` +
/// `dir/registry.key` for `names` (DNS names or IP addresses).
pub(crate) fn issue(dir: &Path, names: &[String]) -> anyhow::Result<Issued> {
    anyhow::ensure!(
        !names.is_empty(),
        "give at least one name or address with `--names`"
    );
    let issued = pki::issue_registry_cert(dir, &RegistryNames::parse(names))?;
    Ok(Issued {
        ca_cert: issued.ca_cert,
        cert: issued.cert,
        key: issued.key,
    })
}

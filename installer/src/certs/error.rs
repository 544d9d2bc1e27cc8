//! The error of `certs check` and `certs renew`.

use crate::pki::PkiError;
use crate::ssh::SshError;

/// The certificates could not be read, renewed or put in place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CertsError {
    /// A command on a node failed.
    #[error("on `{node}`: cannot {what}")]
    Node {
        /// The node.
        node: String,
        /// What was being done, naming the file.
        what: String,
        /// Why (boxed: an SSH error is large, and every result of this module carries it).
        #[source]
        source: Box<SshError>,
    },
    /// A file on a node that is not a certificate.
    #[error("on `{node}`: `{path}` is not a certificate: {reason}")]
    Parse {
        /// The node.
        node: String,
        /// The file.
        path: String,
        /// What the parser said.
        reason: String,
    },
    /// A name that is neither kk's nor kubeadm's.
    #[error(
        "`{name}` is not a certificate `certs renew` knows; hint: use one of `{known}`, or `--all`"
    )]
    UnknownName {
        /// The name as given.
        name: String,
        /// Every name known, joined with `` `, ` ``.
        known: String,
    },
    /// Neither `--all` nor a name.
    #[error("`certs renew` needs the certificates to renew; hint: name them, or give `--all`")]
    NothingAsked,
    /// The master copy refused.
    #[error(transparent)]
    Pki(#[from] PkiError),
    /// A service did not come back after its restart.
    #[error(
        "on `{node}`: {service} did not come back after its restart with the renewed certificates: {said}; hint: look at the node's log in the work directory, fix it, and run `certs renew` again (the renewed files are in place)"
    )]
    Restart {
        /// The node.
        node: String,
        /// The service (`etcd`, `kk-registry`, the static pod `kube-apiserver`).
        service: String,
        /// What the node said.
        said: String,
    },
}

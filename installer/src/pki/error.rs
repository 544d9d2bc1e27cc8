//! The error of making the cluster's certificates, or of keeping those already there.

use std::path::PathBuf;

/// The cluster's certificates cannot be made, or those already there cannot be kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PkiError {
    /// No control plane to name in the apiserver certificate.
    #[error(
        "the cluster has no control plane, so there is no apiserver certificate to make; hint: put at least one host in `kube_control_plane`"
    )]
    NoControlPlane,
    /// The registry has neither a DNS name nor an address.
    #[error(
        "the registry has no DNS name or IP address for its certificate; hint: give the names the nodes reach it by"
    )]
    NoRegistryName,
    /// An etcd member name that is not a DNS name (it names a directory and a SAN).
    #[error(
        "etcd member name `{name}` is not a DNS name, so it cannot name its certificates' directory; hint: use letters, digits, `-` and `.`"
    )]
    MemberName {
        /// The name as given.
        name: String,
    },
    /// Two etcd members with the same name.
    #[error("etcd member `{name}` is listed twice; hint: each member needs its own name")]
    DuplicateMember {
        /// The name.
        name: String,
    },
    /// A SAN that is neither an IP address nor a DNS name.
    #[error(
        "`{value}` cannot go in the {certificate} certificate: it is neither an IP address nor a DNS name"
    )]
    BadSan {
        /// Which certificate (`apiserver`, `registry`).
        certificate: &'static str,
        /// The value as given.
        value: String,
    },
    /// A file could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file or directory could not be written.
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// One file of a pair without the other.
    #[error("`{}` exists but `{}` does not; kk will not replace half a pair; hint: restore `{}`, or delete `{}` to have both made anew (for a CA, everything it signed must then be remade too)", present.display(), missing.display(), missing.display(), present.display())]
    HalfPair {
        /// The file there.
        present: PathBuf,
        /// The file missing.
        missing: PathBuf,
    },
    /// A certificate file that is not a PEM X.509 certificate.
    #[error("`{}` is not a PEM certificate: {reason}", path.display())]
    CertParse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A key file kk cannot read.
    #[error("`{}` is not a PEM private key kk can use (RSA or ECDSA)", path.display())]
    KeyParse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
    /// `sa.pub` is not a PEM public key.
    #[error("`{}` is not a PEM public key: {reason}", path.display())]
    PublicKeyParse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A CA file that is not a CA certificate.
    #[error("`{}` is not a CA certificate (it has no `CA:TRUE` basic constraint)", path.display())]
    NotCa {
        /// The file.
        path: PathBuf,
    },
    /// A key that does not belong to the certificate beside it.
    #[error("`{}` is not the key of `{}`; hint: restore the right key, or delete both files to have them made anew", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate (or `sa.pub`).
        cert: PathBuf,
        /// The key.
        key: PathBuf,
    },
    /// A leaf certificate its CA did not sign.
    #[error("`{}` is not signed by `{}`; hint: delete `{}` and its key to have them made anew by this CA", cert.display(), ca.display(), cert.display())]
    NotSignedBy {
        /// The leaf certificate.
        cert: PathBuf,
        /// The CA certificate.
        ca: PathBuf,
    },
    /// A leaf certificate whose CA is gone.
    #[error("`{}` exists but its CA `{}` does not; hint: restore the CA, or delete `{}` and its key to have them made anew", leaf.display(), ca.display(), leaf.display())]
    CaMissing {
        /// The leaf certificate.
        leaf: PathBuf,
        /// The CA certificate looked for.
        ca: PathBuf,
    },
    /// A leaf certificate that lacks names the cluster now needs.
    #[error("`{}` does not name {missing}, which the cluster now needs; hint: run the install again, which reissues it with its own key", path.display())]
    SansMissing {
        /// The certificate.
        path: PathBuf,
        /// The missing names, in backticks, comma-separated.
        missing: String,
    },
    /// A key or certificate could not be made.
    #[error("cannot make `{}`", path.display())]
    Sign {
        /// The file it was for.
        path: PathBuf,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
    /// A certificate name kk does not hold in its master copy by that name.
    #[error(
        "`{name}` is not a certificate kk renews; hint: kk renews `{known}`, and kubeadm's kubeconfigs (`admin.conf`, ...) through `kubeadm certs renew`"
    )]
    UnknownCertificate {
        /// The name as given.
        name: String,
        /// The names kk knows, joined with `` `, ` ``.
        known: String,
    },
    /// A certificate asked for that the master copy does not hold.
    #[error("`{name}` is not in kk's master copy `{}`: this install did not make it; hint: leave it out, or run from the work directory of the install that made it (`--work-dir`)", dir.display())]
    NotHeld {
        /// The certificate's name (or file).
        name: String,
        /// The master copy.
        dir: PathBuf,
    },
}

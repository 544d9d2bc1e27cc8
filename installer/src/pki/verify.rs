//! Checks of the files already in the PKI directory, before kk relies on them.
//!
//! An existing pair is kept only when it is sound: the key is the certificate's, a CA is a CA,
//! a leaf is signed by its CA and still names everything the cluster now needs. Anything else
//! is an error naming the file; kk never mends a PKI by overwriting it.

use std::net::IpAddr;
use std::path::Path;

use rcgen::{KeyPair, PublicKeyData as _};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;

use super::PkiError;
use super::spec::LeafSpec;
use super::store::PairPaths;

/// A certificate file decoded from PEM (its DER, which [`X509Certificate`] borrows).
#[derive(Debug)]
pub(super) struct CertFile(Pem);

impl CertFile {
    /// Decodes the first certificate of `pem`, read from `path`.
    pub(super) fn parse(path: &Path, pem: &str) -> Result<Self, PkiError> {
        let bad = |reason: String| PkiError::CertParse {
            path: path.to_owned(),
            reason,
        };
        let (_, pem) =
            x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let file = Self(pem);
        file.x509(path)?;
        Ok(file)
    }

    /// The parsed certificate.
    pub(super) fn x509(&self, path: &Path) -> Result<X509Certificate<'_>, PkiError> {
        self.0.parse_x509().map_err(|e| PkiError::CertParse {
            path: path.to_owned(),
            reason: e.to_string(),
        })
    }

    /// The DER bytes.
    pub(super) fn der(&self) -> &[u8] {
        &self.0.contents
    }
}

/// Decodes a private key (PKCS#8 or PKCS#1/SEC1 PEM; RSA or ECDSA).
pub(super) fn parse_key(path: &Path, pem: &str) -> Result<KeyPair, PkiError> {
    KeyPair::from_pem(pem).map_err(|source| PkiError::KeyParse {
        path: path.to_owned(),
        source,
    })
}

/// Checks an existing CA pair: a CA certificate and its own key.
pub(super) fn check_ca(paths: &PairPaths, cert: &CertFile, key: &KeyPair) -> Result<(), PkiError> {
    let x509 = cert.x509(&paths.cert)?;
    if !x509.is_ca() {
        return Err(PkiError::NotCa {
            path: paths.cert.clone(),
        });
    }
    check_key_matches(paths, &x509, key)
}

/// Checks an existing leaf pair: its own key, signed by `ca`, naming every SAN `leaf` needs.
pub(super) fn check_leaf(
    paths: &PairPaths,
    cert: &CertFile,
    key: &KeyPair,
    ca: (&Path, &CertFile),
    leaf: &LeafSpec,
) -> Result<(), PkiError> {
    let x509 = cert.x509(&paths.cert)?;
    check_key_matches(paths, &x509, key)?;
    let ca_x509 = ca.1.x509(ca.0)?;
    x509.verify_signature(Some(ca_x509.public_key()))
        .map_err(|_| PkiError::NotSignedBy {
            cert: paths.cert.clone(),
            ca: ca.0.to_owned(),
        })?;
    let missing = missing_sans(&x509, leaf);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PkiError::SansMissing {
            path: paths.cert.clone(),
            missing: missing.join(", "),
        })
    }
}

/// Checks that `sa.pub` is the public half of `sa.key`.
pub(super) fn check_public_key(
    paths: &PairPaths,
    public_pem: &str,
    key: &KeyPair,
) -> Result<(), PkiError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(public_pem.as_bytes()).map_err(|e| {
        PkiError::PublicKeyParse {
            path: paths.cert.clone(),
            reason: e.to_string(),
        }
    })?;
    if pem.label == "PUBLIC KEY" && pem.contents == key.subject_public_key_info() {
        Ok(())
    } else {
        Err(PkiError::KeyMismatch {
            cert: paths.cert.clone(),
            key: paths.key.clone(),
        })
    }
}

fn check_key_matches(
    paths: &PairPaths,
    x509: &X509Certificate<'_>,
    key: &KeyPair,
) -> Result<(), PkiError> {
    if x509.public_key().subject_public_key.data.as_ref() == key.der_bytes() {
        Ok(())
    } else {
        Err(PkiError::KeyMismatch {
            cert: paths.cert.clone(),
            key: paths.key.clone(),
        })
    }
}

/// The SANs `leaf` needs that `x509` lacks, in backticks.
fn missing_sans(x509: &X509Certificate<'_>, leaf: &LeafSpec) -> Vec<String> {
    let (dns, ips) = sans(x509);
    let dns_missing = leaf
        .dns
        .iter()
        .filter(|name| !dns.iter().any(|have| have.eq_ignore_ascii_case(name)))
        .map(|name| format!("`{name}`"));
    let ips_missing = leaf
        .ips
        .iter()
        .filter(|ip| !ips.contains(ip))
        .map(|ip| format!("`{ip}`"));
    dns_missing.chain(ips_missing).collect()
}

/// The DNS and IP subject alternative names of a certificate.
pub(super) fn sans(x509: &X509Certificate<'_>) -> (Vec<String>, Vec<IpAddr>) {
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    let names = x509
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|ext| ext.value.general_names.iter());
    for name in names.into_iter().flatten() {
        match name {
            GeneralName::DNSName(name) => dns.push((*name).to_owned()),
            GeneralName::IPAddress(bytes) => {
                if let Ok(v4) = <[u8; 4]>::try_from(*bytes) {
                    ips.push(IpAddr::from(v4));
                } else if let Ok(v6) = <[u8; 16]>::try_from(*bytes) {
                    ips.push(IpAddr::from(v6));
                }
            }
            _ => {}
        }
    }
    (dns, ips)
}

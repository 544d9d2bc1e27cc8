//! Who may have made a bundle: the trusted keys (`--trusted-key`, config `trusted_keys`) and
//! the check of a bundle's signatures against them, before anything is unpacked or any node is
//! touched.

use std::path::PathBuf;

use bundle_spec::sign::SignatureError;
use bundle_spec::sign::keys::{KeyError, read_public_key};
use bundle_spec::sign::verify::{FoundSignature, Origin, check_bundle};
use bundle_spec::{Bundle, BundleError};
use p256::ecdsa::VerifyingKey;
use serde_json::{Value, json};

/// Why a bundle is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A trusted key file cannot be read.
    #[error("cannot read the trusted key `{}`", path.display())]
    ReadKey {
        /// The key file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// A trusted key file holds no usable key.
    #[error("cannot use the trusted key `{}`", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: KeyError,
    },
    /// The bundle's bytes cannot be read where its signature is: it is damaged, which the
    /// integrity check names, not the trust.
    #[error("bundle `{}` is not intact", bundle.display())]
    Damaged {
        /// The bundle.
        bundle: PathBuf,
        /// Where it is damaged.
        #[source]
        source: Box<BundleError>,
    },
    /// A signature is there but unreadable, with no trusted key given: kk reports who signed,
    /// and must not pass over a signature it cannot read.
    #[error("cannot read the signature of bundle `{}`; hint: sign it again with `kk-bundle sign`, or remove `<bundle>.sigstore.json` if it belongs to another bundle", bundle.display())]
    Unreadable {
        /// The bundle.
        bundle: PathBuf,
        /// Why.
        #[source]
        source: SignatureError,
    },
    /// The bundle's signatures do not satisfy the trusted keys.
    #[error("bundle `{}` is refused: it is not signed by a trusted key", bundle.display())]
    Refused {
        /// The bundle.
        bundle: PathBuf,
        /// Why.
        #[source]
        source: SignatureError,
    },
}

/// Reads the public keys (cosign's `cosign.pub`) at `paths`.
pub fn read_trusted_keys(paths: &[PathBuf]) -> Result<Vec<VerifyingKey>, TrustError> {
    paths
        .iter()
        .map(|path| {
            let pem = std::fs::read_to_string(path).map_err(|source| TrustError::ReadKey {
                path: path.clone(),
                source,
            })?;
            read_public_key(&pem).map_err(|source| TrustError::Key {
                path: path.clone(),
                source,
            })
        })
        .collect()
}

/// What the signature check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signatures {
    /// Every signature found (embedded first); empty for an unsigned bundle.
    pub found: Vec<FoundSignature>,
    /// Whether trusted keys were given (and so every signature verified with one of them).
    pub checked: bool,
}

/// Checks `bundle`'s signatures against the trusted keys at `paths`. With keys, an unsigned
/// bundle, or any signature that does not verify with one of them, is refused (fail closed:
/// also when a signature cannot be read). Without keys, signatures are only read to report
/// their key, and a malformed one is refused all the same.
pub fn check(bundle: &mut Bundle, paths: &[PathBuf]) -> Result<Signatures, TrustError> {
    let keys = read_trusted_keys(paths)?;
    let found = check_bundle(bundle, &keys).map_err(|source| {
        let bundle = bundle.path().to_owned();
        match source {
            SignatureError::Embedded(source) => TrustError::Damaged { bundle, source },
            source if keys.is_empty() => TrustError::Unreadable { bundle, source },
            source => TrustError::Refused { bundle, source },
        }
    })?;
    Ok(Signatures {
        found,
        checked: !keys.is_empty(),
    })
}

impl Signatures {
    /// The warning an unsigned bundle gets (only ever accepted when no key is trusted).
    pub fn warning(&self) -> Option<&'static str> {
        self.found.is_empty().then_some(
            "warning: the bundle is not signed, so who made it is unknown; hint: pass `--trusted-key cosign.pub` to require a signature",
        )
    }

    /// One line per signature for the operator: where it is and the key that made it.
    pub fn lines(&self) -> Vec<String> {
        self.found
            .iter()
            .map(|signature| {
                let key = signature
                    .fingerprint
                    .as_deref()
                    .unwrap_or("unknown (no key hint)");
                let how = if signature.trusted {
                    "verified with trusted key"
                } else {
                    "not checked (no --trusted-key), made by key"
                };
                format!("signature: {}: {how} {key}", origin_name(&signature.origin))
            })
            .collect()
    }

    /// The signatures as JSON, for `--output json`.
    pub fn to_json(&self) -> Value {
        json!({
            "checked": self.checked,
            "signatures": self.found.iter().map(|signature| json!({
                "origin": origin_name(&signature.origin),
                "fingerprint": signature.fingerprint,
                "trusted": signature.trusted,
            })).collect::<Vec<_>>(),
        })
    }
}

/// `embedded`, or the sidecar's path.
fn origin_name(origin: &Origin) -> String {
    match origin {
        Origin::Embedded => "embedded".to_owned(),
        Origin::Sidecar(path) => path.display().to_string(),
    }
}

//! Names the algorithm of a key that is not ECDSA P-256, so a refusal says what the key is
//! (`ECDSA P-384`, `RSA`, `Ed25519`) instead of a DER decoding error.

use p256::pkcs8::der::asn1::ObjectIdentifier;
use p256::pkcs8::spki::{AlgorithmIdentifierRef, SubjectPublicKeyInfoRef};
use p256::pkcs8::{PrivateKeyInfoRef, der::Decode as _};

/// `id-ecPublicKey` (RFC 5480): an elliptic-curve key, its curve in the parameters.
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");

/// Key algorithms (and, for `id-ecPublicKey`, curves) by OID, with the names operators know.
const NAMES: [(&str, &str); 8] = [
    ("1.2.840.10045.3.1.1", "ECDSA P-192"),
    ("1.2.840.10045.3.1.7", "ECDSA P-256"),
    ("1.3.132.0.34", "ECDSA P-384"),
    ("1.3.132.0.35", "ECDSA P-521"),
    ("1.3.132.0.10", "ECDSA secp256k1"),
    ("1.2.840.113549.1.1.1", "RSA"),
    ("1.3.101.112", "Ed25519"),
    ("1.3.101.113", "Ed448"),
];

/// The name of the algorithm of a PKCS#8 private key, if the DER is one.
pub(super) fn of_private_key(der: &[u8]) -> Option<String> {
    PrivateKeyInfoRef::from_der(der)
        .ok()
        .map(|info| name(&info.algorithm))
}

/// The name of the algorithm of a `SubjectPublicKeyInfo`, if the DER is one.
pub(super) fn of_public_key(der: &[u8]) -> Option<String> {
    SubjectPublicKeyInfoRef::from_der(der)
        .ok()
        .map(|info| name(&info.algorithm))
}

/// `ECDSA P-384`, `RSA`, …; an unknown algorithm or curve as its OID.
fn name(algorithm: &AlgorithmIdentifierRef<'_>) -> String {
    // An EC key names its curve in the parameters; every other algorithm is its own OID.
    let oid = if algorithm.oid == EC_PUBLIC_KEY {
        match algorithm.parameters_oid() {
            Ok(curve) => curve,
            Err(_) => return "EC without a named curve".to_owned(),
        }
    } else {
        algorithm.oid
    };
    let dotted = oid.to_string();
    NAMES
        .iter()
        .find(|(known, _)| *known == dotted)
        .map_or(dotted, |(_, name)| (*name).to_owned())
}

#[cfg(test)]
mod tests {
    use p256::pkcs8::der::{Any, Encode as _};
    use p256::pkcs8::spki::AlgorithmIdentifier;

    use super::*;

    /// DER of an `AlgorithmIdentifier` for `oid`, with `curve` as its parameters.
    fn named(oid: &str, curve: Option<&str>) -> String {
        let parameters = curve.map(|curve| {
            let curve = ObjectIdentifier::new_unwrap(curve);
            Any::encode_from(&curve).expect("an OID encodes")
        });
        let algorithm = AlgorithmIdentifier {
            oid: ObjectIdentifier::new_unwrap(oid),
            parameters,
        };
        let der = algorithm.to_der().expect("encodes");
        let decoded = AlgorithmIdentifierRef::from_der(&der).expect("decodes");
        name(&decoded)
    }

    #[test]
    fn algorithms_and_curves_are_named() {
        let cases = [
            ("1.2.840.10045.2.1", Some("1.3.132.0.34"), "ECDSA P-384"),
            ("1.2.840.10045.2.1", Some("1.3.132.0.35"), "ECDSA P-521"),
            (
                "1.2.840.10045.2.1",
                Some("1.2.840.10045.3.1.7"),
                "ECDSA P-256",
            ),
            ("1.2.840.10045.2.1", Some("1.2.3.4"), "1.2.3.4"),
            ("1.2.840.10045.2.1", None, "EC without a named curve"),
            ("1.2.840.113549.1.1.1", None, "RSA"),
            ("1.3.101.112", None, "Ed25519"),
            ("1.2.3.4.5", None, "1.2.3.4.5"),
        ];
        for (oid, curve, expected) in cases {
            assert_eq!(named(oid, curve), expected, "{oid} {curve:?}");
        }
    }

    #[test]
    fn what_is_not_a_key_has_no_name() {
        assert_eq!(of_private_key(b"not der"), None);
        assert_eq!(of_public_key(b"not der"), None);
    }
}

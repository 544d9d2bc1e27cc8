//! The signature of a Debian repository: its clearsigned `InRelease`, verified against the
//! `OpenPGP` keyring the manifest names, in pure Rust (no `gpg` binary).

use pgp::composed::{CleartextSignedMessage, Deserializable, SignedPublicKey, SignedPublicSubKey};
use pgp::packet::{Signature, SignatureType};
use pgp::types::{Duration, KeyDetails, Tag, Timestamp};

/// Why an `InRelease` is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    /// The text is not clearsigned.
    #[error(
        "the `InRelease` is not a clearsigned text (it lacks `-----BEGIN PGP SIGNED MESSAGE-----`)"
    )]
    NotSigned,
    /// The keyring does not read as `OpenPGP` public keys.
    #[error(
        "the keyring is not usable: {reason}; hint: give the repository's public keys, binary or ASCII-armored (`gpg --export`)"
    )]
    BadKeyring {
        /// Why.
        reason: String,
    },
    /// No key of the keyring made the signatures.
    #[error(
        "the `InRelease` is signed by {}, which the keyring lacks; hint: the keyring must hold the repository's signing key",
        issuers_text(issuers)
    )]
    NoKeyMatches {
        /// The signatures' issuers: fingerprints or key ids, in uppercase hex.
        issuers: Vec<String>,
    },
    /// The signature does not verify (the text changed after signing, or it is malformed).
    #[error("the `InRelease` signature does not verify: {reason}")]
    Invalid {
        /// Why.
        reason: String,
    },
}

fn issuers_text(issuers: &[String]) -> String {
    if issuers.is_empty() {
        return "a key it does not name".to_owned();
    }
    issuers
        .iter()
        .map(|issuer| format!("`{issuer}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Verifies a clearsigned `InRelease` against the `OpenPGP` keys of `keyring` (binary or
/// ASCII-armored, one or several keys; a signature by a signing subkey counts); returns the
/// signed text (the Release file).
pub(crate) fn verify_inrelease(inrelease: &str, keyring: &[u8]) -> Result<String, SignatureError> {
    if !inrelease
        .trim_start()
        .starts_with("-----BEGIN PGP SIGNED MESSAGE-----")
    {
        return Err(SignatureError::NotSigned);
    }
    let keys = read_keyring(keyring)?;
    let (message, _) =
        CleartextSignedMessage::from_string(inrelease.trim_start()).map_err(|e| {
            SignatureError::Invalid {
                reason: e.to_string(),
            }
        })?;
    if keys.iter().any(|key| signed_by(&message, key)) {
        // The hashed text has CRLF line ends (RFC 9580 §7.1), and the line end before the
        // signature is not part of it; the Release file is text with LF line ends.
        let mut text = message.signed_text().replace("\r\n", "\n");
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return Ok(text);
    }
    let issuers = issuers(&message);
    match issuers
        .iter()
        .find(|issuer| keys.iter().any(|key| has_key(key, issuer)))
    {
        Some(issuer) => Err(SignatureError::Invalid {
            reason: format!(
                "the signature by key `{issuer}` does not hold: the text changed after signing, or the key is revoked or was expired when it signed"
            ),
        }),
        None => Err(SignatureError::NoKeyMatches { issuers }),
    }
}

/// The public keys of a keyring. A primary key is trusted for being in the keyring, as apt
/// trusts it: its user ids' certifications are not checked, because Debian's keys carry
/// certifications by other keys that no keyring holds (rpgp's `verify_bindings` fails on them).
fn read_keyring(keyring: &[u8]) -> Result<Vec<SignedPublicKey>, SignatureError> {
    let bad = |reason: String| SignatureError::BadKeyring { reason };
    let (keys, _) = SignedPublicKey::from_reader_many(keyring).map_err(|e| bad(e.to_string()))?;
    let keys = keys
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if keys.is_empty() {
        return Err(bad("it holds no public key".to_owned()));
    }
    Ok(keys)
}

/// Whether one of the message's signatures verifies with `key`'s primary key or one of its
/// signing subkeys (whose binding to the primary key holds), made while that key was valid:
/// neither it nor its primary key revoked, and not expired when it signed.
fn signed_by(message: &CleartextSignedMessage, key: &SignedPublicKey) -> bool {
    let primary = &key.primary_key;
    let revoked = key
        .details
        .revocation_signatures
        .iter()
        .any(|revocation| revocation.verify_key(primary).is_ok());
    if revoked {
        return false;
    }
    let by_primary = message
        .verify(primary)
        .is_ok_and(|signature| unexpired(primary.created_at(), primary_expiration(key), signature));
    by_primary
        || key.public_subkeys.iter().any(|subkey| {
            let Some(binding) = subkey_binding(key, subkey) else {
                return false;
            };
            message.verify(&subkey.key).is_ok_and(|signature| {
                unexpired(
                    subkey.key.created_at(),
                    binding.key_expiration_time(),
                    signature,
                )
            })
        })
}

/// The latest binding of a signing subkey that is not revoked.
fn subkey_binding<'a>(
    key: &SignedPublicKey,
    subkey: &'a SignedPublicSubKey,
) -> Option<&'a Signature> {
    if subkey.verify_bindings(&key.primary_key).is_err() {
        return None;
    }
    let (revocations, bindings): (Vec<_>, Vec<_>) = subkey
        .signatures
        .iter()
        .partition(|signature| signature.typ() == Some(SignatureType::SubkeyRevocation));
    if !revocations.is_empty() {
        return None;
    }
    bindings
        .into_iter()
        .max_by_key(|binding| binding.created())
        .filter(|binding| binding.key_flags().sign())
}

/// The primary key's expiration, from its latest self-certification of a user id (the other
/// certifications are by other keys and are not read).
fn primary_expiration(key: &SignedPublicKey) -> Option<Duration> {
    key.details
        .users
        .iter()
        .flat_map(|user| {
            user.signatures.iter().filter(|signature| {
                signature
                    .verify_certification(&key.primary_key, Tag::UserId, &user.id)
                    .is_ok()
            })
        })
        .max_by_key(|signature| signature.created())
        .and_then(Signature::key_expiration_time)
}

/// Whether a key created at `created` and expiring `expiration` after (0: never) was not
/// expired when it made `signature`.
fn unexpired(created: Timestamp, expiration: Option<Duration>, signature: &Signature) -> bool {
    match (expiration.map(Duration::as_secs), signature.created()) {
        (Some(expiration), Some(signed)) if expiration > 0 => {
            u64::from(signed.as_secs()) < u64::from(created.as_secs()) + u64::from(expiration)
        }
        _ => true,
    }
}

/// The issuers the signatures name: fingerprints where given, else key ids.
fn issuers(message: &CleartextSignedMessage) -> Vec<String> {
    let mut issuers = Vec::new();
    for signature in message.signatures() {
        let fingerprints = signature.issuer_fingerprint();
        let named = if fingerprints.is_empty() {
            signature
                .issuer_key_id()
                .into_iter()
                .map(|id| hex::encode_upper(id.as_ref()))
                .collect::<Vec<_>>()
        } else {
            fingerprints
                .into_iter()
                .map(|fingerprint| hex::encode_upper(fingerprint.as_bytes()))
                .collect()
        };
        for issuer in named {
            if !issuers.contains(&issuer) {
                issuers.push(issuer);
            }
        }
    }
    issuers
}

/// Whether `issuer` (a fingerprint or key id in hex) names `key` or one of its subkeys.
fn has_key(key: &SignedPublicKey, issuer: &str) -> bool {
    let names = |fingerprint: &[u8], key_id: &[u8]| {
        issuer == hex::encode_upper(fingerprint) || issuer == hex::encode_upper(key_id)
    };
    names(
        key.primary_key.fingerprint().as_bytes(),
        key.primary_key.legacy_key_id().as_ref(),
    ) || key.public_subkeys.iter().any(|subkey| {
        names(
            subkey.key.fingerprint().as_bytes(),
            subkey.key.legacy_key_id().as_ref(),
        )
    })
}

#[cfg(test)]
mod tests {
    use pgp::composed::{
        ArmorOptions, EncryptionCaps, KeyType, SecretKeyParamsBuilder, SignedSecretKey,
        SubkeyParamsBuilder,
    };
    use pgp::ser::Serialize;
    use pgp::types::{Password, SigningKey};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    const RELEASE: &str =
        "Origin: kk test\nSuite: stable\nSHA256:\n 00 1 main/binary-amd64/Packages\n";

    /// A key pair made with `pgp` itself: an Ed25519 primary key that signs, and, with
    /// `subkey`, a signing subkey.
    fn key(seed: u64, subkey: bool) -> SignedSecretKey {
        let mut params = SecretKeyParamsBuilder::default();
        params
            .key_type(KeyType::Ed25519Legacy)
            .can_certify(true)
            .can_sign(true)
            .can_encrypt(EncryptionCaps::None)
            .primary_user_id(format!("kk test {seed} <test@kk.invalid>"));
        if subkey {
            let mut signing = SubkeyParamsBuilder::default();
            signing
                .key_type(KeyType::Ed25519Legacy)
                .can_sign(true)
                .can_encrypt(EncryptionCaps::None);
            params.subkeys(vec![signing.build().unwrap()]);
        }
        let mut rng = StdRng::seed_from_u64(seed);
        params.build().unwrap().generate(&mut rng).unwrap()
    }

    fn clearsign(text: &str, signer: &impl SigningKey) -> String {
        let mut rng = StdRng::seed_from_u64(7);
        CleartextSignedMessage::sign(&mut rng, text, signer, &Password::empty())
            .unwrap()
            .to_armored_string(ArmorOptions::default())
            .unwrap()
    }

    fn keyring(keys: &[&SignedSecretKey]) -> Vec<u8> {
        keys.iter()
            .flat_map(|key| SignedPublicKey::from((*key).clone()).to_bytes().unwrap())
            .collect()
    }

    #[test]
    fn a_good_signature_gives_the_signed_text() {
        let key = key(1, false);
        let signed = clearsign(RELEASE, &key.primary_key);
        assert_eq!(
            verify_inrelease(&signed, &keyring(&[&key])).unwrap(),
            RELEASE
        );
        let armored = SignedPublicKey::from(key.clone())
            .to_armored_string(ArmorOptions::default())
            .unwrap();
        assert_eq!(
            verify_inrelease(&signed, armored.as_bytes()).unwrap(),
            RELEASE
        );
    }

    #[test]
    fn a_signing_subkey_and_a_second_key_count() {
        let first = key(1, false);
        let second = key(2, true);
        let signed = clearsign(RELEASE, &second.secret_subkeys[0].key);
        let keyring = keyring(&[&first, &second]);
        assert_eq!(verify_inrelease(&signed, &keyring).unwrap(), RELEASE);
    }

    #[test]
    fn a_text_changed_after_signing_fails() {
        let key = key(1, false);
        let signed = clearsign(RELEASE, &key.primary_key).replace("stable", "stablE");
        let error = verify_inrelease(&signed, &keyring(&[&key])).unwrap_err();
        assert!(matches!(error, SignatureError::Invalid { .. }), "{error:?}");
        assert!(
            error.to_string().contains("the text changed after signing"),
            "{error}"
        );
    }

    #[test]
    fn a_signature_by_another_key_names_its_issuer() {
        let trusted = key(1, false);
        let other = key(2, false);
        let signed = clearsign(RELEASE, &other.primary_key);
        let error = verify_inrelease(&signed, &keyring(&[&trusted])).unwrap_err();
        let fingerprint = hex::encode_upper(other.primary_key.fingerprint().as_bytes());
        match &error {
            SignatureError::NoKeyMatches { issuers } => {
                assert_eq!(issuers, std::slice::from_ref(&fingerprint));
            }
            other => panic!("{other:?}"),
        }
        assert!(
            error
                .to_string()
                .contains(&format!("signed by `{fingerprint}`")),
            "{error}"
        );
    }

    #[test]
    fn unsigned_text_and_bad_keyrings_fail() {
        let key = key(1, false);
        let error = verify_inrelease(RELEASE, &keyring(&[&key])).unwrap_err();
        assert!(matches!(error, SignatureError::NotSigned), "{error:?}");
        let signed = clearsign(RELEASE, &key.primary_key);
        for keyring in [&b"not a key"[..], b""] {
            let error = verify_inrelease(&signed, keyring).unwrap_err();
            assert!(
                matches!(error, SignatureError::BadKeyring { .. }),
                "{error:?}"
            );
        }
    }

    /// Fixtures made by the real `gpg` (see `testdata/README`): Ed25519, RSA 3072 and an
    /// Ed25519 signing subkey, against the keyring exported binary and armored.
    #[test]
    fn gpg_made_inreleases_verify() {
        let release = include_str!("testdata/Release");
        let keyrings: [&[u8]; 2] = [
            include_bytes!("testdata/keyring.gpg"),
            include_bytes!("testdata/keyring.asc"),
        ];
        let inreleases = [
            include_str!("testdata/InRelease.ed25519"),
            include_str!("testdata/InRelease.rsa3072"),
            include_str!("testdata/InRelease.subkey"),
        ];
        for keyring in keyrings {
            for inrelease in inreleases {
                assert_eq!(verify_inrelease(inrelease, keyring).unwrap(), release);
                let changed = inrelease.replacen("Suite: stable", "Suite: stablf", 1);
                let error = verify_inrelease(&changed, keyring).unwrap_err();
                assert!(matches!(error, SignatureError::Invalid { .. }), "{error:?}");
            }
        }
    }

    /// A real Debian `InRelease` (signed twice: by a key the keyring lacks, and by a signing
    /// subkey of Debian's security archive key, which the keyring holds), against Debian's
    /// keyring file as `debian-archive-keyring` ships it.
    #[test]
    fn a_debian_inrelease_verifies_against_debians_keyring() {
        let inrelease = include_str!("testdata/InRelease.debian-security");
        let keyring = include_bytes!("testdata/debian-security-keyring.gpg");
        let release = verify_inrelease(inrelease, keyring).unwrap();
        assert!(release.starts_with("Origin: Debian\n"), "{release}");
        assert!(release.contains("\nSHA256:\n"));
        let changed = inrelease.replacen("Origin: Debian", "Origin: Debiab", 1);
        let error = verify_inrelease(&changed, keyring).unwrap_err();
        assert!(matches!(error, SignatureError::Invalid { .. }), "{error:?}");
    }

    /// A signing subkey revoked after it signed (made by the real `gpg`, which still calls
    /// the signature good, with a warning) does not count.
    #[test]
    fn a_signature_by_a_revoked_subkey_fails() {
        let inrelease = include_str!("testdata/InRelease.revoked-subkey");
        let keyring = include_bytes!("testdata/keyring-revoked-subkey.gpg");
        let error = verify_inrelease(inrelease, keyring).unwrap_err();
        assert!(matches!(error, SignatureError::Invalid { .. }), "{error:?}");
    }

    /// A key whose latest self-signature says it expired before it signed does not count.
    #[test]
    fn a_signature_by_an_expired_key_fails() {
        let inrelease = include_str!("testdata/InRelease.expired");
        let keyring = include_bytes!("testdata/keyring-expired.gpg");
        let error = verify_inrelease(inrelease, keyring).unwrap_err();
        assert!(matches!(error, SignatureError::Invalid { .. }), "{error:?}");
    }
}

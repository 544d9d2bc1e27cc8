//! Cosign's key files, both ways, against an independent implementation of the format:
//! sigstore-rs's `SigStoreKeyPair` (a test-only dependency; kk never uses it in the product).
//!
//! What one side writes, the other reads; what one side signs with the key it read, the other
//! verifies with the public key it wrote.

use bundle_spec::sign::keys::{
    self, COSIGN_PRIVATE_KEY_LABEL, KeyError, SIGSTORE_PRIVATE_KEY_LABEL,
};
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _, LineEnding};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{Signature as SigstoreSignature, SigningScheme};

const PASSPHRASE: &[u8] = b"cross-check passphrase";
const MESSAGE: &[u8] = b"kk-bundle/SHA256SUMS bytes";

/// A P-256 key pair made by sigstore-rs.
fn sigstore_pair() -> SigStoreKeyPair {
    SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .and_then(|signer| signer.to_sigstore_keypair())
        .expect("sigstore-rs makes a P-256 key pair")
}

/// Signs `MESSAGE` with sigstore-rs's reading of `pair` (ASN.1 DER signature).
fn sigstore_signs(pair: &SigStoreKeyPair) -> Vec<u8> {
    pair.to_sigstore_signer(&SigningScheme::ECDSA_P256_SHA256_ASN1)
        .and_then(|signer| signer.sign(MESSAGE))
        .expect("sigstore-rs signs")
}

/// Verifies a DER signature over `MESSAGE` with sigstore-rs, against kk's `cosign.pub`.
fn sigstore_verifies(public_pem: &str, signature: &Signature) {
    let key = sigstore::crypto::CosignVerificationKey::from_pem(
        public_pem.as_bytes(),
        &SigningScheme::ECDSA_P256_SHA256_ASN1,
    )
    .expect("sigstore-rs reads kk's cosign.pub");
    key.verify_signature(
        SigstoreSignature::Raw(signature.to_der().as_bytes()),
        MESSAGE,
    )
    .expect("sigstore-rs verifies kk's signature");
}

/// kk verifies a sigstore-rs DER signature over `MESSAGE` with sigstore-rs's public key.
fn kk_verifies(pair: &SigStoreKeyPair, signature: &[u8]) {
    let public = pair
        .public_key_to_pem()
        .expect("sigstore-rs writes its public key");
    let key = keys::read_public_key(&public).expect("kk reads sigstore-rs's public key");
    let signature = Signature::from_der(signature).expect("a DER ECDSA signature");
    key.verify(MESSAGE, &signature)
        .expect("kk verifies sigstore-rs's signature");
}

#[test]
fn kk_writes_an_encrypted_key_that_sigstore_reads_and_signs_with() {
    let pair = keys::generate_key_pair(PASSPHRASE).expect("kk makes a key pair");
    // Both labels: kk writes the current one; an old file carries the older one.
    let older = pair
        .private_pem
        .replace(SIGSTORE_PRIVATE_KEY_LABEL, COSIGN_PRIVATE_KEY_LABEL);
    for pem in [pair.private_pem.as_str(), older.as_str()] {
        let read = SigStoreKeyPair::from_encrypted_pem(pem.as_bytes(), PASSPHRASE)
            .expect("sigstore-rs reads kk's encrypted key");
        let spki = pair
            .signing_key
            .verifying_key()
            .to_public_key_der()
            .expect("SPKI");
        assert_eq!(
            read.public_key_to_der().expect("public der"),
            spki.as_bytes(),
            "sigstore-rs reads the same key kk wrote"
        );
        let signature = sigstore_signs(&read);
        let ours = keys::read_public_key(&pair.public_pem).expect("kk reads its cosign.pub");
        let signature = Signature::from_der(&signature).expect("DER");
        ours.verify(MESSAGE, &signature)
            .expect("kk verifies what sigstore-rs signed with kk's key");
    }
    assert!(
        SigStoreKeyPair::from_encrypted_pem(pair.private_pem.as_bytes(), b"wrong").is_err(),
        "sigstore-rs refuses the wrong passphrase too"
    );
}

#[test]
fn sigstore_writes_an_encrypted_key_that_kk_reads_and_signs_with() {
    let pair = sigstore_pair();
    let pem = pair
        .private_key_to_encrypted_pem(PASSPHRASE)
        .expect("sigstore-rs encrypts its key");
    assert!(pem.starts_with(&format!("-----BEGIN {SIGSTORE_PRIVATE_KEY_LABEL}-----")));
    let older = pem.replace(SIGSTORE_PRIVATE_KEY_LABEL, COSIGN_PRIVATE_KEY_LABEL);
    for pem in [pem.as_str(), older.as_str()] {
        let key = keys::read_private_key(pem, PASSPHRASE).expect("kk reads sigstore-rs's key");
        let signature: Signature = key.sign(MESSAGE);
        let public = pair.public_key_to_pem().expect("public pem");
        sigstore_verifies(&public, &signature);
    }
    kk_verifies(&pair, &sigstore_signs(&pair));
}

#[test]
fn plain_pkcs8_keys_cross_both_ways() {
    // sigstore-rs's plain key, as `cosign import-key-pair` takes it.
    let pair = sigstore_pair();
    let plain = pair
        .private_key_to_pem()
        .expect("sigstore-rs writes PKCS#8");
    let key = keys::read_private_key(&plain, b"").expect("kk reads a plain PKCS#8 key");
    let public = pair.public_key_to_pem().expect("public pem");
    sigstore_verifies(&public, &key.sign(MESSAGE));

    // kk's plain key (what `openssl` or another tool writes), read by sigstore-rs.
    let ours = SigningKey::from_slice(&[9; 32]).expect("a scalar");
    let plain = ours.to_pkcs8_pem(LineEnding::LF).expect("PKCS#8");
    let theirs = SigStoreKeyPair::from_pem(plain.as_bytes()).expect("sigstore-rs reads it");
    kk_verifies_with(&ours, &sigstore_signs(&theirs));
}

/// kk verifies a sigstore-rs signature over `MESSAGE` with `key`'s public half.
fn kk_verifies_with(key: &SigningKey, signature: &[u8]) {
    let signature = Signature::from_der(signature).expect("DER");
    key.verifying_key()
        .verify(MESSAGE, &signature)
        .expect("kk verifies sigstore-rs's signature");
}

#[test]
fn a_wrong_passphrase_and_a_tampered_key_are_refused() {
    let pem = sigstore_pair()
        .private_key_to_encrypted_pem(PASSPHRASE)
        .expect("encrypts");
    let error = keys::read_private_key(&pem, b"not it").expect_err("wrong passphrase");
    assert!(matches!(error, KeyError::WrongPassphrase), "{error}");
    assert!(error.to_string().contains("`COSIGN_PASSWORD`"), "{error}");

    // One bit of the ciphertext flipped: the secretbox tag no longer matches.
    let tampered = tamper_ciphertext(&pem);
    let error = keys::read_private_key(&tampered, PASSPHRASE).expect_err("tampered");
    assert!(matches!(error, KeyError::WrongPassphrase), "{error}");
    assert!(
        SigStoreKeyPair::from_encrypted_pem(tampered.as_bytes(), PASSPHRASE).is_err(),
        "sigstore-rs refuses the tampered key too"
    );
}

/// `pem` (cosign's encrypted key) with one bit of its ciphertext flipped.
fn tamper_ciphertext(pem: &str) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use p256::pkcs8::der::pem;
    let (label, body) = pem::decode_vec(pem.as_bytes()).expect("PEM");
    let mut json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    let mut ciphertext = STANDARD
        .decode(json["ciphertext"].as_str().expect("ciphertext"))
        .expect("base64");
    ciphertext[20] ^= 0x01;
    json["ciphertext"] = STANDARD.encode(ciphertext).into();
    let body = serde_json::to_vec(&json).expect("JSON");
    pem::encode_string(label, LineEnding::LF, &body).expect("PEM")
}

#[test]
fn a_p384_key_is_refused_with_its_curve_named() {
    let pair = SigningScheme::ECDSA_P384_SHA384_ASN1
        .create_signer()
        .and_then(|signer| signer.to_sigstore_keypair())
        .expect("sigstore-rs makes a P-384 key pair");
    let encrypted = pair
        .private_key_to_encrypted_pem(PASSPHRASE)
        .expect("encrypts");
    let plain = pair.private_key_to_pem().expect("PKCS#8");
    let public = pair.public_key_to_pem().expect("public");
    for error in [
        keys::read_private_key(&encrypted, PASSPHRASE).expect_err("P-384, encrypted"),
        keys::read_private_key(&plain, b"").expect_err("P-384, plain"),
        keys::read_public_key(&public).expect_err("P-384, public"),
    ] {
        let message = error.to_string();
        assert!(
            message.starts_with(
                "a `ECDSA P-384` key, but kk signs and verifies with ECDSA P-256 keys only"
            ),
            "{message}"
        );
    }
}

use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::EncodePrivateKey as _;
use p256::pkcs8::der::pem::{self, LineEnding};

use super::*;

const PASSPHRASE: &[u8] = b"kk test passphrase";
/// The DER body of P-256's curve OID, and of P-192's, which has the same length.
const P256_OID: [u8; 8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P192_OID: [u8; 8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01];

/// A fixed key, so the tests do not depend on a random one.
fn key() -> SigningKey {
    SigningKey::from_slice(&[7; 32]).expect("a valid scalar")
}

fn pem_of(label: &str, der: &[u8]) -> String {
    pem::encode_string(label, LineEnding::LF, der).expect("encodes")
}

fn assert_same_key(read: &SigningKey, expected: &SigningKey) {
    assert_eq!(read.to_bytes(), expected.to_bytes());
}

#[test]
fn a_generated_pair_reads_back_and_signs() {
    let pair = generate_key_pair(PASSPHRASE).expect("generates");
    assert!(
        pair.private_pem
            .starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"),
        "{}",
        *pair.private_pem
    );
    assert!(pair.public_pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));
    let read = read_private_key(&pair.private_pem, PASSPHRASE).expect("reads");
    assert_same_key(&read, &pair.signing_key);
    let public = read_public_key(&pair.public_pem).expect("reads");
    let signature: Signature = read.sign(b"SHA256SUMS");
    public
        .verify(b"SHA256SUMS", &signature)
        .expect("the public key verifies the private key's signature");
    assert_eq!(
        fingerprint(&public),
        fingerprint(pair.signing_key.verifying_key())
    );
    let debug = format!("{pair:?}");
    assert!(!debug.contains("PRIVATE"), "{debug}");
}

/// Both of cosign's labels, the plain PKCS#8 and SEC1 keys: the same key from each.
#[test]
fn every_private_key_form_reads() {
    let key = key();
    let encrypted = encrypt_private_key(&key, PASSPHRASE).expect("encrypts");
    let older = encrypted.replace(SIGSTORE_PRIVATE_KEY_LABEL, COSIGN_PRIVATE_KEY_LABEL);
    let pkcs8 = key.to_pkcs8_pem(LineEnding::LF).expect("encodes");
    let sec1 = p256::SecretKey::from(&key)
        .to_sec1_pem(LineEnding::LF)
        .expect("encodes");
    let crlf = pkcs8.replace('\n', "\r\n");
    for (name, pem) in [
        ("sigstore label", encrypted.as_str()),
        ("cosign label", older.as_str()),
        ("pkcs8", pkcs8.as_str()),
        ("sec1", sec1.as_str()),
        ("pkcs8 with CRLF", crlf.as_str()),
    ] {
        let read = read_private_key(pem, PASSPHRASE).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same_key(&read, &key);
    }
}

#[test]
fn an_empty_passphrase_is_a_passphrase() {
    let encrypted = encrypt_private_key(&key(), b"").expect("encrypts");
    assert_same_key(&read_private_key(&encrypted, b"").expect("reads"), &key());
    let error = read_private_key(&encrypted, b"x").expect_err("wrong passphrase");
    assert!(matches!(error, KeyError::WrongPassphrase), "{error}");
    assert!(error.to_string().ends_with(
        "hint: set `COSIGN_PASSWORD` to the passphrase the key pair was made with, empty if none"
    ));
}

/// A PKCS#8 key on `curve` (an 8-byte OID like P-256's): P-256's with its curve swapped.
fn pkcs8_on_curve(curve: [u8; 8]) -> Vec<u8> {
    let mut der = key().to_pkcs8_der().expect("encodes").as_bytes().to_vec();
    let at = der
        .windows(8)
        .position(|window| window == P256_OID)
        .expect("the curve OID");
    der[at..at + 8].copy_from_slice(&curve);
    der
}

/// Every private key file `read_private_key` refuses, and what the refusal names.
#[test]
fn private_key_refusals_name_what_is_wrong() {
    let other_curve = pkcs8_on_curve(P192_OID);
    let encrypted_other_curve = encrypted::seal(&other_curve, PASSPHRASE).expect("seals");
    let body_not_json = pem_of(SIGSTORE_PRIVATE_KEY_LABEL, b"not json");
    let cases: [(String, &str); 8] = [
        ("no pem here".to_owned(), "not a PEM key file"),
        (String::new(), "not a PEM key file"),
        (
            pem_of("CERTIFICATE", b"x"),
            "a PEM `CERTIFICATE` is not a private key kk reads",
        ),
        (pem_of("RSA PRIVATE KEY", b"x"), "a PEM `RSA PRIVATE KEY`"),
        (
            pem_of(PKCS8_LABEL, b"junk"),
            "not an ECDSA P-256 private key",
        ),
        (
            pem_of(PKCS8_LABEL, &other_curve),
            "a `ECDSA P-192` key, but kk signs",
        ),
        (
            pem_of(SIGSTORE_PRIVATE_KEY_LABEL, &encrypted_other_curve),
            "a `ECDSA P-192` key",
        ),
        (body_not_json, "not cosign's JSON envelope"),
    ];
    for (pem, expected) in cases {
        let error = read_private_key(&pem, PASSPHRASE)
            .expect_err(expected)
            .to_string();
        assert!(
            error.contains(expected),
            "expected {expected:?} in: {error}"
        );
    }
}

#[test]
fn public_key_refusals_name_what_is_wrong() {
    let key = key();
    let spki = key
        .verifying_key()
        .to_public_key_der()
        .expect("encodes")
        .into_vec();
    let at = spki.windows(8).position(|w| w == P256_OID).expect("curve");
    let mut other = spki.clone();
    other[at..at + 8].copy_from_slice(&P192_OID);
    let cases = [
        ("nothing".to_owned(), "not an ECDSA P-256 public key in PEM"),
        (pem_of(PUBLIC_KEY_LABEL, &other), "a `ECDSA P-192` key"),
        (pem_of(PKCS8_LABEL, &spki), "not an ECDSA P-256 public key"),
    ];
    for (pem, expected) in cases {
        let error = read_public_key(&pem).expect_err(expected).to_string();
        assert!(
            error.contains(expected),
            "expected {expected:?} in: {error}"
        );
    }
    let pem = public_key_pem(key.verifying_key());
    assert_eq!(read_public_key(&pem).expect("reads"), *key.verifying_key());
}

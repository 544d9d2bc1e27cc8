#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use p256::ecdsa::SigningKey;
use serde_json::{Value, json};

use super::SignatureError;
use super::keys::fingerprint;
use super::sigstore::{self, MEDIA_TYPE, parse};
use super::verify::{sidecar_path, verify};

fn key(seed: u8) -> SigningKey {
    SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn signed(artifact: &[u8]) -> Value {
    serde_json::from_slice(&sigstore::sign(&key(1), artifact)).unwrap()
}

fn check(bundle: &Value, artifact: &[u8]) -> Result<String, SignatureError> {
    verify(
        &serde_json::to_vec(bundle).unwrap(),
        artifact,
        &[*key(1).verifying_key()],
    )
}

#[test]
fn writes_cosigns_shape() {
    let bundle = signed(b"list\n");
    assert_eq!(bundle["mediaType"], MEDIA_TYPE);
    assert_eq!(bundle["verificationMaterial"]["tlogEntries"], json!([]));
    assert_eq!(
        bundle["messageSignature"]["messageDigest"]["algorithm"],
        "SHA2_256"
    );
    let hint = bundle["verificationMaterial"]["publicKey"]["hint"]
        .as_str()
        .unwrap();
    assert_eq!(
        hex::encode(STANDARD.decode(hint).unwrap()),
        fingerprint(key(1).verifying_key())
    );
    assert_eq!(
        check(&bundle, b"list\n").unwrap(),
        fingerprint(key(1).verifying_key())
    );
    // RFC 6979: the same key and bytes give the same signature, so signed bundles reproduce.
    assert_eq!(
        sigstore::sign(&key(1), b"list\n"),
        sigstore::sign(&key(1), b"list\n")
    );
}

#[test]
fn media_types() {
    let cases: &[(&str, Result<(), &str>)] = &[
        (MEDIA_TYPE, Ok(())),
        (
            "application/vnd.dev.sigstore.bundle+json;version=0.3",
            Ok(()),
        ),
        (
            "application/vnd.dev.sigstore.bundle+json;version=0.2",
            Ok(()),
        ),
        (
            "application/vnd.dev.sigstore.bundle+json;version=0.1",
            Err("requires a transparency log"),
        ),
        (
            "application/vnd.dev.sigstore.bundle.v0.4+json",
            Err("is not a Sigstore bundle version kk reads"),
        ),
    ];
    for (media_type, expected) in cases {
        let mut bundle = signed(b"a");
        bundle["mediaType"] = json!(media_type);
        let got = check(&bundle, b"a").map(|_| ()).map_err(|e| e.to_string());
        match (got, expected) {
            (Ok(()), Ok(())) => {}
            (Err(message), Err(part)) => assert!(message.contains(part), "{media_type}: {message}"),
            (got, _) => panic!("{media_type}: {got:?}"),
        }
    }
}

/// Every way a signature can be wrong, each refused naming what failed.
#[test]
fn tampered_signatures_are_refused_by_name() {
    let artifact = b"kk checksum list\n";
    let good = signed(artifact);
    let signature = STANDARD
        .decode(good["messageSignature"]["signature"].as_str().unwrap())
        .unwrap();
    let with_signature = |bytes: &[u8]| {
        let mut bundle = good.clone();
        bundle["messageSignature"]["signature"] = json!(STANDARD.encode(bytes));
        bundle
    };
    let mut flipped = signature.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let mut dsse = good.clone();
    dsse["dsseEnvelope"] = json!({"payload": "", "payloadType": "x", "signatures": []});
    let mut bad_base64 = good.clone();
    bad_base64["messageSignature"]["signature"] = json!("not base64!");
    let mut no_message = good.clone();
    no_message
        .as_object_mut()
        .unwrap()
        .remove("messageSignature");
    let mut md5 = good.clone();
    md5["messageSignature"]["messageDigest"]["algorithm"] = json!("MD5");
    let cases: Vec<(&str, Value, &[u8], &str)> = vec![
        (
            "another artifact",
            good.clone(),
            b"another list\n",
            "signs another checksum list",
        ),
        (
            "truncated",
            with_signature(&signature[..signature.len() - 3]),
            artifact,
            "not a DER-encoded",
        ),
        (
            "bit-flipped",
            with_signature(&flipped),
            artifact,
            "verification failed",
        ),
        ("dsse", dsse, artifact, "DSSE envelope"),
        (
            "base64",
            bad_base64,
            artifact,
            "`messageSignature.signature` is not valid base64",
        ),
        (
            "no message signature",
            no_message,
            artifact,
            "no `messageSignature`",
        ),
        ("digest algorithm", md5, artifact, "`MD5` is not `SHA2_256`"),
    ];
    for (name, bundle, artifact, part) in cases {
        let message = check(&bundle, artifact).unwrap_err().to_string();
        assert!(message.contains(part), "{name}: {message}");
    }
    assert!(matches!(parse(b"{"), Err(SignatureError::Json(_))));
}

#[test]
fn untrusted_key_names_the_fingerprints_tried() {
    let json = sigstore::sign(&key(1), b"a");
    let others = [*key(2).verifying_key(), *key(3).verifying_key()];
    let message = verify(&json, b"a", &others).unwrap_err().to_string();
    for other in &others {
        assert!(message.contains(&fingerprint(other)), "{message}");
    }
    let both = [others[0], *key(1).verifying_key()];
    assert_eq!(
        verify(&json, b"a", &both).unwrap(),
        fingerprint(key(1).verifying_key())
    );
}

#[test]
fn sidecar_is_named_after_the_bundle() {
    let cases = [
        ("out/b.kkb", "out/b.kkb.sigstore.json"),
        ("out/b.kkb.split.json", "out/b.kkb.sigstore.json"),
        ("out/b.kkb.part001", "out/b.kkb.sigstore.json"),
    ];
    for (bundle, sidecar) in cases {
        assert_eq!(
            sidecar_path(std::path::Path::new(bundle)),
            std::path::Path::new(sidecar)
        );
    }
}

//! Signed bundles against the official Sigstore JavaScript libraries, offline and key-only: the
//! verifier (`@sigstore/verify`, standing in for `cosign verify-blob --key --insecure-ignore-tlog`)
//! accepts what `kk-bundle` signs, `kk-install` accepts what the signer (`@sigstore/sign`) makes,
//! and `--trusted-key` refuses every tampered or untrusted signature, naming what failed, before
//! anything is unpacked.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use bundle_spec::test_support::{TestImage, write_images};
use serde_json::Value;

use crate::install_bundle::layer;
use crate::support::{binary, kk_install, run_failing, run_ok, workspace_root};

/// The npm project with the Sigstore libraries (`scripts/setup.sh` runs `npm ci` there).
fn sigstore_js() -> PathBuf {
    let dir = workspace_root().join("tests/sigstore-js");
    assert!(
        dir.join("node_modules/@sigstore/verify").is_dir(),
        "the Sigstore JS libraries are not installed in {}; run scripts/setup.sh",
        dir.display()
    );
    dir
}

/// `node tests/sigstore-js/SCRIPT ARGS`.
fn node(script: &str, args: &[&Path]) -> Command {
    let dir = sigstore_js();
    let mut cmd = Command::new("node");
    cmd.arg(dir.join(script)).args(args);
    cmd
}

/// A P-256 key pair made by openssl: the PKCS#8 private key (as `cosign import-key-pair` takes
/// it) and the public key (`cosign.pub`).
pub(crate) fn key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (private, public) = (
        dir.join(format!("{name}.key")),
        dir.join(format!("{name}.pub")),
    );
    let script = format!(
        "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out {0} && openssl pkey -in {0} -pubout -out {1}",
        private.display(),
        public.display()
    );
    run_ok(Command::new("bash").args(["-euo", "pipefail", "-c", &script]));
    (private, public)
}

/// A bundle of one image, different per `seed`.
fn bundle(dir: &Path, name: &str, seed: u8) -> PathBuf {
    let image = TestImage {
        reference: "docker.io/library/app:1",
        layers: &[&layer(50_000, seed)],
    };
    write_images(dir, name, &[image], None).path
}

/// Extracts the bundle with plain `zstd -d | tar x` into `dir/x`, as an operator would.
fn extract(bundle: &Path, dir: &Path) -> PathBuf {
    let x = dir.join("x");
    fs::create_dir_all(&x).expect("x");
    let script = format!("zstd -dc {} | tar -x -C {}", bundle.display(), x.display());
    run_ok(Command::new("bash").args(["-euo", "pipefail", "-c", &script]));
    x
}

fn sidecar(bundle: &Path) -> PathBuf {
    bundle_spec::sign::verify::sidecar_path(bundle)
}

fn kk_bundle(args: &[&str]) -> Command {
    let mut cmd = Command::new(binary("kk-bundle"));
    cmd.args(args);
    cmd
}

/// `kk-install verify --bundle B --trusted-key PUB…`.
fn verify_trusting(bundle: &Path, keys: &[&Path]) -> Command {
    let mut cmd = kk_install(&["verify"], bundle);
    for key in keys {
        cmd.arg("--trusted-key").arg(key);
    }
    cmd
}

#[test]
fn the_js_verifier_accepts_what_kk_bundle_signs() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    // The operator's path: a cosign key pair from `kk-bundle keygen`, encrypted under the
    // passphrase that `kk-bundle sign` reads back from `COSIGN_PASSWORD`.
    run_ok(
        kk_bundle(&["keygen"])
            .current_dir(dir)
            .env("COSIGN_PASSWORD", "ship it"),
    );
    let (private, public) = (dir.join("cosign.key"), dir.join("cosign.pub"));
    let b = bundle(dir, "b", 1);
    let error = run_failing(
        kk_bundle(&["sign"])
            .arg(&b)
            .arg("--key")
            .arg(&private)
            .env("COSIGN_PASSWORD", "wrong"),
    );
    assert!(
        error.contains("cosign.key") && error.contains("passphrase"),
        "{error}"
    );
    let (out, _) = run_ok(
        kk_bundle(&["sign"])
            .arg(&b)
            .arg("--key")
            .arg(&private)
            .env("COSIGN_PASSWORD", "ship it"),
    );
    assert!(out.contains("embedded, and written to"), "{out}");
    let x = extract(&b, dir);
    let list = x.join("kk-bundle/SHA256SUMS");
    for signature in [sidecar(&b), x.join("kk-bundle/SHA256SUMS.sigstore.json")] {
        let (out, _) = run_ok(&mut node("verify.mjs", &[&signature, &list, &public]));
        assert_eq!(out.trim(), "verified");
    }
    let (_, other) = key_pair(dir, "other");
    let error = run_failing(&mut node("verify.mjs", &[&sidecar(&b), &list, &other]));
    assert!(
        error.contains("PUBLIC_KEY_ERROR") || error.contains("key not found"),
        "{error}"
    );
    let another = x.join("index.json");
    let error = run_failing(&mut node("verify.mjs", &[&sidecar(&b), &another, &public]));
    assert!(error.contains("VerificationError"), "{error}");

    // kk-install reports the key that signed, in text and in JSON.
    let (text, _) = run_ok(&mut verify_trusting(&b, &[&public]));
    let fingerprint = fingerprint_of(&public);
    assert!(
        text.contains(&format!(
            "signature: embedded: verified with trusted key {fingerprint}"
        )),
        "{text}"
    );
    let (json, _) = run_ok(kk_install(&["verify"], &b).args(["--output", "json"]));
    let json: Value = serde_json::from_str(&json).expect("json");
    assert_eq!(json["signature"]["checked"], false);
    assert_eq!(
        json["signature"]["signatures"][0]["fingerprint"],
        fingerprint
    );

    // A signed bundle inspects and unpacks like any other; the signature is not a store blob.
    run_ok(&mut kk_install(&["inspect"], &b));
    let store = dir.join("store");
    let (out, unpack) = run_ok(
        kk_install(&["unpack"], &b)
            .arg("--store")
            .arg(&store)
            .arg("--trusted-key")
            .arg(&public),
    );
    assert!(out.starts_with("unpacked"), "{out}");
    let stderr = String::from_utf8_lossy(&unpack.stderr);
    assert!(stderr.contains("verified with trusted key"), "{stderr}");
    assert!(store.join("index.json").is_file());
}

/// The fingerprint kk shows: the hex sha256 of the key's DER.
fn fingerprint_of(public: &Path) -> String {
    let pem = fs::read_to_string(public).expect("pub");
    let key = bundle_spec::sign::keys::read_public_key(&pem).expect("key");
    bundle_spec::sign::keys::fingerprint(&key)
}

/// `@sigstore/sign` signs the checksum list extracted by `zstd | tar`; put beside the bundle, it
/// is accepted by `kk-install --trusted-key` in every media type spelling kk reads.
#[test]
fn kk_install_accepts_what_the_js_signer_makes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let (private, public) = key_pair(dir, "cosign");
    let b = bundle(dir, "b", 2);
    let list = extract(&b, dir).join("kk-bundle/SHA256SUMS");
    let (json, _) = run_ok(&mut node("sign.mjs", &[&list, &private]));
    let mut signed: Value = serde_json::from_str(&json).expect("json");
    for media_type in [
        "application/vnd.dev.sigstore.bundle+json;version=0.2",
        "application/vnd.dev.sigstore.bundle+json;version=0.3",
        "application/vnd.dev.sigstore.bundle.v0.3+json",
    ] {
        signed["mediaType"] = media_type.into();
        fs::write(sidecar(&b), signed.to_string()).expect("sidecar");
        let (out, _) = run_ok(&mut verify_trusting(&b, &[&public]));
        assert!(
            out.contains("verified with trusted key"),
            "{media_type}: {out}"
        );
    }
    signed["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.1".into();
    fs::write(sidecar(&b), signed.to_string()).expect("sidecar");
    let error = run_failing(&mut verify_trusting(&b, &[&public]));
    assert!(error.contains("requires a transparency log"), "{error}");
}

/// Every tampered or untrusted signature is refused with what failed, and with trusted keys
/// an unsigned bundle is not unpacked at all.
#[test]
fn trusted_keys_refuse_every_tampered_signature_naming_what_failed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let (private, public) = key_pair(dir, "cosign");
    let (_, other) = key_pair(dir, "other");
    let a = bundle(dir, "a", 3);
    let b = bundle(dir, "b", 4);
    run_ok(kk_bundle(&["sign"]).arg(&a).arg("--key").arg(&private));
    let good: Value =
        serde_json::from_slice(&fs::read(sidecar(&a)).expect("sidecar")).expect("json");

    // Unsigned: refused by verify and by unpack, which leaves no store behind.
    let error = run_failing(&mut verify_trusting(&b, &[&public]));
    assert!(error.contains("is not signed"), "{error}");
    let store = dir.join("store");
    let error = run_failing(
        kk_install(&["unpack"], &b)
            .arg("--store")
            .arg(&store)
            .arg("--trusted-key")
            .arg(&public),
    );
    assert!(error.contains("is not signed"), "{error}");
    assert!(!store.exists(), "the refused bundle created the store");
    // Without a trusted key, an unsigned bundle is accepted with a warning.
    let out = Command::new(binary("kk-install"))
        .args(["verify", "--bundle"])
        .arg(&b)
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: the bundle is not signed"));

    // Untrusted key: the fingerprints tried are named.
    let error = run_failing(&mut verify_trusting(&a, &[&other]));
    assert!(
        error.contains("signature verification failed") && error.contains(&fingerprint_of(&other)),
        "{error}"
    );

    // The signature of another bundle (or content changed after signing) beside `b`.
    fs::write(sidecar(&b), good.to_string()).expect("sidecar");
    let error = run_failing(&mut verify_trusting(&b, &[&public]));
    assert!(error.contains("signs another checksum list"), "{error}");

    // Truncated and bit-flipped signatures, and a DSSE envelope, beside the signed `a`.
    let signature = good["messageSignature"]["signature"].as_str().expect("sig");
    let mut flipped = signature.as_bytes().to_vec();
    flipped[20] = if flipped[20] == b'A' { b'B' } else { b'A' };
    let cases: [(&str, Value, &str); 4] = [
        (
            "truncated",
            with_signature(&good, &signature[..signature.len() - 8]),
            "not a DER-encoded",
        ),
        (
            "bit-flipped",
            with_signature(&good, std::str::from_utf8(&flipped).expect("ascii")),
            "signature verification failed",
        ),
        ("base64", with_signature(&good, "%%%"), "not valid base64"),
        (
            "dsse",
            {
                let mut dsse = good.clone();
                dsse["dsseEnvelope"] =
                    serde_json::json!({"payload": "", "payloadType": "x", "signatures": []});
                dsse
            },
            "DSSE envelope",
        ),
    ];
    for (name, json, expected) in cases {
        fs::write(sidecar(&a), json.to_string()).expect("sidecar");
        let error = run_failing(&mut verify_trusting(&a, &[&public]));
        assert!(
            error.contains(expected) && error.contains("a.tar.zst.sigstore.json"),
            "{name}: {error}"
        );
    }
    // Without a trusted key, a signature that cannot be read is an error too (never passed
    // over as if the bundle were unsigned), and says so rather than claiming distrust.
    fs::write(sidecar(&a), "{").expect("sidecar");
    let error = run_failing(&mut verify_trusting(&a, &[]));
    assert!(
        error.contains("cannot read the signature of bundle") && !error.contains("trusted key"),
        "{error}"
    );
}

fn with_signature(good: &Value, signature: &str) -> Value {
    let mut json = good.clone();
    json["messageSignature"]["signature"] = signature.into();
    json
}

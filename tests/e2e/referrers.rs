//! OCI referrers through the gap: an image signed cosign's way on Debian's `docker-registry`
//! (a `.sig` tag, and an OCI 1.1 referrer behind the referrers tag schema, since 2.8 has no
//! referrers API) is bundled with its referrers, `kk-install registry serve` answers the
//! referrers API and the tags, and the signature fetched from it verifies with the key
//! (`cosign verify --key`'s check); `spec.verify` refuses an unsigned image and another key.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use bundle_spec::Sha256Digest;
use bundle_spec::sign::image::{
    SIGNATURE_ANNOTATION, SIGNATURE_ARTIFACT_TYPE, SIMPLE_SIGNING_MEDIA_TYPE, SignatureLayer,
    simple_signing_payload, verify_layer,
};
use bundle_spec::test_support::{HandLayout, descriptor, named};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::EncodePublicKey as _;
use serde_json::{Value, json};

use crate::install_bundle::{docker_registry, serve};
use crate::support::{binary, kk_install, retry, run_failing, run_ok};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";

fn key(byte: u8) -> SigningKey {
    SigningKey::from_slice(&[byte; 32]).expect("a valid scalar")
}

fn write_key(path: &Path, key: &SigningKey) {
    let pem = key
        .verifying_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .expect("pem");
    fs::write(path, pem).expect("key file");
}

/// `skopeo copy --preserve-digests` of `oci:layout:name` to the plain-HTTP `docker://target`.
fn push(layout: &Path, name: &str, target: &str) {
    let mut cmd = Command::new("skopeo");
    cmd.args(["copy", "--preserve-digests", "--dest-tls-verify=false"])
        .arg(format!("oci:{}:{name}", layout.display()))
        .arg(format!("docker://{target}"));
    run_ok(&mut cmd);
}

/// Writes `tag`'s image (one layer of `seed`) to a layout and pushes it; with `signer`, a
/// cosign `.sig` of it and an OCI 1.1 signature referrer behind the tag-schema index. The
/// image's manifest digest.
fn push_image(dir: &Path, registry: &str, tag: &str, signer: Option<&SigningKey>) -> Sha256Digest {
    let layout_dir = dir.join(format!("layout-{tag}"));
    let layout = HandLayout::new(&layout_dir);
    let config = layout.blob_descriptor(
        IMAGE_CONFIG,
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#,
    );
    let image = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config,
        "layers": [layout.blob_descriptor("application/vnd.oci.image.layer.v1.tar", tag.as_bytes())],
    }))
    .expect("json");
    let digest = layout.put_blob(&image);
    let image_desc = descriptor(OCI_MANIFEST, digest, image.len());
    let mut entries = vec![named(image_desc.clone(), "image")];
    let repository = format!("{registry}/test/app");
    if let Some(signer) = signer {
        let payload = simple_signing_payload(&repository, digest);
        let signature: Signature = signer.sign(&payload);
        let mut layer = layout.blob_descriptor(SIMPLE_SIGNING_MEDIA_TYPE, &payload);
        layer["annotations"] = json!({
            SIGNATURE_ANNOTATION: base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
        });
        let empty = layout.blob_descriptor(IMAGE_CONFIG, b"{}");
        let sig = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": empty, "layers": [layer],
        }))
        .expect("json");
        entries.push(named(
            descriptor(OCI_MANIFEST, layout.put_blob(&sig), sig.len()),
            "sig",
        ));
        let referrer = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": SIGNATURE_ARTIFACT_TYPE,
            "config": empty, "layers": [layer], "subject": image_desc,
        }))
        .expect("json");
        let referrer_desc = descriptor(OCI_MANIFEST, layout.put_blob(&referrer), referrer.len());
        let mut listed = referrer_desc.clone();
        listed["artifactType"] = SIGNATURE_ARTIFACT_TYPE.into();
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [listed],
        }))
        .expect("json");
        entries.push(named(referrer_desc, "referrer"));
        fs::write(dir.join("tag-schema-index.json"), index).expect("index");
    }
    layout.write_index(&entries);
    push(&layout_dir, "image", &format!("{repository}:{tag}"));
    if signer.is_some() {
        let stem = format!("{repository}:sha256-{}", digest.hex());
        push(&layout_dir, "sig", &format!("{stem}.sig"));
        // skopeo will not copy an index with an `artifactType` entry unchanged: the referrer
        // goes by skopeo, its tag-schema index by a plain PUT.
        push(
            &layout_dir,
            "referrer",
            &format!("{repository}:referrer-{tag}"),
        );
        run_ok(
            Command::new("curl")
                .args(["-fsS", "-X", "PUT", "-H"])
                .arg(format!("Content-Type: {OCI_INDEX}"))
                .arg("--data-binary")
                .arg(format!("@{}", dir.join("tag-schema-index.json").display()))
                .arg(format!(
                    "http://{registry}/v2/test/app/manifests/sha256-{}",
                    digest.hex()
                )),
        );
    }
    digest
}

/// Builds a bundle of `image` (a YAML image entry) from the plain-HTTP `registry`, with
/// `verify` (a YAML line under `spec`, or nothing).
fn build(dir: &Path, registry: &str, image: &str, verify: &str) -> (PathBuf, Command) {
    let manifest = dir.join("kk.yaml");
    fs::write(
        &manifest,
        format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: signed}}\n\
             spec:\n  images:\n    - {image}\n  registries:\n    \"{registry}\": {{plainHTTP: true}}\n{verify}"
        ),
    )
    .expect("manifest");
    let bundle = dir.join("signed.tar.zst");
    let mut cmd = Command::new(binary("kk-bundle"));
    cmd.arg("build")
        .arg(&manifest)
        .arg("-o")
        .arg(&bundle)
        .arg("--cache")
        .arg(dir.join("cache"));
    (bundle, cmd)
}

/// GET `path` from the registry on `port`, retried while it starts.
fn get(port: u16, path: &str) -> Vec<u8> {
    retry(
        Command::new("curl")
            .args(["-fsS", "-H"])
            .arg(format!("Accept: {OCI_MANIFEST}, {OCI_INDEX}"))
            .arg(format!("http://127.0.0.1:{port}{path}")),
    )
    .stdout
}

/// Builds `image` from `registry` with `verify` and unpacks the bundle into `dir/store`; the
/// store's `index.json`.
fn build_and_unpack(dir: &Path, registry: &str, image: &str, verify: &str) -> PathBuf {
    fs::create_dir_all(dir).expect("dir");
    let (bundle, mut cmd) = build(dir, registry, image, verify);
    run_ok(&mut cmd);
    let store = dir.join("store");
    run_ok(kk_install(&["unpack", "--store"], &bundle).arg(&store));
    store
}

/// What kk's registry on `port` serves for `image` in `repo`: the referrers API lists both
/// signatures, the tag-schema index the OCI 1.1 one, and the `.sig` tag's layer verifies with
/// `signer`'s key and names the image's digest (`cosign verify --key`'s check).
fn check_served(port: u16, repo: &str, image: Sha256Digest, signer: &SigningKey) {
    let listed: Value =
        serde_json::from_slice(&get(port, &format!("{repo}/referrers/{image}"))).expect("json");
    let types: Vec<&str> = listed["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .filter_map(|d| d["artifactType"].as_str())
        .collect();
    assert_eq!(types.len(), 2, "{listed:#}");
    assert!(types.contains(&SIGNATURE_ARTIFACT_TYPE), "{listed:#}");
    let stem = format!("{repo}/manifests/sha256-{}", image.hex());
    let index: Value = serde_json::from_slice(&get(port, &stem)).expect("json");
    let entries = index["manifests"].as_array().map(Vec::len);
    assert_eq!(entries, Some(1), "{index:#}");
    let sig: Value = serde_json::from_slice(&get(port, &format!("{stem}.sig"))).expect("json");
    let layer = &sig["layers"][0];
    let digest = layer["digest"].as_str().expect("digest");
    let payload = get(port, &format!("{repo}/blobs/{digest}"));
    let checked = SignatureLayer {
        media_type: layer["mediaType"].as_str().expect("media type"),
        signature: layer["annotations"][SIGNATURE_ANNOTATION].as_str(),
        payload: &payload,
    };
    verify_layer(signer.verifying_key(), &checked, image).expect("the signature verifies");
}

/// `kk-install registry push` of `store` into a fresh docker-registry carries the cosign tag
/// and the tag-schema index (2.8 has no referrers API: the tags are how clients find them).
fn check_pushed(dir: &Path, store: &Path, repo: &str, image: Sha256Digest) {
    fs::create_dir_all(dir).expect("dir");
    let (port, _registry) = docker_registry(dir, None);
    let mut push = Command::new(binary("kk-install"));
    push.args(["registry", "push", "--store"]).arg(store).args([
        "--to",
        &format!("127.0.0.1:{port}"),
        "--plain-http",
    ]);
    retry(&mut push);
    let stem = format!("{repo}/manifests/sha256-{}", image.hex());
    let index: Value = serde_json::from_slice(&get(port, &stem)).expect("json");
    assert_eq!(
        index["manifests"].as_array().map(Vec::len),
        Some(1),
        "{index:#}"
    );
    let sig: Value = serde_json::from_slice(&get(port, &format!("{stem}.sig"))).expect("json");
    assert_eq!(sig["layers"][0]["mediaType"], SIMPLE_SIGNING_MEDIA_TYPE);
}

#[test]
fn referrers_cross_the_gap_and_verify_against_the_key() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (port, _upstream) = docker_registry(tmp.path(), None);
    let registry = format!("127.0.0.1:{port}");
    retry(Command::new("curl").args(["-fsS", &format!("http://{registry}/v2/")]));
    let signer = key(7);
    let image = push_image(tmp.path(), &registry, "1", Some(&signer));
    push_image(tmp.path(), &registry, "2", None);
    write_key(&tmp.path().join("cosign.pub"), &signer);
    write_key(&tmp.path().join("other.pub"), &key(9));
    let verify = "  verify: {key: ../cosign.pub}\n";

    // Verified and bundled with its referrers, then served by kk's registry.
    let reference = format!("{registry}/test/app:1");
    let store = build_and_unpack(&tmp.path().join("first"), &registry, &reference, verify);
    let (port, _served) = serve(&[std::ffi::OsStr::new("--store"), store.as_os_str()]);
    let repo = format!(
        "/v2/127.0.0.1_{}/test/app",
        registry.split(':').nth(1).unwrap()
    );
    check_served(port, &repo, image, &signer);
    check_pushed(&tmp.path().join("push"), &store, &repo, image);

    // kk's registry as the upstream of another build: its referrers API leads to both.
    let served = format!("127.0.0.1:{port}");
    let reference = format!("{served}{}:1", repo.trim_start_matches("/v2"));
    let store = build_and_unpack(&tmp.path().join("hop"), &served, &reference, verify);
    let index = fs::read_to_string(store.join("index.json")).expect("index.json");
    let hex = image.hex();
    assert!(
        index.contains(&format!(":sha256-{hex}.sig\""))
            && index.contains(&format!(":sha256-{hex}\"")),
        "{index}"
    );

    // `referrers: none` leaves them out.
    let entry = format!("{{ref: \"{registry}/test/app:1\", referrers: none}}");
    let store = build_and_unpack(&tmp.path().join("none"), &registry, &entry, "");
    let index = fs::read_to_string(store.join("index.json")).expect("index.json");
    assert!(!index.contains("sha256-"), "{index}");

    // An unsigned image, and another key, fail naming the image and the key.
    for (tag, key, expected) in [
        ("2", "cosign.pub", "no cosign signature"),
        ("1", "other.pub", "does not verify with the key"),
    ] {
        let (_, mut cmd) = build(
            tmp.path(),
            &registry,
            &format!("{registry}/test/app:{tag}"),
            &format!("  verify: {{key: {key}}}\n"),
        );
        let error = run_failing(&mut cmd);
        assert!(
            error.contains(&format!("{registry}/test/app:{tag}"))
                && error.contains(key)
                && error.contains(expected),
            "{error}"
        );
    }
}

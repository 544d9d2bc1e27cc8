//! Referrers and `verify` against a scripted registry: a cosign `.sig` tag, an OCI 1.1 referrer
//! listed by the referrers API, and the key check over them.

use std::collections::BTreeMap;

use base64::Engine as _;
use bundle_spec::Sha256Digest;
use bundle_spec::platform::Platform;
use bundle_spec::sign::image::{
    SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, simple_signing_payload,
};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::json;

use super::*;
use crate::fetch::test_server::{Reply, TestServer};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const SBOM_TYPE: &str = "application/spdx+json";

/// The documents and blobs of a signed image, by path.
struct Upstream {
    image: Sha256Digest,
    paths: BTreeMap<String, Vec<u8>>,
    signature: Sha256Digest,
    sbom: Sha256Digest,
}

fn key(byte: u8) -> SigningKey {
    SigningKey::from_slice(&[byte; 32]).expect("a valid scalar")
}

fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
    json!({ "mediaType": media_type, "digest": Sha256Digest::of(bytes).to_string(), "size": bytes.len() })
}

/// `test/app:1.0`, a single linux/amd64 manifest; with `signer`, a cosign `.sig` of it; and an
/// SBOM referrer (`subject`) the referrers API lists.
fn upstream(signer: Option<&SigningKey>) -> Upstream {
    let mut paths = BTreeMap::new();
    let mut blob = |bytes: &[u8]| {
        paths.insert(
            format!("/v2/test/app/blobs/{}", Sha256Digest::of(bytes)),
            bytes.to_vec(),
        );
    };
    let config = br#"{"os":"linux","architecture":"amd64"}"#.to_vec();
    let layer = b"layer".to_vec();
    blob(&config);
    blob(&layer);
    let image = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": descriptor("application/vnd.oci.image.config.v1+json", &config),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", &layer)],
    }))
    .unwrap();
    let image_digest = Sha256Digest::of(&image);
    let empty = b"{}".to_vec();
    blob(&empty);
    let payload = simple_signing_payload("example.org/test/app", image_digest);
    blob(&payload);
    let sbom_layer = br#"{"spdxVersion":"SPDX-2.3"}"#.to_vec();
    blob(&sbom_layer);
    let mut payload_layer = descriptor(SIMPLE_SIGNING_MEDIA_TYPE, &payload);
    if let Some(signer) = signer {
        let signature: Signature = signer.sign(&payload);
        payload_layer["annotations"] = json!({
            SIGNATURE_ANNOTATION: base64::engine::general_purpose::STANDARD.encode(signature.to_der().as_bytes())
        });
    }
    let signature = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": descriptor("application/vnd.oci.image.config.v1+json", &empty),
        "layers": [payload_layer],
    }))
    .unwrap();
    let sbom = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": SBOM_TYPE,
        "config": descriptor("application/vnd.oci.empty.v1+json", &empty),
        "layers": [descriptor(SBOM_TYPE, &sbom_layer)],
        "subject": descriptor(OCI_MANIFEST, &image),
    }))
    .unwrap();
    let (signature_digest, sbom_digest) = (Sha256Digest::of(&signature), Sha256Digest::of(&sbom));
    let referrers = serde_json::to_vec(&json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": OCI_MANIFEST, "digest": sbom_digest.to_string(), "size": sbom.len(),
            "artifactType": SBOM_TYPE,
        }],
    }))
    .unwrap();
    let manifests = "/v2/test/app/manifests";
    paths.insert(format!("{manifests}/1.0"), image.clone());
    paths.insert(format!("{manifests}/{image_digest}"), image);
    paths.insert(format!("/v2/test/app/referrers/{image_digest}"), referrers);
    paths.insert(format!("{manifests}/{sbom_digest}"), sbom);
    if signer.is_some() {
        paths.insert(
            format!("{manifests}/sha256-{}.sig", image_digest.hex()),
            signature.clone(),
        );
        paths.insert(format!("{manifests}/{signature_digest}"), signature);
    }
    Upstream {
        image: image_digest,
        paths,
        signature: signature_digest,
        sbom: sbom_digest,
    }
}

async fn serve(upstream: &Upstream) -> TestServer {
    let paths = upstream.paths.clone();
    TestServer::start(move |request, _| match request.path.as_str() {
        "/v2/" => Reply::ok(""),
        path => match paths.get(path) {
            Some(body) if path.contains("/blobs/") => Reply::file(body, request),
            Some(body) => Reply::ok(body.clone()),
            None => Reply::status(404),
        },
    })
    .await
}

async fn resolve(
    server: &TestServer,
    bundle_referrers: bool,
    verify: Option<&KeyCheck>,
    locked: Option<&[LockedReferrer]>,
) -> (tempfile::TempDir, Result<ResolvedImage, ResolveError>) {
    resolve_telling(server, bundle_referrers, verify, locked, &|_| {}).await
}

/// [`resolve`], telling `manifests_known` what `resolve_image` tells it.
async fn resolve_telling(
    server: &TestServer,
    bundle_referrers: bool,
    verify: Option<&KeyCheck>,
    locked: Option<&[LockedReferrer]>,
    manifests_known: &dyn Fn(&[BlobRef]),
) -> (tempfile::TempDir, Result<ResolvedImage, ResolveError>) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let mut source = ImageSource::parse(&format!("{}/test/app:1.0", server.host())).unwrap();
    source.bundle_referrers = bundle_referrers;
    let access = RegistryAccess::plain_http(&server.host());
    let platforms = ["linux/amd64".parse::<Platform>().unwrap()];
    let options = ResolveOptions {
        platforms: &platforms,
        allow_missing_platforms: false,
        locked_referrers: locked,
        verify,
    };
    let resolved = resolve_image(&access, &cache, &source, None, options, manifests_known).await;
    (dir, resolved)
}

fn check(signer: &SigningKey) -> KeyCheck {
    KeyCheck {
        path: "keys/cosign.pub".into(),
        key: *signer.verifying_key(),
    }
}

#[tokio::test]
async fn referrers_come_from_the_api_and_cosign_tags_and_are_locked() {
    let upstream = upstream(Some(&key(7)));
    let server = serve(&upstream).await;
    let (_dir, resolved) = resolve(&server, true, Some(&check(&key(7))), None).await;
    let resolved = resolved.unwrap();
    let found: Vec<(Option<String>, Sha256Digest, Sha256Digest)> = resolved
        .referrers
        .iter()
        .map(|r| (r.tag.clone(), r.subject, r.document.digest))
        .collect();
    let sig_tag = format!("sha256-{}.sig", upstream.image.hex());
    assert_eq!(
        found,
        [
            (None, upstream.image, upstream.sbom),
            (Some(sig_tag.clone()), upstream.image, upstream.signature),
        ]
    );
    // Their blobs are fetched with the image's: config, layer, the empty config, the SBOM
    // and the signature payload.
    assert_eq!(resolved.blobs.len(), 5);
    let locked: Vec<LockedReferrer> = resolved
        .referrers
        .iter()
        .map(|r| r.locked(&resolved.source.name()))
        .collect();
    assert_eq!(locked[1].tag.as_deref(), Some(sig_tag.as_str()));

    // A locked build fetches exactly the locked ones, by digest, and discovers nothing.
    let before = server.requests().len();
    let (_dir, again) = resolve(&server, true, None, Some(&locked[..1])).await;
    let again = again.unwrap();
    assert_eq!(again.referrers.len(), 1);
    assert_eq!(again.referrers[0].document.digest, upstream.sbom);
    assert!(
        server.requests()[before..]
            .iter()
            .all(|request| !request.path.contains("referrers") && !request.path.contains(".sig")),
        "a locked build looked for referrers"
    );
}

#[tokio::test]
async fn referrers_none_bundles_none_yet_a_key_is_still_checked() {
    let upstream = upstream(Some(&key(7)));
    let server = serve(&upstream).await;
    let (_dir, resolved) = resolve(&server, false, None, None).await;
    let resolved = resolved.unwrap();
    assert!(resolved.referrers.is_empty());
    assert_eq!(resolved.blobs.len(), 2);
    assert!(
        server
            .requests()
            .iter()
            .all(|request| !request.path.contains("referrers")),
        "referrers were looked for"
    );
    let (_dir, checked) = resolve(&server, false, Some(&check(&key(7))), None).await;
    assert!(checked.unwrap().referrers.is_empty());
}

#[tokio::test]
async fn verify_fails_naming_the_image_and_key_for_another_key_or_no_signature() {
    let signed = upstream(Some(&key(7)));
    let server = serve(&signed).await;
    let (_dir, other) = resolve(&server, true, Some(&check(&key(9))), None).await;
    let message = other.unwrap_err().to_string();
    assert!(
        message.contains("/test/app:1.0")
            && message.contains("keys/cosign.pub")
            && message.contains("does not verify with the key"),
        "{message}"
    );

    let unsigned = upstream(None);
    let server = serve(&unsigned).await;
    let (_dir, none) = resolve(&server, true, Some(&check(&key(7))), None).await;
    let message = none.unwrap_err().to_string();
    assert!(
        message.contains("/test/app:1.0")
            && message.contains("keys/cosign.pub")
            && message.contains("no cosign signature"),
        "{message}"
    );
}

/// A build starts an image's downloads when `resolve_image` tells it the manifests' blobs: that
/// must come before the referrers' round trips, and, for an image whose signature is checked,
/// not before the check.
#[tokio::test]
async fn the_blobs_are_told_before_any_referrer_is_asked_for_unless_a_key_must_pass_first() {
    let upstream = upstream(Some(&key(7)));
    let is_referrer_lookup = |path: &str| {
        path.contains("/referrers/") || path.contains(&format!("sha256-{}", upstream.image.hex()))
    };
    for verify in [None, Some(check(&key(7)))] {
        let server = serve(&upstream).await;
        let told = std::sync::Mutex::new(Vec::new());
        let record = |blobs: &[BlobRef]| {
            let asked = server
                .requests()
                .iter()
                .filter(|request| is_referrer_lookup(&request.path))
                .count();
            let digests: Vec<Sha256Digest> = blobs.iter().map(|blob| blob.digest).collect();
            told.lock().unwrap().push((digests, asked));
        };
        let (_dir, resolved) = resolve_telling(&server, true, verify.as_ref(), None, &record).await;
        let resolved = resolved.unwrap();
        assert!(
            server
                .requests()
                .iter()
                .any(|r| is_referrer_lookup(&r.path)),
            "the referrers were looked for"
        );
        let told = told.into_inner().unwrap();
        if verify.is_some() {
            assert_eq!(told, [], "told before the signature was checked");
        } else {
            let manifest_blobs: Vec<Sha256Digest> = resolved.manifests[0]
                .1
                .blobs
                .iter()
                .map(|b| b.digest)
                .collect();
            assert_eq!(manifest_blobs.len(), 2, "a config and a layer");
            // The config is not told: the platform check fetches it.
            assert_eq!(told, [(manifest_blobs[1..].to_vec(), 0)]);
        }
    }
}

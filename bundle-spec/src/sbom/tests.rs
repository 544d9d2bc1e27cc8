//! Tests of the SBOM: packages per artifact, relationships, determinism, and what the SPDX
//! tools accept.

use super::*;
use crate::lock::LockedImage;
use crate::test_support;

fn artifact(kind: ArtifactKind, name: &str, version: &str, platform: Option<&str>) -> Artifact {
    let reference = match kind {
        ArtifactKind::Binary => format!("kk.internal/binaries/{name}:{version}"),
        ArtifactKind::File => format!("kk.internal/files/{name}:{version}"),
        _ if name.contains('/') => format!("{name}:{version}"),
        _ => format!("kk.internal/charts/{name}:{version}"),
    };
    test_support::artifact(kind, name, version, platform, reference)
}

fn locked(name: &str, version: &str, platform: Option<&str>, url: &str) -> LockedFile {
    test_support::locked_file(name, version, platform, url)
}

/// A description with one artifact of every kind and origin.
fn description() -> Description {
    let created = "2026-11-22T00:00:00Z".parse().unwrap();
    let mut d = test_support::description(
        created,
        vec![
            artifact(
                ArtifactKind::Image,
                "docker.io/library/busybox",
                "1.36",
                Some("linux/amd64"),
            ),
            artifact(
                ArtifactKind::Image,
                "localhost:5000/app",
                "2",
                Some("linux/arm/v7"),
            ),
            artifact(ArtifactKind::Binary, "etcd", "v3.5.16", Some("linux/amd64")),
            artifact(ArtifactKind::Binary, "runc", "1.2.0", Some("linux/arm64")),
            artifact(ArtifactKind::Chart, "podinfo", "6.7.0+1", None),
            artifact(
                ArtifactKind::Chart,
                "ghcr.io/stefanprodan/charts/podinfo",
                "6.7.0",
                None,
            ),
            artifact(ArtifactKind::File, "notes", "1", None),
        ],
    );
    d.lock.images.push(LockedImage {
        reference: "docker.io/library/busybox:1.36".into(),
        digest: Sha256Digest::of(b"index"),
        media_type: "application/vnd.oci.image.index.v1+json".into(),
    });
    d.lock.binaries = vec![
        locked(
            "etcd",
            "v3.5.16",
            Some("linux/amd64"),
            "https://github.com/etcd-io/etcd/releases/download/v3.5.16/etcd.tar.gz",
        ),
        locked(
            "runc",
            "1.2.0",
            Some("linux/arm64"),
            "http://127.0.0.1:8080/runc.arm64?x=1&y",
        ),
    ];
    d.lock.charts = vec![locked(
        "podinfo",
        "6.7.0+1",
        None,
        "https://stefanprodan.github.io/podinfo/podinfo-6.7.0.tgz",
    )];
    d
}

fn document(description: &Description) -> serde_json::Value {
    serde_json::from_slice(&spdx_document(description).unwrap()).unwrap()
}

#[test]
fn every_artifact_becomes_a_package() {
    let d = description();
    let doc = document(&d);
    let hex = |text: &str| Sha256Digest::of(text.as_bytes()).hex();
    // (SPDX id, checksum, download location, source info, purl)
    let expected: &[(&str, String, &str, &str, String)] = &[
        (
            "SPDXRef-image-0",
            d.artifacts[0].digest.hex(),
            NOASSERTION,
            "docker.io/library/busybox:1.36",
            format!(
                "pkg:oci/busybox@sha256%3A{}?arch=amd64&os=linux&repository_url=docker.io/library/busybox&tag=1.36",
                d.artifacts[0].digest.hex()
            ),
        ),
        (
            "SPDXRef-image-1",
            d.artifacts[1].digest.hex(),
            NOASSERTION,
            "localhost:5000/app:2",
            format!(
                "pkg:oci/app@sha256%3A{}?arch=arm&os=linux&repository_url=localhost:5000/app&tag=2&variant=v7",
                d.artifacts[1].digest.hex()
            ),
        ),
        (
            "SPDXRef-binary-2",
            hex(&d.lock.binaries[0].url),
            "https://github.com/etcd-io/etcd/releases/download/v3.5.16/etcd.tar.gz",
            "https://github.com/etcd-io/etcd/releases/download/v3.5.16/etcd.tar.gz",
            format!(
                "pkg:generic/etcd@v3.5.16?arch=amd64&checksum=sha256:{}&download_url=https://github.com/etcd-io/etcd/releases/download/v3.5.16/etcd.tar.gz&os=linux",
                hex(&d.lock.binaries[0].url)
            ),
        ),
        (
            "SPDXRef-binary-3",
            hex(&d.lock.binaries[1].url),
            NOASSERTION,
            "http://127.0.0.1:8080/runc.arm64?x=1&y",
            format!(
                "pkg:generic/runc@1.2.0?arch=arm64&checksum=sha256:{}&download_url=http://127.0.0.1:8080/runc.arm64%3Fx%3D1%26y&os=linux",
                hex(&d.lock.binaries[1].url)
            ),
        ),
        (
            "SPDXRef-chart-4",
            hex(&d.lock.charts[0].url),
            "https://stefanprodan.github.io/podinfo/podinfo-6.7.0.tgz",
            "https://stefanprodan.github.io/podinfo/podinfo-6.7.0.tgz",
            format!(
                "pkg:generic/podinfo@6.7.0%2B1?checksum=sha256:{}&download_url=https://stefanprodan.github.io/podinfo/podinfo-6.7.0.tgz",
                hex(&d.lock.charts[0].url)
            ),
        ),
        (
            "SPDXRef-chart-5",
            d.artifacts[5].digest.hex(),
            NOASSERTION,
            "ghcr.io/stefanprodan/charts/podinfo:6.7.0",
            format!(
                "pkg:oci/podinfo@sha256%3A{}?repository_url=ghcr.io/stefanprodan/charts/podinfo&tag=6.7.0",
                d.artifacts[5].digest.hex()
            ),
        ),
        (
            "SPDXRef-file-6",
            d.artifacts[6].digest.hex(),
            NOASSERTION,
            "kk.internal/files/notes:1",
            format!(
                "pkg:oci/notes@sha256%3A{}?repository_url=kk.internal/files/notes&tag=1",
                d.artifacts[6].digest.hex()
            ),
        ),
    ];
    let packages = doc["packages"].as_array().unwrap();
    assert_eq!(packages.len(), 1 + expected.len());
    assert_eq!(packages[0]["SPDXID"], BUNDLE_ID);
    for ((id, checksum, location, source, purl), (package, artifact)) in
        expected.iter().zip(packages[1..].iter().zip(&d.artifacts))
    {
        assert_eq!(package["SPDXID"], *id);
        assert_eq!(package["name"], artifact.name, "{id}");
        assert_eq!(package["versionInfo"], artifact.version, "{id}");
        assert_eq!(package["checksums"][0]["checksumValue"], *checksum, "{id}");
        assert_eq!(package["downloadLocation"], *location, "{id}");
        assert_eq!(package["sourceInfo"], *source, "{id}");
        assert_eq!(
            package["externalRefs"][0]["referenceLocator"], *purl,
            "{id}"
        );
    }
}

#[test]
fn the_document_describes_the_bundle_which_contains_every_package() {
    let d = description();
    let doc = document(&d);
    let relationships = doc["relationships"].as_array().unwrap();
    assert_eq!(
        relationships[0],
        serde_json::json!({"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": BUNDLE_ID})
    );
    let contained: Vec<_> = relationships[1..]
        .iter()
        .map(|r| {
            assert_eq!(r["spdxElementId"], BUNDLE_ID);
            assert_eq!(r["relationshipType"], "CONTAINS");
            r["relatedSpdxElement"].as_str().unwrap()
        })
        .collect();
    let packages: Vec<_> = doc["packages"].as_array().unwrap()[1..]
        .iter()
        .map(|p| p["SPDXID"].as_str().unwrap())
        .collect();
    assert_eq!(contained, packages);
    assert_eq!(doc["spdxVersion"], "SPDX-2.3");
    assert_eq!(doc["creationInfo"]["created"], "2026-11-22T00:00:00Z");
    assert_eq!(doc["creationInfo"]["creators"][0], "Tool: test-0");
}

#[test]
fn the_same_description_gives_the_same_bytes_and_another_a_new_namespace() {
    let d = description();
    let bytes = spdx_document(&d).unwrap();
    assert_eq!(bytes, spdx_document(&d.clone()).unwrap());
    let namespace = |d: &Description| document(d)["documentNamespace"].clone();
    let digest = Sha256Digest::of(&d.to_bytes().unwrap());
    assert_eq!(
        namespace(&d),
        format!(
            "https://github.com/kk-airgap/kk/spdx/bundle-{}",
            digest.hex()
        )
    );
    let mut other = d.clone();
    other.manifest.text.push_str("# changed\n");
    assert_ne!(namespace(&other), namespace(&d));
    // Canonical: keys sorted, no whitespace.
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(serde_json::to_vec(&value).unwrap(), bytes);
}

#[test]
fn created_is_written_in_whole_seconds() {
    let mut d = description();
    d.created = "2026-11-22T00:00:01.75Z".parse().unwrap();
    assert_eq!(
        document(&d)["creationInfo"]["created"],
        "2026-11-22T00:00:01Z"
    );
}

#[test]
fn download_locations_are_urls_the_spdx_tools_accept() {
    let cases: &[(&str, bool)] = &[
        (
            "https://dl.k8s.io/release/v1.31.4/bin/linux/amd64/kubeadm",
            true,
        ),
        ("http://files.example.internal:8080/x?y=z", true),
        ("https://xn--bcher-kva.example/x", false),
        ("http://127.0.0.1:8080/runc", false),
        ("http://localhost/runc", false),
        ("http://[::1]:8080/runc", false),
        ("https://user@example.org/x", false),
        ("file:///srv/runc", false),
    ];
    for (url, accepted) in cases {
        let expected = if *accepted { *url } else { NOASSERTION };
        assert_eq!(spdx_download_location(url), expected, "{url}");
    }
}

#[test]
fn a_deb_is_a_deb_purl_with_its_url_and_sha256() {
    use crate::lock::LockedPackage;
    use crate::packages::{Distro, PackageFormat, PackageRecord, PackageSet};
    let reference = "kk.internal/packages/debian-12/amd64/socat:1.7.4.4-2";
    let deb = Sha256Digest::of(b"socat.deb");
    let mut d = description();
    d.artifacts.push(test_support::artifact(
        ArtifactKind::Package,
        "socat",
        "1.7.4.4-2",
        Some("linux/amd64"),
        reference.to_owned(),
    ));
    d.packages.push(PackageSet {
        distro: Distro::parse("debian-12").unwrap(),
        arch: "amd64".into(),
        format: PackageFormat::Deb,
        repository: "http://deb.example.org/debian bookworm".into(),
        roots: Vec::new(),
        packages: vec![PackageRecord {
            name: "socat".into(),
            version: "1.7.4.4-2".into(),
            architecture: "amd64".into(),
            depends: String::new(),
            pre_depends: String::new(),
            provides: String::new(),
            multi_arch: String::new(),
            filename: "socat_1.7.4.4-2_amd64.deb".into(),
            sha256: deb,
            size: 9,
            reference: reference.into(),
        }],
    });
    let url = "http://deb.example.org/debian/pool/main/s/socat/socat_1.7.4.4-2_amd64.deb";
    d.lock.packages.push(LockedPackage {
        distro: "debian-12".into(),
        arch: "amd64".into(),
        name: "socat".into(),
        version: "1.7.4.4-2".into(),
        url: url.into(),
        digest: deb,
        size: 9,
    });
    let doc = document(&d);
    let package = doc["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "socat")
        .expect("the deb is a package");
    assert_eq!(
        package["externalRefs"][0]["referenceLocator"],
        "pkg:deb/debian/socat@1.7.4.4-2?arch=amd64&distro=debian-12"
    );
    assert_eq!(package["downloadLocation"], url);
    assert_eq!(package["sourceInfo"], url);
    assert_eq!(package["checksums"][0]["checksumValue"], deb.hex());
    assert_eq!(package["versionInfo"], "1.7.4.4-2");
    assert_eq!(package["primaryPackagePurpose"], "INSTALL");
}

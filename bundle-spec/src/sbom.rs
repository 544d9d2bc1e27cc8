//! The SBOM `kk-bundle/sbom.spdx.json` (format 1.1): an SPDX 2.3 JSON document listing every
//! artifact of a bundle.
//!
//! # Why SPDX 2.3
//!
//! SPDX is an ISO/IEC standard (5962:2021) for software bills of materials, and its reference
//! validator, `pyspdxtools` (`pip install spdx-tools`), checks a document's semantics — that every
//! SPDX id is well-formed and defined once, that relationships name existing elements, that
//! checksums have the right length, that download locations and package URLs are well-formed —
//! not only its JSON shape. `CycloneDX` 1.6 would have served too, but its Python library only
//! validates against the JSON schema. Package URLs (`pkg:oci/…`, `pkg:generic/…`) in the
//! packages' external references carry each artifact's original reference or download URL in the
//! form scanners such as grype and Trivy look up.
//!
//! # What it says
//!
//! The document is derived from the [`Description`] alone — the artifacts and the lock — so it
//! adds no information a reader could not check against the description, and the same description
//! gives the same bytes: `created` is the description's, and the document namespace ends in the
//! sha256 of the description's bytes (never a random UUID, which SPDX suggests, nor the clock).
//!
//! One package stands for the bundle; the document `DESCRIBES` it and it `CONTAINS` one package
//! per artifact (per platform, like the description):
//!
//! - an artifact that was downloaded (a binary in `lock.binaries`, a chart from an HTTP repository
//!   in `lock.charts`) has the downloaded file's sha256 as its checksum, its URL as download
//!   location and `sourceInfo`, and a `pkg:generic` purl with `download_url` and `checksum`;
//! - any other artifact (an image, a chart from an OCI registry, a file) has its manifest's
//!   sha256 as its checksum, its reference as `sourceInfo`, and a `pkg:oci` purl whose version is
//!   the manifest digest and whose `repository_url` and `tag` give the reference;
//! - both kinds of purl carry the platform as `os`, `arch` and `variant` qualifiers.

use std::fmt::Write as _;

use serde::Serialize;

use crate::description::{Artifact, ArtifactKind, Description, canonical_json};
use crate::digest::Sha256Digest;
use crate::lock::{Lock, LockedFile};

/// Path of the SBOM member, written from format 1.1 on.
pub const SBOM_PATH: &str = "kk-bundle/sbom.spdx.json";

/// The SPDX id of the package that stands for the bundle.
const BUNDLE_ID: &str = "SPDXRef-Bundle";
/// What SPDX writes where nothing is asserted.
const NOASSERTION: &str = "NOASSERTION";

/// The SPDX 2.3 document for `description`, as canonical JSON (keys sorted, no whitespace).
///
/// Deterministic: the same description always gives the same bytes.
pub fn spdx_document(description: &Description) -> Result<Vec<u8>, serde_json::Error> {
    let digest = Sha256Digest::of(&description.to_bytes()?);
    let name = format!("kk bundle from {}", description.manifest.name);
    let mut packages = vec![Package::bundle(&name)];
    let mut relationships = vec![Relationship::new(
        "SPDXRef-DOCUMENT",
        "DESCRIBES",
        BUNDLE_ID,
    )];
    for (index, artifact) in description.artifacts.iter().enumerate() {
        let package = Package::artifact(index, artifact, &description.lock);
        relationships.push(Relationship::new(BUNDLE_ID, "CONTAINS", &package.spdx_id));
        packages.push(package);
    }
    let builder = &description.builder;
    canonical_json(&Document {
        spdx_version: "SPDX-2.3",
        data_license: "CC0-1.0",
        spdx_id: "SPDXRef-DOCUMENT",
        namespace: format!(
            "{}/spdx/bundle-{}",
            env!("CARGO_PKG_REPOSITORY"),
            digest.hex()
        ),
        name,
        creation_info: CreationInfo {
            // SPDX allows whole seconds only.
            created: description
                .created
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
            creators: vec![format!("Tool: {}-{}", builder.name, builder.version)],
        },
        packages,
        relationships,
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    spdx_version: &'static str,
    data_license: &'static str,
    #[serde(rename = "SPDXID")]
    spdx_id: &'static str,
    name: String,
    #[serde(rename = "documentNamespace")]
    namespace: String,
    creation_info: CreationInfo,
    packages: Vec<Package>,
    relationships: Vec<Relationship>,
}

#[derive(Serialize)]
struct CreationInfo {
    created: String,
    creators: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    #[serde(rename = "SPDXID")]
    spdx_id: String,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_info: Option<String>,
    download_location: String,
    files_analyzed: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checksums: Vec<Checksum>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    external_refs: Vec<ExternalRef>,
    primary_package_purpose: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_info: Option<String>,
    // Optional since SPDX 2.3, but required by 2.2 and by tools that still follow it.
    license_concluded: &'static str,
    license_declared: &'static str,
    copyright_text: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Checksum {
    algorithm: &'static str,
    checksum_value: String,
}

#[derive(Serialize)]
struct ExternalRef {
    #[serde(rename = "referenceCategory")]
    category: &'static str,
    #[serde(rename = "referenceType")]
    kind: &'static str,
    #[serde(rename = "referenceLocator")]
    locator: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Relationship {
    spdx_element_id: String,
    #[serde(rename = "relationshipType")]
    kind: &'static str,
    related_spdx_element: String,
}

impl Relationship {
    fn new(from: &str, kind: &'static str, to: &str) -> Self {
        Self {
            spdx_element_id: from.to_owned(),
            kind,
            related_spdx_element: to.to_owned(),
        }
    }
}

impl Package {
    /// The package standing for the bundle itself. It has no checksum: the bundle's identity
    /// covers this document, so it cannot be in it.
    fn bundle(name: &str) -> Self {
        Self {
            spdx_id: BUNDLE_ID.to_owned(),
            name: name.to_owned(),
            version_info: None,
            download_location: NOASSERTION.to_owned(),
            files_analyzed: false,
            checksums: Vec::new(),
            external_refs: Vec::new(),
            primary_package_purpose: "ARCHIVE",
            source_info: None,
            license_concluded: NOASSERTION,
            license_declared: NOASSERTION,
            copyright_text: NOASSERTION,
        }
    }

    /// The package for the artifact at `index` of the description.
    fn artifact(index: usize, artifact: &Artifact, lock: &Lock) -> Self {
        let platform = artifact.platform.as_deref();
        let (digest, download_location, source_info, purl) = match downloaded(artifact, lock) {
            Some(file) => (
                file.digest,
                spdx_download_location(&file.url),
                file.url.clone(),
                generic_purl(artifact, file, platform),
            ),
            None => (
                artifact.digest,
                NOASSERTION.to_owned(),
                artifact.reference.clone(),
                oci_purl(artifact, platform),
            ),
        };
        Self {
            spdx_id: format!("SPDXRef-{}-{index}", artifact.kind),
            name: artifact.name.clone(),
            version_info: Some(artifact.version.clone()),
            download_location,
            files_analyzed: false,
            checksums: vec![Checksum {
                algorithm: "SHA256",
                checksum_value: digest.hex(),
            }],
            external_refs: vec![ExternalRef {
                category: "PACKAGE-MANAGER",
                kind: "purl",
                locator: purl,
            }],
            primary_package_purpose: purpose(artifact.kind),
            source_info: Some(source_info),
            license_concluded: NOASSERTION,
            license_declared: NOASSERTION,
            copyright_text: NOASSERTION,
        }
    }
}

fn purpose(kind: ArtifactKind) -> &'static str {
    match kind {
        ArtifactKind::Image => "CONTAINER",
        ArtifactKind::Binary => "APPLICATION",
        // A chart installs software into a cluster.
        ArtifactKind::Chart => "INSTALL",
        ArtifactKind::File => "FILE",
    }
}

/// The lock entry of the file an artifact was downloaded as: a binary of `lock.binaries` (same
/// name, version and platform) or a chart of `lock.charts` (same name and version). Charts from
/// OCI registries are locked as images and have none.
fn downloaded<'a>(artifact: &Artifact, lock: &'a Lock) -> Option<&'a LockedFile> {
    let files = match artifact.kind {
        ArtifactKind::Binary => &lock.binaries,
        ArtifactKind::Chart => &lock.charts,
        ArtifactKind::Image | ArtifactKind::File => return None,
    };
    files.iter().find(|file| {
        file.name == artifact.name
            && file.version == artifact.version
            && file.platform == artifact.platform
    })
}

/// `url` when the SPDX tools accept it as a download location, else `NOASSERTION`.
///
/// SPDX 2.3 allows any URL, but `pyspdxtools` accepts only hosts that end in a top-level domain
/// of letters: a URL with an IP address or a one-label host (`localhost`, common in labs and
/// internal mirrors) would make the whole document fail validation. Such a URL is still recorded,
/// in `sourceInfo` and the purl's `download_url`.
fn spdx_download_location(url: &str) -> String {
    let host = ["https://", "http://", "ftp://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .filter(|authority| !authority.contains('@'))
        .and_then(|authority| authority.split(':').next())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |label: &&str| {
        label
            .split('-')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric()))
    };
    let top_level_ok = labels
        .last()
        .is_some_and(|top| top.len() >= 2 && top.bytes().all(|b| b.is_ascii_alphabetic()));
    if labels.len() >= 2 && labels.iter().all(label_ok) && top_level_ok {
        url.to_owned()
    } else {
        NOASSERTION.to_owned()
    }
}

/// `pkg:oci/<name>@<manifest digest>?…` for an artifact stored as it is named in `index.json`.
fn oci_purl(artifact: &Artifact, platform: Option<&str>) -> String {
    let (repository, tag) = split_reference(&artifact.reference);
    let name = repository.rsplit('/').next().unwrap_or(repository);
    let mut qualifiers = platform_qualifiers(platform);
    qualifiers.push(("repository_url", repository.to_owned()));
    if let Some(tag) = tag {
        qualifiers.push(("tag", tag.to_owned()));
    }
    purl("oci", name, &artifact.digest.to_string(), qualifiers)
}

/// `pkg:generic/<name>@<version>?…` for an artifact downloaded as `file`.
fn generic_purl(artifact: &Artifact, file: &LockedFile, platform: Option<&str>) -> String {
    let mut qualifiers = platform_qualifiers(platform);
    qualifiers.push(("checksum", file.digest.to_string()));
    qualifiers.push(("download_url", file.url.clone()));
    purl("generic", &artifact.name, &artifact.version, qualifiers)
}

/// `os`, `arch` and `variant` of an `os/arch[/variant]` platform.
fn platform_qualifiers(platform: Option<&str>) -> Vec<(&'static str, String)> {
    let parts = platform.map(|p| p.split('/').collect::<Vec<_>>());
    ["os", "arch", "variant"]
        .into_iter()
        .zip(parts.unwrap_or_default())
        .map(|(key, value)| (key, value.to_owned()))
        .collect()
}

/// A package URL; qualifiers are sorted by key and percent-encoded as the purl spec asks.
fn purl(purl_type: &str, name: &str, version: &str, mut qualifiers: Vec<(&str, String)>) -> String {
    qualifiers.sort();
    let query: Vec<String> = qualifiers
        .iter()
        .map(|(key, value)| format!("{key}={}", percent_encode(value, "/:")))
        .collect();
    format!(
        "pkg:{purl_type}/{}@{}?{}",
        percent_encode(name, ""),
        percent_encode(version, ""),
        query.join("&")
    )
}

/// `text` with every byte but ASCII letters, digits, `.-_~` and those in `keep` as `%XX`.
fn percent_encode(text: &str, keep: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric()
            || b".-_~".contains(&byte)
            || keep.as_bytes().contains(&byte)
        {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// The repository and the tag of `host/path[:tag][@digest]` (a `:` before the last `/` is a
/// port, not a tag).
fn split_reference(reference: &str) -> (&str, Option<&str>) {
    let named = reference.split('@').next().unwrap_or(reference);
    let path_start = named.rfind('/').map_or(0, |slash| slash + 1);
    match named[path_start..].rfind(':') {
        Some(colon) => (
            &named[..path_start + colon],
            Some(&named[path_start + colon + 1..]),
        ),
        None => (named, None),
    }
}

#[cfg(test)]
mod tests {
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
        LockedFile {
            name: name.into(),
            version: version.into(),
            platform: platform.map(Into::into),
            url: url.into(),
            digest: Sha256Digest::of(url.as_bytes()),
            size: 1,
        }
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
    fn references_split_into_repository_and_tag() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "docker.io/library/busybox:1.36",
                "docker.io/library/busybox",
                Some("1.36"),
            ),
            ("localhost:5000/app", "localhost:5000/app", None),
            ("localhost:5000/app:2", "localhost:5000/app", Some("2")),
            ("quay.io/x/app@sha256:abcd", "quay.io/x/app", None),
            ("quay.io/x/app:1@sha256:abcd", "quay.io/x/app", Some("1")),
        ];
        for (reference, repository, tag) in cases {
            assert_eq!(
                split_reference(reference),
                (*repository, *tag),
                "{reference}"
            );
        }
    }
}

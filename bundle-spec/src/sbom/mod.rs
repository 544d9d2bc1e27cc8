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
use crate::oci::ReferenceParts;

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
        // A chart installs software into a cluster, a `.deb` on a node.
        ArtifactKind::Chart | ArtifactKind::Package => "INSTALL",
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
        ArtifactKind::Image | ArtifactKind::File | ArtifactKind::Package => return None,
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
    let ReferenceParts {
        repository, tag, ..
    } = ReferenceParts::split(&artifact.reference);
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

#[cfg(test)]
mod tests;

//! The OCI image layout inside a bundle, and how artifacts are named in it.
//!
//! Everything in a bundle is a blob of one standard OCI layout, so skopeo, oras, crane and helm
//! read an unpacked bundle and a registry serving the layout serves all of it. `index.json` names
//! each artifact with the `org.opencontainers.image.ref.name` annotation:
//!
//! - an image keeps its fully qualified source reference (`docker.io/library/busybox:1.36`),
//!   because nodes will pull it by that very name through a registry mirror;
//! - a Helm chart pulled from `oci://` keeps its source reference too;
//! - binaries, files and charts from HTTP repositories have no registry of origin, so they live
//!   under the reserved host [`ARTIFACT_HOST`]: `kk.internal/binaries/etcd:v3.5.16`.

use oci_spec::image::{Descriptor, ImageIndex, MediaType};

use crate::bundle_error::BundleError;
use crate::description::canonical_json;
use crate::oci;

/// The registry host under which artifacts without a registry of origin are named. `.internal`
/// is reserved for private use, so it can never clash with a real registry.
pub const ARTIFACT_HOST: &str = "kk.internal";

/// `artifactType` of a binary's manifest.
pub const BINARY_ARTIFACT_TYPE: &str = "application/vnd.kk.binary.v1";
/// `artifactType` of a plain file's manifest.
pub const FILE_ARTIFACT_TYPE: &str = "application/vnd.kk.file.v1";
/// `artifactType` of an operating-system package's manifest.
pub const PACKAGE_ARTIFACT_TYPE: &str = "application/vnd.kk.os-package.v1";
/// Media type of the layer holding a `.deb` (the type IANA registered for Debian packages).
pub const DEB_LAYER_MEDIA_TYPE: &str = "application/vnd.debian.binary-package";
/// Media type of the layer holding a binary's or file's bytes.
pub const FILE_LAYER_MEDIA_TYPE: &str = "application/octet-stream";

/// Which of the artifacts without a registry of origin a name is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactNamespace {
    /// `kk.internal/binaries/…`
    Binaries,
    /// `kk.internal/charts/…` (charts from HTTP repositories)
    Charts,
    /// `kk.internal/files/…`
    Files,
    /// `kk.internal/packages/<distro>/<arch>/…` (operating-system packages)
    Packages,
}

/// The reference under which `index.json` names a binary, chart or file: for `etcd` at
/// `v3.5.16`, `kk.internal/binaries/etcd:v3.5.16`.
///
/// A version becomes the tag; `+` (semver build metadata, not allowed in a tag) becomes `_`,
/// as Helm does when it pushes charts.
pub fn artifact_reference(
    namespace: ArtifactNamespace,
    name: &str,
    version: &str,
) -> Result<String, BundleError> {
    let invalid = |what: &str, value: &str| BundleError::ArtifactName {
        value: value.to_owned(),
        reason: what.to_owned(),
    };
    if !is_path_component(name) {
        return Err(invalid(
            "lowercase letters and digits separated by `.`, `_` or `-`",
            name,
        ));
    }
    let tag = version.replace('+', "_");
    if !is_tag(&tag) {
        return Err(invalid(
            "a version of at most 128 letters, digits, `.`, `_`, `-`, `+`",
            version,
        ));
    }
    let dir = match namespace {
        ArtifactNamespace::Binaries => "binaries",
        ArtifactNamespace::Charts => "charts",
        ArtifactNamespace::Files => "files",
        ArtifactNamespace::Packages => "packages",
    };
    Ok(format!("{ARTIFACT_HOST}/{dir}/{name}:{tag}"))
}

/// The reference under which `index.json` names an operating-system package: for `socat`
/// `1.7.4.4-2` of `debian-12` on `amd64`, `kk.internal/packages/debian-12/amd64/socat:1.7.4.4-2`.
///
/// Debian versions may hold `:` (epoch), `~` and `+`, which a tag may not: each becomes `_`.
/// Two versions that differ only there cannot both be in one set (a set has one version per
/// package), so the tag stays unique within the bundle.
pub fn package_reference(
    distro: &str,
    arch: &str,
    name: &str,
    version: &str,
) -> Result<String, BundleError> {
    let tag = version.replace([':', '~', '+'], "_");
    let name = name.replace('+', "plus");
    for (what, value) in [
        ("distribution", distro),
        ("architecture", arch),
        ("package", name.as_str()),
    ] {
        if !is_path_component(value) {
            return Err(BundleError::ArtifactName {
                value: value.to_owned(),
                reason: format!(
                    "a {what} of lowercase letters and digits separated by `.`, `_` or `-`"
                ),
            });
        }
    }
    if !is_tag(&tag) {
        return Err(BundleError::ArtifactName {
            value: version.to_owned(),
            reason: "a version of at most 128 letters, digits, `.`, `_`, `-`, `+`, `:`, `~`"
                .to_owned(),
        });
    }
    Ok(format!(
        "{ARTIFACT_HOST}/packages/{distro}/{arch}/{name}:{tag}"
    ))
}

/// A repository path component of the OCI distribution spec: `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn is_path_component(name: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    // Runs of alphanumerics alternate with runs of separators, starting and ending with the former.
    let runs: Vec<&[u8]> = name
        .as_bytes()
        .chunk_by(|a, b| alnum(*a) == alnum(*b))
        .collect();
    runs.len() % 2 == 1
        && runs.iter().enumerate().all(|(i, run)| match i % 2 {
            0 => alnum(run[0]),
            _ => matches!(*run, b"." | b"_" | b"__") || run.iter().all(|b| *b == b'-'),
        })
}

/// A tag of the OCI distribution spec: `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
fn is_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    (1..=128).contains(&bytes.len())
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `index.json` in its canonical spelling (keys sorted, no whitespace).
pub fn index_bytes(index: &ImageIndex) -> Result<Vec<u8>, BundleError> {
    canonical_json(index).map_err(BundleError::Json)
}

/// The reference name `index.json` gives `descriptor`, if any.
pub fn ref_name(descriptor: &Descriptor) -> Option<&str> {
    descriptor
        .annotations()
        .as_ref()?
        .get(oci::REF_NAME_ANNOTATION)
        .map(String::as_str)
}

/// Whether `media_type` is an image index (OCI or Docker manifest list).
pub fn is_index_media_type(media_type: &MediaType) -> bool {
    matches!(media_type, MediaType::ImageIndex)
        || media_type.to_string() == oci::DOCKER_MANIFEST_LIST_MEDIA_TYPE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_references() {
        let cases: &[(&str, &str, Result<&str, ()>)] = &[
            ("etcd", "v3.5.16", Ok("kk.internal/binaries/etcd:v3.5.16")),
            (
                "k3s",
                "v1.31.4+k3s1",
                Ok("kk.internal/binaries/k3s:v1.31.4_k3s1"),
            ),
            (
                "cni-plugins",
                "1.6.0",
                Ok("kk.internal/binaries/cni-plugins:1.6.0"),
            ),
            ("a__b", "1", Ok("kk.internal/binaries/a__b:1")),
            ("Etcd", "v1", Err(())),
            ("-etcd", "v1", Err(())),
            ("etcd-", "v1", Err(())),
            ("a._b", "v1", Err(())),
            ("a/b", "v1", Err(())),
            ("", "v1", Err(())),
            ("etcd", "", Err(())),
            ("etcd", ".v1", Err(())),
            ("etcd", "v1 2", Err(())),
        ];
        for (name, version, expected) in cases {
            let got = artifact_reference(ArtifactNamespace::Binaries, name, version);
            assert_eq!(
                got.as_deref().map_err(|_| ()),
                *expected,
                "{name}:{version}"
            );
        }
        assert_eq!(
            artifact_reference(ArtifactNamespace::Charts, "podinfo", "6.7.0").unwrap(),
            "kk.internal/charts/podinfo:6.7.0"
        );
    }
}

//! The manifest exactly as written: serde types mirroring the YAML, every value that a later
//! check may reject wrapped in [`Spanned`] so the error can point at it.
//!
//! Unknown keys are rejected here (`deny_unknown_fields`); everything else is checked by the
//! validation step, which turns these types into the public ones. Required fields are
//! `Option`s here for that reason: serde's own missing-field error points at the mapping's
//! last key, validation points at its first.

use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::SpannedMap;
use super::choices::{Addon, Cni, ContainerRuntime, KubeProxyMode, MultiCni, Referrers, Storage};

/// `apiVersion` and `kind` alone, read leniently before the strict parse so that a manifest
/// of another version is reported as such rather than as a list of unknown fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawHeader {
    pub(super) api_version: Option<Spanned<String>>,
    pub(super) kind: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawManifest {
    // Checked by the header pass; declared here so they are known fields.
    #[serde(rename = "apiVersion")]
    _api_version: Option<IgnoredAny>,
    #[serde(rename = "kind")]
    _kind: Option<IgnoredAny>,
    pub(super) metadata: Option<Spanned<RawMetadata>>,
    pub(super) spec: Option<Spanned<RawSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawMetadata {
    pub(super) name: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawSpec {
    pub(super) platforms: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) kubernetes: Option<Spanned<RawKubernetes>>,
    #[serde(default)]
    pub(super) images: Vec<Spanned<RawImage>>,
    #[serde(default)]
    pub(super) binaries: Vec<Spanned<RawBinary>>,
    #[serde(default)]
    pub(super) charts: Vec<Spanned<RawChart>>,
    #[serde(default)]
    pub(super) registries: SpannedMap<Spanned<RawRegistry>>,
    #[serde(default)]
    pub(super) file_mirrors: SpannedMap<Spanned<String>>,
    #[serde(default)]
    pub(super) os_packages: Vec<Spanned<RawOsPackages>>,
    pub(super) verify: Option<Spanned<RawVerify>>,
}

/// An entry of `images:`: a reference alone, or a map with the reference and its options.
pub(super) enum RawImage {
    Reference(String),
    Detailed(RawImageEntry),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawImageEntry {
    #[serde(rename = "ref")]
    pub(super) reference: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) referrers: Referrers,
    pub(super) verify: Option<Spanned<RawVerify>>,
}

/// `verify:`, under `spec` or an image.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawVerify {
    pub(super) key: Option<Spanned<PathBuf>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawKubernetes {
    pub(super) version: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) container_runtime: ContainerRuntime,
    #[serde(default)]
    pub(super) cni: Cni,
    #[serde(default)]
    pub(super) multi_cni: MultiCni,
    #[serde(default)]
    pub(super) kube_proxy_mode: KubeProxyMode,
    #[serde(default)]
    pub(super) storage: Vec<Storage>,
    #[serde(default)]
    pub(super) addons: Vec<Addon>,
    #[serde(default = "yes")]
    pub(super) node_packages: bool,
    #[serde(default)]
    pub(super) components: SpannedMap<Spanned<String>>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawOsPackages {
    pub(super) distro: Option<Spanned<String>>,
    pub(super) arch: Option<Spanned<RawArches>>,
    pub(super) repository: Option<Spanned<RawPackageRepository>>,
    #[serde(default)]
    pub(super) packages: Vec<Spanned<String>>,
}

/// `arch:` is either one architecture or a list of them.
pub(super) enum RawArches {
    One(String),
    Many(Vec<Spanned<String>>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawPackageRepository {
    pub(super) url: Option<Spanned<String>>,
    pub(super) suite: Option<Spanned<String>>,
    pub(super) components: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) keyring: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawBinary {
    pub(super) name: Option<Spanned<String>>,
    pub(super) version: Option<Spanned<String>>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) sha256: Option<Spanned<RawSha256>>,
    pub(super) checksum_url: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) arch_names: SpannedMap<Spanned<String>>,
}

/// `sha256:` is either one digest or a map of architecture to digest.
pub(super) enum RawSha256 {
    Single(String),
    PerArchitecture(SpannedMap<Spanned<String>>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawChart {
    pub(super) name: Option<Spanned<String>>,
    pub(super) version: Option<Spanned<String>>,
    pub(super) repo: Option<Spanned<String>>,
    pub(super) oci: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawRegistry {
    pub(super) mirror: Option<Spanned<String>>,
    // camelCase would spell it `plainHttp`; the schema follows the usual `plainHTTP`.
    #[serde(default, rename = "plainHTTP")]
    pub(super) plain_http: bool,
    #[serde(default)]
    pub(super) insecure_skip_verify: bool,
    pub(super) username: Option<String>,
    pub(super) password_env: Option<Spanned<String>>,
    pub(super) ca_file: Option<PathBuf>,
}

impl<'de> Deserialize<'de> for RawSha256 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Not `#[serde(untagged)]`: that buffers the value, losing the locations of the map's
        // entries and replacing any error with "did not match any variant".
        deserializer.deserialize_any(Sha256Visitor)
    }
}

struct Sha256Visitor;

impl<'de> Visitor<'de> for Sha256Visitor {
    type Value = RawSha256;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("64 hex digits (quoted if all are digits) or a map of arch to them")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(RawSha256::Single(value.to_owned()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        SpannedMap::deserialize(MapAccessDeserializer::new(map)).map(RawSha256::PerArchitecture)
    }
}

impl<'de> Deserialize<'de> for RawArches {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Not `#[serde(untagged)]`, for the same reason as `RawSha256`.
        deserializer.deserialize_any(ArchesVisitor)
    }
}

struct ArchesVisitor;

impl<'de> Visitor<'de> for ArchesVisitor {
    type Value = RawArches;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a Debian architecture such as `amd64`, or a list of them")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(RawArches::One(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Vec::deserialize(SeqAccessDeserializer::new(seq)).map(RawArches::Many)
    }
}

impl<'de> Deserialize<'de> for RawImage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Not `#[serde(untagged)]`, for the same reason as `RawSha256`.
        deserializer.deserialize_any(ImageVisitor)
    }
}

struct ImageVisitor;

impl<'de> Visitor<'de> for ImageVisitor {
    type Value = RawImage;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an image reference, or a map with `ref` and its options")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(RawImage::Reference(value.to_owned()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        RawImageEntry::deserialize(MapAccessDeserializer::new(map)).map(RawImage::Detailed)
    }
}

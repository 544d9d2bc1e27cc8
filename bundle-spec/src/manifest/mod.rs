//! The bundle manifest: what a user asks `kk-bundle` to put in a bundle.
//!
//! A manifest is a YAML document (`apiVersion: bundle.kk.io/v1alpha1`, `kind: BundleManifest`)
//! naming platforms, an optional Kubernetes cluster, and the images, binaries and Helm charts to
//! bundle, plus how to reach the registries they come from. [`Manifest::from_path`] and
//! [`Manifest::from_str_named`] turn it into a [`Manifest`]; holding one means every check
//! below passed, so consumers never re-validate.
//!
//! # How the types fit
//!
//! A [`Manifest`] keeps its source text verbatim (bundles store it byte for byte, comments
//! included), its [`Metadata`] and its [`Spec`]. The spec holds the normalised
//! [`Platform`]s, an optional [`Kubernetes`] section (expanded later
//! by the builder's version catalog, not here), and lists of [`ImageRef`], [`Binary`] (with a
//! [`UrlTemplate`] and a [`BinaryChecksum`]) and [`Chart`] (with a [`ChartSource`]), plus a map
//! of [`RegistryConfig`] and one of file mirrors (download host to base URL). Images, binaries and charts carry the [`SourceLocation`] of their entry
//! so later stages (a failed download, a missing tag) can point back into the manifest.
//!
//! # How parsing works, and why
//!
//! Parsing is two-staged. Serde types in `raw` mirror the YAML exactly, with
//! `deny_unknown_fields` everywhere and every value a check might reject wrapped in
//! [`serde_saphyr::Spanned`], which records the line and column of its YAML node. The
//! validation stage then converts them into the public types, so each semantic error carries
//! the `file:line:column` of the offending node, not just the parser's errors. A preliminary,
//! lenient pass reads only `apiVersion` and `kind`, so that a manifest of another version is
//! reported as such rather than as a list of unknown fields.
//!
//! Required fields are `Option`s in `raw` and checked during validation, because serde's
//! missing-field error points at the mapping's last key while ours points at its first.
//!
//! serde-saphyr reports unknown fields with the list of expected ones; we add the closest
//! (Jaro-Winkler) as "did you mean". It also rejects duplicate keys, and we parse booleans
//! strictly (`true`/`false` only), so `plainHTTP: yes` is an error rather than a guess.
//!
//! Choices worth knowing:
//! - Image references are parsed as `oci_spec::distribution::Reference` parses them (docker.io
//!   normalisation included; `oci::parse_reference` spares the common ones its slow start), but a reference without tag or digest is an error: the parser
//!   would assume `latest`, and a bundle should be reproducible.
//! - A binary's `sha256` is either one string, meaning the same file for every platform (only
//!   accepted when `url` expands identically for all of them), or a map from architecture to
//!   digest that must cover every architecture in `platforms`. It is keyed by architecture
//!   alone, as `{arch}` is, so `linux/arm/v6` and `linux/arm/v7` share the `arm` entry.
//! - Only the first error is reported: later checks often depend on earlier ones (a binary's
//!   checksum on the platforms), and one precise message beats a cascade.
//!
//! # Shared with the installer
//!
//! The installer reads its inventory and config the same way, so the pieces that are not
//! manifest-specific are public: [`parse_yaml`] (the parser options and the classified,
//! located [`YamlError`]) and [`SourceLocation`] (both from [`crate::diagnostics`], which also
//! holds the "did you mean" hints), [`SpannedMap`], and the
//! name checks [`is_dns_name`], [`is_host_port`] and [`is_env_name`].

mod binary;
mod chart;
mod choices;
mod error;
mod file_mirrors;
mod image;
mod kubernetes;
mod os_packages;
mod raw;
mod registry;
mod rules;
mod spanned_map;
mod template;
mod url;
mod validate;

#[cfg(test)]
mod error_table;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use crate::diagnostics::{SourceLocation, YamlError, YamlProblem, parse_yaml};
pub use binary::{Binary, BinaryChecksum};
pub use chart::{Chart, ChartSource};
pub use choices::{Addon, Cni, ContainerRuntime, KubeProxyMode, MultiCni, Referrers, Storage};
pub use error::ManifestError;
pub use image::{ImageRef, Verify};
pub use kubernetes::{Kubernetes, KubernetesVersion};
pub use os_packages::{OsPackages, PackageRepository};
pub use registry::{Credentials, RegistryConfig, is_env_name};
pub use spanned_map::SpannedMap;
pub use template::{PLACEHOLDERS, UrlTemplate};
pub use url::{is_dns_name, is_host_port};

use crate::platform::Platform;
use raw::RawHeader;
use rules::required;
use serde_saphyr::Spanned;

/// The only `apiVersion` this crate reads.
pub const API_VERSION: &str = "bundle.kk.io/v1alpha1";

/// The only `kind` this crate reads.
pub const KIND: &str = "BundleManifest";

/// A parsed and validated bundle manifest, with its source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    source: String,
    source_name: String,
    metadata: Metadata,
    spec: Spec,
}

/// `metadata`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metadata {
    /// The manifest's name, a DNS-1123 name.
    pub name: String,
}

/// `spec`: what to bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Spec {
    /// Target platforms, normalised and distinct; `[linux/amd64]` when the manifest lists none.
    pub platforms: Vec<Platform>,
    /// The Kubernetes cluster to bundle, if any.
    pub kubernetes: Option<Kubernetes>,
    /// Container images, distinct once normalised, in manifest order.
    pub images: Vec<ImageRef>,
    /// Binaries, with distinct names, in manifest order.
    pub binaries: Vec<Binary>,
    /// Helm charts, with distinct names, in manifest order.
    pub charts: Vec<Chart>,
    /// How to reach source registries, keyed by `host[:port]`.
    pub registries: BTreeMap<String, RegistryConfig>,
    /// `fileMirrors`: for a download host (`host[:port]`, lowercase, as in binary and chart
    /// URLs), the `http(s)` base URL serving its files instead; a URL's path and query are
    /// appended to the base. Lock and bundle keep the upstream URLs.
    pub file_mirrors: BTreeMap<String, String>,
    /// `osPackages`: operating-system packages for the nodes, per distribution release and
    /// architecture.
    pub os_packages: Vec<OsPackages>,
    /// `verify`: the cosign key every image of `images` must be signed with, unless the image
    /// names its own.
    pub verify: Option<Verify>,
}

impl Manifest {
    /// Reads and validates the manifest at `path`; errors name the path as given.
    pub fn from_path(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_str_named(&text, &path.display().to_string())
    }

    /// Parses and validates manifest `text`; `name` (usually a file name) prefixes the
    /// locations in errors.
    pub fn from_str_named(text: &str, name: &str) -> Result<Self, ManifestError> {
        let file: Arc<str> = Arc::from(name);
        check_header(&parse(text, &file)?, &file)?;
        let (metadata, spec) = validate::manifest(&file, &parse(text, &file)?)?;
        Ok(Self {
            source: text.to_owned(),
            source_name: name.to_owned(),
            metadata,
            spec,
        })
    }

    /// The manifest text exactly as read.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The name given for the source (a path or file name), for display.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// `metadata`.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// `spec`.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
}

fn parse<'de, T: serde::Deserialize<'de>>(
    text: &'de str,
    file: &Arc<str>,
) -> Result<T, ManifestError> {
    parse_yaml(text, file).map_err(ManifestError::from)
}

fn check_header(header: &Spanned<RawHeader>, file: &Arc<str>) -> Result<(), ManifestError> {
    let root = SourceLocation::of(file, header);
    let api_version = required(header.value.api_version.as_ref(), "apiVersion", &root)?;
    if api_version.value != API_VERSION {
        return Err(ManifestError::UnsupportedApiVersion {
            at: SourceLocation::of(file, api_version),
            found: api_version.value.clone(),
        });
    }
    let kind = required(header.value.kind.as_ref(), "kind", &root)?;
    if kind.value != KIND {
        return Err(ManifestError::UnsupportedKind {
            at: SourceLocation::of(file, kind),
            found: kind.value.clone(),
        });
    }
    Ok(())
}

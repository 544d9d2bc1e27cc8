//! KubeKey v3 manifests: `kk-bundle convert` and `kk-bundle build` read KubeKey's
//! `apiVersion: kubekey.kubesphere.io/v1alpha2, kind: Manifest` as the kk bundle manifest it
//! maps onto.
//!
//! [`convert`] is the one reader of that format: it writes the equivalent kk manifest (text
//! with a comment header, then parsed by kk's own manifest reader, so it is exactly what
//! `kk-bundle build` of the converted file would read) and a [`Warning`] for each part kk does
//! not carry as KubeKey did, located at its line in the KubeKey file.
//!
//! # What maps onto what
//!
//! - `arches` → `spec.platforms` (`linux/<arch>`); `images` → `spec.images`.
//! - `kubernetesDistributions` → `spec.kubernetes.version` (one: a kk bundle carries one
//!   Kubernetes; the others and non-kubeadm distributions are warned about). The version is
//!   checked against the catalog, which `kk-bundle build` expands it through.
//! - `components.containerRuntimes` → `containerRuntime` and its version; `helm`, `cni` (the
//!   CNI plugins), `etcd` and `crictl` → `spec.kubernetes.components`, the catalog's override
//!   of a component's version.
//! - The network plugin is the one whose images `images` lists (KubeKey's manifest has no field
//!   for it).
//! - `registry.auths` → `spec.registries`; a password is never copied (a bundle stores its
//!   manifest): kk reads it from an environment variable the warning names.
//! - `operatingSystems` of Debian and Ubuntu → `spec.osPackages` entries (suite and archive
//!   keyring from the release); kk reads a Debian-format repository whose URL the KubeKey file
//!   does not have, so [`Options::os_repositories`] gives it, or the entry is written commented
//!   out for the user to complete; other
//!   systems, `harbor`, `docker-compose`, `docker-registry`, `calicoctl` and any field KubeKey's
//!   schema lacks → warnings.
//!
//! The KubeKey document is read as a tree of located nodes (module `node`) rather than strict
//! types, because a field kk does not know must be a warning with its line, not an error.

mod auths;
mod error;
mod map;
mod node;
mod read;
mod render;
mod systems;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use bundle_spec::manifest::{Manifest, SourceLocation, parse_yaml};
use serde::Deserialize;
use serde_saphyr::Spanned;

pub use error::KubeKeyError;

use crate::catalog::Catalog;
use node::Node;
use read::Reader;

/// KubeKey v3's manifest `apiVersion`.
pub const API_VERSION: &str = "kubekey.kubesphere.io/v1alpha2";

/// KubeKey v3's manifest `kind`.
pub const KIND: &str = "Manifest";

/// A KubeKey manifest converted into a kk bundle manifest.
#[derive(Debug)]
pub struct Conversion {
    /// The kk manifest; its [`Manifest::source`] is the converted text, header included, and
    /// its [`Manifest::source_name`] the KubeKey file's name followed by ` (converted)`.
    pub manifest: Manifest,
    /// What kk does not carry as KubeKey did, in the KubeKey file's order.
    pub warnings: Vec<Warning>,
}

/// What the conversion needs that a KubeKey manifest cannot say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The Debian-format repository to take a release's packages from, by `ID-VERSION_ID`
    /// (`ubuntu-22.04`) or, winning over it, `ID-VERSION_ID/ARCH` (`ubuntu-22.04/arm64`):
    /// KubeKey's manifest names an ISO, which kk does not read.
    pub os_repositories: BTreeMap<String, String>,
}

impl Options {
    /// The repository URL given for `distro` on `arch`, if any.
    fn os_repository(&self, distro: &str, arch: &str) -> Option<&str> {
        self.os_repositories
            .get(&format!("{distro}/{arch}"))
            .or_else(|| self.os_repositories.get(distro))
            .map(String::as_str)
    }
}

/// A part of a KubeKey manifest that kk does not carry as KubeKey did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Where it is in the KubeKey file.
    pub at: SourceLocation,
    /// What is not carried, and what kk does instead.
    pub message: String,
}

impl fmt::Display for Warning {
    /// `file:line: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.at.file(), self.at.line(), self.message)
    }
}

/// `apiVersion` and `kind` alone, read leniently.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    api_version: Option<String>,
    kind: Option<String>,
}

/// Whether `text` is a KubeKey v3 `Manifest` (by its `apiVersion` and `kind`).
pub fn is_kubekey(text: &str) -> bool {
    serde_saphyr::from_str::<Header>(text).is_ok_and(|header| {
        header.api_version.as_deref() == Some(API_VERSION) && header.kind.as_deref() == Some(KIND)
    })
}

/// Converts KubeKey manifest `text`; `name` (usually its path) names it in the header and
/// locates warnings and errors.
pub fn convert(text: &str, name: &str, options: &Options) -> Result<Conversion, KubeKeyError> {
    let file: Arc<str> = Arc::from(name);
    let root: Spanned<Node> = parse_yaml(text, &file)?;
    if !is_kubekey(text) {
        let header: Header = parse_yaml(text, &file)?;
        return Err(KubeKeyError::NotKubeKey {
            at: SourceLocation::of(&file, &root),
            found_api_version: header.api_version.unwrap_or_default(),
            found_kind: header.kind.unwrap_or_default(),
        });
    }
    // Lines in the converted text are not the KubeKey file's: errors kk's reader (or a later
    // build step) locates in it name it as converted.
    let converted_name = format!("{name} (converted)");
    let mut reader = Reader::new(&file);
    let converted = map::manifest(&mut reader, &root, options)?;
    let body = render::body(&converted);
    let invalid = |source| KubeKeyError::Converted {
        name: name.to_owned(),
        source: Box::new(source),
    };
    let parsed = Manifest::from_str_named(&body, &converted_name).map_err(invalid)?;
    if let (Some(kubernetes), Some(part)) = (&parsed.spec().kubernetes, &converted.kubernetes) {
        // The build would fail on it: say so now, at KubeKey's line.
        if let Err(error) = Catalog::builtin().expand(kubernetes) {
            reader.warn_at(part.version_at.clone(), error.to_string());
        }
    }
    // In the KubeKey file's order, whichever part of the mapping found them.
    reader
        .warnings
        .sort_by_key(|warning| (warning.at.line(), warning.at.column()));
    let text = render::document(name, &body, &reader.warnings);
    let manifest = Manifest::from_str_named(&text, &converted_name).map_err(invalid)?;
    Ok(Conversion {
        manifest,
        warnings: reader.warnings,
    })
}

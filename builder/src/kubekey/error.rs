//! Why a KubeKey v3 manifest cannot be converted.

use std::path::PathBuf;

use bundle_spec::manifest::{ManifestError, SourceLocation, YamlError};

/// A KubeKey v3 `Manifest` that cannot be read or converted into a kk bundle manifest.
///
/// What kk merely does not carry is never an error but a [`super::Warning`]; these are the
/// cases where no equivalent manifest can be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubeKeyError {
    /// The file cannot be read.
    #[error("cannot read `{path}`")]
    Read {
        /// The path as given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not YAML (boxed, as is `Converted`'s source: both are large).
    #[error(transparent)]
    Yaml(Box<YamlError>),
    /// The file is not a KubeKey v3 `Manifest`.
    #[error(
        "{at}: not a KubeKey v3 manifest (`apiVersion: {found_api_version}`, `kind: {found_kind}`); hint: `kk-bundle convert` reads `apiVersion: kubekey.kubesphere.io/v1alpha2` with `kind: Manifest`"
    )]
    NotKubeKey {
        /// The document's start.
        at: SourceLocation,
        /// The `apiVersion` found (empty if none).
        found_api_version: String,
        /// The `kind` found (empty if none).
        found_kind: String,
    },
    /// A field has a shape KubeKey's schema does not allow (a list where a mapping belongs).
    #[error("{at}: `{field}` is {found}, but KubeKey's Manifest has {expected} there")]
    Shape {
        /// Where the field's value is.
        at: SourceLocation,
        /// The field's path, e.g. `spec.arches`.
        field: String,
        /// What the value is (`a mapping`).
        found: &'static str,
        /// What the schema expects (`a list`).
        expected: &'static str,
    },
    /// The manifest the conversion wrote is refused by kk's manifest reader: a value KubeKey
    /// accepts and kk does not (an image without a tag, a name that is not DNS-1123).
    #[error(
        "the kk manifest converted from `{name}` is invalid; hint: fix the value in the KubeKey manifest, or convert it and edit the result"
    )]
    Converted {
        /// The KubeKey manifest's name as given.
        name: String,
        /// What kk's reader says, located in the converted text.
        #[source]
        source: Box<ManifestError>,
    },
}

impl From<YamlError> for KubeKeyError {
    fn from(error: YamlError) -> Self {
        Self::Yaml(Box::new(error))
    }
}

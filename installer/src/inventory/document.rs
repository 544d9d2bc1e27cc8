//! What inventories and configs share: reading the file, the `apiVersion`/`kind` header, the
//! validation context, and warnings.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use bundle_spec::diagnostics::suggest::closest;
use bundle_spec::diagnostics::{SourceLocation, parse_yaml};
use serde_json::Value;
use serde_saphyr::Spanned;

use super::InventoryError;
use super::raw::RawHeader;
use super::section::Extra;

/// The `apiVersion`s read: KubeKey v4's, and kk's own.
pub const API_VERSIONS: [&str; 2] = ["kubekey.kubesphere.io/v1", "install.kk.io/v1alpha1"];

pub(super) const INVENTORY_KIND: &str = "Inventory";
pub(super) const CONFIG_KIND: &str = "Config";

/// Something accepted but probably not what was meant. Displays as `file:line:column: …`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A key kk does not read but that is close to one it does: kept as a variable, but
    /// probably a typo for `suggestion`.
    LikelyTypo {
        /// Where the key is.
        at: SourceLocation,
        /// The key as written.
        field: String,
        /// The key kk reads that it resembles.
        suggestion: &'static str,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LikelyTypo {
                at,
                field,
                suggestion,
            } => write!(
                f,
                "{at}: unknown field `{field}` is kept but not read by kk; did you mean `{suggestion}`?"
            ),
        }
    }
}

/// The file's text; errors name the path as given.
pub(super) fn read(path: &Path) -> Result<String, InventoryError> {
    std::fs::read_to_string(path).map_err(|source| InventoryError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Checks `apiVersion` and `kind` before anything else, so a file of another version or kind
/// is reported as such.
pub(super) fn check_header(
    text: &str,
    file: &Arc<str>,
    kind: &'static str,
) -> Result<(), InventoryError> {
    let header: Spanned<RawHeader> = parse_yaml(text, file)?;
    let root = SourceLocation::of(file, &header);
    let api_version = required(header.value.api_version.as_ref(), "apiVersion", &root)?;
    if !API_VERSIONS.contains(&api_version.value.as_str()) {
        return Err(InventoryError::UnsupportedApiVersion {
            at: SourceLocation::of(file, api_version),
            found: api_version.value.clone(),
        });
    }
    let found = required(header.value.kind.as_ref(), "kind", &root)?;
    if found.value != kind {
        return Err(InventoryError::WrongKind {
            at: SourceLocation::of(file, found),
            found: found.value.clone(),
            expected: kind,
        });
    }
    Ok(())
}

/// `value`, or a [`InventoryError::MissingField`] pointing at the mapping lacking it.
pub(super) fn required<T>(
    value: Option<T>,
    field: &'static str,
    parent: &SourceLocation,
) -> Result<T, InventoryError> {
    value.ok_or_else(|| InventoryError::MissingField {
        at: parent.clone(),
        field,
    })
}

/// State shared while validating one document: its name, and the warnings so far.
pub(super) struct Context {
    pub(super) file: Arc<str>,
    pub(super) warnings: Vec<Warning>,
}

impl Context {
    pub(super) fn new(file: &Arc<str>) -> Self {
        Self {
            file: Arc::clone(file),
            warnings: Vec::new(),
        }
    }

    /// Where `spanned` is.
    pub(super) fn at<T>(&self, spanned: &Spanned<T>) -> SourceLocation {
        SourceLocation::of(&self.file, spanned)
    }

    /// Moves the `extra` keys of a section into `into`, under `prefix`, warning about each key
    /// close to one of the section's `known` keys.
    pub(super) fn keep(
        &mut self,
        extra: Extra,
        known: &[&'static str],
        prefix: &str,
        into: &mut BTreeMap<String, Value>,
    ) {
        for (key, value) in extra.0 {
            if let Some(suggestion) = likely_typo(&key.value, known) {
                self.warnings.push(Warning::LikelyTypo {
                    at: self.at(&key),
                    field: format!("{prefix}{}", key.value),
                    suggestion,
                });
            }
            into.insert(format!("{prefix}{}", key.value), value);
        }
    }

    /// The warnings, in document order.
    pub(super) fn into_warnings(mut self) -> Vec<Warning> {
        self.warnings.sort_by_key(|warning| match warning {
            Warning::LikelyTypo { at, .. } => (at.line(), at.column()),
        });
        self.warnings
    }

    /// Like [`Context::keep`], for sections whose other keys mean nothing: they are dropped
    /// after the warnings.
    pub(super) fn drop_extra(&mut self, extra: Extra, known: &[&'static str], prefix: &str) {
        self.keep(extra, known, prefix, &mut BTreeMap::new());
    }
}

/// The key of `known` that `key` is probably a typo for.
///
/// The manifest's "did you mean" (Jaro-Winkler) alone takes KubeKey's own `helm_version` and
/// `kubelet` for typos of `kube_version`; requiring also at most two single-character edits
/// (a transposition counting as one) keeps real typos (`kube_verison`, `pod_cdir`,
/// `internal_ip4`) and drops those.
fn likely_typo(key: &str, known: &[&'static str]) -> Option<&'static str> {
    let lowercase = key.to_ascii_lowercase();
    closest(key, known).filter(|candidate| strsim::osa_distance(&lowercase, candidate) <= 2)
}

/// A port number from 1 to 65535.
pub(super) fn port(
    cx: &Context,
    raw: &Spanned<i64>,
    field: &'static str,
) -> Result<u16, InventoryError> {
    u16::try_from(raw.value)
        .ok()
        .filter(|port| *port != 0)
        .ok_or_else(|| InventoryError::InvalidPort {
            at: cx.at(raw),
            field,
            value: raw.value,
        })
}

/// Whether `text` names a machine: an IP address or a DNS name (in any case, as resolvers
/// ignore it).
pub(super) fn is_host(text: &str) -> bool {
    text.parse::<std::net::IpAddr>().is_ok()
        || bundle_spec::manifest::is_dns_name(&text.to_ascii_lowercase())
}

/// `metadata.name`; other metadata keys (labels, annotations) mean nothing to kk.
pub(super) fn metadata_name(
    cx: &mut Context,
    raw: Option<super::raw::RawMetadata>,
) -> Option<String> {
    let raw = raw?;
    cx.drop_extra(raw.extra, super::raw::RawMetadata::FIELDS, "metadata.");
    raw.name
}

//! Where in the manifest something is, and turning parser errors into [`ManifestError`]s.

use std::fmt;
use std::sync::Arc;

use serde_saphyr::{Error as YamlError, MessageFormatter, Spanned, UserMessageFormatter};

use super::suggest::closest;
use crate::ManifestError;

/// A position in a manifest: file name (as given for display), 1-based line and column.
///
/// Displays as `file:line:column`, the form editors and terminals turn into links. Columns count
/// characters, not bytes. A location the parser could not determine has line 0 and displays
/// as the file name alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceLocation {
    // Shared: every error and every located manifest entry carries the name.
    file: Arc<str>,
    line: u32,
    column: u32,
}

impl SourceLocation {
    /// The file name given to [`super::Manifest::from_str_named`] (or the path read).
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The 1-based line, or 0 if unknown.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The 1-based column, in characters, or 0 if unknown.
    pub fn column(&self) -> u32 {
        self.column
    }

    pub(super) fn new(file: &Arc<str>, location: serde_saphyr::Location) -> Self {
        // Manifests beyond 4 billion lines are not a concern; saturate rather than fail.
        let clamp = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
        Self {
            file: Arc::clone(file),
            line: clamp(location.line()),
            column: clamp(location.column()),
        }
    }

    /// Where a spanned value is used (for an alias, the alias rather than its anchor, since
    /// that is the entry the user is looking at).
    pub(super) fn of<T>(file: &Arc<str>, spanned: &Spanned<T>) -> Self {
        Self::new(file, spanned.referenced)
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.file)
        } else {
            write!(f, "{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// Maps a serde-saphyr error to the matching [`ManifestError`] variant.
///
/// Unknown fields, unknown enum values, missing fields and duplicate keys get their own
/// variants (with a suggestion computed here, since serde only lists what was expected);
/// everything else keeps serde-saphyr's user-facing message.
pub(super) fn from_yaml_error(error: &YamlError, file: &Arc<str>) -> ManifestError {
    let error = error.without_snippet();
    let at = SourceLocation::new(
        file,
        error.location().unwrap_or(serde_saphyr::Location::UNKNOWN),
    );
    match error {
        YamlError::SerdeUnknownField {
            field, expected, ..
        } => ManifestError::UnknownField {
            at,
            suggestion: closest(field, expected),
            field: field.clone(),
            expected: expected.clone(),
        },
        YamlError::SerdeUnknownVariant {
            variant, expected, ..
        } => ManifestError::UnknownValue {
            at,
            suggestion: closest(variant, expected),
            value: variant.clone(),
            expected: expected.clone(),
        },
        YamlError::SerdeMissingField { field, .. } => ManifestError::MissingField { at, field },
        YamlError::DuplicateMappingKey { key, .. } => ManifestError::DuplicateKey {
            at,
            key: key.clone().unwrap_or_default(),
        },
        other => ManifestError::Yaml {
            at,
            message: printable(&UserMessageFormatter.format_message(other)),
        },
    }
}

/// The message with control characters blanked: it may quote the user's text, and the
/// formatter leaves sanitising to its own renderer, which we bypass to drop its snippet.
fn printable(message: &str) -> String {
    message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

//! Where in a YAML document something is, and turning parser errors into located, classified
//! errors ([`YamlError`]) that the manifest's errors and the installer's inventory errors render.

use std::fmt;
use std::sync::Arc;

use serde_saphyr::{Error as SaphyrError, MessageFormatter, Spanned, UserMessageFormatter};

use super::cut::cut;
use super::suggest::{Hint, closest};

/// A position in a YAML document: file name (as given for display), 1-based line and column.
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
    /// The file name the document was read under (for a manifest, the one given to
    /// `Manifest::from_str_named`, or the path read).
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

    /// The position serde-saphyr reported, in `file`.
    pub fn new(file: &Arc<str>, location: serde_saphyr::Location) -> Self {
        // Documents beyond 4 billion lines are not a concern; saturate rather than fail.
        let clamp = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
        Self {
            file: Arc::clone(file),
            line: clamp(location.line()),
            column: clamp(location.column()),
        }
    }

    /// Where a spanned value is used (for an alias, the alias rather than its anchor, since
    /// that is the entry the user is looking at).
    pub fn of<T>(file: &Arc<str>, spanned: &Spanned<T>) -> Self {
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

/// A YAML document that does not deserialize into the expected shape: where, and what.
///
/// Displays as `file:line:column: problem`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {problem}")]
#[non_exhaustive]
pub struct YamlError {
    /// Where the parser stopped.
    pub at: SourceLocation,
    /// What it found there.
    pub problem: YamlProblem,
}

/// What is wrong with a YAML document, classified so callers can match on it.
///
/// Unknown fields and values carry the closest accepted name, since serde only lists what was
/// expected; everything else keeps serde-saphyr's user-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum YamlProblem {
    /// A mapping has a key the schema does not know.
    UnknownField {
        /// The key as written.
        field: String,
        /// The known field closest to it, if one is close.
        suggestion: Option<&'static str>,
        /// Every field allowed there.
        expected: Vec<&'static str>,
    },
    /// A value outside a closed set.
    UnknownValue {
        /// The value as written.
        value: String,
        /// The allowed value closest to it, if one is close.
        suggestion: Option<&'static str>,
        /// Every allowed value.
        expected: Vec<&'static str>,
    },
    /// A required field is absent.
    MissingField {
        /// The field's name.
        field: &'static str,
    },
    /// A mapping repeats a key.
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// Anything else: syntax errors, wrong types, …, as the parser describes them.
    Other {
        /// The parser's description, control characters blanked.
        message: String,
    },
}

impl fmt::Display for YamlProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownField {
                field,
                suggestion,
                expected,
            } => write!(
                f,
                "unknown field `{}`{}",
                cut(field),
                Hint::new(*suggestion, expected)
            ),
            Self::UnknownValue {
                value,
                suggestion,
                expected,
            } => write!(
                f,
                "unknown value `{}`{}",
                cut(value),
                Hint::new(*suggestion, expected)
            ),
            Self::MissingField { field } => write!(f, "missing required field `{field}`"),
            Self::DuplicateKey { key } => write!(
                f,
                "duplicate key `{}`; hint: each key may appear once per mapping",
                cut(key)
            ),
            Self::Other { message } => f.write_str(message),
        }
    }
}

/// Deserializes `text` the way every kk document is read: strict booleans (`true`/`false`
/// only), duplicate keys rejected, errors located in `file` and classified.
pub fn parse_yaml<'de, T: serde::Deserialize<'de>>(
    text: &'de str,
    file: &Arc<str>,
) -> Result<T, YamlError> {
    let options = serde_saphyr::options! {
        // Callers render their own `file:line:column` messages; a snippet would only be dropped.
        with_snippet: false,
        strict_booleans: true,
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|error| classify(&error, file))
}

fn classify(error: &SaphyrError, file: &Arc<str>) -> YamlError {
    let error = error.without_snippet();
    let at = SourceLocation::new(
        file,
        error.location().unwrap_or(serde_saphyr::Location::UNKNOWN),
    );
    let problem = match error {
        SaphyrError::SerdeUnknownField {
            field, expected, ..
        } => YamlProblem::UnknownField {
            suggestion: closest(field, expected),
            field: field.clone(),
            expected: expected.clone(),
        },
        SaphyrError::SerdeUnknownVariant {
            variant, expected, ..
        } => YamlProblem::UnknownValue {
            suggestion: closest(variant, expected),
            value: variant.clone(),
            expected: expected.clone(),
        },
        SaphyrError::SerdeMissingField { field, .. } => YamlProblem::MissingField { field },
        SaphyrError::DuplicateMappingKey { key, .. } => YamlProblem::DuplicateKey {
            key: key.clone().unwrap_or_default(),
        },
        other => YamlProblem::Other {
            message: printable(&UserMessageFormatter.format_message(other)),
        },
    };
    YamlError { at, problem }
}

/// The message with control characters blanked: it may quote the user's text, and the
/// formatter leaves sanitising to its own renderer, which we bypass to drop its snippet.
fn printable(message: &str) -> String {
    message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

//! Debian's control data: a repository's `Packages` index, the relation fields (`Depends`,
//! `Pre-Depends`, `Provides`) and version comparison.
//!
//! (API fixed for the helpers; the bodies are written by the packages helper.)

use std::cmp::Ordering;

use super::PackageRecord;

/// A paragraph of a `Packages` index: the record the bundle keeps, plus what only the build
/// reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The record (its `reference` is empty until the builder names the artifact; its
    /// `filename` is the last component of `path`).
    pub record: PackageRecord,
    /// `Filename`: the path of the `.deb` below the repository's URL (`pool/main/s/socat/…`).
    pub path: String,
    /// `Priority` (`required`, `important`, `optional`…; empty when absent).
    pub priority: String,
    /// `Essential: yes`.
    pub essential: bool,
}

/// A version relation operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `=`
    Equal,
    /// `>=`
    GreaterOrEqual,
    /// `>>`
    Greater,
}

/// One alternative of a relation: `libc6 (>= 2.34)`, `awk`, `python3:any`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// The package (or virtual package) name.
    pub name: String,
    /// The architecture qualifier after `:` (`any`, `native`), if any.
    pub arch_qualifier: Option<String>,
    /// The version constraint, if any.
    pub constraint: Option<(Op, String)>,
}

/// A relation field: every group must be satisfied, by any one of its alternatives.
pub type Relations = Vec<Vec<Relation>>;

/// Why control data could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// A paragraph lacks a field the index must give.
    #[error("paragraph {paragraph} of the index lacks `{field}`")]
    MissingField {
        /// 1-based paragraph number.
        paragraph: usize,
        /// The field.
        field: &'static str,
    },
    /// A field's value does not parse.
    #[error("package `{package}`: `{field}: {value}` does not parse: {reason}")]
    BadField {
        /// The package.
        package: String,
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why.
        reason: String,
    },
}

/// Parses a `Packages` index (paragraphs separated by blank lines).
pub fn parse_index(_text: &str) -> Result<Vec<IndexEntry>, ControlError> {
    Ok(Vec::new())
}

/// Parses a relation field (`Depends`, `Pre-Depends`, `Provides`); `package` names the package
/// in errors.
pub fn parse_relations(
    _package: &str,
    _field: &'static str,
    _text: &str,
) -> Result<Relations, ControlError> {
    Ok(Vec::new())
}

/// Compares two Debian versions as dpkg does (epoch, upstream, revision; `~` before anything).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    a.cmp(b)
}

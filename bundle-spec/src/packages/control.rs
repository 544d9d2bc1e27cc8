//! Debian's control data: a repository's `Packages` index, the relation fields (`Depends`,
//! `Pre-Depends`, `Provides`) and version comparison.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::PackageRecord;
use crate::digest::Sha256Digest;

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
    /// A line of a paragraph is neither `Field: value` nor a continuation.
    #[error("paragraph {paragraph} of the index: `{line}` is not a `Field: value` line")]
    BadLine {
        /// 1-based paragraph number.
        paragraph: usize,
        /// The line.
        line: String,
    },
}

/// Parses a `Packages` index (paragraphs separated by blank lines).
pub fn parse_index(text: &str) -> Result<Vec<IndexEntry>, ControlError> {
    paragraphs(text)
        .enumerate()
        .map(|(i, lines)| {
            let paragraph = i + 1;
            index_entry(paragraph, &fields(paragraph, &lines)?)
        })
        .collect()
}

/// The paragraphs of a control file, each as its lines (comments left out).
fn paragraphs(text: &str) -> impl Iterator<Item = Vec<&str>> {
    let mut all = Vec::new();
    let mut current = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                all.push(std::mem::take(&mut current));
            }
        } else if !line.starts_with('#') {
            current.push(line);
        }
    }
    if !current.is_empty() {
        all.push(current);
    }
    all.into_iter()
}

/// A paragraph's fields by lowercase name (field names are case-insensitive); continuation
/// lines are folded into their field's value with a space.
fn fields(paragraph: usize, lines: &[&str]) -> Result<BTreeMap<String, String>, ControlError> {
    let mut fields = BTreeMap::new();
    let mut last: Option<String> = None;
    for line in lines {
        if line.starts_with([' ', '\t']) {
            let Some(value) = last.as_ref().and_then(|name| fields.get_mut(name)) else {
                return Err(bad_line(paragraph, line));
            };
            let value: &mut String = value;
            if !value.is_empty() {
                value.push(' ');
            }
            value.push_str(line.trim());
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad_line(paragraph, line));
        };
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(bad_line(paragraph, line));
        }
        let name = name.to_ascii_lowercase();
        fields.insert(name.clone(), value.trim().to_owned());
        last = Some(name);
    }
    Ok(fields)
}

fn bad_line(paragraph: usize, line: &str) -> ControlError {
    ControlError::BadLine {
        paragraph,
        line: line.to_owned(),
    }
}

/// One index entry from a paragraph's fields; the relation fields are checked here so that a
/// broken index fails when it is read, naming the package.
fn index_entry(
    paragraph: usize,
    fields: &BTreeMap<String, String>,
) -> Result<IndexEntry, ControlError> {
    let required = |field: &'static str| {
        fields
            .get(&field.to_ascii_lowercase())
            .filter(|value| !value.is_empty())
            .ok_or(ControlError::MissingField { paragraph, field })
    };
    let optional = |field: &str| {
        fields
            .get(&field.to_ascii_lowercase())
            .cloned()
            .unwrap_or_default()
    };
    let name = required("Package")?.clone();
    let bad = |field: &'static str, value: &str, reason: &str| ControlError::BadField {
        package: name.clone(),
        field,
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    let path = required("Filename")?.clone();
    let size = required("Size")?;
    let size = size
        .parse()
        .map_err(|_| bad("Size", size, "not a number of bytes"))?;
    let sha256 = required("SHA256")?;
    let sha256 = Sha256Digest::from_hex(sha256)
        .ok_or_else(|| bad("SHA256", sha256, "not 64 lowercase hex digits"))?;
    let record = PackageRecord {
        version: required("Version")?.clone(),
        architecture: required("Architecture")?.clone(),
        depends: optional("Depends"),
        pre_depends: optional("Pre-Depends"),
        provides: optional("Provides"),
        multi_arch: optional("Multi-Arch"),
        filename: path.rsplit('/').next().unwrap_or_default().to_owned(),
        sha256,
        size,
        reference: String::new(),
        name,
    };
    for (field, value) in [
        ("Depends", &record.depends),
        ("Pre-Depends", &record.pre_depends),
        ("Provides", &record.provides),
    ] {
        parse_relations(&record.name, field, value)?;
    }
    Ok(IndexEntry {
        record,
        path,
        priority: optional("Priority"),
        essential: optional("Essential") == "yes",
    })
}

/// Parses a relation field (`Depends`, `Pre-Depends`, `Provides`); `package` names the package
/// in errors.
pub fn parse_relations(
    package: &str,
    field: &'static str,
    text: &str,
) -> Result<Relations, ControlError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|group| {
            group
                .split('|')
                .map(|alternative| parse_relation(alternative.trim()))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<_, _>>()
        .map_err(|reason| ControlError::BadField {
            package: package.to_owned(),
            field,
            value: text.to_owned(),
            reason,
        })
}

/// One alternative: `name[:qualifier] [(op version)]`.
fn parse_relation(text: &str) -> Result<Relation, String> {
    if text.is_empty() {
        return Err("an empty relation (two separators in a row?)".to_owned());
    }
    // `[amd64]` and `<!nocheck>` appear only in source packages' relations.
    if text.contains('[') || text.ends_with('>') {
        return Err(format!(
            "`{text}`: architecture or profile restrictions belong to source packages"
        ));
    }
    let (name_part, constraint) = match text.split_once('(') {
        Some((name, rest)) => (name.trim(), Some(parse_constraint(text, rest)?)),
        None => (text, None),
    };
    let (name, arch_qualifier) = match name_part.split_once(':') {
        Some((name, qualifier)) => (name, Some(qualifier.to_owned())),
        None => (name_part, None),
    };
    if !is_package_name(name) {
        return Err(format!("`{name}` is not a package name"));
    }
    if arch_qualifier
        .as_deref()
        .is_some_and(|q| q.is_empty() || !q.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    {
        return Err(format!(
            "`{name_part}` has a malformed architecture qualifier"
        ));
    }
    Ok(Relation {
        name: name.to_owned(),
        arch_qualifier,
        constraint,
    })
}

/// The `op version)` after a relation's `(`.
fn parse_constraint(text: &str, rest: &str) -> Result<(Op, String), String> {
    let Some(inner) = rest.strip_suffix(')') else {
        return Err(format!("`{text}` lacks its closing `)`"));
    };
    let inner = inner.trim();
    let op_len = inner
        .bytes()
        .take_while(|b| matches!(b, b'<' | b'>' | b'='))
        .count();
    let (op, version) = inner.split_at(op_len);
    let op = match op {
        "<<" => Op::Less,
        // `<` and `>` are the obsolete spellings of `<=` and `>=` (Debian Policy 7.1).
        "<=" | "<" => Op::LessOrEqual,
        "=" => Op::Equal,
        ">=" | ">" => Op::GreaterOrEqual,
        ">>" => Op::Greater,
        "" => {
            return Err(format!(
                "`{text}` lacks its operator (`<<`, `<=`, `=`, `>=` or `>>`)"
            ));
        }
        _ => return Err(format!("`{text}`: `{op}` is not a version relation")),
    };
    let version = version.trim();
    if version.is_empty() || version.contains(char::is_whitespace) {
        return Err(format!("`{text}`: `{version}` is not a version"));
    }
    Ok((op, version.to_owned()))
}

/// Debian Policy 5.6.1: lowercase letters, digits, `+`, `-`, `.`; starting alphanumeric.
fn is_package_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')
        })
}

impl Op {
    /// Whether `version` stands in this relation to `to` (`version >= to`).
    pub fn holds(self, version: &str, to: &str) -> bool {
        let ordering = compare_versions(version, to);
        match self {
            Op::Less => ordering.is_lt(),
            Op::LessOrEqual => ordering.is_le(),
            Op::Equal => ordering.is_eq(),
            Op::GreaterOrEqual => ordering.is_ge(),
            Op::Greater => ordering.is_gt(),
        }
    }

    /// The operator as Debian writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Less => "<<",
            Op::LessOrEqual => "<=",
            Op::Equal => "=",
            Op::GreaterOrEqual => ">=",
            Op::Greater => ">>",
        }
    }
}

impl Relation {
    /// Whether a package of this name at `version` satisfies the relation.
    pub fn allows(&self, version: &str) -> bool {
        self.constraint
            .as_ref()
            .is_none_or(|(op, to)| op.holds(version, to))
    }
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        if let Some(qualifier) = &self.arch_qualifier {
            write!(f, ":{qualifier}")?;
        }
        if let Some((op, version)) = &self.constraint {
            write!(f, " ({} {version})", op.as_str())?;
        }
        Ok(())
    }
}

/// Compares two Debian versions as dpkg does (epoch, upstream, revision; `~` before anything).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let (a_epoch, a_upstream, a_revision) = split_version(a);
    let (b_epoch, b_upstream, b_revision) = split_version(b);
    a_epoch
        .cmp(&b_epoch)
        .then_with(|| compare_part(a_upstream, b_upstream))
        .then_with(|| compare_part(a_revision, b_revision))
}

/// `[epoch:]upstream[-revision]`; a missing or unreadable epoch is 0, as dpkg reads it.
fn split_version(version: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) => (epoch.parse().unwrap_or(0), rest),
        None => (0, version),
    };
    let (upstream, revision) = rest.rsplit_once('-').unwrap_or((rest, ""));
    (epoch, upstream, revision)
}

/// dpkg's `verrevcmp`: alternating runs of non-digits (compared by [`char_order`]) and digits
/// (compared as numbers).
fn compare_part(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while a.get(i).is_some_and(|c| !c.is_ascii_digit())
            || b.get(j).is_some_and(|c| !c.is_ascii_digit())
        {
            let (ac, bc) = (char_order(a.get(i)), char_order(b.get(j)));
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        while a.get(i) == Some(&b'0') {
            i += 1;
        }
        while b.get(j) == Some(&b'0') {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while let (Some(ac), Some(bc)) = (
            a.get(i).filter(|c| c.is_ascii_digit()),
            b.get(j).filter(|c| c.is_ascii_digit()),
        ) {
            if first_diff.is_eq() {
                first_diff = ac.cmp(bc);
            }
            i += 1;
            j += 1;
        }
        if a.get(i).is_some_and(u8::is_ascii_digit) {
            return Ordering::Greater;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            return Ordering::Less;
        }
        if first_diff.is_ne() {
            return first_diff;
        }
    }
    Ordering::Equal
}

/// dpkg's `order`: `~` before the end of the part, the end before letters, letters before
/// other characters.
fn char_order(c: Option<&u8>) -> i32 {
    match c {
        None => 0,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(*c),
        Some(b'~') => -1,
        Some(c) => i32::from(*c) + 256,
    }
}

#[cfg(test)]
mod tests;

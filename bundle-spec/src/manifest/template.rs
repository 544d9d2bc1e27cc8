//! URL templates: `url` and `checksumUrl` with `{version}`, `{os}` and `{arch}` placeholders.

use std::fmt;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::url::check_http_url;
use crate::diagnostics::suggest::closest;
use crate::platform::Platform;

/// The placeholders a URL template may use, without braces.
pub const PLACEHOLDERS: &[&str] = &["version", "os", "arch"];

/// A validated URL template, e.g. `https://example.org/etcd-{version}-{os}-{arch}.tar.gz`.
///
/// Every expansion is an absolute `http(s)` URL. There is no escape for a literal brace: URLs
/// do not need one (a brace must be percent-encoded in a URL anyway).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate {
    text: String,
    segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Version,
    Os,
    Arch,
}

impl UrlTemplate {
    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The URL for `version` on `platform`; `{arch}` is the architecture without variant.
    pub fn expand(&self, version: &str, platform: &Platform) -> String {
        self.expand_with_arch(version, platform, platform.architecture())
    }

    /// The URL for `version` on `platform`, with `arch` for `{arch}` (a project's own name for
    /// the architecture, e.g. Docker's `x86_64`).
    pub fn expand_with_arch(&self, version: &str, platform: &Platform, arch: &str) -> String {
        self.segments
            .iter()
            .map(|segment| match segment {
                Segment::Literal(text) => text.as_str(),
                Segment::Version => version,
                Segment::Os => platform.os(),
                Segment::Arch => arch,
            })
            .collect()
    }

    /// Parses and checks a template from the manifest.
    pub(super) fn parse(file: &Arc<str>, raw: &Spanned<String>) -> Result<Self, ManifestError> {
        let at = || SourceLocation::of(file, raw);
        let segments = segments(&raw.value).map_err(|problem| problem.into_error(at(), raw))?;
        let template = Self {
            text: raw.value.clone(),
            segments,
        };
        // Placeholders hold only URL-safe text, so one sample expansion checks them all.
        let sample = template.expand("1.0.0", &Platform::linux_amd64());
        check_http_url(&sample).map_err(|problem| ManifestError::InvalidUrl {
            at: at(),
            url: raw.value.clone(),
            problem,
        })?;
        Ok(template)
    }
}

impl fmt::Display for UrlTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A template syntax error, before it has a location.
enum Problem {
    Unbalanced { brace: char, position: usize },
    Unknown(String),
}

impl Problem {
    fn into_error(self, at: SourceLocation, raw: &Spanned<String>) -> ManifestError {
        let template = raw.value.clone();
        match self {
            Self::Unbalanced { brace, position } => ManifestError::UnbalancedBrace {
                at,
                template,
                brace,
                position,
            },
            Self::Unknown(placeholder) => ManifestError::UnknownPlaceholder {
                at,
                template,
                suggestion: closest(&placeholder, PLACEHOLDERS),
                placeholder,
            },
        }
    }
}

fn segments(text: &str) -> Result<Vec<Segment>, Problem> {
    let mut segments = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().enumerate();
    while let Some((index, c)) = chars.next() {
        match c {
            '{' => {
                let name = placeholder_name(&mut chars, index)?;
                segments.push(Segment::Literal(std::mem::take(&mut literal)));
                segments.push(placeholder(name)?);
            }
            '}' => return Err(unbalanced('}', index)),
            c => literal.push(c),
        }
    }
    segments.push(Segment::Literal(literal));
    segments.retain(|segment| *segment != Segment::Literal(String::new()));
    Ok(segments)
}

/// Reads up to the closing `}` of the `{` at `open`.
fn placeholder_name(
    chars: &mut impl Iterator<Item = (usize, char)>,
    open: usize,
) -> Result<String, Problem> {
    let mut name = String::new();
    for (_, c) in chars {
        match c {
            '}' => return Ok(name),
            // A nested `{` means the first one was never closed.
            '{' => return Err(unbalanced('{', open)),
            _ => name.push(c),
        }
    }
    Err(unbalanced('{', open))
}

fn placeholder(name: String) -> Result<Segment, Problem> {
    match name.as_str() {
        "version" => Ok(Segment::Version),
        "os" => Ok(Segment::Os),
        "arch" => Ok(Segment::Arch),
        _ => Err(Problem::Unknown(name)),
    }
}

fn unbalanced(brace: char, index: usize) -> Problem {
    Problem::Unbalanced {
        brace,
        position: index + 1,
    }
}

//! "Did you mean `x`?" hints for names the user mistyped, shared by every kk document reader.

use std::fmt;

/// How similar (Jaro-Winkler, case-insensitive) a candidate must be to be suggested. High
/// enough that `foo` suggests nothing, low enough that `imagez` → `images` and `amd46` →
/// `amd64` still do.
const THRESHOLD: f64 = 0.8;

/// The candidate closest to `input`, if any is close enough to be a plausible typo.
pub fn closest<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let input = input.to_ascii_lowercase();
    candidates
        .iter()
        .map(|candidate| {
            let score = strsim::jaro_winkler(&input, &candidate.to_ascii_lowercase());
            (score, *candidate)
        })
        .filter(|(score, _)| *score >= THRESHOLD)
        // `max_by` keeps the last of equals; reversing keeps the first-listed candidate.
        .rev()
        .max_by(|(left, _), (right, _)| left.total_cmp(right))
        .map(|(_, candidate)| candidate)
}

/// The tail of an error message: a suggestion when there is one, else what would be accepted.
///
/// Renders with a leading `; ` so messages read `unknown field `x`; did you mean `y`?`.
#[derive(Debug, Clone, Copy)]
pub struct Hint<'a> {
    suggestion: Option<&'a str>,
    fallback: Fallback<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Fallback<'a> {
    /// List every accepted value.
    Expected(&'a [&'a str]),
    /// Too many accepted values to list: show one.
    Example(&'static str),
}

impl<'a> Hint<'a> {
    /// Suggests `suggestion`, or lists `expected`.
    pub fn new(suggestion: Option<&'a str>, expected: &'a [&'a str]) -> Self {
        Self {
            suggestion,
            fallback: Fallback::Expected(expected),
        }
    }

    /// Suggests `suggestion`, or shows `example` of an accepted value.
    pub fn or_example(suggestion: Option<&'a str>, example: &'static str) -> Self {
        Self {
            suggestion,
            fallback: Fallback::Example(example),
        }
    }
}

impl fmt::Display for Hint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(suggestion) = self.suggestion {
            return write!(f, "; did you mean `{suggestion}`?");
        }
        match self.fallback {
            Fallback::Expected([]) => Ok(()),
            Fallback::Expected(expected) => {
                f.write_str("; hint: expected one of ")?;
                for (index, name) in expected.iter().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(f, "{separator}`{name}`")?;
                }
                Ok(())
            }
            Fallback::Example(example) => write!(f, "; hint: use Go's name, e.g. `{example}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_close_names() {
        let fields = &["images", "binaries", "charts", "registries", "platforms"];
        assert_eq!(closest("imagez", fields), Some("images"));
        assert_eq!(closest("Registry", fields), Some("registries"));
        assert_eq!(closest("foo", fields), None);
        assert_eq!(
            closest("plainHttp", &["plainHTTP", "caFile"]),
            Some("plainHTTP")
        );
    }

    #[test]
    fn hint_renders_suggestion_or_fallback() {
        assert_eq!(
            Hint::new(Some("a"), &["a", "b"]).to_string(),
            "; did you mean `a`?"
        );
        assert_eq!(
            Hint::new(None, &["a", "b"]).to_string(),
            "; hint: expected one of `a`, `b`"
        );
        assert_eq!(Hint::new(None, &[]).to_string(), "");
        assert_eq!(
            Hint::or_example(None, "amd64").to_string(),
            "; hint: use Go's name, e.g. `amd64`"
        );
    }
}

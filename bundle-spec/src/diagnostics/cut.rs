//! Long values cut short before a message echoes them.

use std::fmt;

/// How many characters of a value a message shows before cutting it.
pub const SHOWN_CHARS: usize = 80;

/// A value as a message shows it: whole when it is at most [`SHOWN_CHARS`] characters, else its
/// first [`SHOWN_CHARS`] characters, `…` and its length in bytes.
///
/// A document may hold a value of megabytes (a pasted file, a runaway template); echoing it whole
/// would bury the message and flood logs.
#[derive(Debug, Clone, Copy)]
pub struct Cut<'a>(&'a str);

/// `value`, cut for a message (see [`Cut`]).
pub fn cut(value: &str) -> Cut<'_> {
    Cut(value)
}

impl fmt::Display for Cut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(SHOWN_CHARS) {
            None => f.write_str(self.0),
            Some((end, _)) => write!(f, "{}… ({} bytes)", &self.0[..end], self.0.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_only_values_longer_than_shown() {
        let long = "a".repeat(10 * 1024 * 1024);
        let at_limit = "b".repeat(SHOWN_CHARS);
        let multibyte = "é".repeat(SHOWN_CHARS + 1);
        let cases: [(&str, String); 4] = [
            ("", String::new()),
            (&at_limit, at_limit.clone()),
            (
                &long,
                format!("{}… (10485760 bytes)", "a".repeat(SHOWN_CHARS)),
            ),
            (
                &multibyte,
                format!(
                    "{}… ({} bytes)",
                    "é".repeat(SHOWN_CHARS),
                    2 * (SHOWN_CHARS + 1)
                ),
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(cut(value).to_string(), expected);
        }
    }
}

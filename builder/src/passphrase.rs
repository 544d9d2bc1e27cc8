//! The passphrase of a cosign private key, as cosign takes it: from `COSIGN_PASSWORD` (which may
//! be set and empty: a key without a passphrase), else asked on the terminal without echo. Never
//! from an argument, which any user of the machine can read in the process list.

use std::ffi::OsString;
use std::io;

use zeroize::Zeroizing;

/// The environment variable cosign and kk read the passphrase from.
pub const PASSPHRASE_VARIABLE: &str = "COSIGN_PASSWORD";

/// Why there is no passphrase.
#[derive(Debug, thiserror::Error)]
pub enum PassphraseError {
    /// `COSIGN_PASSWORD` is unset and nothing can be asked.
    #[error(
        "`{PASSPHRASE_VARIABLE}` is not set and standard input is not a terminal to ask for the passphrase; hint: set `{PASSPHRASE_VARIABLE}` (empty for a key without one)"
    )]
    NoTerminal,
    /// `COSIGN_PASSWORD` holds bytes that are not UTF-8.
    #[error("`{PASSPHRASE_VARIABLE}` is not UTF-8; hint: cosign takes UTF-8 passphrases only")]
    NotUtf8,
    /// The terminal could not be read.
    #[error("cannot read the passphrase from the terminal")]
    Terminal(#[source] io::Error),
    /// The confirmation differs from the passphrase.
    #[error("the two passphrases differ; hint: type the same passphrase twice")]
    Mismatch,
}

/// The passphrase from `COSIGN_PASSWORD`, or asked on the terminal (twice when `confirm`, for a
/// new key, so a typo does not lock the key away).
pub fn read_passphrase(confirm: bool) -> Result<Zeroizing<String>, PassphraseError> {
    let terminal = io::IsTerminal::is_terminal(&io::stdin());
    passphrase(
        std::env::var_os(PASSPHRASE_VARIABLE),
        terminal,
        |prompt| rpassword::prompt_password(prompt),
        confirm,
    )
}

/// [`read_passphrase`] with its inputs given: the variable's value, whether standard input is a
/// terminal, and how to prompt.
fn passphrase(
    variable: Option<OsString>,
    terminal: bool,
    mut prompt: impl FnMut(&str) -> io::Result<String>,
    confirm: bool,
) -> Result<Zeroizing<String>, PassphraseError> {
    if let Some(value) = variable {
        return value
            .into_string()
            .map(Zeroizing::new)
            .map_err(|_| PassphraseError::NotUtf8);
    }
    if !terminal {
        return Err(PassphraseError::NoTerminal);
    }
    let mut ask = |text| {
        prompt(text)
            .map(Zeroizing::new)
            .map_err(PassphraseError::Terminal)
    };
    let first = ask("Enter password for private key: ")?;
    if confirm && *ask("Enter password for private key again: ")? != *first {
        return Err(PassphraseError::Mismatch);
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A terminal that answers `answers` in turn and counts the prompts it was shown.
    struct Typist {
        answers: std::iter::Copied<std::slice::Iter<'static, &'static str>>,
        asked: usize,
    }

    impl Typist {
        fn new(answers: &'static [&'static str]) -> Self {
            Self {
                answers: answers.iter().copied(),
                asked: 0,
            }
        }

        fn ask(&mut self, _prompt: &str) -> io::Result<String> {
            self.asked += 1;
            self.answers
                .next()
                .map(str::to_owned)
                .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no more input"))
        }
    }

    /// One way of giving (or not) a passphrase, and what comes of it.
    struct Case {
        variable: Option<&'static str>,
        terminal: bool,
        answers: &'static [&'static str],
        confirm: bool,
        /// The passphrase, or a part of the error.
        expected: Result<&'static str, &'static str>,
        prompts: usize,
    }

    const fn case(
        variable: Option<&'static str>,
        terminal: bool,
        answers: &'static [&'static str],
        confirm: bool,
        expected: Result<&'static str, &'static str>,
        prompts: usize,
    ) -> Case {
        Case {
            variable,
            terminal,
            answers,
            confirm,
            expected,
            prompts,
        }
    }

    #[test]
    fn where_the_passphrase_comes_from() {
        let no_terminal = "is not set and standard input is not a terminal";
        let cases = [
            case(Some("secret"), false, &[], true, Ok("secret"), 0),
            case(Some(""), false, &[], true, Ok(""), 0),
            case(Some("from env"), true, &["typed"], true, Ok("from env"), 0),
            case(None, false, &[], false, Err(no_terminal), 0),
            case(None, true, &["typed"], false, Ok("typed"), 1),
            case(None, true, &["typed", "typed"], true, Ok("typed"), 2),
            case(
                None,
                true,
                &["typed", "typo"],
                true,
                Err("the two passphrases differ"),
                2,
            ),
            case(None, true, &[], false, Err("cannot read the passphrase"), 1),
        ];
        for case in cases {
            let mut typist = Typist::new(case.answers);
            let variable = case.variable.map(OsString::from);
            let got = passphrase(variable, case.terminal, |p| typist.ask(p), case.confirm);
            let context = format!("{:?} {:?} {}", case.variable, case.answers, case.terminal);
            match (got, case.expected) {
                (Ok(got), Ok(expected)) => assert_eq!(*got, expected, "{context}"),
                (Err(error), Err(expected)) => {
                    assert!(error.to_string().contains(expected), "{context}: {error}");
                }
                (Ok(_), Err(expected)) => panic!("{context}: a passphrase, not {expected:?}"),
                (Err(error), Ok(_)) => panic!("{context}: {error}"),
            }
            assert_eq!(typist.asked, case.prompts, "{context}");
        }
    }

    #[test]
    fn a_variable_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStringExt as _;
        let variable = OsString::from_vec(vec![0xff, 0xfe]);
        let mut typist = Typist::new(&[]);
        let error =
            passphrase(Some(variable), true, |p| typist.ask(p), false).expect_err("not UTF-8");
        assert!(matches!(error, PassphraseError::NotUtf8), "{error}");
        assert_eq!(typist.asked, 0);
    }
}

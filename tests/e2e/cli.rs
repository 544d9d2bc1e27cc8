//! Both binaries answer `--version` and `--help` like any operator tool, and say what is wrong when used
//! wrongly.

use std::process::Command;

use crate::support::{BINARIES, VERSION, binary, describe, run, run_ok};

/// Words each binary's about text must contain, so `--help` says what the tool is.
fn about_words(name: &str) -> &'static [&'static str] {
    match name {
        "kk-bundle" => &["offline bundle", "manifest"],
        "kk-install" => &["bundle", "airgap"],
        other => panic!("unknown binary {other}"),
    }
}

#[test]
fn version_is_name_and_workspace_version() {
    for name in BINARIES {
        let (stdout, _) = run_ok(Command::new(binary(name)).arg("--version"));
        assert_eq!(stdout, format!("{name} {VERSION}\n"), "{name} --version");
        // `-V` is the short form.
        let (short, _) = run_ok(Command::new(binary(name)).arg("-V"));
        assert_eq!(short, stdout, "{name} -V must match --version");
    }
}

#[test]
fn help_shows_usage_about_and_options() {
    for name in BINARIES {
        // `--help` is the long form, `-h` the summary; both say what the tool is.
        for flag in ["--help", "-h"] {
            let mut cmd = Command::new(binary(name));
            cmd.arg(flag);
            let (stdout, out) = run_ok(&mut cmd);
            let context = describe(&cmd, &out);
            assert!(
                stdout.contains(&format!("Usage: {name}")),
                "no usage line:\n{context}"
            );
            for word in about_words(name) {
                assert!(
                    stdout.contains(word),
                    "about text lacks {word:?}:\n{context}"
                );
            }
            for option in ["-h, --help", "-V, --version"] {
                assert!(stdout.contains(option), "{option} not listed:\n{context}");
            }
        }
    }
}

#[test]
fn without_arguments_usage_goes_to_stderr_and_the_exit_code_is_2() {
    for name in BINARIES {
        let mut cmd = Command::new(binary(name));
        let out = run(&mut cmd);
        let context = describe(&cmd, &out);
        assert_eq!(out.status.code(), Some(2), "{context}");
        assert!(out.stdout.is_empty(), "stdout must stay empty:\n{context}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("Usage: {name}")), "{context}");
    }
}

#[test]
fn unknown_option_is_rejected_by_name() {
    for name in BINARIES {
        let mut cmd = Command::new(binary(name));
        cmd.arg("--no-such-option");
        let out = run(&mut cmd);
        let context = describe(&cmd, &out);
        assert_eq!(out.status.code(), Some(2), "{context}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("unexpected argument '--no-such-option'"),
            "the error must name the option:\n{context}"
        );
    }
}

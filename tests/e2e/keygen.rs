//! `kk-bundle keygen` as an operator runs it: the passphrase from `COSIGN_PASSWORD`, the pair in
//! cosign's files in the current directory, an existing pair never overwritten by accident.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use bundle_spec::sign::keys;

use crate::support::{binary, run_failing, run_ok};

const PASSPHRASE: &str = "e2e keygen passphrase";

/// `kk-bundle keygen ARGS` in `dir`, its passphrase `passphrase` (unset when `None`), with no
/// terminal on standard input.
fn keygen(dir: &Path, passphrase: Option<&str>, args: &[&str]) -> Command {
    let mut cmd = Command::new(binary("kk-bundle"));
    cmd.arg("keygen")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("COSIGN_PASSWORD");
    if let Some(passphrase) = passphrase {
        cmd.env("COSIGN_PASSWORD", passphrase);
    }
    cmd
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("exists").permissions().mode() & 0o777
}

#[test]
fn keygen_writes_a_pair_that_reads_back_and_never_overwrites_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (stdout, _) = run_ok(&mut keygen(dir.path(), Some(PASSPHRASE), &[]));
    let (key_path, pub_path) = (dir.path().join("cosign.key"), dir.path().join("cosign.pub"));
    assert_eq!(
        mode(&key_path),
        0o600,
        "the private key is its owner's alone"
    );
    let private = fs::read_to_string(&key_path).expect("cosign.key");
    let public = fs::read_to_string(&pub_path).expect("cosign.pub");
    assert!(private.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
    let key = keys::read_private_key(&private, PASSPHRASE.as_bytes()).expect("the key reads");
    let public = keys::read_public_key(&public).expect("the public key reads");
    assert_eq!(key.verifying_key(), &public, "one pair");
    let fingerprint = keys::fingerprint(&public);
    assert!(
        stdout.contains("cosign.pub") && stdout.contains(&fingerprint),
        "the public key's path and fingerprint are printed:\n{stdout}"
    );

    // Again: refused, naming the file, and the pair is untouched.
    let stderr = run_failing(&mut keygen(dir.path(), Some(PASSPHRASE), &[]));
    assert!(
        stderr.contains("`cosign.key` exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(&key_path).expect("reads"), private);

    // --force replaces it; another prefix writes beside it, with an empty passphrase.
    run_ok(&mut keygen(dir.path(), Some(PASSPHRASE), &["--force"]));
    assert_ne!(fs::read_to_string(&key_path).expect("reads"), private);
    run_ok(&mut keygen(
        dir.path(),
        Some(""),
        &["--output-key-prefix", "release"],
    ));
    let release = fs::read_to_string(dir.path().join("release.key")).expect("release.key");
    keys::read_private_key(&release, b"").expect("an empty passphrase is a passphrase");
}

#[test]
fn keygen_without_a_passphrase_or_a_terminal_fails_with_a_hint_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stderr = run_failing(&mut keygen(dir.path(), None, &[]));
    assert!(
        stderr.contains("`COSIGN_PASSWORD` is not set") && stderr.contains("hint: set"),
        "{stderr}"
    );
    assert_eq!(fs::read_dir(dir.path()).expect("lists").count(), 0);
}

//! `scripts/dist.sh` makes `kk-install` one self-contained file that runs on any x86-64 Linux host,
//! carrying the static node agent `kk-node` it sends to the nodes.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

use crate::support::{VERSION, describe, run_ok, target_dir, workspace_root};

#[test]
fn dist_builds_a_static_kk_install_that_runs_anywhere() {
    let root = workspace_root();
    let started = SystemTime::now();

    // kk-install unoptimised (cargo's `CARGO_PROFILE_RELEASE_*` overrides): optimisation changes
    // neither the static linking nor the trailer checked here, and took half of this test's
    // build. The agent keeps its own profile, whose size is checked below. Niced: the test runs
    // beside the others, and its build must not slow their waits into timeouts.
    let mut cmd = Command::new("nice");
    cmd.current_dir(root)
        .args(["-n", "10", "bash", "scripts/dist.sh"])
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "off")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256");
    let (_, out) = run_ok(&mut cmd);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("dist/kk-install: ") && log.contains(" MiB), built as "),
        "dist.sh must report the size and how it built:\n{}",
        describe(&cmd, &out)
    );

    let dist = target_dir().join("dist/kk-install");
    let meta = fs::metadata(&dist).unwrap_or_else(|err| panic!("{}: {err}", dist.display()));
    assert!(
        meta.is_file() && meta.len() > 0,
        "{} is empty",
        dist.display()
    );
    let modified = meta.modified().expect("mtime");
    assert!(
        modified >= started,
        "{} was not written by this run",
        dist.display()
    );

    assert_static(&dist);
    // It runs as a single file from anywhere, with an empty environment.
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let copy = elsewhere.path().join("kk-install");
    fs::copy(&dist, &copy).expect("copy kk-install");
    assert_eq!(version_of(&copy), format!("kk-install {VERSION}\n"));

    // The agent behind kk-install's trailer is the one dist.sh wrote beside it: verified,
    // static, of this version, and small enough that a node receives at most 0.05 of an
    // 85 MB bundle's binaries (issue 25's bundle; the bench measures the ratio).
    let agent = kk_install::agent::embedded(&dist)
        .expect("a verified trailer")
        .expect("kk-install carries the agent");
    let beside = target_dir().join("dist/kk-node");
    assert_eq!(fs::read(&beside).expect("dist/kk-node"), agent);
    let extracted = elsewhere.path().join("kk-node");
    fs::write(&extracted, &agent).expect("extract");
    fs::set_permissions(&extracted, fs::Permissions::from_mode(0o755)).expect("chmod");
    assert_static(&extracted);
    assert_eq!(version_of(&extracted), format!("kk-node {VERSION}\n"));
    assert!(agent.len() < 4 << 20, "the agent is {} bytes", agent.len());
}

/// `--version` of `program`, run from its directory with an empty environment.
fn version_of(program: &Path) -> String {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .current_dir(program.parent().expect("a directory"))
        .arg("--version");
    run_ok(&mut cmd).0
}

/// No program interpreter (ld.so) and no shared library dependencies.
fn assert_static(dist: &Path) {
    let (headers, _) = run_ok(
        Command::new("readelf")
            .arg("--program-headers")
            .arg("--wide")
            .arg(dist),
    );
    assert!(
        headers.contains("LOAD"),
        "readelf found no program headers:\n{headers}"
    );
    assert!(
        !headers.contains("INTERP"),
        "{} asks for a dynamic loader:\n{headers}",
        dist.display()
    );
    let (dynamic, _) = run_ok(
        Command::new("readelf")
            .arg("--dynamic")
            .arg("--wide")
            .arg(dist),
    );
    assert!(
        !dynamic.contains("(NEEDED)"),
        "{} needs shared libraries:\n{dynamic}",
        dist.display()
    );
}

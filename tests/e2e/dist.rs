//! `scripts/dist.sh` makes `kk-install` one self-contained file that runs on any x86-64 Linux host.

use std::fs;
use std::process::Command;
use std::time::SystemTime;

use crate::support::{VERSION, describe, run_ok, target_dir, workspace_root};

#[test]
fn dist_builds_a_static_kk_install_that_runs_anywhere() {
    let root = workspace_root();
    let started = SystemTime::now();

    let mut cmd = Command::new("bash");
    cmd.current_dir(root).arg("scripts/dist.sh");
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

    // No program interpreter (ld.so) and no shared library dependencies.
    let (headers, _) = run_ok(
        Command::new("readelf")
            .arg("--program-headers")
            .arg("--wide")
            .arg(&dist),
    );
    assert!(
        headers.contains("LOAD"),
        "readelf found no program headers:\n{headers}"
    );
    assert!(
        !headers.contains("INTERP"),
        "kk-install asks for a dynamic loader:\n{headers}"
    );
    let (dynamic, _) = run_ok(
        Command::new("readelf")
            .arg("--dynamic")
            .arg("--wide")
            .arg(&dist),
    );
    assert!(
        !dynamic.contains("(NEEDED)"),
        "kk-install needs shared libraries:\n{dynamic}"
    );

    // It runs as a single file from anywhere, with an empty environment.
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let copy = elsewhere.path().join("kk-install");
    fs::copy(&dist, &copy).expect("copy kk-install");
    let mut cmd = Command::new(&copy);
    cmd.env_clear()
        .current_dir(elsewhere.path())
        .arg("--version");
    let (stdout, _) = run_ok(&mut cmd);
    assert_eq!(stdout, format!("kk-install {VERSION}\n"));
}

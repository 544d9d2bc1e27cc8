//! Helpers shared by the end-to-end tests: where the workspace and its built binaries are, and running
//! commands with their output kept for assertion messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The two binaries of the workspace, by package name (which is also the binary name).
pub(crate) const BINARIES: [&str; 3] = ["kk-bundle", "kk-install", "kk-node"];

/// The version both binaries report: the workspace version, which this crate shares.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The workspace root (this crate lives in `<root>/tests`).
pub(crate) fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent directory")
}

/// cargo's target directory, the one this test executable was built in.
pub(crate) fn target_dir() -> PathBuf {
    build_dir().target_dir
}

/// Where cargo put this test executable's build: `<target-dir>[/<triple>]/<profile>`.
#[derive(Debug)]
struct BuildDir {
    /// `<target-dir>[/<triple>]/<profile>`: the built binaries are directly in it.
    profile_dir: PathBuf,
    /// The `--target-dir` of the build.
    target_dir: PathBuf,
    /// The `--target` triple, when the build used one.
    triple: Option<String>,
    /// The cargo profile name (`dev` for the `debug` directory).
    profile: String,
}

fn build_dir() -> BuildDir {
    // The test executable is `<target-dir>[/<triple>]/<profile>/deps/e2e-<hash>`.
    let exe = std::env::current_exe().expect("path of the test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("test executable {} is not in <profile>/deps", exe.display()))
        .to_path_buf();
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some(name) => name.to_owned(),
        None => panic!("no profile directory name in {}", profile_dir.display()),
    };
    let parent = profile_dir
        .parent()
        .expect("profile directory has a parent");
    // Cargo marks the target directory itself with CACHEDIR.TAG; `<target-dir>/<triple>` has none.
    let (target_dir, triple) = if parent.join("CACHEDIR.TAG").is_file() {
        (parent.to_path_buf(), None)
    } else {
        let target_dir = parent
            .parent()
            .expect("target triple directory has a parent");
        assert!(
            target_dir.join("CACHEDIR.TAG").is_file(),
            "cannot find cargo's target directory above {}",
            profile_dir.display()
        );
        let triple = parent
            .file_name()
            .and_then(|name| name.to_str())
            .map(str::to_owned);
        (target_dir.to_path_buf(), triple)
    };
    BuildDir {
        profile_dir,
        target_dir,
        triple,
        profile,
    }
}

/// The path of a workspace binary, built by the same profile (and target) as this test.
///
/// The binaries are (re)built once per test process before the first use, so a test never runs a stale
/// binary; when they are up to date cargo does nothing. (`tests/` is its own package, so cargo's
/// `CARGO_BIN_EXE_<name>` is not available here.)
pub(crate) fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<BuildDir> = OnceLock::new();
    assert!(
        BINARIES.contains(&name),
        "{name} is not a binary of this workspace"
    );
    let dir = BUILT.get_or_init(|| {
        let dir = build_dir();
        build_binaries(&dir);
        dir
    });
    let path = dir.profile_dir.join(name);
    assert!(
        path.is_file(),
        "{} does not exist after the build",
        path.display()
    );
    path
}

fn build_binaries(dir: &BuildDir) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root())
        .arg("build")
        .arg("--profile")
        .arg(&dir.profile)
        .arg("--target-dir")
        .arg(&dir.target_dir);
    if let Some(triple) = &dir.triple {
        cmd.arg("--target").arg(triple);
    }
    // Every target of the workspace, as the test run itself built them: the binaries then get the
    // same features as in that build (the dev-dependencies add some to shared crates), so cargo
    // finds them built. `-p` of the three binaries alone resolved other features and rebuilt
    // about thirty crates, minutes of CPU beside the tests, in every test run.
    cmd.arg("--workspace").arg("--all-targets");
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "building the binaries failed:\n{}",
        describe(&cmd, &out)
    );
}

/// Runs a command to completion, capturing stdout and stderr.
pub(crate) fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|err| panic!("cannot start {cmd:?}: {err}"))
}

/// The command, its exit status and its output, for assertion messages.
pub(crate) fn describe(cmd: &Command, out: &Output) -> String {
    format!(
        "command: {cmd:?}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs a command that must succeed; returns its stdout as UTF-8.
pub(crate) fn run_ok(cmd: &mut Command) -> (String, Output) {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "command failed:\n{}",
        describe(cmd, &out)
    );
    let stdout = String::from_utf8(out.stdout.clone())
        .unwrap_or_else(|err| panic!("stdout is not UTF-8: {err}\n{}", describe(cmd, &out)));
    (stdout, out)
}

/// Runs a command that must fail; returns its stderr as text.
pub(crate) fn run_failing(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        !out.status.success(),
        "expected a failure:\n{}",
        describe(cmd, &out)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A server a test started, killed by its own PID (and reaped) when the guard drops — also when
/// the test fails.
pub(crate) struct KillOnDrop(pub(crate) std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `cmd` until it succeeds, for clients of a server that has just started and may not
/// listen yet; fails the test with the last output after about ten seconds.
pub(crate) fn retry(cmd: &mut Command) -> Output {
    let mut last = run(cmd);
    for _ in 0..100 {
        if last.status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        last = run(cmd);
    }
    assert!(
        last.status.success(),
        "never succeeded:\n{}",
        describe(cmd, &last)
    );
    last
}

/// `kk-install ARGS`.
pub(crate) fn kk_install_command(args: &[&str]) -> Command {
    let mut cmd = Command::new(binary("kk-install"));
    cmd.args(args);
    cmd
}

/// `kk-install ARGS[0] --bundle BUNDLE ARGS[1..]`.
pub(crate) fn kk_install(args: &[&str], bundle: &Path) -> Command {
    let mut cmd = kk_install_command(&args[..1]);
    cmd.arg("--bundle").arg(bundle).args(&args[1..]);
    cmd
}

/// `skopeo inspect --raw` of `image` on the plain-HTTP registry at `registry` (`host:port`).
pub(crate) fn skopeo_raw(registry: &str, image: &str) -> Command {
    let mut cmd = Command::new("skopeo");
    cmd.args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{registry}/{image}"));
    cmd
}

/// An env file the lab scripts write: `KEY=VALUE` lines, values with spaces in double quotes
/// (so that bash can source it).
pub(crate) fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| {
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

/// The PID a lab script recorded in `path`.
pub(crate) fn read_pid(path: &Path) -> u32 {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|err| panic!("{}: {text:?}: {err}", path.display()))
}

//! The upstream lab from Rust: `scripts/lab/upstream.sh` brings up a real registry and file server on
//! loopback; [`Lab`] starts one on ports the test picks, reads its env file, and stops it again
//! (also when the test panics). Tests using it belong in a `lab::` module: they share the lab
//! directory and run one at a time (`.config/nextest.toml`).

use std::collections::BTreeMap;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{describe, parse_env, read_pid, run, run_ok, target_dir, workspace_root};

/// A running upstream lab (`scripts/lab/upstream.sh up`), stopped on drop.
#[derive(Debug)]
pub(crate) struct Lab {
    dir: PathBuf,
    env: BTreeMap<String, String>,
    up: bool,
}

impl Lab {
    /// The lab directory the end-to-end tests share: seeded content stays between tests and runs
    /// (each part is stamped), so only the first `up` of a machine pays for seeding.
    pub(crate) fn default_dir() -> PathBuf {
        target_dir().join("lab/upstream-e2e")
    }

    /// Brings the lab in `dir` up on two free loopback ports and reads its env file.
    pub(crate) fn up(dir: &Path) -> Self {
        let [registry_port, http_port] = free_ports();
        let mut cmd = upstream(dir, "up");
        cmd.env("REGISTRY_PORT", registry_port.to_string())
            .env("HTTP_PORT", http_port.to_string());
        let (stdout, _) = run_ok(&mut cmd);
        let env_file = fs::read_to_string(dir.join("env"))
            .unwrap_or_else(|err| panic!("{}/env after `up`: {err}", dir.display()));
        assert_eq!(stdout, env_file, "`up` prints the env file it writes");
        let env = parse_env(&env_file);
        let lab = Self {
            dir: dir.to_path_buf(),
            env,
            up: true,
        };
        assert_eq!(
            lab.var("KK_LAB_REGISTRY"),
            format!("127.0.0.1:{registry_port}")
        );
        assert_eq!(
            lab.var("KK_LAB_HTTP"),
            format!("http://127.0.0.1:{http_port}")
        );
        lab
    }

    /// A variable of the lab's env file (`KK_LAB_REGISTRY`, `KK_LAB_HTTP`, `KK_LAB_HELM`, ...).
    pub(crate) fn var(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("the lab's env file has no {key}: {:?}", self.env))
    }

    /// `127.0.0.1:PORT` of the registry.
    pub(crate) fn registry(&self) -> &str {
        self.var("KK_LAB_REGISTRY")
    }

    /// `http://127.0.0.1:PORT` of the file server.
    pub(crate) fn http(&self) -> &str {
        self.var("KK_LAB_HTTP")
    }

    /// The lab directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// A command with every variable of the lab's env file set (the helm homes among them, so
    /// helm writes nothing to `$HOME`).
    pub(crate) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.envs(&self.env);
        cmd
    }

    /// The real helm the lab uses, with the lab's helm homes.
    pub(crate) fn helm(&self) -> Command {
        self.command(self.var("KK_LAB_HELM"))
    }

    /// Replaces the file server's fault rules (atomically: the server reads them per request).
    pub(crate) fn set_faults(&self, json: &str) {
        let path = PathBuf::from(self.var("KK_LAB_FAULTS"));
        let tmp = path.with_extension("json.test-tmp");
        fs::write(&tmp, json).unwrap_or_else(|err| panic!("{}: {err}", tmp.display()));
        fs::rename(&tmp, &path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    }

    /// The fault rules left (consumed ones are gone), as the server rewrote them.
    pub(crate) fn faults(&self) -> String {
        fs::read_to_string(self.var("KK_LAB_FAULTS")).unwrap_or_default()
    }

    /// The file server's access log: one entry per request so far.
    pub(crate) fn access_log(&self) -> Vec<AccessEntry> {
        let text = fs::read_to_string(self.var("KK_LAB_HTTP_LOG")).unwrap_or_default();
        text.lines().filter_map(AccessEntry::parse).collect()
    }

    /// The PIDs `up` recorded for the registry and the file server.
    pub(crate) fn pids(&self) -> Vec<u32> {
        ["registry/pid", "fileserver/pid"]
            .iter()
            .map(|file| read_pid(&self.dir.join(file)))
            .collect()
    }

    /// `scripts/lab/upstream.sh down`.
    pub(crate) fn down(mut self) {
        self.up = false;
        run_ok(&mut upstream(&self.dir, "down"));
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if self.up {
            // A failed test: stop the servers anyway, and do not panic while unwinding.
            let mut cmd = upstream(&self.dir, "down");
            let out = run(&mut cmd);
            if !out.status.success() {
                eprintln!("stopping the lab failed:\n{}", describe(&cmd, &out));
            }
        }
    }
}

/// One line of the file server's access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AccessEntry {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The Range header, if the request had one.
    pub(crate) range: Option<String>,
    pub(crate) status: u16,
    pub(crate) body_bytes: u64,
    /// The injected fault's mode, if one applied.
    pub(crate) fault: Option<String>,
}

impl AccessEntry {
    fn parse(line: &str) -> Option<Self> {
        let fields: Vec<&str> = line.split(' ').collect();
        let optional = |field: &str| (field != "-").then(|| field.to_owned());
        match fields.as_slice() {
            [method, path, range, status, bytes, fault, _time] => Some(Self {
                method: (*method).to_owned(),
                path: (*path).to_owned(),
                range: optional(range),
                status: status.parse().ok()?,
                body_bytes: bytes.parse().ok()?,
                fault: optional(fault),
            }),
            _ => None,
        }
    }
}

/// A loopback port that was free a moment ago.
pub(crate) fn free_port() -> u16 {
    let [port] = free_ports();
    port
}

/// `N` distinct loopback ports that were free a moment ago. Every listener stays bound until all
/// are picked: one released before the next bind can come back again (it did, in CI), and two
/// servers told the same port leave one of them failing.
pub(crate) fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port"))
        .collect();
    std::array::from_fn(|i| {
        listeners[i]
            .local_addr()
            .expect("address of a bound listener")
            .port()
    })
}

/// Whether `pid` has ended: no such process, or a zombie waiting for PID 1 to reap it (a zombie
/// runs nothing; `kill -0` would still succeed on it, LAB-NOTES pitfall P11).
pub(crate) fn process_gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// `bash scripts/lab/upstream.sh ACTION` for the lab in `dir`, run from another directory to show
/// that the script does not depend on the working directory.
fn upstream(dir: &Path, action: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.current_dir(std::env::temp_dir())
        .arg(workspace_root().join("scripts/lab/upstream.sh"))
        .arg(action)
        .env("LAB_DIR", dir)
        .env_remove("REGISTRY_PORT")
        .env_remove("HTTP_PORT");
    cmd
}

//! The lab's existing registry for `image_registry.type: external`: Debian's real
//! `docker-registry` with TLS (a CA made with `kk-install registry cert`) and basic auth
//! (htpasswd, bcrypt), behind a stand-in of Harbor (`scripts/lab/harbor-api.py`), shared by the
//! install tests that pull through an external registry (containerd's and docker's).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::labkit::free_ports;
use crate::support::{KillOnDrop, binary, run, run_ok, workspace_root};

/// The registry's user.
pub(crate) const USER: &str = "pusher";
/// Its password.
pub(crate) const PASSWORD: &str = "right-horse-battery-staple";
/// A password it refuses.
pub(crate) const WRONG: &str = "wrong-horse-xyzzy";
/// The variable the config names for the password.
pub(crate) const PASSWORD_ENV: &str = "KK_LAB_REGISTRY_PASSWORD";

/// The registry and the Harbor stand-in in front of it, stopped by PID when dropped.
pub(crate) struct External {
    /// `docker-registry` itself, `ip:port` (TLS, basic auth).
    pub(crate) direct: String,
    /// The Harbor stand-in, `ip:port`.
    pub(crate) harbor: String,
    /// The CA both certificates chain to.
    pub(crate) ca: PathBuf,
    _processes: Vec<KillOnDrop>,
}

impl External {
    /// Both on `ip` (the host's address on the nodes' bridge), on ports the test chose.
    pub(crate) fn start(dir: &Path, ip: &str) -> Self {
        let pki = dir.join("registry-pki");
        run_ok(
            Command::new(binary("kk-install"))
                .args(["registry", "cert", "--ca-out"])
                .arg(&pki)
                .args(["--names", ip]),
        );
        let htpasswd = dir.join("htpasswd");
        run_ok(
            Command::new("htpasswd")
                .arg("-Bbc")
                .arg(&htpasswd)
                .args([USER, PASSWORD]),
        );
        let [registry_port, harbor_port] = free_ports();
        let config = dir.join("registry.yml");
        fs::write(
            &config,
            format!(
                "version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem: {{rootdirectory: {data}}}\n\
                 http:\n  addr: {ip}:{registry_port}\n  tls: {{certificate: {cert}, key: {key}}}\n\
                 auth:\n  htpasswd: {{realm: lab, path: {htpasswd}}}\n",
                data = dir.join("registry-data").display(),
                cert = pki.join("registry.crt").display(),
                key = pki.join("registry.key").display(),
                htpasswd = htpasswd.display(),
            ),
        )
        .expect("registry config");
        let registry = spawn(Command::new("docker-registry").arg("serve").arg(&config));
        let direct = format!("{ip}:{registry_port}");
        let harbor = spawn(
            Command::new("python3")
                .arg(workspace_root().join("scripts/lab/harbor-api.py"))
                .args([ip, &harbor_port.to_string()])
                .arg(pki.join("registry.crt"))
                .arg(pki.join("registry.key"))
                .arg(format!("https://{direct}"))
                .arg(pki.join("ca.crt")),
        );
        let external = Self {
            direct,
            harbor: format!("{ip}:{harbor_port}"),
            ca: pki.join("ca.crt"),
            _processes: vec![registry, harbor],
        };
        external.wait();
        external
    }

    /// Until both answer `/v2/` over TLS (401 without credentials).
    fn wait(&self) {
        let started = Instant::now();
        for address in [&self.direct, &self.harbor] {
            loop {
                let out = self.curl(
                    &["-o", "/dev/null", "-w", "%{http_code}"],
                    &format!("https://{address}/v2/"),
                );
                if out == "401" {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "{address} does not answer: {out}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// `curl -s ARGS URL` trusting the CA; its stdout.
    pub(crate) fn curl(&self, args: &[&str], url: &str) -> String {
        let out = run(Command::new("curl")
            .args(["-s", "--cacert"])
            .arg(&self.ca)
            .args(args)
            .arg(url));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The HTTP status of a project call to the stand-in with the right credentials.
    pub(crate) fn project_call(&self, method: &str, path: &str, body: Option<&str>) -> String {
        let mut args = vec![
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-u",
            "pusher:right-horse-battery-staple",
            "-X",
            method,
        ];
        if let Some(body) = body {
            args.extend(["-H", "Content-Type: application/json", "-d", body]);
        }
        self.curl(&args, &format!("https://{}{path}", self.harbor))
    }
}

fn spawn(cmd: &mut Command) -> KillOnDrop {
    KillOnDrop(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    )
}

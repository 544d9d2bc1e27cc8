//! The node labs from Rust: bring one up in a test, reach its nodes, bring it down again (also
//! when the test fails). Two kinds with the same interface and env file: `scripts/lab/nodes.sh`
//! (network namespaces with sshd as PID 1, no systemd) and `scripts/lab/nspawn.sh` (real Debian
//! machines with systemd, one systemd-nspawn container each: the install lab).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{describe, parse_env, read_pid, run, run_ok, workspace_root};

/// Which lab script runs the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `scripts/lab/nodes.sh`: sshd as PID 1 of a PID namespace, the host's file system overlaid.
    Netns,
    /// `scripts/lab/nspawn.sh`: systemd as PID 1 of a systemd-nspawn container, Debian's minbase
    /// plus openssh-server as the root file system.
    Nspawn,
}

impl Kind {
    /// The script, relative to the repository.
    pub(crate) fn script(self) -> &'static str {
        match self {
            Kind::Netns => "scripts/lab/nodes.sh",
            Kind::Nspawn => "scripts/lab/nspawn.sh",
        }
    }
}

/// A node lab this test brought up; `down` on drop, also when the test panics.
#[derive(Debug)]
pub(crate) struct Nodes {
    pub(crate) kind: Kind,
    pub(crate) dir: PathBuf,
    pub(crate) prefix: String,
    pub(crate) net: String,
    pub(crate) env: BTreeMap<String, String>,
    /// Whether dropping the guard runs `down`.
    pub(crate) up: bool,
}

impl Nodes {
    /// `nodes.sh up COUNT` with its state in `dir`, names starting with `prefix` and
    /// addresses in `net`.0/24.
    pub(crate) fn up(dir: &Path, prefix: &str, net: &str, count: usize) -> Self {
        Self::up_kind(Kind::Netns, dir, prefix, net, count)
    }

    /// `nspawn.sh up COUNT`, as `up` does for `nodes.sh`.
    pub(crate) fn up_nspawn(dir: &Path, prefix: &str, net: &str, count: usize) -> Self {
        Self::up_kind(Kind::Nspawn, dir, prefix, net, count)
    }

    /// `up` of the lab script of `kind`.
    pub(crate) fn up_kind(kind: Kind, dir: &Path, prefix: &str, net: &str, count: usize) -> Self {
        let mut nodes = Self {
            kind,
            dir: dir.to_path_buf(),
            prefix: prefix.to_owned(),
            net: net.to_owned(),
            env: BTreeMap::new(),
            // Set before `up` runs: a half-made lab is cleaned up too.
            up: true,
        };
        let mut cmd = nodes.script("up");
        cmd.arg(count.to_string());
        let (stdout, _) = run_ok(&mut cmd);
        let env_file = fs::read_to_string(dir.join("env"))
            .unwrap_or_else(|err| panic!("{}/env after `up`: {err}", dir.display()));
        assert_eq!(stdout, env_file, "`up` prints the env file it writes");
        nodes.env = parse_env(&env_file);
        nodes
    }

    /// A lab of `count` nodes in `dir` with a prefix and a /24 of its own, so that it collides
    /// with no other lab on the machine.
    pub(crate) fn start(dir: &Path, count: usize) -> Self {
        let prefix = format!("kkt{}", std::process::id() % 100_000);
        Self::up(dir, &prefix, &free_net(), count)
    }

    /// `start` for the nspawn lab: `count` real systemd machines (the first `up` on a machine
    /// also builds the base image, cached in `target/lab/images`).
    pub(crate) fn start_nspawn(dir: &Path, count: usize) -> Self {
        let prefix = format!("kkn{}", std::process::id() % 100_000);
        Self::up_nspawn(dir, &prefix, &free_net(), count)
    }

    /// `bash scripts/lab/<kind's script> ACTION` for this lab, run from another directory to
    /// show that the script does not depend on the working directory.
    pub(crate) fn script(&self, action: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.current_dir(std::env::temp_dir())
            .arg(workspace_root().join(self.kind.script()))
            .arg(action)
            .env("NODES_DIR", &self.dir)
            .env("NODES_PREFIX", &self.prefix)
            .env("NODES_NET", &self.net);
        cmd
    }

    pub(crate) fn var(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("the node lab's env file has no {key}: {:?}", self.env))
    }

    pub(crate) fn ips(&self) -> Vec<String> {
        self.var("KK_NODES_IPS")
            .split(' ')
            .map(str::to_owned)
            .collect()
    }

    /// The PIDs `up` recorded: unshare's, whose child is the node's sshd (`nodes.sh`), or
    /// systemd-nspawn's (`nspawn.sh`).
    pub(crate) fn pids(&self) -> Vec<u32> {
        (1..=self.ips().len())
            .map(|i| read_pid(&self.dir.join(format!("nodes/n{i}/pid"))))
            .collect()
    }

    /// The OpenSSH client as a strict installer would run it: the lab's client key, host keys
    /// checked against `known_hosts` only, no prompts, no user or system `ssh_config`.
    pub(crate) fn ssh_with(
        &self,
        known_hosts: &Path,
        user: &str,
        ip: &str,
        command: &str,
    ) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.args(["-F", "none", "-i", self.var("KK_NODES_KEY")])
            .args(["-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"])
            .args(["-o", "StrictHostKeyChecking=yes"])
            .args([
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "ConnectTimeout=5",
            ])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
            .arg(format!("{user}@{ip}"))
            .arg(command);
        cmd
    }

    pub(crate) fn ssh(&self, user: &str, ip: &str, command: &str) -> Command {
        self.ssh_with(
            Path::new(self.var("KK_NODES_KNOWN_HOSTS")),
            user,
            ip,
            command,
        )
    }

    /// Runs `command` as root on the node at `ip`; its stdout.
    pub(crate) fn on(&self, ip: &str, command: &str) -> String {
        run_ok(&mut self.ssh("root", ip, command)).0
    }

    pub(crate) fn down(mut self) {
        self.up = false;
        run_ok(&mut self.script("down"));
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        if self.up {
            // A failed test: stop the nodes anyway, and do not panic while unwinding.
            let mut cmd = self.script("down");
            let out = run(&mut cmd);
            if !out.status.success() {
                eprintln!(
                    "stopping the node lab ({}) failed:\n{}",
                    self.kind.script(),
                    describe(&cmd, &out)
                );
            }
        }
    }
}

/// A /24 of 10.250.0.0/16 that no interface of this machine uses right now, so that the test
/// does not collide with a node lab someone runs by hand (10.250.0.0/24 by default).
pub(crate) fn free_net() -> String {
    let (addresses, _) = run_ok(Command::new("ip").args(["-o", "-4", "addr", "show"]));
    let start = 100 + std::process::id() % 100;
    (start..250)
        .chain(100..start)
        .map(|octet| format!("10.250.{octet}"))
        .find(|net| !addresses.contains(&format!(" {net}.")))
        .expect("a free /24 in 10.250.100.0-10.250.249.0")
}

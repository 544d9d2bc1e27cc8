//! The node lab (`scripts/lab/nodes.sh`): "machines" that are network namespaces on a bridge, each
//! with a real sshd as PID 1 of its own PID namespace, checked with the OpenSSH client the way the
//! installer's tests will use them. Needs root (as every test machine of this project runs).

/// In a `lab::` module: the node lab uses network namespaces, a bridge and cgroups of the machine,
/// so it runs one test at a time with the other lab tests (`.config/nextest.toml`).
mod lab {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use crate::labkit::process_gone;
    use crate::nodekit::{Nodes, free_net};
    use crate::support::{describe, run, run_ok};

    fn ip_output(args: &[&str]) -> String {
        run_ok(Command::new("ip").args(args)).0
    }

    #[test]
    fn three_nodes_answer_over_ssh_in_isolation_and_go_away_on_down() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("nodes");
        // Names no other lab on this machine uses (the default prefix is kklab).
        let prefix = format!("kkt{}", std::process::id() % 100_000);
        let net = free_net();
        let nodes = Nodes::up(&dir, &prefix, &net, 3);

        let host_keys = check_env(&nodes, &dir);
        check_each_node(&nodes);
        check_copy_on_write(&nodes);
        check_sysctls_per_node(&nodes);
        check_host_keys_are_verified(&nodes, &host_keys, tmp.path());
        check_users(&nodes, tmp.path());
        check_sftp(&nodes, tmp.path());

        // `up` again keeps the running nodes; `status` reports them.
        let pids = nodes.pids();
        let mut again = Nodes::up(&dir, &prefix, &net, 3);
        again.up = false; // the same lab: `nodes` brings it down
        assert_eq!(
            again.pids(),
            pids,
            "a second `up` must not restart the nodes"
        );
        assert_eq!(again.env, nodes.env);
        let (status, _) = run_ok(&mut nodes.script("status"));
        for i in 1..=3 {
            assert!(status.contains(&format!("node{i}: running")), "{status}");
        }

        check_down(nodes, &pids);
    }

    /// The env file `up` wrote; returns the host keys of `known_hosts` (`TYPE KEY`), by node.
    fn check_env(nodes: &Nodes, dir: &Path) -> Vec<String> {
        let net = &nodes.net;
        assert_eq!(
            nodes.ips(),
            [
                format!("{net}.11"),
                format!("{net}.12"),
                format!("{net}.13")
            ]
        );
        assert_eq!(nodes.var("KK_NODES_COUNT"), "3");
        assert_eq!(nodes.var("KK_NODES_NAMES"), "node1 node2 node3");
        assert_eq!(nodes.var("KK_NODES_USER"), "root");
        assert_eq!(nodes.var("KK_NODES_HOST_IP"), format!("{net}.1"));
        assert_eq!(nodes.var("KK_NODES_BRIDGE"), format!("{}br0", nodes.prefix));
        assert_eq!(nodes.var("KK_NODES_DIR"), dir.to_str().expect("UTF-8 path"));
        let known_hosts =
            fs::read_to_string(nodes.var("KK_NODES_KNOWN_HOSTS")).expect("known_hosts");
        let host_keys: Vec<String> = known_hosts
            .lines()
            .map(|line| line.split_once(' ').expect("known_hosts line").1.to_owned())
            .collect();
        assert_eq!(host_keys.len(), 3, "one host key per node:\n{known_hosts}");
        assert!(
            host_keys.iter().all(|key| key.starts_with("ssh-ed25519 ")),
            "{known_hosts}"
        );
        assert!(
            host_keys[0] != host_keys[1]
                && host_keys[1] != host_keys[2]
                && host_keys[0] != host_keys[2],
            "every node has its own host key:\n{known_hosts}"
        );
        host_keys
    }

    /// Each node: its hostname, sshd as PID 1, and a /proc that shows only its own processes.
    fn check_each_node(nodes: &Nodes) {
        for (i, ip) in nodes.ips().iter().enumerate() {
            let out = nodes.on(ip, "hostname; cat /proc/1/comm; ls -d /proc/[0-9]* | wc -l");
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 3, "{out}");
            assert_eq!(lines[0], format!("node{}", i + 1), "hostname of {ip}");
            assert_eq!(lines[1], "sshd", "PID 1 of {ip}");
            let processes: usize = lines[2].parse().expect("a process count");
            assert!(
                processes < 10,
                "{ip} should see only its own few processes, sees {processes}"
            );
        }
    }

    /// Copy-on-write system directories: a node's writes stay in that node.
    fn check_copy_on_write(nodes: &Nodes) {
        let ips = nodes.ips();
        let marker = format!("kk-nodes-lab-{}", nodes.prefix);
        let paths = [
            format!("/etc/kubekey/{marker}"),
            format!("/etc/{marker}"),
            format!("/usr/local/bin/{marker}"),
            format!("/tmp/{marker}"),
            format!("/root/{marker}"),
        ];
        let writes: Vec<String> = paths
            .iter()
            .map(|path| format!("echo node1 > {path}"))
            .collect();
        nodes.on(
            &ips[0],
            &format!("set -e; mkdir -p /etc/kubekey; {}", writes.join("; ")),
        );
        assert_eq!(
            nodes.on(&ips[0], &format!("cat {}", paths.join(" "))),
            "node1\n".repeat(paths.len())
        );
        for path in &paths {
            assert!(
                !Path::new(path).exists(),
                "{path}, written in node1, must not appear on the host"
            );
        }
        assert_eq!(
            nodes.on(
                &ips[1],
                &format!("ls {} 2>/dev/null | wc -l", paths.join(" "))
            ),
            "0\n",
            "node2 must not see node1's files"
        );
    }

    /// Sysctls of the network stack belong to the node's network namespace.
    fn check_sysctls_per_node(nodes: &Nodes) {
        let ips = nodes.ips();
        let sysctl = "/proc/sys/net/ipv4/ip_forward";
        let host = fs::read_to_string(sysctl).expect("ip_forward");
        let flipped = if host.trim() == "1" { "0" } else { "1" };
        let second_before = nodes.on(&ips[1], &format!("cat {sysctl}"));
        assert_eq!(
            nodes.on(&ips[0], &format!("echo {flipped} > {sysctl}; cat {sysctl}")),
            format!("{flipped}\n")
        );
        assert_eq!(
            fs::read_to_string(sysctl).expect("ip_forward"),
            host,
            "the host's net.ipv4.ip_forward must not change"
        );
        assert_eq!(nodes.on(&ips[1], &format!("cat {sysctl}")), second_before);
    }

    /// Strict host key checking: an empty `known_hosts`, or another node's key, is refused.
    fn check_host_keys_are_verified(nodes: &Nodes, host_keys: &[String], tmp: &Path) {
        let ips = nodes.ips();
        let empty = tmp.join("known_hosts.empty");
        fs::write(&empty, "").expect("write empty known_hosts");
        let wrong = tmp.join("known_hosts.wrong");
        fs::write(&wrong, format!("{} {}\n", ips[0], host_keys[1])).expect("write known_hosts");
        for file in [&empty, &wrong] {
            let mut cmd = nodes.ssh_with(file, "root", &ips[0], "true");
            let out = run(&mut cmd);
            assert!(
                !out.status.success(),
                "ssh must refuse an unknown host key:\n{}",
                describe(&cmd, &out)
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("Host key verification failed"),
                "{}",
                describe(&cmd, &out)
            );
        }
    }

    /// The non-root user logs in by key and by password (sshd's own check of /etc/shadow), with
    /// passwordless sudo where sudo is installed; root logs in by key only.
    fn check_users(nodes: &Nodes, tmp: &Path) {
        let ip = &nodes.ips()[2];
        let user = nodes.var("KK_NODES_NONROOT_USER");
        assert_eq!(run_ok(&mut nodes.ssh(user, ip, "id -un")).0.trim(), user);
        if !nodes.var("KK_NODES_SUDO_USER").is_empty() {
            assert_eq!(
                run_ok(&mut nodes.ssh(user, ip, "sudo -n id -u")).0.trim(),
                "0"
            );
        }
        let askpass = tmp.join("askpass.sh");
        fs::write(
            &askpass,
            format!("#!/bin/sh\necho '{}'\n", nodes.var("KK_NODES_PASSWORD")),
        )
        .expect("write askpass");
        run_ok(Command::new("chmod").arg("755").arg(&askpass));
        let password_ssh = |user: &str| {
            let mut cmd = Command::new("ssh");
            cmd.args(["-F", "none", "-o", "StrictHostKeyChecking=yes"])
                .arg("-o")
                .arg(format!(
                    "UserKnownHostsFile={}",
                    nodes.var("KK_NODES_KNOWN_HOSTS")
                ))
                .args(["-o", "PubkeyAuthentication=no"])
                .args(["-o", "PreferredAuthentications=password"])
                .args(["-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=5"])
                .arg(format!("{user}@{ip}"))
                .arg("id -un")
                .env("SSH_ASKPASS", &askpass)
                .env("SSH_ASKPASS_REQUIRE", "force");
            cmd
        };
        let password_user = nodes.var("KK_NODES_PASSWORD_USER");
        assert_eq!(
            run_ok(&mut password_ssh(password_user)).0.trim(),
            password_user
        );
        let mut root_password = password_ssh("root");
        let out = run(&mut root_password);
        assert!(
            !out.status.success(),
            "root logs in by key only:\n{}",
            describe(&root_password, &out)
        );
    }

    /// SFTP (what scp uses in OpenSSH 9) puts a file on a node.
    fn check_sftp(nodes: &Nodes, tmp: &Path) {
        let ip = &nodes.ips()[1];
        let payload = tmp.join("payload");
        fs::write(&payload, format!("sftp to the node lab {}\n", nodes.prefix))
            .expect("write payload");
        let batch = tmp.join("sftp-batch");
        fs::write(&batch, format!("put {} /root/payload\n", payload.display()))
            .expect("write batch");
        let mut sftp = Command::new("sftp");
        sftp.args(["-F", "none", "-i", nodes.var("KK_NODES_KEY")])
            .args(["-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"])
            .args(["-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!(
                "UserKnownHostsFile={}",
                nodes.var("KK_NODES_KNOWN_HOSTS")
            ))
            .arg("-b")
            .arg(&batch)
            .arg(format!("root@{ip}"));
        run_ok(&mut sftp);
        assert_eq!(
            nodes.on(ip, "cat /root/payload"),
            fs::read_to_string(&payload).expect("payload")
        );
    }

    /// `down`: processes, namespaces, veths, bridge, cgroups and mounts are gone.
    fn check_down(nodes: Nodes, pids: &[u32]) {
        let dir = nodes.dir.clone();
        let prefix = nodes.prefix.clone();
        let cgroups: Vec<PathBuf> = (1..=3)
            .flat_map(|i| {
                let path = dir.join(format!("nodes/n{i}/cgroups"));
                fs::read_to_string(&path)
                    .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
                    .lines()
                    .map(|line| PathBuf::from(line.split(' ').next().expect("cgroup dir")))
                    .collect::<Vec<_>>()
            })
            .collect();
        for cgroup in &cgroups {
            assert!(
                cgroup.is_dir(),
                "{} exists while the lab is up",
                cgroup.display()
            );
        }
        let mut status = nodes.script("status");
        nodes.down();

        for &pid in pids {
            assert!(process_gone(pid), "node process {pid} survives `down`");
        }
        let namespaces = ip_output(&["netns", "list"]);
        assert!(
            !namespaces.contains(&format!("{prefix}-n")),
            "namespaces left after `down`:\n{namespaces}"
        );
        let links = ip_output(&["-o", "link", "show"]);
        assert!(
            !links.contains(&prefix),
            "links left after `down`:\n{links}"
        );
        let mut bridge = Command::new("ip");
        bridge.args(["link", "show", &format!("{prefix}br0")]);
        let out = run(&mut bridge);
        assert!(
            !out.status.success(),
            "the bridge survives `down`:\n{}",
            describe(&bridge, &out)
        );
        for cgroup in &cgroups {
            assert!(!cgroup.exists(), "{} survives `down`", cgroup.display());
        }
        let mounts = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        assert!(
            !mounts.contains(dir.to_str().expect("UTF-8 path")),
            "mounts of the lab left on the host:\n{mounts}"
        );
        assert!(!dir.join("env").exists(), "`down` removes the env file");
        let out = run(&mut status);
        assert_eq!(out.status.code(), Some(3), "{}", describe(&status, &out));
    }
}

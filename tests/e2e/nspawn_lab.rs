//! The install lab (`scripts/lab/nspawn.sh`): real Debian machines with systemd as PID 1, one
//! systemd-nspawn container each, on a bridge with no route out. Checked with the OpenSSH client
//! the way the installer's tests use them. Needs root, `mmdebstrap` and `systemd-nspawn`
//! (scripts/setup.sh); the first run on a machine builds the base image (target/lab/images).

/// In a `lab::` module: the lab uses network namespaces, a bridge, mounts and cgroups of the
/// machine, so it runs one test at a time with the other lab tests (`.config/nextest.toml`).
mod lab {
    use std::collections::BTreeSet;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use crate::labkit::process_gone;
    use crate::nodekit::{Kind, Nodes};
    use crate::support::{describe, retry, run, run_ok};

    #[test]
    fn nspawn_nodes_boot_systemd_each_with_its_own_name_and_key_and_no_route_out() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("nspawn");
        let nodes = Nodes::start_nspawn(&dir, 3);
        assert_eq!(nodes.kind, Kind::Nspawn);

        check_env(&nodes, &dir);
        check_each_node(&nodes);
        check_host_keys(&nodes);
        check_no_route_out(&nodes);
        check_ssh_config(&nodes);
        check_veth_cuts_a_node_off(&nodes);

        // `up` again keeps the running nodes; `status` reports them.
        let pids = nodes.pids();
        let mut again = Nodes::up_nspawn(&dir, &nodes.prefix, &nodes.net, 3);
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

    #[test]
    fn nspawn_node_runs_units_and_down_removes_the_cgroups_it_made() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("nspawn");
        let nodes = Nodes::start_nspawn(&dir, 1);
        let ip = &nodes.ips()[0];

        // A service installed the way an installer does: unit file, daemon-reload, enable --now.
        nodes.on(
            ip,
            "set -e
             printf '[Unit]\\nDescription=kk lab test\\n[Service]\\nExecStart=/bin/sleep infinity\\n\
             [Install]\\nWantedBy=multi-user.target\\n' > /etc/systemd/system/kk-lab-test.service
             systemctl daemon-reload
             systemctl enable --now --quiet kk-lab-test.service",
        );
        assert_eq!(
            nodes.on(ip, "systemctl is-active kk-lab-test.service"),
            "active\n"
        );
        assert_eq!(
            nodes.on(ip, "systemctl is-enabled kk-lab-test.service"),
            "enabled\n"
        );

        // The v1 controllers are writable in the node (cgroup-rw.service), as runc needs them,
        // and what the node makes there lies below the node's own cgroups on the host: nested
        // cgroups with a process in them, as runc leaves for a container.
        nodes.on(
            ip,
            "set -e
             for c in cpu memory pids cpuset; do mkdir -p /sys/fs/cgroup/$c/k8s.io/kk-lab-test; done
             cat /sys/fs/cgroup/cpuset/cpuset.cpus > /sys/fs/cgroup/cpuset/k8s.io/cpuset.cpus
             cat /sys/fs/cgroup/cpuset/cpuset.mems > /sys/fs/cgroup/cpuset/k8s.io/cpuset.mems
             cat /sys/fs/cgroup/cpuset/cpuset.cpus > /sys/fs/cgroup/cpuset/k8s.io/kk-lab-test/cpuset.cpus
             cat /sys/fs/cgroup/cpuset/cpuset.mems > /sys/fs/cgroup/cpuset/k8s.io/kk-lab-test/cpuset.mems
             setsid sleep 1000 < /dev/null > /dev/null 2>&1 &
             for c in cpu memory pids cpuset; do
               echo $! > /sys/fs/cgroup/$c/k8s.io/kk-lab-test/cgroup.procs
             done",
        );
        let node_cgroup = format!("{}-n1", nodes.prefix);
        let made: Vec<PathBuf> = cgroup_dirs(&node_cgroup)
            .into_iter()
            .map(|dir| dir.join("k8s.io/kk-lab-test"))
            .filter(|dir| dir.is_dir())
            .collect();
        assert_eq!(
            made.len(),
            4,
            "the node's cgroups in cpu, memory, pids and cpuset lie below the node's: {made:?}"
        );
        for dir in &made {
            let procs = fs::read_to_string(dir.join("cgroup.procs")).expect("cgroup.procs");
            assert!(
                !procs.trim().is_empty(),
                "{} holds the sleep",
                dir.display()
            );
        }
        assert!(
            !Path::new("/sys/fs/cgroup/cpu/k8s.io/kk-lab-test").exists(),
            "nothing lands in the host's own cgroup tree"
        );

        let pids = nodes.pids();
        check_down(nodes, &pids);
    }

    /// The env file: the keys of `nodes.sh` (without its non-root user) plus the kind and the
    /// host-side veths.
    fn check_env(nodes: &Nodes, dir: &Path) {
        let net = &nodes.net;
        assert_eq!(nodes.var("KK_NODES_KIND"), "nspawn");
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
        let prefix = &nodes.prefix;
        let names = format!("{prefix}-n1 {prefix}-n2 {prefix}-n3");
        assert_eq!(nodes.var("KK_NODES_NETNS"), names);
        assert_eq!(nodes.var("KK_NODES_VETHS"), names);
        assert_eq!(nodes.var("KK_NODES_USER"), "root");
        assert_eq!(nodes.var("KK_NODES_PORT"), "22");
        assert_eq!(nodes.var("KK_NODES_HOST_IP"), format!("{net}.1"));
        assert_eq!(nodes.var("KK_NODES_CIDR"), format!("{net}.0/24"));
        assert_eq!(nodes.var("KK_NODES_BRIDGE"), format!("{prefix}br0"));
        assert_eq!(nodes.var("KK_NODES_DIR"), dir.to_str().expect("UTF-8 path"));
        for key in [
            "KK_NODES_KEY",
            "KK_NODES_PUBKEY",
            "KK_NODES_KNOWN_HOSTS",
            "KK_NODES_SSH_CONFIG",
        ] {
            assert!(Path::new(nodes.var(key)).is_file(), "{key}");
        }
    }

    /// Each node: its own hostname and machine id, systemd as PID 1 done booting, the data
    /// directories bound from real directories of the lab.
    fn check_each_node(nodes: &Nodes) {
        let mut machine_ids = BTreeSet::new();
        for (i, ip) in nodes.ips().iter().enumerate() {
            let out = nodes.on(
                ip,
                "hostname; cat /proc/1/comm; systemctl is-system-running || true; \
                 cat /etc/machine-id; findmnt -no FSTYPE /var/lib/containerd; findmnt -no FSTYPE /",
            );
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 6, "{out}");
            assert_eq!(lines[0], format!("node{}", i + 1), "hostname of {ip}");
            assert_eq!(lines[1], "systemd", "PID 1 of {ip}");
            assert!(
                lines[2] == "running" || lines[2] == "degraded",
                "{ip}: systemd state {}",
                lines[2]
            );
            assert_eq!(lines[3].len(), 32, "machine id of {ip}: {}", lines[3]);
            machine_ids.insert(lines[3].to_owned());
            assert_eq!(lines[4], "ext4", "{ip}: /var/lib/containerd is no overlay");
            assert_eq!(lines[5], "overlay", "{ip}: the root is an overlay");
        }
        assert_eq!(machine_ids.len(), 3, "every node has its own machine id");
    }

    /// `known_hosts` lists one ed25519 key per node, by IP and name, and it is the key the node
    /// serves (ssh checks strictly); every node has its own.
    fn check_host_keys(nodes: &Nodes) {
        let known_hosts =
            fs::read_to_string(nodes.var("KK_NODES_KNOWN_HOSTS")).expect("known_hosts");
        let lines: Vec<&str> = known_hosts.lines().collect();
        assert_eq!(lines.len(), 3, "{known_hosts}");
        let mut keys = BTreeSet::new();
        for (i, ip) in nodes.ips().iter().enumerate() {
            let (hosts, key) = lines[i].split_once(' ').expect("known_hosts line");
            assert_eq!(hosts, format!("{ip},node{}", i + 1));
            assert!(key.starts_with("ssh-ed25519 "), "{key}");
            let served = nodes.on(ip, "cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub");
            assert_eq!(served.trim(), key, "{ip} serves the key known_hosts lists");
            assert_eq!(
                nodes.on(ip, "ls /etc/ssh/ | grep -c '^ssh_host_.*_key$'"),
                "1\n",
                "{ip} has only its own ed25519 host key"
            );
            keys.insert(key.to_owned());
        }
        assert_eq!(
            keys.len(),
            3,
            "every node has its own host key:\n{known_hosts}"
        );
    }

    /// No default route: the node reaches its /24 (the host's bridge address answers) and
    /// nothing else.
    fn check_no_route_out(nodes: &Nodes) {
        let ip = &nodes.ips()[0];
        let routes = nodes.on(ip, "ip -4 route");
        let routes: Vec<&str> = routes.lines().collect();
        assert_eq!(routes.len(), 1, "{routes:?}");
        assert!(
            routes[0].starts_with(&format!("{}.0/24 dev eth0", nodes.net)),
            "{routes:?}"
        );
        assert_eq!(nodes.on(ip, "ip -6 route | grep -c default || true"), "0\n");
        let out = nodes.on(
            ip,
            "timeout 5 bash -c 'exec 3<>/dev/tcp/10.251.0.1/80' 2>&1 || true",
        );
        assert!(out.contains("Network is unreachable"), "{out}");
        // The host's bridge address is reachable: a closed port refuses at once.
        let out = nodes.on(
            ip,
            &format!(
                "timeout 5 bash -c 'exec 3<>/dev/tcp/{}/1' 2>&1 || true",
                nodes.var("KK_NODES_HOST_IP")
            ),
        );
        assert!(out.contains("Connection refused"), "{out}");
        // So is another node.
        let other = &nodes.ips()[1];
        let out = nodes.on(
            ip,
            &format!("timeout 5 bash -c 'exec 3<>/dev/tcp/{other}/22' && echo open"),
        );
        assert_eq!(out, "open\n");
    }

    /// `ssh -F KK_NODES_SSH_CONFIG nodeN` works without further options.
    fn check_ssh_config(nodes: &Nodes) {
        let mut cmd = Command::new("ssh");
        cmd.args(["-F", nodes.var("KK_NODES_SSH_CONFIG"), "node2", "hostname"]);
        assert_eq!(run_ok(&mut cmd).0, "node2\n");
    }

    /// `ip link set VETH down` on the host cuts that node off; `up` brings it back.
    fn check_veth_cuts_a_node_off(nodes: &Nodes) {
        let veth = nodes
            .var("KK_NODES_VETHS")
            .split(' ')
            .next()
            .expect("a veth")
            .to_owned();
        run_ok(Command::new("ip").args(["link", "set", &veth, "down"]));
        let mut cut = Command::new("ssh");
        cut.args(["-F", nodes.var("KK_NODES_SSH_CONFIG")]).args([
            "-o",
            "ConnectTimeout=2",
            "node1",
            "true",
        ]);
        let out = run(&mut cut);
        run_ok(Command::new("ip").args(["link", "set", &veth, "up"]));
        assert!(
            !out.status.success(),
            "node1 must be unreachable with {veth} down:\n{}",
            describe(&cut, &out)
        );
        // Back: the bridge port may take a moment to forward again.
        let mut back = Command::new("ssh");
        back.args(["-F", nodes.var("KK_NODES_SSH_CONFIG"), "node1", "hostname"]);
        let out = retry(&mut back);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "node1\n");
    }

    /// The cgroup directories named `name` below every hierarchy of the host (a few levels
    /// deep: the lab's cgroups lie below the cgroup of whoever started it).
    fn cgroup_dirs(name: &str) -> Vec<PathBuf> {
        fn walk(dir: &Path, name: &str, depth: usize, found: &mut Vec<PathBuf>) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if !path.is_dir() {
                    continue;
                }
                if entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with(name))
                {
                    found.push(path);
                } else if depth > 0 {
                    walk(&path, name, depth - 1, found);
                }
            }
        }
        let mut found = Vec::new();
        walk(Path::new("/sys/fs/cgroup"), name, 4, &mut found);
        found
    }

    /// `down`: nspawn processes, mounts, namespaces, veths, bridge, cgroups and node file systems
    /// are gone; host keys stay; a second `down` is fine.
    fn check_down(nodes: Nodes, pids: &[u32]) {
        let dir = nodes.dir.clone();
        let prefix = nodes.prefix.clone();
        let count = pids.len();
        let node_prefix = format!("{prefix}-n");
        assert!(
            !cgroup_dirs(&node_prefix).is_empty(),
            "the nodes have cgroups while the lab is up"
        );
        let mut status = nodes.script("status");
        let mut down_again = nodes.script("down");
        nodes.down();

        for &pid in pids {
            assert!(process_gone(pid), "systemd-nspawn {pid} survives `down`");
        }
        let namespaces = run_ok(Command::new("ip").args(["netns", "list"])).0;
        assert!(
            !namespaces.contains(&node_prefix),
            "namespaces left after `down`:\n{namespaces}"
        );
        let links = run_ok(Command::new("ip").args(["-o", "link", "show"])).0;
        assert!(
            !links.contains(&prefix),
            "links left after `down`:\n{links}"
        );
        let cgroups = cgroup_dirs(&node_prefix);
        assert!(cgroups.is_empty(), "cgroups left after `down`: {cgroups:?}");
        let mounts = fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        let dir_text = dir.to_str().expect("UTF-8 path");
        let left: Vec<&str> = mounts
            .lines()
            .filter(|line| line.contains(dir_text) || line.contains(&format!(" {node_prefix}")))
            .collect();
        assert!(
            left.is_empty(),
            "mounts of the lab left on the host: {left:#?}"
        );
        for i in 1..=count {
            let node = dir.join(format!("nodes/n{i}"));
            for gone in ["upper", "work", "data", "root", "pid"] {
                assert!(
                    !node.join(gone).exists(),
                    "{}/{gone} survives `down`",
                    node.display()
                );
            }
            assert!(
                node.join("ssh/ssh_host_ed25519_key").is_file(),
                "host keys stay, so that known_hosts stays valid"
            );
            assert!(
                !Path::new(&format!("/run/systemd/nspawn/propagate/{prefix}-n{i}")).exists(),
                "nspawn's propagate directory goes"
            );
        }
        assert!(!dir.join("env").exists(), "`down` removes the env file");
        let out = run(&mut status);
        assert_eq!(out.status.code(), Some(3), "{}", describe(&status, &out));
        run_ok(&mut down_again);
    }
}

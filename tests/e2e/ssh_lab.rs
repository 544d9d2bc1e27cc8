//! The installer's SSH layer (`kk_install::ssh`) and fact gathering against real OpenSSH sshd
//! on the node lab: host keys checked, key and password login, `sudo -n` for a non-root user,
//! verified uploads, time limits, and one-round-trip facts.

/// In a `lab::` module: these tests bring up the node lab (`.config/nextest.toml`).
mod lab {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use kk_install::error::SshError;
    use kk_install::facts;
    use kk_install::ssh::{
        Auth, Connector, HostKeyPolicy, Node, NodeLog, Password, Target, Timeouts, fan_out,
    };

    use std::process::Command;

    use bundle_spec::test_support::{TestImage, write_images};

    use crate::install_bundle::layer;
    use crate::nodekit::Nodes;
    use crate::support::{KillOnDrop, binary, retry, run_ok};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    }

    fn target(nodes: &Nodes, index: usize, user: &str, auth: Auth) -> Target {
        Target {
            name: format!("node{}", index + 1),
            connector: Connector::Ssh {
                host: nodes.ips()[index].clone(),
                port: 22,
                user: user.to_owned(),
                auth,
            },
        }
    }

    fn key(nodes: &Nodes) -> Auth {
        Auth::Key(PathBuf::from(nodes.var("KK_NODES_KEY")))
    }

    fn policy(known_hosts: &Path, accept_new: bool) -> HostKeyPolicy {
        HostKeyPolicy {
            known_hosts: known_hosts.to_path_buf(),
            accept_new,
        }
    }

    fn lab_policy(nodes: &Nodes) -> HostKeyPolicy {
        policy(Path::new(nodes.var("KK_NODES_KNOWN_HOSTS")), false)
    }

    async fn connect(target: &Target, policy: &HostKeyPolicy, log: NodeLog) -> Node {
        Node::connect(target, policy, Timeouts::default(), log)
            .await
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", target.name))
    }

    #[test]
    fn facts_come_from_every_node_in_one_round_trip_each() {
        let tmp = tempfile::tempdir().expect("tmp");
        let nodes = Nodes::start(&tmp.path().join("nodes"), 3);
        let targets: Vec<Target> = (0..3)
            .map(|i| target(&nodes, i, "root", key(&nodes)))
            .collect();
        let policy = lab_policy(&nodes);
        let logs = tmp.path().join("logs");
        let gathered = runtime().block_on(fan_out(&targets, 2, |t| {
            let (policy, logs) = (&policy, &logs);
            async move {
                let log = NodeLog::open(logs, &t.name).expect("log");
                let node = connect(t, policy, log).await;
                let facts = facts::gather(&node).await;
                node.close().await;
                facts
            }
        }));
        for (i, facts) in gathered.into_iter().enumerate() {
            let facts = facts.expect("facts");
            let ip = &nodes.ips()[i];
            assert_eq!(facts.hostname, format!("node{}", i + 1));
            assert!(facts.has_address(ip), "{ip} in {:?}", facts.addresses);
            assert!(facts.port_in_use(22).is_some(), "{:?}", facts.listening);
            assert_eq!(facts.uid, 0);
            assert_eq!(facts.arch(), "amd64");
            assert!(facts.memory_bytes > 0 && facts.cpus > 0);
            assert!(facts.has_command("mount"), "{:?}", facts.commands);
            assert!(facts.clock_offset.abs() < 60.0, "{}", facts.clock_offset);
            let log = fs::read_to_string(logs.join(format!("node{}.log", i + 1))).expect("log");
            assert_eq!(
                log.lines().filter(|l| l.starts_with("exit ")).count(),
                1,
                "one command per node:\n{log}"
            );
        }
        nodes.down();
    }

    #[test]
    fn unknown_and_changed_host_keys_are_refused_and_new_ones_recorded_on_request() {
        let tmp = tempfile::tempdir().expect("tmp");
        let nodes = Nodes::start(&tmp.path().join("nodes"), 2);
        let first = target(&nodes, 0, "root", key(&nodes));
        let empty = tmp.path().join("known_hosts");
        fs::write(&empty, "").expect("known_hosts");
        let rt = runtime();

        let refused = rt.block_on(Node::connect(
            &first,
            &policy(&empty, false),
            Timeouts::default(),
            NodeLog::discard(),
        ));
        let message = match refused {
            Err(error @ SshError::UnknownHostKey { .. }) => error.to_string(),
            other => panic!("an unknown host key must be refused, got {other:?}"),
        };
        assert!(
            message.contains("node1") && message.contains("SHA256:"),
            "{message}"
        );
        assert_eq!(fs::read_to_string(&empty).expect("read"), "");

        let node = rt.block_on(connect(&first, &policy(&empty, true), NodeLog::discard()));
        rt.block_on(node.close());
        let recorded = fs::read_to_string(&empty).expect("read");
        assert!(recorded.contains(&nodes.ips()[0]), "{recorded}");
        // Recorded: the next connection needs no opt-in.
        let node = rt.block_on(connect(&first, &policy(&empty, false), NodeLog::discard()));
        rt.block_on(node.close());

        // node2's key written for node1's address: a changed key, refused even with opt-in.
        let lab_hosts = fs::read_to_string(nodes.var("KK_NODES_KNOWN_HOSTS")).expect("read");
        let second_key = lab_hosts
            .lines()
            .find(|l| l.starts_with(&format!("{},", nodes.ips()[1])))
            .and_then(|l| l.split_once(' '))
            .expect("node2's key")
            .1;
        let changed = tmp.path().join("known_hosts.changed");
        fs::write(
            &changed,
            format!("# kept\n{} {second_key}\n", nodes.ips()[0]),
        )
        .expect("write");
        let refused = rt.block_on(Node::connect(
            &first,
            &policy(&changed, true),
            Timeouts::default(),
            NodeLog::discard(),
        ));
        match refused {
            Err(SshError::ChangedHostKey { line, node, .. }) => {
                assert_eq!((line, node.as_str()), (2, "node1"));
            }
            other => panic!("a changed host key must be refused, got {other:?}"),
        }
        nodes.down();
    }

    #[test]
    fn a_password_user_works_through_sudo_and_uploads_are_verified_in_place() {
        let tmp = tempfile::tempdir().expect("tmp");
        let nodes = Nodes::start(&tmp.path().join("nodes"), 1);
        let password = nodes.var("KK_NODES_PASSWORD").to_owned();
        let user = nodes.var("KK_NODES_PASSWORD_USER").to_owned();
        let policy = lab_policy(&nodes);
        let logs = tmp.path().join("logs");
        let rt = runtime();

        let wrong = target(
            &nodes,
            0,
            &user,
            Auth::Password(Password::new("not-the-password")),
        );
        match rt.block_on(Node::connect(
            &wrong,
            &policy,
            Timeouts::default(),
            NodeLog::discard(),
        )) {
            Err(error @ SshError::Auth { .. }) => {
                assert!(!error.to_string().contains("not-the-password"), "{error}");
            }
            other => panic!("a wrong password must be refused, got {other:?}"),
        }

        let by_password = target(&nodes, 0, &user, Auth::Password(Password::new(&password)));
        let node = rt.block_on(connect(
            &by_password,
            &policy,
            NodeLog::open(&logs, "node1").expect("log"),
        ));
        let sudo = !nodes.var("KK_NODES_SUDO_USER").is_empty();
        let id = rt.block_on(node.run("id -u")).expect("id");
        if sudo {
            assert_eq!(
                id.stdout_text().trim(),
                "0",
                "commands run as root through sudo -n"
            );
        }

        let payload = tmp.path().join("payload");
        let bytes: Vec<u8> = (0..1_500_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&payload, &bytes).expect("payload");
        let to = if sudo {
            "/usr/local/bin/kk-payload"
        } else {
            "/tmp/kk-payload"
        };
        rt.block_on(node.upload(&payload, to, 0o755))
            .expect("upload");
        let check = rt
            .block_on(node.run_checked(&format!(
                "sha256sum {to}; stat -c %a {to}; ls -A $(dirname {to})"
            )))
            .expect("check");
        let text = check.stdout_text();
        assert!(
            text.contains(&bundle_spec::Sha256Digest::of(&bytes).hex()),
            "{text}"
        );
        assert!(text.lines().any(|l| l == "755"), "{text}");
        assert!(
            !text.contains(".kk-upload-"),
            "no staging file is left: {text}"
        );

        let timed_out = rt.block_on(node.run_within("sleep 30", Duration::from_secs(1)));
        assert!(
            matches!(timed_out, Err(SshError::Timeout { seconds: 1, .. })),
            "{timed_out:?}"
        );
        // A command that prints without end is ended at the limit, not held in memory until
        // its time limit; the connection stays usable.
        let flood = rt.block_on(node.run("yes kk | head -c 100000000; sleep 600"));
        assert!(
            matches!(&flood, Err(SshError::OutputTooLarge { node, stream: "stdout", .. }) if node == "node1"),
            "{flood:?}"
        );
        let after = rt.block_on(node.run_checked("echo after")).expect("after");
        assert_eq!(after.stdout_text().trim(), "after");
        let failed = rt.block_on(node.run_checked("echo broken >&2; exit 7"));
        match failed {
            Err(error @ SshError::CommandFailed { code: Some(7), .. }) => {
                assert!(error.to_string().contains("broken"), "{error}");
            }
            other => panic!("exit 7 must fail, got {other:?}"),
        }
        rt.block_on(node.close());
        let log = fs::read_to_string(logs.join("node1.log")).expect("log");
        assert!(log.contains("$ id -u") && log.contains("exit 7"), "{log}");
        assert!(
            !log.contains(&password),
            "the password reached the log:\n{log}"
        );
        nodes.down();
    }

    #[test]
    fn rsa_and_ecdsa_keys_log_in_and_the_agent_is_used_when_no_key_is_given() {
        let tmp = tempfile::tempdir().expect("tmp");
        let nodes = Nodes::start(&tmp.path().join("nodes"), 1);
        let ip = nodes.ips()[0].clone();
        let rt = runtime();
        for (kind, bits) in [("rsa", "3072"), ("ecdsa", "256")] {
            let key = tmp.path().join(format!("id_{kind}"));
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", kind, "-b", bits, "-N", "", "-f"])
                    .arg(&key),
            );
            let public = fs::read_to_string(key.with_extension("pub")).expect("public key");
            nodes.on(
                &ip,
                &format!("echo '{}' >> /root/.ssh/authorized_keys", public.trim()),
            );
            let node = rt.block_on(connect(
                &target(&nodes, 0, "root", Auth::Key(key)),
                &lab_policy(&nodes),
                NodeLog::discard(),
            ));
            let out = rt.block_on(node.run_checked("hostname")).expect("run");
            assert_eq!(out.stdout_text(), "node1\n", "{kind} key");
            rt.block_on(node.close());
        }

        // No key and no password in the inventory: the agent of SSH_AUTH_SOCK is asked.
        let socket = tmp.path().join("agent.sock");
        let agent = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("ssh-agent");
        let _agent = KillOnDrop(agent);
        let mut add = Command::new("ssh-add");
        add.arg(nodes.var("KK_NODES_KEY"))
            .env("SSH_AUTH_SOCK", &socket);
        retry(&mut add);
        let inventory = tmp.path().join("inventory.yaml");
        fs::write(
            &inventory,
            format!(
                "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nspec:\n  hosts:\n    node1: {{internal_ipv4: {ip}}}\n  groups:\n    kube_control_plane: {{hosts: [node1]}}\n    etcd: {{hosts: [node1]}}\n"
            ),
        )
        .expect("inventory");
        let bundle = write_images(
            tmp.path(),
            "b",
            &[TestImage {
                reference: "docker.io/library/app:1",
                layers: &[&layer(1_000, 2)],
            }],
            None,
        )
        .path;
        let mut precheck = Command::new(binary("kk-install"));
        precheck
            .args([
                "precheck",
                "--output",
                "json",
                "--fio-size",
                "1m",
                "--bundle",
            ])
            .arg(&bundle)
            .arg("-i")
            .arg(&inventory)
            .arg("--known-hosts")
            .arg(nodes.var("KK_NODES_KNOWN_HOSTS"))
            .arg("--work-dir")
            .arg(tmp.path().join("work"))
            .env("SSH_AUTH_SOCK", &socket)
            .env("HOME", tmp.path());
        let out = crate::support::run(&mut precheck);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", crate::support::describe(&precheck, &out)));
        assert!(
            report["nodes"]["node1"]
                .as_array()
                .is_some_and(|l| !l.is_empty()),
            "node1 was reached through the agent: {report:#}"
        );
        nodes.down();
    }

    #[test]
    fn the_local_connector_runs_the_same_steps_on_this_machine() {
        let tmp = tempfile::tempdir().expect("tmp");
        let local = Target {
            name: "localhost".into(),
            connector: Connector::Local,
        };
        let rt = runtime();
        let node = rt.block_on(connect(
            &local,
            &policy(&tmp.path().join("unused"), false),
            NodeLog::discard(),
        ));
        let out = rt
            .block_on(node.run_checked("echo $((6 * 7))"))
            .expect("run");
        assert_eq!(out.stdout_text(), "42\n");
        let payload = tmp.path().join("payload");
        fs::write(&payload, b"local bytes").expect("payload");
        let to = tmp.path().join("dir/copied");
        rt.block_on(node.upload(&payload, to.to_str().expect("utf-8"), 0o600))
            .expect("upload");
        assert_eq!(fs::read(&to).expect("copied"), b"local bytes");
        let facts = rt.block_on(facts::gather(&node)).expect("facts");
        assert!(!facts.kernel.is_empty() && facts.cpus > 0, "{facts:?}");
    }
}

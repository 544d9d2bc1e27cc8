//! `kk-install precheck` and the hooks on three lab nodes, as an operator runs them: a
//! KubeKey-shaped inventory and config, the node lab's key and `known_hosts`, a bundle. A
//! prepared cluster passes; then one fault at a time on one node makes the right check fail on
//! that node only.

/// In a `lab::` module: these tests bring up the node lab (`.config/nextest.toml`).
mod lab {
    use std::fmt::Write as _;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use serde_json::Value;

    use bundle_spec::test_support::{TestImage, write_images};

    use crate::install_bundle::layer;
    use crate::nodekit::Nodes;
    use crate::support::{kk_install_command, run, run_failing, run_ok};

    /// A lab of three nodes prepared for the checks (`ip_forward` on, as the install's os phase
    /// would leave it), plus the operator's files.
    struct Cluster {
        nodes: Nodes,
        dir: PathBuf,
        bundle: PathBuf,
    }

    impl Cluster {
        fn start(tmp: &Path) -> Self {
            let nodes = Nodes::start(&tmp.join("nodes"), 3);
            for ip in nodes.ips() {
                nodes.on(&ip, "echo 1 > /proc/sys/net/ipv4/ip_forward");
            }
            let bundle = write_images(
                tmp,
                "cluster",
                &[TestImage {
                    reference: "docker.io/library/app:1",
                    layers: &[&layer(10_000, 1)],
                }],
                None,
            )
            .path;
            let cluster = Self {
                nodes,
                dir: tmp.to_path_buf(),
                bundle,
            };
            cluster.write_inventory(["node1", "node2", "node3"]);
            cluster.write_config(1700);
            cluster
        }

        fn write_inventory(&self, names: [&str; 3]) {
            let ips = self.nodes.ips();
            let mut text = String::from(
                "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata:\n  name: lab\nspec:\n  hosts:\n",
            );
            for (name, ip) in names.iter().zip(&ips) {
                let _ = write!(
                    text,
                    "    {name}:\n      connector:\n        host: {ip}\n        private_key: {}\n      internal_ipv4: {ip}\n",
                    self.nodes.var("KK_NODES_KEY")
                );
            }
            let _ = write!(
                text,
                "  groups:\n    kube_control_plane:\n      hosts: [{a}]\n    kube_worker:\n      hosts: [{b}, {c}]\n    etcd:\n      hosts: [{a}]\n    image_registry:\n      hosts: [{a}]\n    k8s_cluster:\n      groups: [kube_control_plane, kube_worker]\n",
                a = names[0],
                b = names[1],
                c = names[2]
            );
            fs::write(self.dir.join("inventory.yaml"), text).expect("inventory");
        }

        fn write_config(&self, control_plane_memory_mb: u64) {
            fs::write(
                self.dir.join("config.yaml"),
                format!(
                    "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata:\n  name: lab\nspec:\n  kubernetes:\n    kube_version: v1.31.4\n  cni:\n    type: none\n  cluster_require:\n    minimal_master_memory_mb: {control_plane_memory_mb}\n"
                ),
            )
            .expect("config");
        }

        fn kk_install(&self, args: &[&str]) -> Command {
            self.kk_install_trusting(args, Path::new(self.nodes.var("KK_NODES_KNOWN_HOSTS")))
        }

        fn kk_install_trusting(&self, args: &[&str], known_hosts: &Path) -> Command {
            let mut cmd = kk_install_command(args);
            cmd.arg("--bundle")
                .arg(&self.bundle)
                .arg("-i")
                .arg(self.dir.join("inventory.yaml"))
                .arg("-c")
                .arg(self.dir.join("config.yaml"))
                .arg("--known-hosts")
                .arg(known_hosts)
                .arg("--work-dir")
                .arg(self.dir.join("work"))
                .args(["--fio-size", "2m"])
                // The test bundle carries one image and no runtime binaries.
                .args(["--ignore", "cri.container_manager"]);
            cmd
        }

        /// `precheck --output json`; the parsed report, and whether the command succeeded.
        fn precheck(&self) -> (Value, bool) {
            let mut cmd = self.kk_install(&["precheck", "--output", "json"]);
            let out = run(&mut cmd);
            let report = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", crate::support::describe(&cmd, &out)));
            (report, out.status.success())
        }
    }

    /// `(node, id)` of every failed check; `node` is `cluster` for cluster checks.
    fn failures(report: &Value) -> Vec<(String, String)> {
        let mut failed = Vec::new();
        let nodes = report["nodes"].as_object().expect("nodes");
        let lists = nodes
            .iter()
            .map(|(n, l)| (n.clone(), l))
            .chain([("cluster".to_owned(), &report["cluster"])]);
        for (node, list) in lists {
            for check in list.as_array().expect("checks") {
                if check["status"] == "fail" {
                    failed.push((node.clone(), check["id"].as_str().expect("id").to_owned()));
                }
            }
        }
        failed
    }

    fn message<'a>(report: &'a Value, node: &str, id: &str) -> &'a str {
        report["nodes"][node]
            .as_array()
            .and_then(|l| l.iter().find(|c| c["id"] == id))
            .and_then(|c| c["message"].as_str())
            .unwrap_or_else(|| panic!("no {id} for {node}: {report:#}"))
    }

    fn status<'a>(report: &'a Value, node: &str, id: &str) -> &'a str {
        report["nodes"][node]
            .as_array()
            .and_then(|l| l.iter().find(|c| c["id"] == id))
            .and_then(|c| c["status"].as_str())
            .unwrap_or_else(|| panic!("no {id} for {node}: {report:#}"))
    }

    fn only(node: &str, id: &str) -> Vec<(String, String)> {
        vec![(node.to_owned(), id.to_owned())]
    }

    #[test]
    fn a_prepared_lab_passes_and_each_fault_fails_its_check_on_its_node_only() {
        let tmp = tempfile::tempdir().expect("tmp");
        let cluster = Cluster::start(tmp.path());
        let ips = cluster.nodes.ips();

        let (report, ok) = cluster.precheck();
        assert_eq!(failures(&report), [], "a prepared lab passes: {report:#}");
        assert!(ok);
        assert_eq!(
            report["nodes"]["node2"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["id"] == "kubeadm.port.6443"))
                .map(|c| c["status"].clone()),
            Some("skip".into()),
            "control-plane ports are skipped on a worker"
        );
        let facts = fs::read_to_string(tmp.path().join("work/facts/node1.json")).expect("facts");
        assert!(facts.contains("\"hostname\": \"node1\""), "{facts}");

        // ip_forward is per network namespace: off on node2 only. The install's os phase turns
        // it on, so before the install that is `set`, not a failure.
        cluster
            .nodes
            .on(&ips[1], "echo 0 > /proc/sys/net/ipv4/ip_forward");
        let (report, ok) = cluster.precheck();
        assert_eq!(failures(&report), [], "{report:#}");
        assert!(ok, "what the install sets does not fail the command");
        assert_eq!(status(&report, "node2", "kubeadm.ip_forward"), "set");
        assert!(
            message(&report, "node2", "kubeadm.ip_forward")
                .contains("set by the install: now net.ipv4.ip_forward = 0")
        );
        assert_eq!(status(&report, "node1", "kubeadm.ip_forward"), "pass");
        cluster
            .nodes
            .on(&ips[1], "echo 1 > /proc/sys/net/ipv4/ip_forward");

        // Port 6443 taken on the control plane.
        cluster.nodes.on(
            &ips[0],
            "setsid nohup python3 -m http.server --bind 0.0.0.0 6443 >/dev/null 2>&1 < /dev/null & \
             echo $! > /root/port.pid; \
             for i in $(seq 50); do grep -q ':192B ' /proc/net/tcp && break; sleep 0.1; done",
        );
        let (report, ok) = cluster.precheck();
        assert_eq!(failures(&report), only("node1", "kubeadm.port.6443"));
        assert!(message(&report, "node1", "kubeadm.port.6443").contains("6443"));
        assert!(!ok, "a failed check fails the command");
        cluster.nodes.on(&ips[0], "kill \"$(cat /root/port.pid)\"");

        // Commands missing on node3 (hidden in node3's own mount namespace): socat is one
        // kubeadm only warns about, nsenter one it requires.
        cluster
            .nodes
            .on(&ips[2], "mount --bind /dev/null \"$(command -v socat)\"");
        let (report, ok) = cluster.precheck();
        assert_eq!(failures(&report), [], "{report:#}");
        assert!(ok);
        assert_eq!(status(&report, "node3", "kubeadm.commands"), "warn");
        assert!(message(&report, "node3", "kubeadm.commands").contains("`socat`"));
        cluster
            .nodes
            .on(&ips[2], "mount --bind /dev/null \"$(command -v nsenter)\"");
        let (report, _) = cluster.precheck();
        assert_eq!(failures(&report), only("node3", "kubeadm.commands"));
        let text = message(&report, "node3", "kubeadm.commands");
        assert!(
            text.contains("`nsenter`") && text.contains("`socat`"),
            "{text}"
        );
        cluster.nodes.on(
            &ips[2],
            "umount \"$(command -v socat)\"; umount \"$(command -v nsenter)\"",
        );

        // More memory required of the control plane than node1 has.
        cluster.write_config(64 * 1024 * 1024);
        let (report, _) = cluster.precheck();
        assert_eq!(failures(&report), only("node1", "os.memory"));
        cluster.write_config(1700);

        // An inventory name that cannot be a host name.
        cluster.write_inventory(["node1", "node2", "Node_3"]);
        let (report, _) = cluster.precheck();
        assert_eq!(failures(&report), only("Node_3", "os.hostname"));
        cluster.write_inventory(["node1", "node2", "node3"]);

        // A changed host key is a refused connection, not a check result.
        let known_hosts = tmp.path().join("known_hosts.changed");
        let lab = fs::read_to_string(cluster.nodes.var("KK_NODES_KNOWN_HOSTS")).expect("read");
        let keys: Vec<&str> = lab.lines().collect();
        let key_of = |line: &str| line.split_once(' ').expect("entry").1.to_owned();
        let swapped = format!(
            "{}\n{} {}\n{}\n",
            keys[0],
            keys[1].split_once(' ').expect("entry").0,
            key_of(keys[2]),
            keys[2]
        );
        fs::write(&known_hosts, swapped).expect("write");
        let err = run_failing(&mut cluster.kk_install_trusting(&["precheck"], &known_hosts));
        assert!(
            err.contains("node2") && err.contains("line 2"),
            "the changed key is named: {err}"
        );

        // Unknown keys: refused, unless the operator opts in; then recorded.
        let empty = tmp.path().join("known_hosts.empty");
        fs::write(&empty, "").expect("write");
        let err = run_failing(&mut cluster.kk_install_trusting(&["precheck"], &empty));
        assert!(err.contains("--accept-new-host-keys"), "{err}");
        run_ok(&mut cluster.kk_install_trusting(&["precheck", "--accept-new-host-keys"], &empty));
        let learned = fs::read_to_string(&empty).expect("read");
        for ip in &ips {
            assert!(learned.contains(ip.as_str()), "{ip} recorded: {learned}");
        }
        cluster.nodes.down();
    }
}

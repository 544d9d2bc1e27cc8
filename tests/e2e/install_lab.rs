//! The install on real systemd nodes (systemd-nspawn, no route out of their /24), as an operator
//! runs it: a bundle built from the version catalog against the upstream lab (Debian's real
//! containerd, runc, CNI plugins and etcd shaped as upstream's release files; stand-ins only for
//! kubeadm, kubelet, kubectl and crictl), a KubeKey-shaped inventory and config, then
//! `kk-install --bundle B -i INV -c CFG`. Every image a node runs can only have come through
//! kk's registry.

/// In a `lab::` module: these tests bring up nodes and the upstream lab (`.config/nextest.toml`).
pub(crate) mod lab {
    pub(crate) mod pins;

    use std::collections::BTreeMap;
    use std::fmt::Write as _;
    use std::fs;
    use std::io::{BufRead as _, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};

    use serde_json::Value;

    use crate::bundle_lab::catalog_manifest_with;
    use crate::labkit::Lab;
    use crate::nodekit::Nodes;
    use crate::support::{binary, kk_install_command, run, run_failing, run_ok};

    /// A pull by original name through `certs.d`, of the node's platform only as the CRI plugin
    /// pulls (ctr 2.x would fetch every platform's manifest of an index unless told to skip them).
    pub(crate) const CTR_PULL: &str = "ctr -n k8s.io images pull $(ctr images pull --help | grep -q -e --skip-metadata && echo --skip-metadata) --hosts-dir /etc/containerd/certs.d";

    /// The Kubernetes version the bundle is built for (kubeadm's preflight of v1.33 no longer
    /// requires conntrack, which a minimal server lacks).
    pub(crate) const VERSION: &str = "v1.33.0";

    /// A lab cluster: the upstream lab, a bundle built from the catalog, nspawn nodes, and the
    /// inventory and config in a directory.
    pub(crate) struct Cluster {
        lab: Lab,
        pub(crate) nodes: Nodes,
        pub(crate) dir: PathBuf,
        pub(crate) bundle: PathBuf,
    }

    impl Cluster {
        /// Three nodes named `names`: the first control plane and registry, the others
        /// workers, etcd on all.
        fn start(tmp: &Path, names: [&str; 3]) -> Self {
            let cluster = Self::start_nodes(tmp, 3);
            let [first, second, third] = names;
            cluster.write_inventory_named(
                &names,
                &format!(
                    "    kube_control_plane: {{hosts: [{first}]}}\n    kube_worker: {{hosts: [{second}, {third}]}}\n    etcd: {{hosts: [{first}, {second}, {third}]}}\n    image_registry: {{hosts: [{first}]}}\n"
                ),
            );
            cluster.write_config("  etcd: {deployment_type: external}\n  image_registry:\n    type: kk\n    auth: {registry: \"dockerhub.kubekey.local:5443\"}\n");
            cluster
        }

        /// `count` nodes and the bundle; no inventory or config yet.
        pub(crate) fn start_nodes(tmp: &Path, count: usize) -> Self {
            Self::start_nodes_with(tmp, count, |_| Vec::new())
        }

        /// [`Self::start_nodes`] with the bundle's manifest rendered with the options
        /// `manifest_options` gives for the lab (`scripts/lab/catalog-manifest.py`'s).
        pub(crate) fn start_nodes_with(
            tmp: &Path,
            count: usize,
            manifest_options: impl FnOnce(&Lab) -> Vec<String>,
        ) -> Self {
            Self::start_with_manifest(tmp, count, |lab, dir| {
                let options = manifest_options(lab);
                let options: Vec<&str> = options.iter().map(String::as_str).collect();
                catalog_manifest_with(lab, dir, VERSION, &options).0
            })
        }

        /// `count` nodes and the bundle built from the manifest `manifest` writes into the
        /// directory it is given, against the lab.
        pub(crate) fn start_with_manifest(
            tmp: &Path,
            count: usize,
            manifest: impl FnOnce(&Lab, &Path) -> PathBuf,
        ) -> Self {
            let lab = Lab::up(&Lab::default_dir());
            let manifest = manifest(&lab, tmp);
            let bundle = build_manifest(&manifest, tmp, "cluster.tar.zst");
            let nodes = Nodes::start_nspawn(&tmp.join("nodes"), count);
            Self {
                lab,
                nodes,
                dir: tmp.to_path_buf(),
                bundle,
            }
        }

        /// Another bundle from the same lab, built with `manifest_options` into `name` in the
        /// cluster's directory (set [`Self::bundle`] to install it).
        pub(crate) fn build_bundle(&self, manifest_options: &[&str], name: &str) -> PathBuf {
            build_bundle(&self.lab, &self.dir, manifest_options, name)
        }

        /// The inventory: the first `hosts` nodes (`node1`…) and `groups` (YAML lines under
        /// `groups:`).
        pub(crate) fn write_inventory(&self, hosts: usize, groups: &str) {
            let names: Vec<String> = (1..=hosts).map(|n| format!("node{n}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            self.write_inventory_named(&names, groups);
        }

        /// The inventory: the first nodes, named `names` in order, and `groups`.
        pub(crate) fn write_inventory_named(&self, names: &[&str], groups: &str) {
            let ips = &self.nodes.ips()[..names.len()];
            let mut inventory = String::from(
                "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata:\n  name: lab\nspec:\n  hosts:\n",
            );
            for (name, ip) in names.iter().zip(ips) {
                let _ = write!(
                    inventory,
                    "    {name}:\n      connector: {{host: {ip}, private_key: {key}}}\n      internal_ipv4: {ip}\n",
                    key = self.nodes.var("KK_NODES_KEY"),
                );
            }
            inventory.push_str("  groups:\n");
            inventory.push_str(groups);
            fs::write(self.dir.join("inventory.yaml"), inventory).expect("inventory");
        }

        /// The config, `spec` being its lines under `spec:`.
        pub(crate) fn write_config(&self, spec: &str) {
            fs::write(
                self.dir.join("config.yaml"),
                format!("apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {{name: lab}}\nspec:\n{spec}"),
            )
            .expect("config");
        }

        pub(crate) fn work_dir(&self) -> PathBuf {
            self.dir.join("work")
        }

        /// KubeKey's hooks: `pre_install_<node>.sh` and `post_install_<node>.sh` in the work
        /// directory, each logging its phase, node and mode; plus a script already on node2.
        fn write_hooks(&self) {
            let work = self.work_dir();
            fs::create_dir_all(&work).expect("work dir");
            for phase in ["pre", "post"] {
                for node in ["node1", "node2", "node3"] {
                    fs::write(
                        work.join(format!("{phase}_install_{node}.sh")),
                        format!("#!/bin/sh\necho \"{phase} {node} $(stat -c %a \"$0\")\" >> /root/hooks.log\n"),
                    )
                    .expect("hook");
                }
            }
            self.on(
                1,
                "mkdir -p /etc/kubekey/scripts && printf '#!/bin/sh\\necho extra >> /root/hooks.log\\n' \
                 > /etc/kubekey/scripts/pre_install_aa.sh && chmod 755 /etc/kubekey/scripts/pre_install_aa.sh",
            );
        }

        /// Each node ran its pre hooks (in name order, mode 0755) before anything and its post
        /// hook after everything, once.
        fn assert_hooks_ran_once(&self) {
            for i in 0..3 {
                let node = format!("node{}", i + 1);
                let extra = if i == 1 { "extra\n" } else { "" };
                assert_eq!(
                    self.on(i, "cat /root/hooks.log"),
                    format!("{extra}pre {node} 755\npost {node} 755\n")
                );
            }
        }

        /// `kk-install ARGS` against this cluster, with the lab's `known_hosts`.
        pub(crate) fn kk_install(&self, args: &[&str]) -> Command {
            let mut cmd = kk_install_command(args);
            // `reset`, `certs` and `delete-node` read no bundle.
            let bundle_less = matches!(args.first(), Some(&"reset" | &"certs" | &"delete-node"));
            if !bundle_less {
                cmd.arg("--bundle").arg(&self.bundle);
            }
            cmd.arg("-i")
                .arg(self.dir.join("inventory.yaml"))
                .arg("-c")
                .arg(self.dir.join("config.yaml"))
                .arg("--work-dir")
                .arg(self.work_dir())
                .arg("--known-hosts")
                .arg(self.nodes.var("KK_NODES_KNOWN_HOSTS"));
            if args.first() != Some(&"plan") && !bundle_less {
                cmd.args(["--fio-size", "1m"]);
            }
            cmd
        }

        pub(crate) fn on(&self, node: usize, command: &str) -> String {
            self.nodes.on(&self.nodes.ips()[node], command)
        }

        /// Every file kk recorded on each node that has a record, with its sha256 and mtime, and
        /// the start time of each service kk runs: what a rerun must leave exactly as it was.
        pub(crate) fn fingerprint(&self) -> BTreeMap<String, String> {
            let mut all = BTreeMap::new();
            for (i, ip) in self.nodes.ips().iter().enumerate() {
                // A node outside the inventory (yet) has no record.
                let record = self.on(i, "cat /etc/kubekey/installed.json 2>/dev/null; true");
                if record.is_empty() {
                    continue;
                }
                let record: Value = serde_json::from_str(&record).expect("installed.json");
                let files: Vec<&str> = record["files"]
                    .as_array()
                    .expect("files")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                assert!(!files.is_empty(), "{ip}: installed.json lists no files");
                let listing = self.on(
                    i,
                    &format!(
                        "for f in {}; do echo \"$f $(sha256sum < $f | cut -c1-64) $(stat -c %Y.%a $f)\"; done; \
                         systemctl show -p ActiveEnterTimestampMonotonic containerd etcd kk-registry kubelet 2>/dev/null",
                        files.join(" ")
                    ),
                );
                all.insert(ip.clone(), listing);
            }
            all
        }
    }

    /// `kk-bundle build` of the catalog's manifest for [`VERSION`] with `options`
    /// (`scripts/lab/catalog-manifest.py`'s) into `dir/name`, caching in `dir/cache`.
    fn build_bundle(lab: &Lab, dir: &Path, options: &[&str], name: &str) -> PathBuf {
        let (manifest, _) = catalog_manifest_with(lab, dir, VERSION, options);
        build_manifest(&manifest, dir, name)
    }

    /// `kk-bundle build MANIFEST` into `name` in `dir`, with the build cache there.
    fn build_manifest(manifest: &Path, dir: &Path, name: &str) -> PathBuf {
        let bundle = dir.join(name);
        let mut build = Command::new(binary("kk-bundle"));
        build
            .arg("build")
            .arg(manifest)
            .arg("-o")
            .arg(&bundle)
            .arg("--cache")
            .arg(dir.join("cache"))
            .args(["--level", "3"]);
        run_ok(&mut build);
        bundle
    }

    /// The bundle's image references, from `kk-install inspect`.
    pub(crate) fn images(bundle: &Path) -> Vec<(String, String)> {
        let mut cmd = Command::new(binary("kk-install"));
        cmd.args(["inspect", "--output", "json", "--bundle"])
            .arg(bundle);
        let (out, _) = run_ok(&mut cmd);
        let inspected: Value = serde_json::from_str(&out).expect("inspect json");
        inspected["artifacts"]
            .as_array()
            .expect("artifacts")
            .iter()
            .filter(|a| a["kind"] == "image")
            .map(|a| {
                (
                    a["reference"].as_str().expect("reference").to_owned(),
                    format!(
                        "{}@{}",
                        a["name"].as_str().expect("name"),
                        a["digest"].as_str().expect("digest")
                    ),
                )
            })
            .collect()
    }

    #[test]
    fn the_install_brings_up_registry_runtime_and_etcd_and_a_rerun_changes_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start(tmp.path(), ["node1", "node2", "node3"]);

        let (plan, _) = run_ok(&mut cluster.kk_install(&["plan"]));
        for step in [
            "os.sysctl",
            "pki.copy",
            "registry.unpack",
            "runtime.pull",
            "etcd.health",
        ] {
            assert!(plan.contains(step), "`plan` lacks {step}:\n{plan}");
        }
        assert!(
            !cluster.work_dir().join("install-state.json").exists(),
            "`plan` must not start an install"
        );

        cluster.write_hooks();
        let (table, out) = run_ok(&mut cluster.kk_install(&[]));
        let progress = String::from_utf8_lossy(&out.stderr);
        cluster.assert_hooks_ran_once();
        for phase in ["os", "pki", "registry", "runtime", "etcd"] {
            assert!(table.contains(phase), "the table lacks {phase}:\n{table}");
        }
        assert!(
            progress.contains("set by the install"),
            "the precheck reports what the os phase sets as set by the install:\n{progress}"
        );
        // The probe pull names the endpoint that served it: kk's registry.
        for node in ["node1", "node2", "node3"] {
            let note = format!(
                "{node}: runtime.pull: registry.k8s.io/pause:3.10: served by https://dockerhub.kubekey.local:5443"
            );
            assert!(progress.contains(&note), "{note}:\n{progress}");
        }
        pins::assert_the_install_pinned_the_pause_image(&cluster);

        assert_the_node_contract(&cluster);
        assert_etcd_healthy_over_tls(&cluster);
        assert_images_pull_by_name_and_digest_and_run(&cluster);
        assert_registry_serves_tls_for_the_ca_only(&cluster, tmp.path());
        pins::assert_the_bundle_s_images_are_pinned(&cluster, tmp.path());
        // The record names the bundle and every phase done on the node.
        let record: Value =
            serde_json::from_str(&cluster.on(2, "cat /etc/kubekey/installed.json")).expect("json");
        assert_eq!(record["kubernetes_version"], VERSION);
        for phase in ["os", "pki", "registry", "runtime", "etcd"] {
            assert!(
                record["phases"]
                    .as_array()
                    .expect("phases")
                    .iter()
                    .any(|p| p == phase),
                "{record}"
            );
        }
        // Workers got their binaries from the registry, not from the installer machine.
        let summary = |args: &[&str]| -> Value {
            let (json, _) = run_ok(&mut cluster.kk_install(args));
            serde_json::from_str(&json).expect("summary json")
        };
        let agent_size = fs::metadata(binary("kk-node")).expect("kk-node").len();

        // A rerun changes nothing: no file rewritten, no service restarted, no hook run again.
        let before = cluster.fingerprint();
        let pins_before: Vec<_> = (0..3).map(|n| pins::labels(&cluster, n)).collect();
        let rerun = summary(&["--output", "json"]);
        assert_eq!(cluster.fingerprint(), before, "a rerun changed something");
        let pins_after: Vec<_> = (0..3).map(|n| pins::labels(&cluster, n)).collect();
        assert_eq!(pins_after, pins_before, "a rerun changed an image's labels");
        cluster.assert_hooks_ran_once();
        assert_eq!(rerun["sent"]["node2"].as_u64().unwrap_or(0), 0, "{rerun}");
        assert_the_precheck_knows_what_kk_installed(&cluster);

        // Node fetch: after a fresh os/runtime/etcd on node3, the installer machine sent it
        // the node agent and small files only, never kk-install (only the registry host has
        // it). This build's agent is a debug build; the release agent's share of the bundle's
        // binaries (≤ 0.05) is measured by `scripts/bench/install.sh` and bounded in `dist`.
        cluster.on(
            2,
            "rm -f /usr/local/bin/containerd /usr/local/bin/etcd /usr/local/bin/kk-node",
        );
        let again = summary(&["--output", "json", "--phase", "os"]);
        let sent_os = again["sent"]["node3"].as_u64().expect("sent");
        assert!(
            (agent_size..agent_size + (256 << 10)).contains(&sent_os),
            "the agent ({agent_size} bytes) and small files: {again}"
        );
        for phase in ["runtime", "etcd"] {
            let again = summary(&["--output", "json", "--phase", phase]);
            let sent = again["sent"]["node3"].as_u64().unwrap_or(0);
            assert!(
                sent < 64 << 10,
                "{phase}: the installer sent {sent} bytes: {again}"
            );
        }
        assert!(cluster.on(2, "sha256sum /usr/local/bin/etcd").len() > 64);
        assert_a_drop_in_overriding_the_mirrors_is_named(&cluster);
    }

    /// The precheck run again on the installed nodes (`--phase precheck`) passes: kk's own etcd
    /// on every member and its registry on node1 hold their ports, which the precheck names as
    /// kk's (`kk-install precheck --output json` judges by the same rules and shows the details).
    fn assert_the_precheck_knows_what_kk_installed(cluster: &Cluster) {
        run_ok(&mut cluster.kk_install(&["--phase", "precheck"]));
        let mut cmd = cluster.kk_install(&["precheck", "--output", "json"]);
        let out = run(&mut cmd);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", crate::support::describe(&cmd, &out)));
        let nodes = report["nodes"].as_object().expect("nodes");
        let failed: Vec<&Value> = nodes
            .values()
            .chain([&report["cluster"]])
            .flat_map(|checks| checks.as_array().expect("checks"))
            .filter(|check| check["status"] == "fail")
            .collect();
        assert!(
            failed.is_empty() && out.status.success(),
            "the precheck fails on nodes kk installed: {failed:#?}"
        );
        let message = |node: &str, id: &str| -> String {
            report["nodes"][node]
                .as_array()
                .and_then(|checks| checks.iter().find(|c| c["id"] == id))
                .and_then(|check| check["message"].as_str())
                .unwrap_or_else(|| panic!("no {id} for {node}: {report:#}"))
                .to_owned()
        };
        assert_eq!(
            message("node1", "airgap.registry_port"),
            "5443 held by kk's registry"
        );
        // The bundle is in kk's store already: its blobs need no new room.
        let disk = message("node1", "airgap.disk_space");
        assert!(disk.contains("already in kk's store"), "{disk}");
        for node in ["node1", "node2", "node3"] {
            for port in [2379, 2380] {
                assert_eq!(
                    message(node, &format!("kubeadm.port.{port}")),
                    format!("{port} held by kk's etcd"),
                    "{node}"
                );
            }
            assert!(
                message(node, "etcd.installed").starts_with("kk's own etcd member"),
                "{node}: {report:#}"
            );
        }
    }

    /// containerd's effective config: another tool's drop-in that brings its own registry
    /// mirrors (containerd 1.7 then also drops kk's whole CRI table) stops the runtime step,
    /// which names the node, the file, the key and what kk expects; without it the step passes.
    fn assert_a_drop_in_overriding_the_mirrors_is_named(cluster: &Cluster) {
        cluster.on(
            1,
            "mkdir -p /etc/containerd/conf.d && printf '%s\\n' 'version = 2' \
             '[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]' \
             '  endpoint = [\"https://mirror.example\"]' > /etc/containerd/conf.d/50-other.toml",
        );
        let said = run_failing(&mut cluster.kk_install(&["--phase", "runtime"]));
        for expected in [
            "containerd's effective configuration on `node2` is not kk's",
            "`plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors` is `docker.io`, kk expects `none` (`/etc/containerd/conf.d/50-other.toml` sets",
            "registry.config_path` is ``, kk expects `/etc/containerd/certs.d`",
            "hint: remove or change the drop-ins named",
        ] {
            assert!(said.contains(expected), "{expected}:\n{said}");
        }
        cluster.on(1, "rm /etc/containerd/conf.d/50-other.toml");
        run_ok(&mut cluster.kk_install(&["--phase", "runtime"]));
    }

    /// The places tests and users rely on: binaries, modes, sysctls, units.
    fn assert_the_node_contract(cluster: &Cluster) {
        let check = "set -e; \
            for b in containerd containerd-shim-runc-v2 ctr crictl etcd etcdctl kk-node; do test -x /usr/local/bin/$b; done; \
            test -x /usr/local/sbin/runc; test -x /opt/cni/bin/bridge; test -x /opt/cni/bin/loopback; \
            echo etcd-data $(stat -c %a /var/lib/etcd); \
            echo etcd-key $(stat -c %a /etc/kubernetes/pki/etcd/server.key); \
            echo forward $(sysctl -n net.ipv4.ip_forward) bridge $(sysctl -n net.bridge.bridge-nf-call-iptables); \
            grep -qx overlay /etc/modules-load.d/kk.conf; grep -qx br_netfilter /etc/modules-load.d/kk.conf; \
            echo containerd $(systemctl is-enabled containerd) $(systemctl is-active containerd); \
            echo etcd $(systemctl is-enabled etcd) $(systemctl is-active etcd); \
            grep -q 'SystemdCgroup = true' /etc/containerd/config.toml; \
            grep -q 'sandbox_image = \"registry.k8s.io/pause:3.10\"' /etc/containerd/config.toml; \
            grep -q 'ca = \"/etc/kk/pki/ca.crt\"' /etc/containerd/certs.d/registry.k8s.io/hosts.toml; \
            grep -q dockerhub.kubekey.local /etc/hosts; test -f /etc/crictl.yaml";
        for node in 0..3 {
            let said = cluster.on(node, check);
            for expected in [
                "etcd-data 700",
                "etcd-key 600",
                "forward 1 bridge 1",
                "containerd enabled active",
                "etcd enabled active",
            ] {
                assert!(
                    said.contains(expected),
                    "node{}: {expected}:\n{said}",
                    node + 1
                );
            }
        }
        let registry = cluster.on(
            0,
            "echo $(systemctl is-enabled kk-registry) $(systemctl is-active kk-registry); stat -c %a /etc/kk/pki/registry.key /etc/kubernetes/pki/ca.key",
        );
        assert_eq!(registry, "enabled active\n600\n600\n");
        // Only the registry host carries kk-install; the others run the agent alone.
        for (node, has) in [(0, "yes"), (1, "no"), (2, "no")] {
            let said = cluster.on(
                node,
                "test -e /usr/local/bin/kk-install && echo yes || echo no",
            );
            assert_eq!(said.trim(), has, "node{}: kk-install", node + 1);
        }
    }

    /// etcd: healthy over TLS with client-certificate auth, on every member.
    fn assert_etcd_healthy_over_tls(cluster: &Cluster) {
        let endpoints: Vec<String> = cluster
            .nodes
            .ips()
            .iter()
            .map(|ip| format!("https://{ip}:2379"))
            .collect();
        let health = cluster.on(
        1,
        &format!(
            "ETCDCTL_API=3 etcdctl --endpoints {} --cacert /etc/kubernetes/pki/etcd/ca.crt \
             --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key \
             endpoint health --cluster -w json",
            endpoints.join(",")
        ),
    );
        let health: Value = serde_json::from_str(&health).expect("health json");
        assert_eq!(
            health
                .as_array()
                .expect("members")
                .iter()
                .filter(|m| m["health"] == true)
                .count(),
            3,
            "{health}"
        );
        let no_client_cert = run(&mut cluster.nodes.ssh(
        "root",
        &cluster.nodes.ips()[1],
        &format!(
            "ETCDCTL_API=3 etcdctl --endpoints {} --cacert /etc/kubernetes/pki/etcd/ca.crt endpoint health",
            endpoints[0]
        ),
    ));
        assert!(
            !no_client_cert.status.success(),
            "etcd must demand a client certificate"
        );
    }

    /// Every image of the bundle pulls on every node by its original name and by digest, through
    /// `certs.d`; a container runs.
    pub(crate) fn assert_images_pull_by_name_and_digest_and_run(cluster: &Cluster) {
        let images = images(&cluster.bundle);
        assert!(images.len() > 5, "{images:?}");
        for node in 0..3 {
            let mut pulls = String::from("set -e; ");
            for (reference, by_digest) in &images {
                let _ = write!(
                    pulls,
                    "{CTR_PULL} {reference} >/dev/null; {CTR_PULL} {by_digest} >/dev/null; "
                );
            }
            cluster.on(node, &pulls);
            // Container ids are unique across nodes: runc's cgroups live in the host's tree.
            let said = cluster.on(
            node,
            &format!(
                "ctr -n k8s.io run --rm registry.k8s.io/pause:3.10 kk-probe-{}-{node} /bin/echo ran-from-kk-registry",
                std::process::id()
            ),
        );
            assert!(
                said.contains("ran-from-kk-registry"),
                "node{}: {said}",
                node + 1
            );
        }
    }

    /// The registry serves TLS that a client verifies with the installation's CA only.
    fn assert_registry_serves_tls_for_the_ca_only(cluster: &Cluster, tmp: &Path) {
        let certs = tmp.join("certs");
        fs::create_dir_all(&certs).expect("certs");
        fs::copy(cluster.work_dir().join("pki/ca.crt"), certs.join("ca.crt")).expect("ca");
        let registry = format!("{}:5443", cluster.nodes.ips()[0]);
        let mut skopeo = Command::new("skopeo");
        skopeo
            .args(["inspect", "--raw", "--cert-dir"])
            .arg(&certs)
            .arg(format!("docker://{registry}/registry.k8s.io/pause:3.10"));
        run_ok(&mut skopeo);
        let mut untrusted = Command::new("skopeo");
        untrusted
            .args(["inspect", "--raw"])
            .arg(format!("docker://{registry}/registry.k8s.io/pause:3.10"));
        assert!(!run(&mut untrusted).status.success());
    }

    /// Starts `cmd` and kills it (SIGKILL) once its progress shows a line containing `marker`.
    fn kill_at(mut cmd: Command, marker: &str) -> String {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kk-install");
        let stderr = child.stderr.take().expect("stderr");
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("line");
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(marker) {
                child.kill().expect("kill");
                break;
            }
        }
        let status = child.wait().expect("wait");
        assert!(
            !status.success(),
            "kk-install ended before `{marker}`:\n{seen}"
        );
        seen
    }

    /// The third host is named `installer`, a valid inventory name that kk once used for its
    /// cluster-wide steps: its node steps, record and resume must be those of any node.
    #[test]
    fn an_install_killed_or_cut_off_converges_when_run_again() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let third = "installer";
        let cluster = Cluster::start(tmp.path(), ["node1", "node2", third]);

        // A failing pre hook stops the install before anything else, naming node, script and
        // exit code with its output; no post hook runs.
        let work = cluster.work_dir();
        fs::create_dir_all(&work).expect("work dir");
        let hook = work.join(format!("pre_install_{third}.sh"));
        fs::write(&hook, "#!/bin/sh\necho 'disk not ready' >&2\nexit 4\n").expect("hook");
        fs::write(
            work.join("post_install_node1.sh"),
            "#!/bin/sh\necho post >> /root/post.log\n",
        )
        .expect("post hook");
        let error = run_failing(&mut cluster.kk_install(&[]));
        for part in [
            &format!("node `{third}`"),
            &format!("/etc/kubekey/scripts/pre_install_{third}.sh"),
            "exit 4",
            "disk not ready",
        ] {
            assert!(error.contains(part), "{part}: {error}");
        }
        assert!(
            !error.contains("os.agent") && !error.contains("os.installer"),
            "nothing after a failed pre hook: {error}"
        );
        fs::remove_file(&hook).expect("remove hook");
        cluster.on(
            2,
            &format!("rm /etc/kubekey/scripts/pre_install_{third}.sh"),
        );

        // Killed at a phase boundary (the first step of pki), then inside the runtime phase.
        kill_at(cluster.kk_install(&[]), "pki.issue");
        let state =
            fs::read_to_string(cluster.work_dir().join("install-state.json")).expect("state");
        assert!(state.contains("os.hosts"), "{state}");
        kill_at(cluster.kk_install(&["--resume"]), "runtime.binaries");

        // A node cut off inside a phase: the install stops, naming it.
        let veth = cluster
            .nodes
            .var("KK_NODES_VETHS")
            .split(' ')
            .nth(2)
            .expect("veth")
            .to_owned();
        let mut cmd = cluster.kk_install(&["--resume"]);
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let mut seen = String::new();
        let mut cut = false;
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("line");
            if !cut && line.contains("runtime.") {
                run_ok(Command::new("ip").args(["link", "set", &veth, "down"]));
                cut = true;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let status = child.wait().expect("wait");
        run_ok(Command::new("ip").args(["link", "set", &veth, "up"]));
        assert!(cut, "the runtime phase never started:\n{seen}");
        assert!(
            !status.success(),
            "the install went on without {third}:\n{seen}"
        );
        assert!(
            seen.contains(&format!("node `{third}`")),
            "the error names {third}:\n{seen}"
        );
        assert!(
            !seen.contains("post_hook.scripts"),
            "no post_hook after a failure:\n{seen}"
        );

        assert_eq!(cluster.on(0, "cat /root/post.log 2>/dev/null; true"), "");

        // Back online: the same command converges.
        let (table, _) = run_ok(&mut cluster.kk_install(&[]));
        assert!(table.contains(third), "{table}");
        assert_eq!(cluster.on(0, "cat /root/post.log"), "post\n");
        let health = cluster.on(
            0,
            "ETCDCTL_API=3 etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt \
             --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key \
             endpoint health --cluster 2>&1",
        );
        assert_eq!(health.matches("is healthy").count(), 3, "{health}");
        assert_a_node_like_any_other(&cluster, third);
        let error = run_failing(&mut cluster.kk_install(&["--phase", "nonsense"]));
        // clap refuses the name, listing every phase.
        assert!(
            error.contains("invalid value 'nonsense' for '--phase <NAME>'")
                && error.contains("push, pre_hook, precheck, os, pki, registry, packages, nfs, runtime, etcd, kubernetes, network, addons, post_hook"),
            "{error}"
        );
    }

    /// The node `name` (the third, a worker and etcd member as the second is) has its own steps
    /// in the state, its phases and files in its record, and a rerun finds every step of it done.
    fn assert_a_node_like_any_other(cluster: &Cluster, name: &str) {
        let state: Value = serde_json::from_str(
            &fs::read_to_string(cluster.work_dir().join("install-state.json")).expect("state"),
        )
        .expect("state json");
        assert!(state["done"][name]["os.hosts"].is_number(), "{state}");
        assert!(state["done"]["*"]["os.hosts"].is_null(), "{state}");
        assert!(state["done"]["*"]["pki.issue"].is_number(), "{state}");
        // Its record lists what the record of the other worker (same roles) lists.
        let record = |node: usize| -> Value {
            serde_json::from_str(&cluster.on(node, "cat /etc/kubekey/installed.json"))
                .expect("json")
        };
        let (record, worker) = (record(2), record(1));
        assert_eq!(record["phases"], worker["phases"], "{record}\n{worker}");
        assert!(
            record["phases"]
                .as_array()
                .expect("phases")
                .iter()
                .any(|p| p == "etcd"),
            "{record}"
        );
        assert!(
            record["files"]
                .as_array()
                .expect("files")
                .iter()
                .any(|f| f == "/etc/sysctl.d/99-kk.conf"),
            "{record}"
        );
        let (_, out) = run_ok(&mut cluster.kk_install(&[]));
        let progress = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = progress
            .lines()
            .filter(|line| line.contains(&format!("] {name} ")))
            .collect();
        assert!(!lines.is_empty(), "no step on {name}:\n{progress}");
        for line in lines {
            assert!(line.contains("done before"), "{line}\n{progress}");
        }
    }
}

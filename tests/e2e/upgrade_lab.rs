//! The upgrade on real systemd nodes (systemd-nspawn, no route out), as an operator runs it: a
//! cluster installed from bundle A (Kubernetes [`FROM`]), then `kk-install upgrade` from bundle B
//! ([`TO`], a delta onto A), killed once after `kubeadm upgrade apply` and run again. The lab's
//! stand-ins (`scripts/lab/standins/README.md`) refuse what kubeadm refuses and record, in the
//! cluster directory every node shares, each call in order: the proof of kubeadm's order.

/// In a `lab::` module: these tests bring up nodes and the upstream lab (`.config/nextest.toml`).
pub(crate) mod lab {
    use std::collections::BTreeMap;
    use std::fs;
    use std::io::{BufRead as _, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread;

    use bundle_spec::ArtifactKind;
    use bundle_spec::write::{BundleContents, WriteOptions};
    use serde_json::Value;

    use crate::bundle_lab::catalog_manifest;
    use crate::install_lab::lab::pins::labels;
    use crate::install_lab::lab::{Cluster, VERSION};
    use crate::support::{binary, kk_install_command, run, run_failing, run_ok};

    /// Bundle A's Kubernetes: the minor before the lab's own [`VERSION`] (kubeadm's preflight of
    /// v1.32 no longer wants conntrack either), a patch whose image tags differ from B's.
    const FROM: &str = "v1.32.13";
    /// Bundle B's Kubernetes.
    const TO: &str = VERSION;
    /// Two control planes (apply on the first, `upgrade node` on the second) and a worker.
    const GROUPS: &str = "    kube_control_plane: {hosts: [node1, node2]}\n    kube_worker: {hosts: [node3]}\n    etcd: {hosts: [node1]}\n    image_registry: {hosts: [node1]}\n";
    /// The stand-ins' cluster-wide call log (`<node> <stand-in> <args>` a line, in call order).
    const CALLS: &str = "/var/lib/kk-standin/cluster/calls";

    /// `kk-install ARGS --bundle BUNDLE` against the cluster's inventory, config and work dir.
    fn kk_upgrade(cluster: &Cluster, args: &[&str], bundle: &Path) -> Command {
        let mut cmd = kk_install_command(args);
        cmd.arg("--bundle")
            .arg(bundle)
            .arg("-i")
            .arg(cluster.dir.join("inventory.yaml"))
            .arg("-c")
            .arg(cluster.dir.join("config.yaml"))
            .arg("--work-dir")
            .arg(cluster.work_dir())
            .arg("--known-hosts")
            .arg(cluster.nodes.var("KK_NODES_KNOWN_HOSTS"));
        cmd
    }

    /// Starts `cmd` and kills it (SIGKILL, by its PID) once its progress reports step `step`
    /// finished; what it said until then.
    fn kill_after(mut cmd: Command, step: &str) -> String {
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
            if line.contains(step) && !line.contains("FAILED") {
                child.kill().expect("kill");
                break;
            }
        }
        let status = child.wait().expect("wait");
        assert!(
            !status.success(),
            "kk-install ended before `{step}`:\n{seen}"
        );
        seen
    }

    /// `kk-bundle build MANIFEST -o DIR/NAME --since BASE`: the delta onto BASE.
    fn build_delta(manifest: &Path, base: &Path, dir: &Path, name: &str) -> PathBuf {
        let bundle = dir.join(name);
        let mut build = Command::new(binary("kk-bundle"));
        build
            .arg("build")
            .arg(manifest)
            .arg("-o")
            .arg(&bundle)
            .arg("--cache")
            .arg(dir.join("cache"))
            .args(["--level", "3", "--since"])
            .arg(base);
        run_ok(&mut build);
        bundle
    }

    /// A bundle with `base`'s description but Kubernetes `version` (its kubeadm, kubelet and
    /// kubectl) and no blob: the plan reads nothing else before it refuses.
    fn relabelled_bundle(dir: &Path, base: &Path, version: &str) -> PathBuf {
        let mut description = bundle_spec::Bundle::open(base)
            .expect("open bundle")
            .description()
            .clone();
        for artifact in &mut description.artifacts {
            if artifact.kind == ArtifactKind::Binary
                && ["kubeadm", "kubelet", "kubectl"].contains(&artifact.name.as_str())
            {
                version.clone_into(&mut artifact.version);
            }
        }
        let index = serde_json::from_value(serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [],
        }))
        .expect("index");
        let contents = BundleContents {
            description,
            index,
            blobs: Vec::new(),
        };
        let written = bundle_spec::write_bundle(
            &contents,
            &dir.join(format!("k8s-{version}.tar.zst")),
            &WriteOptions::default(),
        )
        .expect("write bundle");
        written.output.paths[0].clone()
    }

    /// `skopeo inspect --raw` of `image` (original name) on kk's registry, trusting kk's CA only.
    fn skopeo_kk(cluster: &Cluster, certs: &Path, image: &str) -> Command {
        let mut skopeo = Command::new("skopeo");
        skopeo
            .args(["inspect", "--raw", "--cert-dir"])
            .arg(certs)
            .arg(format!("docker://{}:5443/{image}", cluster.nodes.ips()[0]));
        skopeo
    }

    #[test]
    fn an_upgrade_from_a_delta_bundle_killed_once_converges_in_kubeadms_order() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        // The lab serves both versions: A's catalog and B's are seeded before A is built.
        let cluster = Cluster::start_with_manifest(dir, 3, |lab, dir| {
            let (a, b) = (dir.join("a"), dir.join("b"));
            fs::create_dir_all(&a).expect("a");
            fs::create_dir_all(&b).expect("b");
            catalog_manifest(lab, &b, TO);
            catalog_manifest(lab, &a, FROM).0
        });
        cluster.write_inventory(3, GROUPS);
        let first = &cluster.nodes.ips()[0];
        let vip = format!("{}.200", first.rsplit_once('.').expect("ipv4").0);
        cluster.write_config(&format!(
            "  kubernetes:\n    control_plane_endpoint:\n      type: kube-vip\n      host: lb.kubesphere.local\n      kube_vip: {{address: {vip}, mode: ARP}}\n  etcd: {{deployment_type: external}}\n  cni: {{type: calico}}\n"
        ));
        run_ok(&mut cluster.kk_install(&[]));
        assert_versions(&cluster, FROM);
        let pins_of_a = labels(&cluster, 0);

        let next = build_delta(
            &dir.join("b/k8s.yaml"),
            &cluster.bundle,
            dir,
            "next.tar.zst",
        );
        assert!(
            fs::metadata(&next).expect("next").len()
                < fs::metadata(&cluster.bundle).expect("a").len(),
            "B is a delta onto A"
        );

        // The plan shows kubeadm's steps; nothing is touched.
        let (plan, _) = run_ok(&mut kk_upgrade(&cluster, &["plan", "--upgrade"], &next));
        for expected in [
            &format!("kubeadm upgrade apply {TO}") as &str,
            "upgrade node",
            "drain",
        ] {
            assert!(
                plan.contains(expected),
                "the plan lacks `{expected}`:\n{plan}"
            );
        }
        let (json, _) = run_ok(&mut kk_upgrade(
            &cluster,
            &["plan", "--upgrade", "--output", "json"],
            &next,
        ));
        let json: Value = serde_json::from_str(&json).expect("plan json");
        for id in [
            "upgrade.apply",
            "upgrade.node",
            "upgrade.kubelet",
            "upgrade.record",
        ] {
            assert!(
                json.to_string().contains(id),
                "the plan lacks {id}: {json:#}"
            );
        }
        assert_versions(&cluster, FROM);

        // Killed once kubeadm's apply is done, then run again to the end.
        let seen = kill_after(kk_upgrade(&cluster, &["upgrade"], &next), "upgrade.apply");
        assert!(
            !seen.contains("upgrade.kubelet"),
            "killed after the kubelets:\n{seen}"
        );
        let certs = dir.join("certs");
        fs::create_dir_all(&certs).expect("certs");
        fs::copy(cluster.work_dir().join("pki/ca.crt"), certs.join("ca.crt")).expect("ca");
        // Both revisions are served while the upgrade runs: A's own images and B's.
        for image in [
            format!("registry.k8s.io/kube-apiserver:{FROM}"),
            format!("registry.k8s.io/kube-apiserver:{TO}"),
        ] {
            run_ok(&mut skopeo_kk(&cluster, &certs, &image));
        }
        run_ok(&mut kk_upgrade(&cluster, &["upgrade"], &next));

        assert_versions(&cluster, TO);
        assert_pins_follow_the_revision(&pins_of_a, &labels(&cluster, 0));
        assert_kubeadms_order(&cluster);
        assert_nothing_from_outside(&cluster);

        // A rerun changes nothing.
        let before = cluster.fingerprint();
        run_ok(&mut kk_upgrade(&cluster, &["upgrade"], &next));
        assert_eq!(before, cluster.fingerprint(), "the rerun changed a node");

        // A minor skipped is refused at plan time, before any node is touched.
        let skip = relabelled_bundle(dir, &cluster.bundle, "v1.35.0");
        let err = run_failing(&mut kk_upgrade(&cluster, &["plan", "--upgrade"], &skip));
        assert!(err.contains("skips a minor version"), "{err}");
        let err = run_failing(&mut kk_upgrade(&cluster, &["upgrade"], &skip));
        assert!(err.contains("skips a minor version"), "{err}");
        assert_eq!(
            before,
            cluster.fingerprint(),
            "a refused upgrade touched a node"
        );

        assert_prune_keeps_serving(&cluster, &certs, &next);
    }

    /// kk's pins follow the installed revision: A's own apiserver image, pinned by the install,
    /// is unpinned by the upgrade's pins step; B's is pinned, with B's mark.
    fn assert_pins_follow_the_revision(
        before: &BTreeMap<String, BTreeMap<String, String>>,
        after: &BTreeMap<String, BTreeMap<String, String>>,
    ) {
        const CRI: &str = "io.cri-containerd.pinned";
        const KK: &str = "io.kubekey.pinned";
        let (from, to) = (
            format!("registry.k8s.io/kube-apiserver:{FROM}"),
            format!("registry.k8s.io/kube-apiserver:{TO}"),
        );
        let a_mark = before
            .get(&from)
            .and_then(|labels| labels.get(KK))
            .unwrap_or_else(|| panic!("the install did not pin {from}: {before:#?}"));
        let stale = after.get(&from).cloned().unwrap_or_default();
        assert!(
            !stale.contains_key(KK) && !stale.contains_key(CRI),
            "A's own {from} is still pinned after the upgrade: {stale:?}"
        );
        let pinned = after
            .get(&to)
            .unwrap_or_else(|| panic!("{to} is not on the node: {after:#?}"));
        assert_eq!(
            pinned.get(CRI).map(String::as_str),
            Some("pinned"),
            "{to}: {pinned:?}"
        );
        let b_mark = pinned.get(KK).expect("kk's mark on B's image");
        assert_ne!(b_mark, a_mark, "{to} carries A's mark, not B's");
    }

    /// Every node: kubeadm, the kubelet and (from the first control plane) the Node objects
    /// report `version`; every node Ready and schedulable.
    fn assert_versions(cluster: &Cluster, version: &str) {
        for node in 0..3 {
            let said = cluster.on(node, "kubeadm version; kubelet --version");
            assert_eq!(
                said,
                format!("kubeadm version {version} (stand-in)\nKubernetes {version}\n"),
                "node{}",
                node + 1
            );
        }
        let nodes = cluster.on(
            0,
            "kubectl --kubeconfig /etc/kubernetes/admin.conf get nodes -o json",
        );
        let nodes: Value = serde_json::from_str(&nodes).expect("nodes json");
        let items = nodes["items"].as_array().expect("items");
        assert_eq!(items.len(), 3, "{nodes:#}");
        for item in items {
            assert_eq!(
                item["status"]["nodeInfo"]["kubeletVersion"], version,
                "{item:#}"
            );
            assert_eq!(
                item["status"]["conditions"][0]["status"], "True",
                "{item:#}"
            );
            assert!(item["spec"]["unschedulable"].is_null(), "{item:#}");
        }
    }

    /// The stand-ins' calls, in order across the nodes: `upgrade apply` on node1 before `upgrade
    /// node` on node2; each node drained, then its kubelet started again, then uncordoned.
    fn assert_kubeadms_order(cluster: &Cluster) {
        let calls = cluster.on(0, &format!("cat {CALLS}"));
        let lines: Vec<&str> = calls.lines().collect();
        let find = |from: usize, test: &dyn Fn(&str) -> bool| {
            lines
                .iter()
                .skip(from)
                .position(|l| test(l))
                .map(|i| i + from)
        };
        let apply = find(0, &|l| {
            l.starts_with(&format!("node1 kubeadm upgrade apply {TO}"))
        })
        .unwrap_or_else(|| panic!("no apply on node1:\n{calls}"));
        let node = find(0, &|l| l.starts_with("node2 kubeadm upgrade node"))
            .unwrap_or_else(|| panic!("no upgrade node on node2:\n{calls}"));
        assert!(apply < node, "apply after upgrade node:\n{calls}");
        assert!(
            find(0, &|l| l.starts_with("node3 kubeadm upgrade node")).is_some_and(|w| w > apply),
            "the worker's kubelet config is not upgraded after apply:\n{calls}"
        );
        for name in ["node1", "node2", "node3"] {
            // The last drain of the node (a killed run may have drained it before).
            let drain = lines
                .iter()
                .rposition(|l| l.contains(" kubectl ") && l.contains(&format!(" drain {name}")))
                .unwrap_or_else(|| panic!("{name} never drained:\n{calls}"));
            // The new kubelet writes its own line when systemd has started it, which
            // `systemctl restart` does not wait for: under load that line may land after the
            // uncordon that follows the restart, so both are only required after the drain.
            assert!(
                find(drain, &|l| {
                    l.starts_with(&format!("{name} kubelet ")) && !l.contains("version")
                })
                .is_some(),
                "{name}'s kubelet not restarted after its drain:\n{calls}"
            );
            assert!(
                find(drain, &|l| l.contains(" kubectl ")
                    && l.contains(&format!(" uncordon {name}")))
                .is_some(),
                "{name} not uncordoned after its drain:\n{calls}"
            );
        }
    }

    /// Nothing came from outside (LAB-NOTES P1): every mirror of every node falls back to kk's
    /// registry itself, never to an upstream host, and no node has a route out.
    fn assert_nothing_from_outside(cluster: &Cluster) {
        for node in 0..3 {
            let said = cluster.on(
                node,
                "grep -h '^server' /etc/containerd/certs.d/*/hosts.toml | sort -u; ip route show default",
            );
            let lines: Vec<&str> = said.lines().collect();
            assert!(
                lines.len() == 1 && lines[0].ends_with(":5443\""),
                "node{}: {said}",
                node + 1
            );
        }
    }

    /// `registry prune --keep 1` on the registry host while a client keeps asking kk's registry
    /// for an image both revisions share: no request fails, A's own images are gone, every image
    /// of B is still served and B verifies against the pruned store.
    fn assert_prune_keeps_serving(cluster: &Cluster, certs: &Path, next: &Path) {
        let shared = "registry.k8s.io/pause:3.10";
        let stop = Arc::new(AtomicBool::new(false));
        let client = {
            let stop = Arc::clone(&stop);
            let mut ask = skopeo_kk(cluster, certs, shared);
            thread::spawn(move || {
                let (mut asked, mut failed) = (0, Vec::new());
                while !stop.load(Ordering::SeqCst) || asked == 0 {
                    let out = run(&mut ask);
                    asked += 1;
                    if !out.status.success() {
                        failed.push(String::from_utf8_lossy(&out.stderr).into_owned());
                    }
                }
                (asked, failed)
            })
        };
        let pruned = cluster.on(0, "kk-install registry prune --keep 1");
        stop.store(true, Ordering::SeqCst);
        let (asked, failed) = client.join().expect("client");
        assert!(
            failed.is_empty(),
            "{} of {asked} requests failed during the prune: {failed:?}\n{pruned}",
            failed.len()
        );

        let gone = run(&mut skopeo_kk(
            cluster,
            certs,
            &format!("registry.k8s.io/kube-apiserver:{FROM}"),
        ));
        assert!(
            !gone.status.success(),
            "A's own image is still served after the prune:\n{pruned}"
        );
        for (reference, _) in crate::install_lab::lab::images(next) {
            run_ok(&mut skopeo_kk(cluster, certs, &reference));
        }
        let mut copy = cluster.nodes.ssh(
            "root",
            &cluster.nodes.ips()[0],
            "cat > /tmp/next.tar.zst && kk-install verify /tmp/next.tar.zst --store /var/lib/kk/store",
        );
        copy.stdin(fs::File::open(next).expect("next"));
        let (verified, _) = run_ok(&mut copy);
        assert!(
            verified.contains("all of them are in the store"),
            "{verified}"
        );
    }
}

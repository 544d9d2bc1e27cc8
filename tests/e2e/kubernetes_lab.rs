//! Kubernetes on real systemd nodes (systemd-nspawn, no route out): kubeadm init and join, the
//! HA endpoint, the CNI chart and an addon, all from the bundle; a rerun that changes nothing;
//! a node added by rerunning; reset and install again. kubeadm, kubelet, kubectl and crictl are
//! the lab's stand-ins (`scripts/lab/standins/README.md` says what each checks); containerd,
//! runc, etcd, the registry, systemd and helm are real.

/// In a `lab::` module: these tests bring up nodes and the upstream lab (`.config/nextest.toml`).
pub(crate) mod lab {
    use std::fmt::Write as _;
    use std::fs;
    use std::process::Command;

    use serde_json::Value;

    use crate::install_lab::lab::{CTR_PULL, Cluster};
    use crate::support::{run_failing, run_ok};

    /// Groups of the HA cluster: two control planes, two workers, external etcd on three nodes.
    const HA_GROUPS: &str = "    kube_control_plane: {hosts: [node1, node2]}\n    kube_worker: {hosts: [node3, node4]}\n    etcd: {hosts: [node1, node2, node3]}\n    image_registry: {hosts: [node1]}\n";

    /// The stand-ins' log on node `i`, one line per call.
    fn standin_log(cluster: &Cluster, i: usize) -> String {
        cluster.on(i, "cat /tmp/kk-standin.log 2>/dev/null; true")
    }

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.lines().filter(|l| l.starts_with(needle)).count()
    }

    /// `sha256:<hex>` of the CA's public key, computed the way kubeadm's documentation does it
    /// (with openssl, independently of kk).
    fn ca_hash_by_openssl(cluster: &Cluster) -> String {
        let ca = cluster.work_dir().join("pki/ca.crt");
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(format!(
            "openssl x509 -pubkey -noout -in {} | openssl pkey -pubin -outform der | sha256sum | cut -c1-64",
            ca.display()
        ));
        let (hex, _) = run_ok(&mut sh);
        format!("sha256:{}", hex.trim())
    }

    /// Every image the CNI's rendered manifest names pulls on every node of `nodes`.
    pub(crate) fn assert_chart_images_pull(cluster: &Cluster, nodes: usize, release: &str) {
        let rendered = cluster.on(0, &format!("cat /etc/kubernetes/kk/charts/{release}.yaml"));
        let images: Vec<&str> = rendered
            .lines()
            .filter_map(|l| l.trim().strip_prefix("image:"))
            .map(|i| i.trim().trim_matches('"'))
            .collect();
        assert!(!images.is_empty(), "{release} names no image:\n{rendered}");
        for node in 0..nodes {
            let mut pulls = String::from("set -e; ");
            for image in &images {
                let _ = write!(pulls, "{CTR_PULL} {image} >/dev/null; ");
            }
            cluster.on(node, &pulls);
        }
    }

    #[test]
    fn ha_kubernetes_with_external_etcd_joins_added_nodes_and_resets() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_nodes(tmp.path(), 5);
        cluster.write_inventory(4, HA_GROUPS);
        let first = &cluster.nodes.ips()[0];
        let vip = format!("{}.200", first.rsplit_once('.').expect("ipv4").0);
        cluster.write_config(&format!(
            "  kubernetes:\n    control_plane_endpoint:\n      type: kube-vip\n      host: lb.kubesphere.local\n      kube_vip: {{address: {vip}, mode: ARP}}\n  etcd: {{deployment_type: external}}\n  cni: {{type: calico}}\n  addons:\n    - name: operator-copy\n      namespace: extra\n      sources:\n        chart:\n          name: tigera-operator\n          values: [\"installation.registry=quay.io/\"]\n"
        ));

        let (table, _) = run_ok(&mut cluster.kk_install(&[]));
        for phase in ["kubernetes", "network", "addons"] {
            assert!(table.contains(phase), "the table lacks {phase}:\n{table}");
        }
        let token = assert_one_init_and_joins_with_kks_token_and_hash(&cluster);
        assert_kube_vip_kubelets_and_charts(&cluster, &vip);

        // A rerun changes nothing.
        let before = cluster.fingerprint();
        run_ok(&mut cluster.kk_install(&[]));
        assert_eq!(cluster.fingerprint(), before, "a rerun changed something");

        certs_check_renew_and_check_again(&cluster);
        add_node5_with_the_token_expired(&cluster, token);
        delete_node5(&cluster);
        reset_then_install_again(&cluster);
    }

    /// Exactly one init, on the first control plane; every other node joined, with the right
    /// role and the CA hash of the CA kk issued. Returns kk's token record.
    fn assert_one_init_and_joins_with_kks_token_and_hash(cluster: &Cluster) -> Value {
        let hash = ca_hash_by_openssl(cluster);
        let logs: Vec<String> = (0..4).map(|i| standin_log(cluster, i)).collect();
        let inits: usize = logs.iter().map(|l| count(l, "kubeadm init")).sum();
        assert_eq!(inits, 1, "{logs:#?}");
        assert_eq!(
            count(
                &logs[0],
                "kubeadm init --config /etc/kubernetes/kk/kubeadm-init.yaml"
            ),
            1
        );
        for (node, log) in logs.iter().enumerate().skip(1) {
            let joins = count(
                log,
                "kubeadm join --config /etc/kubernetes/kk/kubeadm-join.yaml",
            );
            assert_eq!(joins, 1, "node{}: {log}", node + 1);
            let join = cluster.on(node, "cat /etc/kubernetes/kk/kubeadm-join.yaml");
            assert!(join.contains(&hash), "node{}: {join}", node + 1);
            assert!(join.contains("lb.kubesphere.local:6443"), "{join}");
            assert_eq!(
                join.contains("controlPlane:"),
                node == 1,
                "node{}: only node2 joins as a control plane:\n{join}",
                node + 1
            );
        }
        let init = cluster.on(0, "cat /etc/kubernetes/kk/kubeadm-init.yaml");
        for expected in [
            "kubeadm.k8s.io/v1beta4",
            "kubernetesVersion: v1.33.0",
            "controlPlaneEndpoint: lb.kubesphere.local:6443",
            "cgroupDriver: systemd",
            "external:",
        ] {
            assert!(init.contains(expected), "{expected}:\n{init}");
        }
        assert!(!init.contains("imageRepository"), "{init}");
        let token: Value = serde_json::from_str(
            &fs::read_to_string(cluster.work_dir().join("kubeadm-token.json")).expect("token"),
        )
        .expect("token json");
        assert!(init.contains(token["token"].as_str().expect("token")));
        token
    }

    /// kube-vip on both control planes with admin.conf, the VIP and the bundle's image; every
    /// kubelet running with its static pods' images pulled; the CNI and the addon applied from
    /// the rendered charts, whose images pull everywhere through kk's registry.
    fn assert_kube_vip_kubelets_and_charts(cluster: &Cluster, vip: &str) {
        for node in 0..2 {
            let vip_pod = cluster.on(node, "cat /etc/kubernetes/manifests/kube-vip.yaml");
            assert!(vip_pod.contains(vip), "{vip_pod}");
            assert!(vip_pod.contains("ghcr.io/kube-vip/kube-vip:"), "{vip_pod}");
            assert!(
                vip_pod.contains("/etc/kubernetes/admin.conf") && !vip_pod.contains("super-admin"),
                "{vip_pod}"
            );
        }
        for node in 0..4 {
            let said = cluster.on(
                node,
                "echo $(systemctl is-active kubelet) $(test -f /var/lib/kubelet/kk-standin-ready && echo ready); grep lb.kubesphere.local /etc/hosts",
            );
            assert!(said.starts_with("active ready"), "node{}: {said}", node + 1);
            assert!(
                said.contains(vip),
                "node{}: the endpoint is the VIP: {said}",
                node + 1
            );
        }
        let objects = cluster.on(0, "cat /var/lib/kk-standin/kubectl/objects");
        assert!(objects.contains("DaemonSet/"), "{objects}");
        assert_chart_images_pull(cluster, 4, "tigera-operator");
        let values = cluster.on(
            0,
            "cat /etc/kubernetes/kk/charts/tigera-operator.values.yaml",
        );
        assert!(
            values.contains("quay.io/") && values.contains("10.233.64.0/18"),
            "{values}"
        );
        let log = standin_log(cluster, 0);
        assert!(
            log.contains("kubectl apply --server-side") && log.contains("operator-copy.yaml"),
            "{log}"
        );
        // The record names the new phases where they ran.
        let record: Value =
            serde_json::from_str(&cluster.on(0, "cat /etc/kubekey/installed.json")).expect("json");
        for phase in ["kubernetes", "network", "addons"] {
            assert!(
                record["phases"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|x| x == phase)),
                "{record}"
            );
        }
        assert!(
            record["files"].as_array().is_some_and(|f| f
                .iter()
                .any(|x| x == "/etc/kubernetes/kk/kubeadm-init.yaml")),
            "{record}"
        );
    }

    /// `certs check --output json`: `(node, path) -> notAfter` of every row.
    fn certs_check(cluster: &Cluster) -> std::collections::BTreeMap<(String, String), i64> {
        let (json, _) = run_ok(&mut cluster.kk_install(&["certs", "check", "--output", "json"]));
        let rows: Value = serde_json::from_str(&json).expect("certs check json");
        rows.as_array()
            .expect("rows")
            .iter()
            .map(|row| {
                let text = |key: &str| row[key].as_str().expect(key).to_owned();
                let not_after = row["not_after"].as_i64().expect("not_after");
                ((text("node"), text("path")), not_after)
            })
            .collect()
    }

    /// `certs check` lists every node's certificates; `certs renew --all` moves the leaves'
    /// expiries forward (kk's in the master copy and on the nodes, the kubeconfigs by kubeadm),
    /// keeps the CAs, and restarts the services node by node; a rerun of the install after it
    /// finds the nodes' certificates equal to the master copy's.
    fn certs_check_renew_and_check_again(cluster: &Cluster) {
        let before = certs_check(cluster);
        let pki = "/etc/kubernetes/pki";
        let expected = [
            ("node1", "/etc/kk/pki/registry.crt"),
            ("node1", "/etc/kubernetes/admin.conf"),
            ("node2", "/etc/kubernetes/controller-manager.conf"),
            ("node1", &format!("{pki}/apiserver.crt")),
            ("node2", &format!("{pki}/front-proxy-client.crt")),
            ("node3", &format!("{pki}/etcd/server.crt")),
            ("node4", "/etc/kk/pki/ca.crt"),
        ];
        for (node, path) in expected {
            assert!(
                before.contains_key(&(node.to_owned(), path.to_owned())),
                "{node} {path}: {before:#?}"
            );
        }
        let (text, _) = run_ok(&mut cluster.kk_install(&["certs", "check"]));
        assert!(text.starts_with("NODE"), "{text}");

        let (renewed, _) = run_ok(&mut cluster.kk_install(&["certs", "renew", "--all"]));
        // One node at a time: once another node's steps start, a node never comes back.
        let mut order: Vec<&str> = Vec::new();
        for line in renewed.lines().filter(|l| !l.starts_with("-:")) {
            let node = line.split(':').next().expect("node");
            if order.last() != Some(&node) {
                assert!(!order.contains(&node), "{node} twice:\n{renewed}");
                order.push(node);
            }
        }
        for step in [
            "-: renewed etcd/members/node3/server.crt in the master copy",
            "node1: put /etc/kubernetes/pki/apiserver.crt",
            "node1: kubeadm certs renew admin.conf super-admin.conf controller-manager.conf scheduler.conf",
            "node1: restarted static pod kube-apiserver",
            "node1: restarted kk-registry",
            "node2: restarted static pod kube-scheduler",
            "node1: restarted etcd",
            "node2: restarted etcd",
            "node3: restarted etcd",
        ] {
            assert!(renewed.contains(step), "{step}:\n{renewed}");
        }
        assert_eq!(
            count(&standin_log(cluster, 1), "kubeadm certs renew"),
            1,
            "kubeadm renews the kubeconfigs on each control plane once"
        );
        for node in 0..3 {
            let active = cluster.on(node, "systemctl is-active etcd");
            assert_eq!(active.trim(), "active", "node{}", node + 1);
        }

        let after = certs_check(cluster);
        assert_eq!(
            after.keys().collect::<Vec<_>>(),
            before.keys().collect::<Vec<_>>()
        );
        for ((node, path), not_after) in &after {
            let was = before[&(node.clone(), path.clone())];
            if path.ends_with("ca.crt") {
                assert_eq!(*not_after, was, "{node} {path}: a CA is not renewed");
            } else {
                assert!(*not_after > was, "{node} {path}: {was} -> {not_after}");
            }
        }
        // The install, run again, finds every certificate in place.
        let unchanged = cluster.fingerprint();
        run_ok(&mut cluster.kk_install(&[]));
        assert_eq!(
            cluster.fingerprint(),
            unchanged,
            "the install after a renewal changed something"
        );
    }

    /// The groups with node5 a worker and, when `etcd`, a fourth etcd member.
    fn groups_with_node5(etcd: bool) -> String {
        let groups = HA_GROUPS.replace("[node3, node4]", "[node3, node4, node5]");
        if etcd {
            groups.replace("[node1, node2, node3]", "[node1, node2, node3, node5]")
        } else {
            groups
        }
    }

    /// Four etcd members are one more than the precheck's odd count, which etcd's runtime
    /// reconfiguration passes through when members are added one at a time.
    const EVEN_ETCD: [&str; 2] = ["--ignore", "etcd.deployment_type"];

    /// `etcdctl` on node1 with the healthcheck client certificate, against node1.
    fn etcdctl(cluster: &Cluster, args: &str) -> String {
        let pki = "/etc/kubernetes/pki/etcd";
        cluster.on(
            0,
            &format!(
                "ETCDCTL_API=3 /usr/local/bin/etcdctl --endpoints https://{}:2379 --cacert {pki}/ca.crt \
                 --cert {pki}/healthcheck-client.crt --key {pki}/healthcheck-client.key {args} 2>&1",
                cluster.nodes.ips()[0]
            ),
        )
    }

    /// node5 added to the inventory as a worker and an etcd member, with the token expired
    /// meanwhile: the same command replaces the token, joins node5 to Kubernetes and to the
    /// running etcd (`member add`, `initial-cluster-state existing`), touching nothing else —
    /// the other members' config is not rewritten and they are not restarted.
    fn add_node5_with_the_token_expired(cluster: &Cluster, mut token: Value) {
        cluster.write_inventory(5, &groups_with_node5(true));
        token["expires"] = Value::from("2020-01-01T00:00:00Z");
        fs::write(
            cluster.work_dir().join("kubeadm-token.json"),
            token.to_string(),
        )
        .expect("expire token");
        let before = cluster.fingerprint();
        let (_, out) = run_ok(&mut cluster.kk_install(&EVEN_ETCD));
        let progress = String::from_utf8_lossy(&out.stderr);
        assert!(
            progress.contains("node5") && progress.contains("precheck passed: 1 node,"),
            "the added node is prechecked, alone:\n{progress}"
        );
        assert_eq!(
            count(&standin_log(cluster, 0), "kubeadm token create"),
            1,
            "the expired token is replaced on the first control plane"
        );
        let joined = standin_log(cluster, 4);
        assert_eq!(count(&joined, "kubeadm join"), 1, "{joined}");
        let new_token: Value = serde_json::from_str(
            &fs::read_to_string(cluster.work_dir().join("kubeadm-token.json")).expect("token"),
        )
        .expect("token json");
        assert!(
            cluster
                .on(4, "cat /etc/kubernetes/kk/kubeadm-join.yaml")
                .contains(new_token["token"].as_str().expect("token"))
        );
        let mut after = cluster.fingerprint();
        after.remove(&cluster.nodes.ips()[4]);
        assert_eq!(after, before, "adding node5 touched another node");
        let ip5 = &cluster.nodes.ips()[4];
        let members = etcdctl(cluster, "member list");
        assert!(
            members.contains(&format!(", started, node5, https://{ip5}:2380")),
            "{members}"
        );
        let env = cluster.on(4, "cat /etc/etcd.env");
        assert!(env.contains("ETCD_INITIAL_CLUSTER_STATE=existing"), "{env}");
        let health = etcdctl(cluster, "endpoint health --cluster");
        assert_eq!(health.matches("is healthy").count(), 4, "{health}");
        // The install run again changes nothing, node5's etcd included.
        let joined = cluster.fingerprint();
        run_ok(&mut cluster.kk_install(&EVEN_ETCD));
        assert_eq!(
            cluster.fingerprint(),
            joined,
            "a rerun after the join changed something"
        );
    }

    /// `delete-node node5`: refused for the first control plane and without `--yes`; then
    /// node5 leaves etcd (the others not restarted), is reset, and leaves kk's `/etc/hosts`
    /// blocks and the install state; run again it changes nothing, and so does the install
    /// once node5 is out of the inventory.
    fn delete_node5(cluster: &Cluster) {
        let refused = run_failing(&mut cluster.kk_install(&["delete-node", "node1", "--yes"]));
        assert!(refused.contains("first control plane"), "{refused}");
        let unconfirmed = run_failing(&mut cluster.kk_install(&["delete-node", "node5"]));
        assert!(unconfirmed.contains("--yes"), "{unconfirmed}");
        let mut before = cluster.fingerprint();
        before.remove(&cluster.nodes.ips()[4]);
        let (said, _) = run_ok(&mut cluster.kk_install(&["delete-node", "node5", "--yes"]));
        assert!(said.contains("removed from etcd"), "{said}");
        let ip5 = &cluster.nodes.ips()[4];
        let members = etcdctl(cluster, "member list");
        assert!(!members.contains(ip5.as_str()), "{members}");
        let health = etcdctl(cluster, "endpoint health --cluster");
        assert_eq!(health.matches("is healthy").count(), 3, "{health}");
        assert_eq!(count(&standin_log(cluster, 4), "kubeadm reset -f"), 1);
        let left = cluster.on(
            4,
            "systemctl is-active etcd kubelet 2>/dev/null; ls -A /var/lib/etcd; test -e /etc/kubekey/installed.json && echo record; true",
        );
        assert!(
            !left
                .lines()
                .any(|l| l == "active" || l == "member" || l == "record"),
            "{left}"
        );
        for node in 0..4 {
            let hosts = cluster.on(node, "cat /etc/hosts");
            assert!(!hosts.contains(" node5"), "node{}: {hosts}", node + 1);
        }
        let state =
            fs::read_to_string(cluster.work_dir().join("install-state.json")).expect("state");
        assert!(!state.contains("node5"), "{state}");
        assert_eq!(
            cluster.fingerprint(),
            before,
            "deleting node5 touched another node"
        );
        run_ok(&mut cluster.kk_install(&["delete-node", "node5", "--yes"]));
        assert_eq!(
            cluster.fingerprint(),
            before,
            "delete-node run again changed something"
        );
        cluster.write_inventory(4, HA_GROUPS);
        run_ok(&mut cluster.kk_install(&[]));
        assert_eq!(
            cluster.fingerprint(),
            before,
            "the install without node5 changed something"
        );
        // Back to node5 as a worker, for the reset and the install from nothing that follow.
        cluster.write_inventory(5, &groups_with_node5(false));
    }

    /// Reset: kubeadm reset everywhere, kk's units and files gone, the CNI's chains too; then
    /// the same install works again.
    fn reset_then_install_again(cluster: &Cluster) {
        cluster.on(0, "iptables -N KUBE-KK-TEST && iptables -N keep-me");
        let refused = run_failing(&mut cluster.kk_install(&["reset"]));
        assert!(refused.contains("--yes"), "{refused}");
        run_ok(&mut cluster.kk_install(&["reset", "--yes"]));
        for node in 0..5 {
            let said = cluster.on(
                node,
                "for f in /etc/kubernetes/kubelet.conf /etc/systemd/system/kubelet.service /etc/systemd/system/containerd.service /etc/kubekey/installed.json /etc/kubernetes/manifests/kube-vip.yaml; do test -e $f && echo left $f; done; \
                 systemctl is-active kubelet containerd etcd 2>/dev/null; grep -c 'BEGIN kk-install' /etc/hosts; true",
            );
            let name = format!("node{}", node + 1);
            assert!(!said.contains("left"), "{name}: {said}");
            assert!(
                !said.lines().any(|l| l == "active"),
                "{name}: a unit still runs: {said}"
            );
            assert!(
                said.trim_end().ends_with('0'),
                "{name}: kk's hosts block stays: {said}"
            );
            // node5's one reset was `delete-node`'s: it took kubeadm off with kk's files, so
            // this reset finds no kubeadm to run there.
            assert_eq!(count(&standin_log(cluster, node), "kubeadm reset -f"), 1);
        }
        let chains = cluster.on(0, "iptables -S");
        assert!(
            !chains.contains("KUBE-KK-TEST") && chains.contains("keep-me"),
            "{chains}"
        );
        assert!(!cluster.work_dir().join("install-state.json").exists());

        let (table, _) = run_ok(&mut cluster.kk_install(&[]));
        assert!(table.contains("node5"), "{table}");
        assert_eq!(count(&standin_log(cluster, 0), "kubeadm init"), 2);
    }

    /// containerd 2.1.9 runs on every node with kk's version-3 config in effect (the runtime
    /// step checked its dump), its probe pull names kk's registry as the endpoint, and every
    /// image pulls by its original name and by digest, and runs.
    fn assert_containerd_2(cluster: &Cluster, progress: &str) {
        for node in 0..3 {
            let said = cluster.on(
                node,
                "containerd --version; grep -c '^version = 3' /etc/containerd/config.toml; containerd config dump | grep -c \"sandbox = 'registry.k8s.io/pause:3.10'\"",
            );
            assert!(said.contains(" 2.1.9"), "node{}: {said}", node + 1);
            assert!(said.ends_with("1\n1\n"), "node{}: {said}", node + 1);
            let note = format!(
                "node{}: runtime.pull: registry.k8s.io/pause:3.10: served by https://",
                node + 1
            );
            assert!(progress.contains(&note), "{note}:\n{progress}");
        }
        crate::install_lab::lab::assert_images_pull_by_name_and_digest_and_run(cluster);
    }

    /// Also the cluster on containerd 2.x: the bundle chooses Debian sid's real containerd 2.1.9
    /// (`spec.kubernetes.components`), which reads kk's config version 3.
    #[test]
    fn stacked_etcd_and_haproxy_and_a_config_kubeadm_rejects() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_nodes_with(tmp.path(), 3, |_| {
            vec!["--component".to_owned(), "containerd=2.1.9".to_owned()]
        });
        cluster.write_inventory(
            3,
            "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2, node3]}\n    image_registry: {hosts: [node1]}\n",
        );

        // A service range kubeadm refuses never reaches a node: the plan names the field.
        cluster.write_config("  etcd: {deployment_type: internal}\n  cni: {service_cidr: 10.0.0.0/8, pod_cidr: 172.16.0.0/16}\n");
        let error = run_failing(&mut cluster.kk_install(&[]));
        assert!(error.contains("`spec.cni.service_cidr`"), "{error}");
        assert!(!cluster.work_dir().join("install-state.json").exists());
        assert_eq!(standin_log(&cluster, 0), "");

        cluster.write_config(
            "  kubernetes:\n    control_plane_endpoint: {type: haproxy}\n  etcd: {deployment_type: internal}\n",
        );
        let (_, out) = run_ok(&mut cluster.kk_install(&[]));
        assert_containerd_2(&cluster, &String::from_utf8_lossy(&out.stderr));
        let init = cluster.on(0, "cat /etc/kubernetes/kk/kubeadm-init.yaml");
        assert!(!init.contains("external:"), "{init}");
        let first = cluster.on(
            0,
            "test -f /etc/kubernetes/manifests/etcd.yaml && echo stacked; test -e /etc/systemd/system/etcd.service && echo unit; test -f /etc/kubernetes/pki/etcd/ca.key && echo key; true",
        );
        assert_eq!(first, "stacked\nkey\n");
        let node1 = &cluster.nodes.ips()[0];
        for node in 1..3 {
            let cfg = cluster.on(node, "cat /etc/kubekey/haproxy/haproxy.cfg");
            assert!(cfg.contains(&format!("{node1}:6443")), "{cfg}");
            let said = cluster.on(
                node,
                "test -f /etc/kubernetes/manifests/haproxy.yaml && echo pod; grep lb.kubesphere.local /etc/hosts; grep -A1 ignorePreflightErrors /etc/kubernetes/kk/kubeadm-join.yaml",
            );
            assert!(
                said.starts_with("pod\n127.0.0.1"),
                "node{}: {said}",
                node + 1
            );
            assert!(
                said.contains("DirAvailable--etc-kubernetes-manifests"),
                "{said}"
            );
        }
        assert_chart_images_pull(&cluster, 3, "tigera-operator");

        // `--purge` also empties the data directories: stacked etcd's, the store, containerd's.
        run_ok(&mut cluster.kk_install(&["reset", "--yes", "--purge"]));
        let left = cluster.on(
            0,
            "for d in /var/lib/etcd /var/lib/kk/store /var/lib/containerd; do echo \"$d $(find $d -mindepth 1 | wc -l)\"; done",
        );
        assert_eq!(
            left,
            "/var/lib/etcd 0\n/var/lib/kk/store 0\n/var/lib/containerd 0\n"
        );
    }
}

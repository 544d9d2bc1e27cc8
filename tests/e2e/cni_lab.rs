//! Hybridnet, Kube-OVN, and multus over Calico on real systemd nodes (systemd-nspawn, no route
//! out), one after the other on the same two nodes: install, reset, install the next. Their charts are the lab's
//! stand-ins (`scripts/lab/seed-catalog.sh`: the real charts' image names and value keys, and
//! their refusals), rendered by the real helm; containerd, the registry and systemd are real,
//! kubeadm, kubelet and kubectl the lab's stand-ins. What is proven: the values kk renders
//! (the configured pod and service ranges, the control planes) reach the applied manifest,
//! Kube-OVN's control planes are labelled before its chart, and every image each chart names
//! pulls on every node through kk's registry. Multus's manifest is the lab's stand-in of
//! upstream's (`scripts/lab/catalog.py`), downloaded by the build as the catalog's pinned
//! binary (the lab's pin), fetched by the first control plane from kk's registry, rendered with
//! the bundle's image in place of `:snapshot` and Calico's conf file as its delegate, and
//! applied by the stand-in kubectl after Calico's chart; its image (a stand-in by the real name)
//! pulls on every node.

/// In a `lab::` module: these tests bring up nodes and the upstream lab (`.config/nextest.toml`).
mod lab {
    use crate::install_lab::lab::Cluster;
    use crate::kubernetes_lab::lab::assert_chart_images_pull;
    use crate::support::run_ok;

    /// One control plane (and registry), one worker; stacked etcd.
    const GROUPS: &str = "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2]}\n    image_registry: {hosts: [node1]}\n";

    /// The config with `cni` (YAML flow mapping) and KubeKey-like ranges of its own.
    fn config(cni: &str) -> String {
        format!(
            "  etcd: {{deployment_type: internal}}\n  cni: {{{cni}, pod_cidr: 172.16.0.0/16, service_cidr: 172.17.0.0/18}}\n"
        )
    }

    #[test]
    fn hybridnet_then_kube_ovn_then_multus_install_on_the_same_nodes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut cluster = Cluster::start_nodes_with(tmp.path(), 2, |_| {
            vec!["--cni".to_owned(), "hybridnet".to_owned()]
        });
        let kube_ovn = cluster.build_bundle(&["--cni", "kube-ovn"], "kube-ovn.tar.zst");
        let multus = cluster.build_bundle(&["--multi-cni", "multus"], "multus.tar.zst");
        cluster.write_inventory(2, GROUPS);

        cluster.write_config(&config("type: hybridnet"));
        run_ok(&mut cluster.kk_install(&[]));
        let applied = cluster.on(0, "cat /etc/kubernetes/kk/charts/hybridnet.yaml");
        for line in [
            "init-cidr: \"172.16.0.0/16\"",
            "init-ip-version: \"4\"",
            r#"manager: "1 on {\"node-role.kubernetes.io/control-plane\":\"\"}""#,
            "typha-replicas: \"2\"",
        ] {
            assert!(applied.contains(line), "{line} not in:\n{applied}");
        }
        assert_chart_images_pull(&cluster, 2, "hybridnet");
        let labels = cluster.on(
            0,
            "cat /var/lib/kk-standin/kubectl/labels 2>/dev/null; true",
        );
        assert_eq!(labels, "", "hybridnet labels no node");
        run_ok(&mut cluster.kk_install(&["reset", "--yes"]));

        cluster.bundle = kube_ovn;
        cluster.write_config(&config("type: kubeovn"));
        run_ok(&mut cluster.kk_install(&[]));
        let node1 = &cluster.nodes.ips()[0];
        let applied = cluster.on(0, "cat /etc/kubernetes/kk/charts/kube-ovn.yaml");
        for line in [
            "name: kubeovn-system".to_owned(),
            format!("master-nodes: \"{node1}\""),
            "pod-cidr: \"172.16.0.0/16\"".to_owned(),
            "pod-gateway: \"172.16.0.1\"".to_owned(),
            "svc-cidr: \"172.17.0.0/18\"".to_owned(),
            "image: \"docker.io/kubeovn/vpc-nat-gateway:v1.15.24\"".to_owned(),
        ] {
            assert!(applied.contains(&line), "{line} not in:\n{applied}");
        }
        let labels = cluster.on(0, "cat /var/lib/kk-standin/kubectl/labels");
        assert_eq!(labels, "node/node1 kube-ovn/role=master\n");
        assert_chart_images_pull(&cluster, 2, "kube-ovn");
        run_ok(&mut cluster.kk_install(&["reset", "--yes"]));

        cluster.bundle = multus;
        cluster.write_config(&config("type: calico, multi_cni: multus"));
        run_ok(&mut cluster.kk_install(&[]));
        let applied = cluster.on(0, "cat /etc/kubernetes/kk/charts/multus.yaml");
        for line in [
            "kind: CustomResourceDefinition",
            "kind: DaemonSet",
            "- --multus-master-cni-file-name=10-calico.conflist",
            "image: ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0",
        ] {
            assert!(applied.contains(line), "{line} not in:\n{applied}");
        }
        assert!(!applied.contains(":snapshot"), "{applied}");
        let objects = cluster.on(
            0,
            "cat /var/lib/kk-standin/kubectl/objects 2>/dev/null; true",
        );
        assert!(objects.contains("DaemonSet/kube-multus-ds"), "{objects}");
        assert_chart_images_pull(&cluster, 2, "multus");
    }
}

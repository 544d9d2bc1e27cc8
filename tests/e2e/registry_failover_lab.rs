//! Two registry hosts, one stopped in the middle of the install: every node's binaries and
//! images still come through the other, by the fallback of `kk-install fetch` and of
//! containerd's `hosts.toml`.

/// In a `lab::` module: it brings up nodes and the upstream lab (`.config/nextest.toml`).
mod lab {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;

    use crate::install_lab::lab::{Cluster, assert_images_pull_by_name_and_digest_and_run};

    /// node1 control plane and etcd, node2 and node3 workers and both registry hosts; the
    /// registry on node2 is stopped (`systemctl stop`, so `Restart=` does not bring it back) as
    /// soon as the first step after `registry.ready` shows.
    #[test]
    fn the_install_completes_with_one_of_two_registry_hosts_stopped_mid_install() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_nodes(tmp.path(), 3);
        cluster.write_inventory(
            3,
            "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2, node3]}\n    etcd: {hosts: [node1]}\n    image_registry: {hosts: [node2, node3]}\n",
        );
        cluster.write_config("  etcd: {deployment_type: external}\n  image_registry:\n    type: kk\n    auth: {registry: \"dockerhub.kubekey.local:5443\"}\n");

        let mut child = cluster
            .kk_install(&[])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn kk-install");
        let stderr = child.stderr.take().expect("stderr");
        let mut seen = String::new();
        let mut stopped = false;
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("line");
            if !stopped && line.contains("runtime.binaries") {
                cluster.on(1, "systemctl stop kk-registry.service");
                stopped = true;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let status = child.wait().expect("wait");
        assert!(stopped, "the runtime phase never started:\n{seen}");
        assert!(
            status.success(),
            "the install failed with node2's registry stopped:\n{seen}"
        );
        assert_eq!(
            cluster
                .on(1, "systemctl is-active kk-registry.service; true")
                .trim(),
            "inactive"
        );
        assert_eq!(
            cluster
                .on(2, "systemctl is-active kk-registry.service; true")
                .trim(),
            "active"
        );

        // node1 and node3 try node2 first: their pulls fell back to node3.
        let node2 = &cluster.nodes.ips()[1];
        let node3 = &cluster.nodes.ips()[2];
        for node in [0, 2] {
            let hosts = cluster.on(node, "cat /etc/containerd/certs.d/docker.io/hosts.toml");
            let first = hosts
                .find(&format!("[host.\"https://{node2}:5443\"]"))
                .unwrap_or_else(|| panic!("node{} lists node2:\n{hosts}", node + 1));
            let second = hosts
                .find(&format!("[host.\"https://{node3}:5443\"]"))
                .unwrap_or_else(|| panic!("node{} lists node3:\n{hosts}", node + 1));
            assert!(
                first < second,
                "node{} tries node2 first:\n{hosts}",
                node + 1
            );
        }
        assert_images_pull_by_name_and_digest_and_run(&cluster);
    }
}

//! The install with `image_registry.type: external` on real systemd nodes: Debian's real
//! `docker-registry` with TLS (a CA the test makes with `kk-install registry cert`) and basic
//! auth (htpasswd, bcrypt) is the operator's registry, behind a stand-in of Harbor
//! (`scripts/lab/harbor-api.py`: TLS in front, Harbor's project API, `/v2/` proxied to the
//! real registry, refusing repositories of projects that do not exist, as Harbor does).
//!
//! Why a proxy rather than the project API on a port of its own: kk talks to a Harbor at one
//! address for both its API and `/v2/`, as to the real one (whose nginx terminates TLS in
//! front of its distribution), and the stand-in can then refuse pushes into missing projects.

/// In a `lab::` module: these tests bring up nodes and the upstream lab (`.config/nextest.toml`).
pub(crate) mod lab {
    use std::fmt::Write as _;
    use std::fs;
    use std::path::Path;
    use std::process::Command;

    use serde_json::Value;

    use crate::external_registry::{External, PASSWORD, PASSWORD_ENV, USER, WRONG};
    use crate::install_lab::lab::Cluster;
    use crate::support::{binary, run, run_failing, run_ok};

    /// The bundle's images: by original name, and by name and digest.
    fn images(bundle: &Path) -> Vec<(String, String)> {
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

    fn config(address: &str, harbor: bool) -> String {
        format!(
            "  etcd: {{deployment_type: external}}\n  image_registry:\n    type: external\n    address: \"{address}\"\n    username: {USER}\n    password_env: {PASSWORD_ENV}\n    ca_file: registry-ca.crt\n    harbor: {harbor}\n"
        )
    }

    /// No node was touched: no record, no hook, nothing of kk.
    fn assert_untouched(cluster: &Cluster) {
        for node in 0..2 {
            assert_eq!(
                cluster.on(
                    node,
                    "ls /etc/kubekey /etc/kk /root/hooks.log 2>/dev/null; true"
                ),
                "",
                "node{} was touched",
                node + 1
            );
        }
    }

    /// Nothing of kk's registry on the nodes; they hold the CA and a root-only credentials file,
    /// and containerd's config (with the password) is root's only.
    fn assert_nothing_of_kks_registry(cluster: &Cluster, external: &External) {
        for node in 0..2 {
            let state = cluster.on(
                node,
                "systemctl cat kk-registry 2>/dev/null | head -1; ls /var/lib/kk/store 2>/dev/null; \
                 grep -c kubekey.local /etc/hosts; stat -c %a /etc/kk/registry-auth /etc/containerd/config.toml; \
                 sha256sum < /etc/kk/pki/external-registry-ca.crt | cut -c1-64; true",
            );
            let ca = run_ok(Command::new("sh").arg("-c").arg(format!(
                "sha256sum < {} | cut -c1-64",
                external.ca.display()
            )))
            .0;
            assert_eq!(
                state.trim_end(),
                format!("0\n600\n600\n{}", ca.trim()),
                "node{}",
                node + 1
            );
        }
    }

    /// Every image pulls on every node by its original name and by digest, through the external
    /// registry (the nodes have no route out), its hosts.toml under the host's path.
    fn assert_images_pull_through(cluster: &Cluster, external: &External) {
        let images = images(&cluster.bundle);
        assert!(images.len() > 5, "{images:?}");
        for node in 0..2 {
            let mut pulls = String::from("set -e; u=\"$(cat /etc/kk/registry-auth)\"; ");
            for (reference, by_digest) in &images {
                let _ = write!(
                    pulls,
                    "ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d --user \"$u\" {reference} >/dev/null; \
                     ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d --user \"$u\" {by_digest} >/dev/null; "
                );
            }
            cluster.on(node, &pulls);
            let hosts = cluster.on(
                node,
                "cat /etc/containerd/certs.d/registry.k8s.io/hosts.toml",
            );
            assert!(
                hosts.contains(&format!(
                    "[host.\"https://{}/v2/registry.k8s.io\"]",
                    external.harbor
                )),
                "{hosts}"
            );
        }
    }

    #[test]
    fn an_install_pushes_into_an_existing_harbor_and_nodes_pull_through_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_nodes(tmp.path(), 2);
        cluster.write_inventory(
            2,
            "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2]}\n    etcd: {hosts: [node1]}\n",
        );
        let node_ip = cluster.nodes.ips()[0].clone();
        let bridge = format!("{}.1", node_ip.rsplit_once('.').expect("ipv4").0);
        let external = External::start(tmp.path(), &bridge);
        // `ca_file` is relative to the config.
        fs::copy(&external.ca, cluster.dir.join("registry-ca.crt")).expect("ca");
        let work = cluster.work_dir();
        fs::create_dir_all(&work).expect("work dir");
        fs::write(
            work.join("pre_install_node1.sh"),
            "#!/bin/sh\ntouch /root/hooks.log\n",
        )
        .expect("hook");

        // Bad input: the registry refuses the credentials; named before any node is touched.
        cluster.write_config(&config(&external.direct, false));
        let error = run_failing(cluster.kk_install(&[]).env(PASSWORD_ENV, WRONG));
        assert!(
            error.contains(&format!(
                "registry `{}` refused access to user `{USER}`",
                external.direct
            )),
            "{error}"
        );
        assert!(
            !error.contains(WRONG),
            "the password is never shown: {error}"
        );
        assert_untouched(&cluster);

        // The install against the Harbor stand-in: projects, push, nodes pulling through it.
        cluster.write_config(&config(&external.harbor, true));
        let (out, output) = run_ok(cluster.kk_install(&[]).env(PASSWORD_ENV, PASSWORD));
        let said = format!("{out}{}", String::from_utf8_lossy(&output.stderr));
        assert!(
            said.contains("Harbor projects created: docker.io") && said.contains("kk.internal"),
            "{said}"
        );
        assert!(
            !said.contains(PASSWORD),
            "the password is never shown: {said}"
        );
        // Nothing in the work directory (logs, state, plan) holds the password.
        let found = run(Command::new("grep")
            .args(["-rl", "--exclude-dir=store", PASSWORD])
            .arg(&work));
        assert_eq!(
            String::from_utf8_lossy(&found.stdout),
            "",
            "the password is never logged"
        );

        assert_nothing_of_kks_registry(&cluster, &external);
        assert_images_pull_through(&cluster, &external);

        // The stand-in refuses what Harbor refuses.
        assert_eq!(
            external.project_call(
                "POST",
                "/api/v2.0/projects",
                Some(r#"{"project_name":"docker.io"}"#)
            ),
            "409"
        );
        assert_eq!(
            external.project_call(
                "POST",
                "/api/v2.0/projects",
                Some(r#"{"project_name":"Bad_Name"}"#)
            ),
            "400"
        );
        assert_eq!(
            external.project_call("GET", "/api/v2.0/projects/kk.internal", None),
            "200"
        );

        // The push phase run again (`--phase` forgets its steps) finds everything there and
        // pushes nothing new.
        let (out, output) = run_ok(
            cluster
                .kk_install(&["--phase", "push"])
                .env(PASSWORD_ENV, PASSWORD),
        );
        let said = format!("{out}{}", String::from_utf8_lossy(&output.stderr));
        assert!(said.contains("0 blobs uploaded, 0 mounted"), "{said}");
        assert!(said.contains("Harbor projects created: none"), "{said}");
    }
}

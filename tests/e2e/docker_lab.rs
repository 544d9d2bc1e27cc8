//! `cri.container_manager: docker` on real systemd nodes (systemd-nspawn, no route out): the
//! real docker 28 (Debian sid's dockerd and CLI, in download.docker.com's static tarball layout,
//! with trixie's containerd 1.7 and bookworm's runc) and the lab's cri-dockerd stand-in
//! (`scripts/lab/standins/cri-dockerd.py`), under the whole install: kubeadm, the kubelet and
//! kubectl are the lab's stand-ins, which behind cri-dockerd pull through the real dockerd.
//! Images keep their original names; dockerd resolves them through `/etc/docker/certs.d` to
//! kk's registry, then, on the same nodes after a reset, to an existing registry that wants
//! credentials (the lab's real docker-registry with TLS and basic auth).

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use bundle_spec::ArtifactKind;
use bundle_spec::test_support::{artifact, description};
use bundle_spec::write::{BundleContents, WriteOptions};

use crate::support::{binary, run_failing};

/// A bundle whose description lists a Kubernetes bundle for docker `docker` (only the
/// description is read by the plan, so the artifacts need no blobs).
fn docker_bundle(dir: &Path, docker: &str) -> PathBuf {
    let binary = |name: &str, version: &str| {
        let reference = format!("kk.internal/binaries/{name}:{version}");
        artifact(
            ArtifactKind::Binary,
            name,
            version,
            Some("linux/amd64"),
            reference,
        )
    };
    let mut artifacts: Vec<_> = [
        ("kubeadm", "v1.33.0"),
        ("kubelet", "v1.33.0"),
        ("kubectl", "v1.33.0"),
        ("docker", docker),
        ("cri-dockerd", "0.3.26"),
        ("cni-plugins", "v1.7.1"),
        ("crictl", "v1.33.0"),
        ("helm", "v3.18.6"),
    ]
    .into_iter()
    .map(|(name, version)| binary(name, version))
    .collect();
    for reference in ["registry.k8s.io/pause:3.10", "quay.io/calico/node:v3.30.5"] {
        let (name, tag) = reference.rsplit_once(':').expect("tag");
        artifacts.push(artifact(
            ArtifactKind::Image,
            name,
            tag,
            Some("linux/amd64"),
            reference.to_owned(),
        ));
    }
    artifacts.push(artifact(
        ArtifactKind::Chart,
        "tigera-operator",
        "v3.30.5",
        None,
        "kk.internal/charts/tigera-operator:v3.30.5".to_owned(),
    ));
    let index = serde_json::from_value(serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [],
    }))
    .expect("index");
    let contents = BundleContents {
        description: description("2026-11-22T00:00:00Z".parse().expect("time"), artifacts),
        index,
        blobs: Vec::new(),
    };
    let written = bundle_spec::write_bundle(
        &contents,
        &dir.join("docker.tar.zst"),
        &WriteOptions::default(),
    )
    .expect("write bundle");
    written.output.paths[0].clone()
}

/// `kk-install` with a docker 24 bundle stops at the plan, naming the version and why 28 is
/// needed, before it connects to the node.
#[test]
fn a_docker_older_than_28_is_refused_before_any_node_is_contacted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // The node's SSH port: a listener that would queue any connection the install made.
    let node = TcpListener::bind("127.0.0.1:0").expect("listen");
    node.set_nonblocking(true).expect("nonblocking");
    let port = node.local_addr().expect("address").port();
    fs::write(
        dir.join("inventory.yaml"),
        format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {{name: t}}\nspec:\n  hosts:\n    cp1:\n      connector: {{host: 127.0.0.1, port: {port}, user: root}}\n      internal_ipv4: 10.0.0.1\n  groups:\n    kube_control_plane: {{hosts: [cp1]}}\n"
        ),
    )
    .expect("inventory");
    fs::write(
        dir.join("config.yaml"),
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: t}\nspec:\n  cri: {container_manager: docker}\n",
    )
    .expect("config");
    let install = |bundle: &Path| {
        let mut cmd = Command::new(binary("kk-install"));
        cmd.arg("--bundle")
            .arg(bundle)
            .arg("-i")
            .arg(dir.join("inventory.yaml"))
            .arg("-c")
            .arg(dir.join("config.yaml"))
            .arg("--work-dir")
            .arg(dir.join("work"))
            .arg("--known-hosts")
            .arg(dir.join("known_hosts"));
        cmd
    };
    let error = run_failing(&mut install(&docker_bundle(dir, "24.0.9")));
    assert!(
        error.contains("docker `24.0.9` is not 28 or newer")
            && error.contains("hosts.toml")
            && error.contains("hint:"),
        "{error}"
    );
    match node.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the install contacted the node: {other:?}"),
    }
}

/// In a `lab::` module: these tests bring up nodes and the upstream lab (`.config/nextest.toml`).
mod lab {
    use std::fmt::Write as _;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use serde_json::Value;

    use crate::external_registry::{External, PASSWORD, PASSWORD_ENV, USER};
    use crate::install_lab::lab::{Cluster, VERSION, images};
    use crate::labkit::Lab;
    use crate::support::{binary, run, run_ok};

    /// The docker the lab's tarball carries (Debian sid's docker.io).
    const DOCKER: &str = "28.5.2";

    /// The catalog's bundle for docker: the catalog's docker 28 (no published checksum, so the
    /// build pins the lab's tarball in its lock), and cri-dockerd pinned to the lab's file by a
    /// `spec.binaries` entry of the same name (the catalog pins upstream's bytes).
    fn docker_manifest(lab: &Lab, dir: &Path) -> PathBuf {
        let mut catalog = Command::new(binary("kk-bundle"));
        catalog.args([
            "catalog",
            VERSION,
            "--runtime",
            "docker",
            "--output",
            "json",
        ]);
        let (json, _) = run_ok(&mut catalog);
        let catalog: Value = serde_json::from_str(&json).expect("catalog json");
        let docker = catalog["binaries"]
            .as_array()
            .expect("binaries")
            .iter()
            .find(|entry| entry["name"] == "docker")
            .expect("the catalog has docker");
        assert_eq!(
            docker["version"], DOCKER,
            "the lab's tarball is the catalog's docker"
        );
        // Its own name: the seeding record is kept per catalog file name in the shared lab.
        let path = dir.join("catalog-docker.json");
        fs::write(&path, catalog.to_string()).expect("catalog");
        let mut seed = lab.command("bash");
        seed.current_dir(crate::support::workspace_root())
            .env("LAB_DIR", lab.dir())
            .arg("scripts/lab/seed-catalog.sh")
            .arg(&path);
        run_ok(&mut seed);
        let mut render = Command::new("python3");
        render
            .current_dir(crate::support::workspace_root())
            .arg("scripts/lab/catalog-manifest.py")
            .arg(&path)
            .args([
                "k8s",
                lab.http(),
                lab.registry(),
                "--runtime",
                "docker",
                "--pin-seeded",
            ])
            .arg(lab.dir().join("seeded/catalog-docker.json"));
        let (text, _) = run_ok(&mut render);
        let manifest = dir.join("k8s-docker.yaml");
        fs::write(&manifest, text).expect("manifest");
        manifest
    }

    #[test]
    fn docker_28_pulls_original_names_and_digests_through_kks_registry() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_with_manifest(tmp.path(), 2, docker_manifest);
        cluster.write_inventory(
            2,
            "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2]}\n    etcd: {hosts: [node1]}\n    image_registry: {hosts: [node1]}\n",
        );
        cluster.write_config("  cri: {container_manager: docker}\n");

        let (plan, _) = run_ok(&mut cluster.kk_install(&["plan"]));
        assert!(plan.contains("runtime.docker"), "{plan}");
        let (table, _) = run_ok(&mut cluster.kk_install(&[]));
        for phase in ["runtime", "kubernetes", "network"] {
            assert!(table.contains(phase), "the table lacks {phase}:\n{table}");
        }
        // kubeadm gave the kubelets cri-dockerd as their runtime; the kubelets (stand-ins) pulled
        // their static pods' images through it, from dockerd.
        for node in 0..2 {
            let flags = cluster.on(node, "cat /var/lib/kubelet/kubeadm-flags.env");
            assert!(
                flags.contains("--container-runtime-endpoint=unix:///run/cri-dockerd.sock"),
                "node{}: {flags}",
                node + 1
            );
        }
        let apiserver = cluster.on(
            0,
            "docker image ls --format '{{.Repository}}' registry.k8s.io/kube-apiserver",
        );
        assert_eq!(apiserver, "registry.k8s.io/kube-apiserver\n");
        assert_docker_runs_on_kks_containerd(&cluster);
        assert_images_pull_by_original_name_and_digest(&cluster);
        assert_pulls_need_kks_registry(&cluster);

        // A rerun of the phase finds everything in place: no service restarted.
        let before = cluster.on(
            1,
            "systemctl show -p ActiveEnterTimestampMonotonic containerd docker cri-docker",
        );
        run_ok(&mut cluster.kk_install(&["--phase", "runtime"]));
        let after = cluster.on(
            1,
            "systemctl show -p ActiveEnterTimestampMonotonic containerd docker cri-docker",
        );
        assert_eq!(before, after, "a rerun restarted a runtime service");

        // Reset takes docker's services and units away with the rest, cri-dockerd's socket first.
        run_ok(&mut cluster.kk_install(&["reset", "--yes"]));
        for node in 0..2 {
            let left = cluster.on(
                node,
                "systemctl is-active cri-docker.socket cri-docker docker containerd; \
                 ls /etc/systemd/system/docker.service /etc/systemd/system/cri-docker.socket /etc/docker/daemon.json 2>&1; true",
            );
            assert!(
                !left.lines().any(|l| l == "active")
                    && left.matches("No such file or directory").count() == 3,
                "node{}: {left}",
                node + 1
            );
        }

        docker_with_an_external_registry(&cluster, tmp.path());
    }

    /// The reset nodes installed again with docker against an existing registry that wants
    /// credentials: the install pushes into it, dockerd (`docker pull`, cri-dockerd, the kubelet
    /// behind it) pulls every image through it by original name and digest with the credentials
    /// of its `hosts.toml`, and without them the registry refuses the pull.
    fn docker_with_an_external_registry(cluster: &Cluster, dir: &Path) {
        let node_ip = cluster.nodes.ips()[0].clone();
        let bridge = format!("{}.1", node_ip.rsplit_once('.').expect("ipv4").0);
        let external = External::start(dir, &bridge);
        // `ca_file` is relative to the config.
        fs::copy(&external.ca, cluster.dir.join("registry-ca.crt")).expect("ca");
        cluster.write_inventory(
            2,
            "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2]}\n    etcd: {hosts: [node1]}\n",
        );
        cluster.write_config(&format!(
            "  cri: {{container_manager: docker}}\n  image_registry:\n    type: external\n    address: \"{}\"\n    username: {USER}\n    password_env: {PASSWORD_ENV}\n    ca_file: registry-ca.crt\n",
            external.direct
        ));
        let (out, output) = run_ok(cluster.kk_install(&[]).env(PASSWORD_ENV, PASSWORD));
        let said = format!("{out}{}", String::from_utf8_lossy(&output.stderr));
        assert!(
            !said.contains(PASSWORD),
            "the password is never shown: {said}"
        );
        let found = run(Command::new("grep")
            .args(["-rl", "--exclude-dir=store", PASSWORD])
            .arg(cluster.work_dir()));
        assert_eq!(
            String::from_utf8_lossy(&found.stdout),
            "",
            "the password is never logged"
        );
        let mirror = format!(
            "[host.\"https://{}/v2/registry.k8s.io\".header]",
            external.direct
        );
        for node in 0..2 {
            // The credentials are in dockerd's hosts.toml, for root's eyes only; the kubelet
            // follows cri-dockerd, the CRI it talks to.
            let state = cluster.on(
                node,
                "stat -c %a /etc/docker/certs.d/registry.k8s.io/hosts.toml; \
                 systemctl show -p After -p Wants kubelet; systemctl is-active cri-docker",
            );
            assert!(state.starts_with("600\n"), "node{}: {state}", node + 1);
            assert_eq!(
                state.matches("cri-docker.service").count(),
                2,
                "node{}: {state}",
                node + 1
            );
            assert!(state.ends_with("active\n"), "node{}: {state}", node + 1);
            let hosts = cluster.on(node, "cat /etc/docker/certs.d/registry.k8s.io/hosts.toml");
            assert!(hosts.contains(&mirror), "node{}: {hosts}", node + 1);
        }
        assert_images_pull_by_original_name_and_digest(cluster);
        assert_pulls_need_the_credentials(cluster);
    }

    /// With the `Authorization` header taken out of `hosts.toml`, dockerd's pull of the pause
    /// image is refused by the registry (dockerd hands its mirrors no other credentials), and
    /// cri-dockerd, which pulls it at start, does not start; both work again with it back.
    fn assert_pulls_need_the_credentials(cluster: &Cluster) {
        let pause = images(&cluster.bundle)
            .into_iter()
            .map(|(reference, _)| reference)
            .find(|r| r.starts_with("registry.k8s.io/pause:"))
            .expect("pause image");
        let hosts = "/etc/docker/certs.d/registry.k8s.io/hosts.toml";
        let said = cluster.on(
            1,
            &format!(
                "cp -p {hosts} /root/hosts.toml.kk; sed -i '/\\.header\\]$/,$d' {hosts}; \
                 grep -c Authorization {hosts}; \
                 docker pull --quiet {pause} 2>&1 && echo KK-PULLED; \
                 systemctl restart cri-docker 2>&1 && echo KK-STARTED; \
                 cp -p /root/hosts.toml.kk {hosts}; true"
            ),
        );
        assert!(
            said.starts_with("0\n"),
            "the header was not taken out: {said}"
        );
        assert!(
            !said.contains("KK-PULLED") && !said.contains("KK-STARTED"),
            "{pause} pulled without credentials: {said}"
        );
        assert!(
            said.contains("401") || said.to_lowercase().contains("authoriz"),
            "not the registry's refusal: {said}"
        );
        let again = cluster.on(
            1,
            &format!(
                "docker pull --quiet {pause} >/dev/null && systemctl restart cri-docker && systemctl is-active cri-docker"
            ),
        );
        assert_eq!(again, "active\n");
    }

    /// dockerd 28 on the containerd unit with the containerd image store, cri-dockerd up behind
    /// its socket with the pause image it pulled through dockerd.
    fn assert_docker_runs_on_kks_containerd(cluster: &Cluster) {
        for node in 0..2 {
            let version = cluster.on(node, "docker version --format '{{.Server.Version}}'");
            assert!(version.starts_with("28."), "node{}: {version}", node + 1);
            let info = cluster.on(node, "docker info --format '{{json .DriverStatus}}'");
            assert!(
                info.contains("io.containerd.snapshotter"),
                "node{}: not the containerd image store: {info}",
                node + 1
            );
            let active = cluster.on(
                node,
                "systemctl is-active containerd docker cri-docker.socket cri-docker; test -S /run/cri-dockerd.sock && echo socket",
            );
            assert_eq!(active, "active\nactive\nactive\nactive\nsocket\n");
            let hosts = cluster.on(node, "cat /etc/docker/certs.d/registry.k8s.io/hosts.toml");
            assert!(
                hosts.contains("[host.\"https://dockerhub.kubekey.local:5443\"]")
                    && hosts.contains("ca = \"/etc/kk/pki/ca.crt\""),
                "{hosts}"
            );
        }
    }

    /// Every image of the bundle pulls on a worker with `docker pull`, by its original name and
    /// by digest, and docker lists it by its original name: nothing was rewritten, and with no
    /// route out of the node only kk's registry can have served it.
    fn assert_images_pull_by_original_name_and_digest(cluster: &Cluster) {
        let images = images(&cluster.bundle);
        assert!(images.len() > 5, "{images:?}");
        let mut pulls = String::from("set -e; ");
        for (reference, by_digest) in &images {
            let _ = write!(
                pulls,
                "docker pull --quiet {reference} >/dev/null; docker pull --quiet {by_digest} >/dev/null; "
            );
        }
        cluster.on(1, &pulls);
        let listed = cluster.on(1, "docker image ls --format '{{.Repository}}:{{.Tag}}'");
        let pause = images
            .iter()
            .map(|(reference, _)| reference)
            .find(|r| r.starts_with("registry.k8s.io/pause:"))
            .expect("pause image");
        assert!(listed.lines().any(|l| l == pause), "{listed}");
        for line in listed.lines() {
            assert!(
                !line.starts_with("dockerhub.kubekey.local"),
                "an image was renamed to kk's registry: {line}"
            );
        }
    }

    /// With kk's registry stopped, a pull of an image the node does not have fails: dockerd
    /// resolves only through it, never around it.
    fn assert_pulls_need_kks_registry(cluster: &Cluster) {
        let images = images(&cluster.bundle);
        let (_, by_digest) = images
            .iter()
            .find(|(reference, _)| reference.contains("coredns"))
            .expect("coredns image");
        cluster.on(0, "systemctl stop kk-registry");
        let said = cluster.on(
            0,
            &format!("docker pull --quiet {by_digest} 2>&1 && echo KK-PULLED; true"),
        );
        cluster.on(0, "systemctl start kk-registry");
        assert!(
            !said.contains("KK-PULLED") && said.contains("dockerhub.kubekey.local:5443"),
            "{by_digest} without kk's registry: {said}"
        );
    }
}

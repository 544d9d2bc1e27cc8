//! Node OS packages carried in the bundle (issue 21), against the upstream lab's real Debian
//! repository (`scripts/lab/debrepo.sh`: real bookworm `.deb`s, indexed by apt-ftparchive, signed
//! by a lab key gpg made at setup) and on fresh minimal nspawn nodes that lack what a minimal
//! server lacks. The NFS server itself cannot serve here (this kernel has no nfsd): the tests
//! prove the packages, the exports as `exportfs` takes them, the unit enabled and the chart.

/// In a `lab::` module: these tests bring up the upstream lab and nodes (`.config/nextest.toml`).
mod lab {
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use serde_json::Value;

    use crate::install_lab::lab::Cluster;
    use crate::labkit::Lab;
    use crate::nodekit::Nodes;
    use crate::support::{binary, parse_env, run, run_failing, run_ok};

    /// What the cluster's features ask for: kubeadm's commands, ipvs, the NFS client and server.
    const ROOTS: [&str; 8] = [
        "socat",
        "conntrack",
        "ebtables",
        "ethtool",
        "ipset",
        "ipvsadm",
        "nfs-common",
        "nfs-kernel-server",
    ];
    /// What every `k8s_cluster` node gets (the NFS server goes to the `nfs` host only).
    const NODE_PACKAGES: [&str; 7] = [
        "socat",
        "conntrack",
        "ebtables",
        "ethtool",
        "ipset",
        "ipvsadm",
        "nfs-common",
    ];
    /// What the nodes' minimal image must lack (the install brings it).
    const IMAGE_LACKS: [&str; 5] = ["socat", "conntrack", "ebtables", "ethtool", "nfs-common"];

    /// The lab repository's index: package name → its stanza's fields.
    fn lab_index(lab: &Lab) -> BTreeMap<String, BTreeMap<String, String>> {
        let path = lab
            .dir()
            .join("http/debian/dists/bookworm/main/binary-amd64/Packages");
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.split("\n\n")
            .filter(|s| !s.trim().is_empty())
            .map(|stanza| {
                let fields: BTreeMap<String, String> = stanza
                    .lines()
                    .filter(|l| !l.starts_with(' '))
                    .filter_map(|l| l.split_once(": "))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                (fields["Package"].clone(), fields)
            })
            .collect()
    }

    /// A repository variant of `scripts/lab/debrepo.sh` (`corrupt-deb`, `unsatisfiable`) at
    /// `$LAB_DIR/http/NAME`, removed again on drop; its KEY=VALUE output.
    struct Variant {
        dir: PathBuf,
        vars: BTreeMap<String, String>,
    }

    impl Variant {
        fn make(lab: &Lab, kind: &str, name: &str) -> Self {
            let mut cmd = lab.command("bash");
            cmd.current_dir(crate::support::workspace_root())
                .env("LAB_DIR", lab.dir())
                .args(["scripts/lab/debrepo.sh", "variant", kind, name]);
            let (out, _) = run_ok(&mut cmd);
            Self {
                dir: lab.dir().join("http").join(name),
                vars: parse_env(&out),
            }
        }

        fn var(&self, key: &str) -> &str {
            &self.vars[key]
        }
    }

    impl Drop for Variant {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    /// A manifest of nothing but `packages` for debian-12 amd64 from the repository at `url`,
    /// checked against `keyring`.
    fn packages_manifest(dir: &Path, url: &str, keyring: &str, packages: &[&str]) -> PathBuf {
        let manifest = dir.join("packages.yaml");
        fs::write(
            &manifest,
            format!(
                "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: packages}}\nspec:\n  osPackages:\n    - distro: debian-12\n      arch: amd64\n      repository: {{url: \"{url}\", suite: bookworm, components: [main], keyring: \"{keyring}\"}}\n      packages: [{}]\n",
                packages.join(", ")
            ),
        )
        .expect("manifest");
        manifest
    }

    /// `kk-bundle build MANIFEST -o DIR/NAME` with its own cache in `dir`.
    fn build(manifest: &Path, dir: &Path, name: &str) -> Command {
        let mut cmd = Command::new(binary("kk-bundle"));
        cmd.arg("build")
            .arg(manifest)
            .arg("-o")
            .arg(dir.join(name))
            .arg("--cache")
            .arg(dir.join("cache"))
            .args(["--level", "3"]);
        cmd
    }

    fn inspect_json(bundle: &Path) -> Value {
        let mut cmd = Command::new(binary("kk-bundle"));
        cmd.arg("inspect").arg(bundle).args(["--output", "json"]);
        serde_json::from_str(&run_ok(&mut cmd).0).expect("inspect json")
    }

    fn names(list: &Value) -> Vec<&str> {
        list.as_array()
            .unwrap_or_else(|| panic!("not a list: {list}"))
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect()
    }

    /// The options of `catalog-manifest.py` for a bundle with the lab's Debian 12 packages, ipvs
    /// and NFS.
    fn package_options(lab: &Lab) -> Vec<String> {
        [
            "--packages",
            lab.var("KK_LAB_DEBIAN_URL"),
            lab.var("KK_LAB_DEBIAN_SUITE"),
            lab.var("KK_LAB_DEBIAN_KEYRING"),
            "--kube-proxy-mode",
            "ipvs",
            "--storage",
            "nfs",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    #[test]
    fn the_lab_debian_repository_is_real_indexed_and_signed() {
        let lab = Lab::up(&Lab::default_dir());
        let index = lab_index(&lab);
        for root in ROOTS {
            assert!(
                index.contains_key(root),
                "{root} is not in the lab repository"
            );
        }
        assert!(index.contains_key("libc6"), "the closure reaches libc6");
        for (name, fields) in &index {
            assert!(fields.contains_key("Priority"), "{name} has no Priority");
            // An archive's pool names files without the version's epoch (no `%3a`).
            assert!(!fields["Filename"].contains('%'), "{}", fields["Filename"]);
            let deb = lab.dir().join("http/debian").join(&fields["Filename"]);
            let bytes = fs::read(&deb).unwrap_or_else(|e| panic!("{}: {e}", deb.display()));
            assert_eq!(
                bundle_spec::Sha256Digest::of(&bytes).to_string(),
                format!("sha256:{}", fields["SHA256"]),
                "{name}"
            );
        }
        // The archive's priorities, as a mirror's index has them (zlib1g's own control file
        // says `required`, the archive's override `optional`).
        for essential in ["dpkg", "tar"] {
            assert_eq!(index[essential]["Priority"], "required", "{essential}");
            assert_eq!(index[essential]["Essential"], "yes", "{essential}");
        }
        assert_eq!(index["zlib1g"]["Priority"], "optional");
        let release = lab.dir().join("http/debian/dists/bookworm");
        let text = fs::read_to_string(release.join("Release")).expect("Release");
        for field in [
            "Suite: bookworm",
            "Codename: bookworm",
            "Components: main",
            "Architectures: amd64",
        ] {
            assert!(text.contains(field), "{field}:\n{text}");
        }
        // The signature is real: gpgv takes InRelease with the lab keyring, not with the other.
        let gpgv = |keyring: &str| {
            let mut cmd = Command::new("gpgv");
            cmd.arg("--keyring")
                .arg(lab.var(keyring))
                .arg(release.join("InRelease"));
            run(&mut cmd).status.success()
        };
        assert!(gpgv("KK_LAB_DEBIAN_KEYRING"));
        assert!(!gpgv("KK_LAB_DEBIAN_OTHER_KEYRING"));
        assert!(lab.var("KK_LAB_DEBIAN_URL").starts_with(lab.http()));
    }

    #[test]
    fn fresh_nspawn_nodes_lack_what_a_minimal_server_lacks() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let nodes = Nodes::start_nspawn(&tmp.path().join("nodes"), 1);
        let ip = &nodes.ips()[0];
        for package in IMAGE_LACKS {
            let said = nodes.on(
                ip,
                &format!("dpkg -s {package} >/dev/null 2>&1 && echo present || echo absent"),
            );
            assert_eq!(said, "absent\n", "{package} is on a fresh node");
        }
        assert_eq!(
            nodes.on(ip, "dpkg -s openssh-server >/dev/null && echo present"),
            "present\n",
            "dpkg -s tells installed packages apart"
        );
    }

    #[test]
    fn a_bundle_carries_the_closure_of_the_clusters_debian_packages() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let lab = Lab::up(&Lab::default_dir());
        let options = package_options(&lab);
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let (manifest, _) = crate::bundle_lab::catalog_manifest_with(
            &lab,
            tmp.path(),
            crate::install_lab::lab::VERSION,
            &options,
        );
        let bundle = tmp.path().join("k8s.tar.zst");
        run_ok(&mut build(&manifest, tmp.path(), "k8s.tar.zst"));
        let index = lab_index(&lab);

        let inspected = inspect_json(&bundle);
        let sets = inspected["packages"].as_array().expect("packages sets");
        assert_eq!(sets.len(), 1, "{inspected:#}");
        let set = &sets[0];
        assert_eq!(set["distro"], "debian-12");
        assert_eq!(set["arch"], "amd64");
        let roots = names(&set["roots"]);
        for root in ROOTS {
            assert!(
                roots.contains(&root),
                "{root} not among the roots {roots:?}"
            );
        }
        let closure = names(&set["packages"]);
        for root in ROOTS {
            assert!(closure.contains(&root), "{root} not in the closure");
        }
        for lib in ["libnfsidmap1", "libipset13", "rpcbind"] {
            assert!(
                closure.contains(&lib),
                "{lib} not in the closure {closure:?}"
            );
        }
        for record in set["packages"].as_array().expect("packages") {
            let name = record["name"].as_str().expect("name");
            let fields = &index[name];
            assert_eq!(record["version"], fields["Version"].as_str(), "{name}");
            assert_eq!(
                record["sha256"],
                format!("sha256:{}", fields["SHA256"]),
                "{name}"
            );
        }
        // One artifact and one lock entry per .deb, with the index's version and digest.
        let locked = inspected["lock"]["packages"]
            .as_array()
            .expect("lock.packages");
        assert_eq!(locked.len(), closure.len(), "{locked:#?}");
        for entry in locked {
            let name = entry["name"].as_str().expect("name");
            assert_eq!(entry["version"], index[name]["Version"].as_str(), "{name}");
            assert_eq!(
                entry["digest"],
                format!("sha256:{}", index[name]["SHA256"]),
                "{name}"
            );
            assert_eq!(
                entry["url"],
                format!(
                    "{}/{}",
                    lab.var("KK_LAB_DEBIAN_URL"),
                    index[name]["Filename"]
                ),
                "{name}"
            );
        }
        let packages = inspected["artifacts"]
            .as_array()
            .expect("artifacts")
            .iter()
            .filter(|a| a["kind"] == "package")
            .count();
        assert_eq!(packages, closure.len());

        let mut sbom = Command::new(binary("kk-bundle"));
        sbom.arg("inspect").arg(&bundle).arg("--sbom");
        let (sbom, _) = run_ok(&mut sbom);
        let socat = format!(
            "pkg:deb/debian/socat@{}?arch=amd64",
            index["socat"]["Version"]
        );
        assert!(sbom.contains(&socat), "{socat} not in the SBOM");
        assert_eq!(
            sbom.matches("pkg:deb/debian/").count(),
            closure.len(),
            "one purl per .deb"
        );
        // What every installation has stays out: the required and essential packages and what
        // they depend on (libc6 is `optional` in the archive, yet dpkg and tar need it).
        for every_system_has in ["libc6", "dpkg", "tar", "perl-base", "passwd"] {
            assert!(
                !closure.contains(&every_system_has),
                "{every_system_has} is on every installation: not carried"
            );
        }
    }

    /// A build that must fail: its stderr, and no bundle written.
    fn build_fails(manifest: &Path, dir: &Path) -> String {
        let error = run_failing(&mut build(manifest, dir, "bad.tar.zst"));
        assert!(
            !dir.join("bad.tar.zst").exists(),
            "a failed build wrote a bundle"
        );
        error
    }

    #[test]
    fn a_signature_by_another_key_fails_the_build_naming_the_repository() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let lab = Lab::up(&Lab::default_dir());
        let url = lab.var("KK_LAB_DEBIAN_URL");
        let manifest = packages_manifest(
            tmp.path(),
            url,
            lab.var("KK_LAB_DEBIAN_OTHER_KEYRING"),
            &["socat"],
        );
        let error = build_fails(&manifest, tmp.path());
        // Names the signature problem (`signed by` a key the keyring lacks, or a bad signature),
        // the keyring and the repository.
        assert!(error.contains("sign"), "{error}");
        assert!(
            error.contains(lab.var("KK_LAB_DEBIAN_OTHER_KEYRING")),
            "{error}"
        );
        assert!(error.contains(url), "{error}");

        // The same manifest with the lab's keyring builds.
        let manifest = packages_manifest(
            tmp.path(),
            url,
            lab.var("KK_LAB_DEBIAN_KEYRING"),
            &["socat"],
        );
        run_ok(&mut build(&manifest, tmp.path(), "good.tar.zst"));
        let inspected = inspect_json(&tmp.path().join("good.tar.zst"));
        let roots = &inspected["packages"][0]["roots"];
        assert_eq!(names(roots), ["socat"], "{inspected:#}");
        assert_eq!(roots[0]["reason"], "manifest");
        assert_eq!(roots[0]["scope"], "all");
    }

    #[test]
    fn a_deb_whose_bytes_differ_from_the_index_fails_the_build_naming_url_and_digests() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let lab = Lab::up(&Lab::default_dir());
        let variant = Variant::make(&lab, "corrupt-deb", "debian-corrupt-deb");
        let manifest = packages_manifest(
            tmp.path(),
            variant.var("URL"),
            lab.var("KK_LAB_DEBIAN_KEYRING"),
            &["socat"],
        );
        let error = build_fails(&manifest, tmp.path());
        let deb_url = format!("{}/{}", variant.var("URL"), variant.var("FILE"));
        assert!(error.contains(&deb_url), "{deb_url}: {error}");
        assert!(error.contains(variant.var("INDEX_SHA256")), "{error}");
        assert!(error.contains(variant.var("FILE_SHA256")), "{error}");
    }

    #[test]
    fn an_unsatisfiable_dependency_fails_the_build_naming_package_dependency_and_repository() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let lab = Lab::up(&Lab::default_dir());
        let variant = Variant::make(&lab, "unsatisfiable", "debian-unsatisfiable");
        let manifest = packages_manifest(
            tmp.path(),
            variant.var("URL"),
            lab.var("KK_LAB_DEBIAN_KEYRING"),
            &["socat"],
        );
        let error = build_fails(&manifest, tmp.path());
        for expected in [
            variant.var("PACKAGE"),
            "libdoesnotexist",
            variant.var("URL"),
        ] {
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    /// Groups: node1 control plane, etcd and registry; node2 worker; node3 the NFS host.
    const NFS_GROUPS: &str = "    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2]}\n    etcd: {hosts: [node1]}\n    image_registry: {hosts: [node1]}\n    nfs: {hosts: [node3]}\n";
    const NFS_CONFIG: &str = "  kubernetes:\n    kube_proxy: {mode: ipvs}\n  etcd: {deployment_type: external}\n  storage_class:\n    nfs: {enabled: true}\n";

    /// The packages of `list` that `dpkg -s` does not find installed on node `i`.
    fn missing(cluster: &Cluster, i: usize, list: &[&str]) -> String {
        cluster.on(
            i,
            &format!(
                "for p in {}; do dpkg -s $p >/dev/null 2>&1 || echo $p; done",
                list.join(" ")
            ),
        )
    }

    #[test]
    fn an_install_on_minimal_nodes_brings_the_packages_and_sets_up_the_nfs_host() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_nodes_with(tmp.path(), 3, package_options);
        cluster.write_inventory(3, NFS_GROUPS);
        cluster.write_config(NFS_CONFIG);
        for i in 0..3 {
            assert_eq!(
                missing(&cluster, i, &IMAGE_LACKS).lines().count(),
                IMAGE_LACKS.len(),
                "node{} is not minimal",
                i + 1
            );
        }

        // The precheck passes without waivers: what the bundle's packages bring is `set`.
        let mut precheck = cluster.kk_install(&["precheck", "--output", "json"]);
        let (report, _) = run_ok(&mut precheck);
        let report: Value = serde_json::from_str(&report).expect("precheck json");
        let commands = report["nodes"]["node1"]
            .as_array()
            .and_then(|l| l.iter().find(|c| c["id"] == "kubeadm.commands"))
            .unwrap_or_else(|| panic!("no kubeadm.commands: {report:#}"));
        assert_eq!(commands["status"], "set", "{commands}");

        let (table, _) = run_ok(&mut cluster.kk_install(&[]));
        assert!(table.contains("packages"), "{table}");
        for i in 0..2 {
            assert_eq!(missing(&cluster, i, &NODE_PACKAGES), "", "node{}", i + 1);
        }
        assert_eq!(missing(&cluster, 2, &["nfs-kernel-server"]), "");
        assert_nfs_host(&cluster);

        // A rerun changes nothing: no file kk recorded, and no package (dpkg's database as it was).
        let before = cluster.fingerprint();
        let dpkg_state = "stat -c %Y /var/lib/dpkg/status; dpkg-query -W -f '${Package} ${Version} ${db:Status-Status}\\n'";
        let packages_before: Vec<String> = (0..3).map(|i| cluster.on(i, dpkg_state)).collect();
        run_ok(&mut cluster.kk_install(&[]));
        assert_eq!(cluster.fingerprint(), before, "a rerun changed something");
        let packages_after: Vec<String> = (0..3).map(|i| cluster.on(i, dpkg_state)).collect();
        assert_eq!(
            packages_after, packages_before,
            "a rerun installed packages"
        );

        // Reset takes kk's exports and the provisioner away and keeps the shared data;
        // `--purge` empties the share. The packages stay: they are the node's now.
        cluster.on(2, "echo data > /share/volume-1");
        run_ok(&mut cluster.kk_install(&["reset", "--yes"]));
        let exports = cluster.on(2, "cat /etc/exports 2>/dev/null; true");
        assert!(
            !exports.contains("/share"),
            "exports after reset: {exports}"
        );
        assert_eq!(cluster.on(2, "cat /share/volume-1"), "data\n");
        let charts = cluster.on(
            0,
            "grep -l nfs-subdir-external-provisioner /etc/kubernetes/kk/charts/* 2>/dev/null; true",
        );
        assert_eq!(charts, "", "the provisioner's chart files stayed");
        assert_eq!(missing(&cluster, 2, &["nfs-kernel-server"]), "");
        run_ok(&mut cluster.kk_install(&["reset", "--yes", "--purge"]));
        assert_eq!(cluster.on(2, "ls -A /share; true"), "");
    }

    /// The share dir, kk's block in /etc/exports naming every node, taken by `exportfs`, the
    /// server enabled, and the provisioner chart applied with the NFS host and path.
    fn assert_nfs_host(cluster: &Cluster) {
        let ips = cluster.nodes.ips();
        let nfs_ip = &ips[2];
        assert_eq!(cluster.on(2, "test -d /share && echo dir"), "dir\n");
        let exports = cluster.on(2, "cat /etc/exports");
        assert!(exports.contains("kk"), "kk's block: {exports}");
        let line = exports
            .lines()
            .find(|l| l.starts_with("/share"))
            .unwrap_or_else(|| panic!("no /share export: {exports}"));
        for ip in &ips[..2] {
            assert!(line.contains(ip.as_str()), "{ip}: {line}");
        }
        assert!(line.contains("rw,sync,no_subtree_check"), "{line}");
        let exported = cluster.on(
            2,
            "exportfs -v 2>/dev/null; cat /var/lib/nfs/etab 2>/dev/null; true",
        );
        for ip in &ips[..2] {
            assert!(
                exported.contains(ip.as_str()),
                "{ip} not exported: {exported}"
            );
        }
        assert_eq!(
            cluster.on(2, "systemctl is-enabled nfs-server"),
            "enabled\n"
        );

        let charts = cluster.on(
            0,
            "grep -l nfs-subdir-external-provisioner /etc/kubernetes/kk/charts/*.yaml | xargs cat",
        );
        assert!(
            charts.contains(&format!("NFS_SERVER, value: \"{nfs_ip}\"")),
            "{charts}"
        );
        assert!(charts.contains("NFS_PATH, value: \"/share"), "{charts}");
        let objects = cluster.on(0, "cat /var/lib/kk-standin/kubectl/objects");
        assert!(objects.contains("StorageClass/"), "{objects}");
    }

    #[test]
    fn a_node_of_a_distribution_the_bundle_lacks_fails_the_precheck_and_nothing_changes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cluster = Cluster::start_nodes_with(tmp.path(), 3, package_options);
        cluster.write_inventory(3, NFS_GROUPS);
        cluster.write_config(NFS_CONFIG);
        cluster.on(
            1,
            "sed -i -e 's/^VERSION_ID=.*/VERSION_ID=\"11\"/' -e 's/^VERSION_CODENAME=.*/VERSION_CODENAME=bullseye/' \
             $(readlink -f /etc/os-release)",
        );
        let listing = "find /etc /usr/local /var/lib/kk -xdev -newer /etc/hostname -type f 2>/dev/null | sort; dpkg -l | md5sum";
        let before: Vec<String> = (0..3).map(|i| cluster.on(i, listing)).collect();

        let error = run_failing(&mut cluster.kk_install(&[]));
        for expected in ["node2", "debian-11", "socat"] {
            assert!(error.contains(expected), "{expected}: {error}");
        }
        let after: Vec<String> = (0..3).map(|i| cluster.on(i, listing)).collect();
        assert_eq!(after, before, "a node changed");
    }
}

//! Test fixtures: a small inventory, healthy facts, and lookups into a report.

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::digest::Sha256Digest;
use bundle_spec::packages::{
    Distro, PackageFormat, PackageRecord, PackageScope, PackageSet, RootPackage,
};

use crate::facts::{DpkgPackage, Facts, Listener, OsRelease};
use crate::inventory::{Config, Inventory};

use super::{BundleFacts, CheckResult, ClusterFacts, Context, Report, Stage, Status, evaluate_at};

/// node1: control plane, etcd, image registry and worker; node2 and node3: workers.
pub(super) const INVENTORY: &str = "\
apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts:
    node1: {internal_ipv4: 10.0.0.1}
    node2: {internal_ipv4: 10.0.0.2}
    node3: {internal_ipv4: 10.0.0.3}
  groups:
    kube_control_plane: {hosts: [node1]}
    kube_worker: {hosts: [node1, node2, node3]}
    etcd: {hosts: [node1]}
    image_registry: {hosts: [node1]}
";

/// Parses an inventory, panicking on errors.
pub(super) fn inventory(text: &str) -> Inventory {
    Inventory::from_str_named(text, "inventory.yaml").unwrap_or_else(|e| panic!("{e}"))
}

/// Parses a config, panicking on errors.
pub(super) fn config(spec: &str) -> Config {
    let text = format!("apiVersion: install.kk.io/v1alpha1\nkind: Config\nspec:\n{spec}");
    Config::from_str_named(&text, "config.yaml").unwrap_or_else(|e| panic!("{e}"))
}

/// The facts of a healthy Debian 12 node with 2 CPUs and 4 GiB, no address yet, prepared as
/// kk's os phase leaves it (forwarding and bridge filtering on, modules loaded, swap off).
pub(super) fn debian() -> Facts {
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    Facts {
        os: OsRelease {
            id: "debian".to_owned(),
            version_id: "12".to_owned(),
            pretty_name: "Debian GNU/Linux 12 (bookworm)".to_owned(),
        },
        kernel: "6.1.0-18-amd64".to_owned(),
        machine: "x86_64".to_owned(),
        cpus: 2,
        memory_bytes: 4 << 30,
        swap_bytes: 0,
        hostname: "debian".to_owned(),
        resolved_name: String::new(),
        name_resolves: true,
        addresses: BTreeMap::new(),
        listening: vec![Listener {
            address: "0.0.0.0".to_owned(),
            port: 22,
        }],
        port_holders: BTreeMap::from([(22, "sshd".to_owned())]),
        kk_phases: None,
        sysctls: BTreeMap::from([
            ("net.ipv4.ip_forward".to_owned(), "1".to_owned()),
            (
                "net.bridge.bridge-nf-call-iptables".to_owned(),
                "1".to_owned(),
            ),
        ]),
        modules: strings(&["overlay", "br_netfilter"]),
        filesystems: strings(&["ext4", "overlay"]),
        cgroup_fs: "cgroup2fs".to_owned(),
        commands: strings(&[super::kubeadm::COMMANDS, &["fio"]].concat()),
        versions: BTreeMap::new(),
        installed_packages: Some(BTreeMap::new()),
        nfsd: true,
        static_pods: Vec::new(),
        etcd_data_present: false,
        free_bytes: ["/", "/var/lib", "/usr/local/bin", "/etc", "/opt"]
            .into_iter()
            .map(|path| (path.to_owned(), 50 << 30))
            .collect(),
        store_blobs: BTreeMap::new(),
        proxy_env: BTreeMap::new(),
        clock: 1_795_000_000.0,
        uid: 0,
        clock_offset: 0.1,
    }
}

/// The phases kk's record names on a node it installed every phase on.
pub(super) const INSTALLED_PHASES: &[&str] = &[
    "os",
    "pki",
    "registry",
    "packages",
    "runtime",
    "etcd",
    "kubernetes",
    "network",
];

/// `facts` as kk leaves a node it installed: its record naming `phases`, each of `holders`
/// (port, process) listening on every address (an empty process: one `ss` could not name),
/// kubeadm's static pods, etcd's data and version.
pub(super) fn installed(facts: &mut Facts, phases: &[&str], holders: &[(u16, &str)]) {
    facts.kk_phases = Some(phases.iter().map(|p| (*p).to_owned()).collect());
    for &(port, process) in holders {
        facts.listening.push(Listener {
            address: "0.0.0.0".to_owned(),
            port,
        });
        if !process.is_empty() {
            facts.port_holders.insert(port, process.to_owned());
        }
    }
    facts.static_pods = [
        "kube-apiserver.yaml",
        "kube-controller-manager.yaml",
        "kube-scheduler.yaml",
    ]
    .map(str::to_owned)
    .to_vec();
    facts.etcd_data_present = true;
    facts
        .versions
        .insert("etcd".to_owned(), "etcd Version: 3.5.16".to_owned());
}

/// Healthy facts of a node with `address` on `eth0`.
pub(super) fn node_facts(address: &str) -> Facts {
    let mut facts = debian();
    facts
        .addresses
        .insert("eth0".to_owned(), vec![address.to_owned()]);
    facts
}

/// node1: control plane, etcd, image registry and worker; node2: worker; node3: the NFS server
/// alone (no Kubernetes).
pub(super) const NFS_INVENTORY: &str = "\
apiVersion: install.kk.io/v1alpha1
kind: Inventory
spec:
  hosts:
    node1: {internal_ipv4: 10.0.0.1}
    node2: {internal_ipv4: 10.0.0.2}
    node3: {internal_ipv4: 10.0.0.3}
  groups:
    kube_control_plane: {hosts: [node1]}
    kube_worker: {hosts: [node1, node2]}
    etcd: {hosts: [node1]}
    image_registry: {hosts: [node1]}
    nfs: {hosts: [node3]}
";

/// The roots of a bundle built for kubeadm and NFS storage: `(name, scope, commands)`.
pub(super) const ROOTS: &[(&str, PackageScope, &[&str])] = &[
    ("conntrack", PackageScope::Kubernetes, &["conntrack"]),
    ("ebtables", PackageScope::Kubernetes, &["ebtables"]),
    ("ethtool", PackageScope::Kubernetes, &["ethtool"]),
    ("socat", PackageScope::Kubernetes, &["socat"]),
    ("nfs-common", PackageScope::Kubernetes, &["mount.nfs"]),
    ("nfs-kernel-server", PackageScope::NfsServer, &["exportfs"]),
];

/// A package set of `distro` (`debian-12`) and `arch` with [`ROOTS`] and their closure (each
/// root, with nfs-kernel-server after nfs-common, which it depends on).
pub(super) fn package_set(distro: &str, arch: &str) -> PackageSet {
    let distro = Distro::parse(distro).unwrap_or_else(|| panic!("{distro}"));
    let record = |name: &str, depends: &str| PackageRecord {
        name: name.to_owned(),
        version: "1.0-1".to_owned(),
        architecture: arch.to_owned(),
        depends: depends.to_owned(),
        pre_depends: String::new(),
        provides: String::new(),
        multi_arch: String::new(),
        filename: format!("{name}_1.0-1_{arch}.deb"),
        sha256: Sha256Digest::of(name.as_bytes()),
        size: 1000,
        reference: format!("kk.internal/packages/{distro}/{arch}/{name}:1.0-1"),
    };
    PackageSet {
        distro: distro.clone(),
        arch: arch.to_owned(),
        format: PackageFormat::Deb,
        repository: "http://deb.example/debian bookworm".to_owned(),
        roots: ROOTS
            .iter()
            .map(|&(name, scope, commands)| RootPackage {
                name: name.to_owned(),
                scope,
                commands: commands.iter().map(|c| (*c).to_owned()).collect(),
                reason: "kubeadm".to_owned(),
            })
            .collect(),
        packages: ROOTS
            .iter()
            .map(|&(name, _, _)| match name {
                "nfs-kernel-server" => record(name, "nfs-common (>= 1.0)"),
                _ => record(name, ""),
            })
            .collect(),
    }
}

/// `facts` with the packages `names` installed (version 1.0-1).
pub(super) fn install(facts: &mut Facts, names: &[&str]) {
    for name in names {
        facts.installed_packages.get_or_insert_default().insert(
            (*name).to_owned(),
            DpkgPackage {
                version: "1.0-1".to_owned(),
                provides: String::new(),
            },
        );
    }
}

/// Everything a [`Context`] borrows, owned, so tests can change one thing.
#[derive(Debug, Clone)]
pub(super) struct Fixture {
    pub(super) inventory: Inventory,
    pub(super) config: Config,
    pub(super) facts: BTreeMap<String, Facts>,
    pub(super) bundle: BundleFacts,
    pub(super) cluster: ClusterFacts,
}

impl Fixture {
    /// [`INVENTORY`], the default config, healthy facts, and a bundle for amd64 with v1.31.4.
    pub(super) fn three_nodes() -> Self {
        let facts = [
            ("node1", "10.0.0.1"),
            ("node2", "10.0.0.2"),
            ("node3", "10.0.0.3"),
        ]
        .into_iter()
        .map(|(name, address)| {
            let mut facts = node_facts(address);
            facts.resolved_name = name.to_owned();
            (name.to_owned(), facts)
        })
        .collect();
        Self {
            inventory: inventory(INVENTORY),
            config: Config::default(),
            facts,
            bundle: BundleFacts {
                platforms: vec!["linux/amd64".to_owned()],
                kubernetes_version: Some("v1.31.4".to_owned()),
                content_bytes: 3 << 30,
                blobs: BTreeSet::new(),
                binaries: [
                    "kubeadm",
                    "kubelet",
                    "kubectl",
                    "etcd",
                    "containerd",
                    "runc",
                ]
                .into_iter()
                .map(str::to_owned)
                .collect(),
                images: vec![
                    "registry.k8s.io/pause:3.10".to_owned(),
                    "quay.io/calico/node:v3.28.2".to_owned(),
                ],
                packages: Vec::new(),
            },
            cluster: ClusterFacts {
                vip_answers: None,
                etcd_fsync_p99_seconds: BTreeMap::from([("node1".to_owned(), 0.002)]),
            },
        }
    }

    /// [`Fixture::three_nodes`] with [`NFS_INVENTORY`] and a bundle carrying
    /// [`package_set`]`("debian-12", "amd64")`; the nodes have kubeadm's commands (not
    /// `mount.nfs` nor `exportfs`) and none of the packages of [`ROOTS`] installed.
    pub(super) fn with_packages() -> Self {
        let mut fixture = Self::three_nodes();
        fixture.inventory = inventory(NFS_INVENTORY);
        fixture.bundle.packages = vec![package_set("debian-12", "amd64")];
        fixture
    }

    /// The fixture's facts of `node`, to change.
    pub(super) fn node(&mut self, node: &str) -> &mut Facts {
        self.facts.get_mut(node).unwrap_or_else(|| panic!("{node}"))
    }

    /// The context the fixture's parts make.
    pub(super) fn context(&self) -> Context<'_> {
        Context {
            inventory: &self.inventory,
            config: &self.config,
            facts: &self.facts,
            bundle: &self.bundle,
            cluster: &self.cluster,
        }
    }

    /// Runs every rule before the install.
    pub(super) fn evaluate(&self, ignore: &BTreeSet<String>) -> Report {
        self.evaluate_at(ignore, Stage::BeforeInstall)
    }

    /// Runs every rule at `stage`.
    pub(super) fn evaluate_at(&self, ignore: &BTreeSet<String>, stage: Stage) -> Report {
        evaluate_at(&self.context(), ignore, stage)
    }

    /// The result of rule `id` on `node`, before the install.
    pub(super) fn on(&self, node: &str, id: &str) -> CheckResult {
        self.on_at(node, id, Stage::BeforeInstall)
    }

    /// The result of rule `id` on `node` at `stage`.
    pub(super) fn on_at(&self, node: &str, id: &str, stage: Stage) -> CheckResult {
        let report = self.evaluate_at(&BTreeSet::new(), stage);
        let results = report.nodes.get(node).unwrap_or_else(|| panic!("{node}"));
        find(results, id)
    }

    /// The result of cluster rule `id`.
    pub(super) fn cluster(&self, id: &str) -> CheckResult {
        find(&self.evaluate(&BTreeSet::new()).cluster, id)
    }
}

fn find(results: &[CheckResult], id: &str) -> CheckResult {
    results
        .iter()
        .find(|r| r.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no result `{id}` in {results:#?}"))
}

/// Asserts `result` has `status` and its message contains every one of `words`.
#[track_caller]
pub(super) fn expect(result: &CheckResult, status: Status, words: &[&str]) {
    assert_eq!(result.status, status, "{result:?}");
    for word in words {
        assert!(
            result.message.contains(word),
            "`{}` lacks `{word}`",
            result.message
        );
    }
}

/// One case of a node rule's table test: `change` made to [`Fixture::with_packages`], then
/// rule `id` on `node` at `stage` has `status` and every one of `words` in its message.
#[derive(Debug, Clone, Copy)]
pub(super) struct Case {
    /// What the case is, for failures.
    pub(super) what: &'static str,
    /// What changes from [`Fixture::with_packages`].
    pub(super) change: fn(&mut Fixture),
    /// The node judged.
    pub(super) node: &'static str,
    /// The rule.
    pub(super) id: &'static str,
    /// When it runs.
    pub(super) stage: Stage,
    /// The status expected.
    pub(super) status: Status,
    /// Words its message has.
    pub(super) words: &'static [&'static str],
}

impl Case {
    /// Runs the case, panicking with its name where it fails.
    pub(super) fn check(&self) {
        let mut fixture = Fixture::with_packages();
        (self.change)(&mut fixture);
        let result = fixture.on_at(self.node, self.id, self.stage);
        assert_eq!(result.status, self.status, "{}: {result:?}", self.what);
        for word in self.words {
            assert!(
                result.message.contains(word),
                "{}: `{}` lacks `{word}`",
                self.what,
                result.message
            );
        }
    }
}

//! The packages and nfs phases of the plan: which nodes install which roots, the records'
//! digests, the NFS server's exports and the provisioner's values; the errors raised before any
//! node is touched.

use bundle_spec::packages::{
    Distro, PackageFormat, PackageRecord, PackageScope, PackageSet, RootPackage,
};

use super::*;

/// [`INVENTORY`] with an `nfs` host outside the cluster.
pub(crate) const NFS_INVENTORY: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    w1: {internal_ipv4: 10.0.0.2}\n    w2: {internal_ipv4: 10.0.0.3}\n    store: {internal_ipv4: 10.0.0.9}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    kube_worker: {hosts: [w1, w2]}\n    etcd: {hosts: [cp1, w1, w2]}\n    nfs: {hosts: [store]}\n";

fn record(name: &str, version: &str, depends: &str) -> PackageRecord {
    let reference = bundle_spec::layout::package_reference("debian-12", "amd64", name, version)
        .expect("reference");
    PackageRecord {
        name: name.to_owned(),
        version: version.to_owned(),
        architecture: "amd64".to_owned(),
        depends: depends.to_owned(),
        pre_depends: String::new(),
        provides: String::new(),
        multi_arch: String::new(),
        filename: format!("{name}_{version}_amd64.deb"),
        sha256: Sha256Digest::of(name.as_bytes()),
        size: 1,
        reference,
    }
}

fn root(name: &str, scope: PackageScope, reason: &str) -> RootPackage {
    RootPackage {
        name: name.to_owned(),
        scope,
        commands: Vec::new(),
        reason: reason.to_owned(),
    }
}

/// A Debian 12 set as the catalog makes it for kubeadm, ipvs, nfs and a manifest package.
pub(crate) fn debian_set() -> PackageSet {
    PackageSet {
        distro: Distro::parse("debian-12").expect("distro"),
        arch: "amd64".to_owned(),
        format: PackageFormat::Deb,
        repository: "http://deb.example/debian bookworm".to_owned(),
        roots: vec![
            root("conntrack", PackageScope::Kubernetes, "kubeadm"),
            root("ipvsadm", PackageScope::Kubernetes, "ipvs"),
            root("nfs-common", PackageScope::Kubernetes, "nfs"),
            root("nfs-kernel-server", PackageScope::NfsServer, "nfs"),
            root("less", PackageScope::All, "manifest"),
        ],
        packages: vec![
            record("libnetfilter-conntrack3", "1.0.9-3", ""),
            record("conntrack", "1:1.4.7-1+b2", "libnetfilter-conntrack3"),
            record("ipvsadm", "1:1.31-1+b1", ""),
            record("libtirpc3", "1.3.3+ds-1", ""),
            record("nfs-common", "1:2.6.2-4", "libtirpc3 (>= 1.3.3+ds-1)"),
            record("nfs-kernel-server", "1:2.6.2-4", "nfs-common (= 1:2.6.2-4)"),
            record("less", "590-2.1~deb12u2", ""),
        ],
    }
}

/// The bundle of [`description`] with `sets` and their artifacts (but those of `without`), and
/// the provisioner's chart.
pub(crate) fn description_with(sets: Vec<PackageSet>, without: &[&str]) -> Description {
    let mut description = description(&[]);
    for set in &sets {
        for record in set
            .packages
            .iter()
            .filter(|r| !without.contains(&r.name.as_str()))
        {
            description.artifacts.push(artifact(
                ArtifactKind::Package,
                &record.name,
                &record.version,
                &record.reference,
            ));
        }
    }
    description
        .artifacts
        .push(chart(PROVISIONER_CHART, "4.0.18"));
    description.artifacts.push(image(
        "registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2",
    ));
    description.packages = sets;
    description
}

pub(crate) fn plan_with(
    inventory: &str,
    spec: &str,
    description: &Description,
) -> Result<Plan, PlanError> {
    let inventory = Inventory::from_str_named(inventory, "inventory.yaml").expect("inventory");
    Plan::new(
        &inventory,
        &config(spec),
        Sha256Digest::of(b"bundle"),
        description,
    )
}

const NFS_CLASS: &str =
    "  storage_class:\n    nfs: {enabled: true, default: true}\n  nfs: {share_dir: /srv/volumes}\n";

#[test]
fn packages_and_nfs_run_after_the_registry_on_the_nodes_their_roots_are_for() {
    let plan = plan_with(
        NFS_INVENTORY,
        NFS_CLASS,
        &description_with(vec![debian_set()], &[]),
    )
    .expect("plan");
    let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    let at = |id: &str| {
        ids.iter()
            .position(|i| *i == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    assert!(at("registry.ready") < at("packages.install"));
    assert!(at("packages.install") < at("packages.verify"));
    assert!(at("packages.verify") < at("nfs.server"));
    assert!(at("nfs.server") < at("runtime.binaries"));
    let everyone = ["cp1", "w1", "w2", "store"];
    assert_eq!(nodes_of(&plan, "packages.install"), everyone);
    assert_eq!(nodes_of(&plan, "packages.verify"), everyone);
    assert_eq!(nodes_of(&plan, "nfs.server"), ["store"]);
    let packages = plan.packages.as_ref().expect("packages");
    let key = "debian-12-amd64";
    assert_eq!(
        packages.roots_of("w1", key),
        ["conntrack", "ipvsadm", "nfs-common", "less"]
    );
    assert_eq!(
        packages.roots_of("store", key),
        ["nfs-kernel-server", "less"]
    );
    assert_eq!(
        packages.all_roots_of("store"),
        ["less", "nfs-kernel-server"],
        "sorted, for the message of a node no set fits"
    );
    let set = packages.set("debian-12", "amd64").expect("set");
    assert_eq!(set.dir(), "/var/lib/kk/packages/debian-12-amd64");
    let conntrack = &set.set.packages[1];
    assert_eq!(
        set.digests[&conntrack.reference],
        Sha256Digest::of(conntrack.reference.as_bytes()),
        "the artifact's manifest digest, as the description lists it"
    );
    assert!(packages.set("ubuntu-24.04", "amd64").is_none());
}

#[test]
fn the_nfs_server_exports_to_each_cluster_node_and_the_provisioner_mounts_it() {
    let plan = plan_with(
        NFS_INVENTORY,
        NFS_CLASS,
        &description_with(vec![debian_set()], &[]),
    )
    .expect("plan");
    let nfs = plan.nfs.as_ref().expect("nfs");
    assert_eq!(
        (nfs.node.as_str(), nfs.ip.to_string()),
        ("store", "10.0.0.9".to_owned())
    );
    assert_eq!(nfs.share_dir, "/srv/volumes");
    let clients: Vec<String> = nfs.clients.iter().map(ToString::to_string).collect();
    assert_eq!(
        clients,
        ["10.0.0.1", "10.0.0.2", "10.0.0.3"],
        "the nfs host is not a client"
    );
    let chart = chart_of(&plan, &format!("addons.{PROVISIONER_CHART}"));
    assert_eq!(chart.namespace, "kube-system");
    assert_eq!(
        chart.fetch.files,
        ["nfs-subdir-external-provisioner-4.0.18.tgz"]
    );
    let values = chart_values(&plan, &format!("addons.{PROVISIONER_CHART}"));
    assert_eq!(values["nfs"]["server"], "10.0.0.9");
    assert_eq!(values["nfs"]["path"], "/srv/volumes");
    assert_eq!(values["storageClass"]["defaultClass"], true);
    let json = serde_json::to_value(&plan).expect("json");
    assert_eq!(
        json["nfs"]["share_dir"], "/srv/volumes",
        "plan --output json shows it"
    );
    assert_eq!(json["packages"]["sets"][0]["key"], "debian-12-amd64");
}

#[test]
fn without_an_nfs_group_or_packages_there_are_no_such_phases() {
    let plan = plan_with(INVENTORY, "", &description_with(Vec::new(), &[])).expect("plan");
    assert!(plan.packages.is_none() && plan.nfs.is_none());
    assert!(
        !plan
            .steps
            .iter()
            .any(|s| matches!(s.phase, Phase::Packages | Phase::Nfs)),
        "{:?}",
        plan.steps
    );
    assert!(!plan.steps.iter().any(|s| s.id.ends_with(PROVISIONER_CHART)));
    let plan = plan_with(INVENTORY, "", &description_with(vec![debian_set()], &[])).expect("plan");
    assert_eq!(nodes_of(&plan, "packages.install"), ["cp1", "w1", "w2"]);
    assert!(plan.nfs.is_none());
    let packages = plan.packages.as_ref().expect("packages");
    assert!(
        packages
            .roots_of("cp1", "debian-12-amd64")
            .iter()
            .all(|r| r != "nfs-kernel-server"),
        "no nfs host, no server package"
    );
    assert_eq!(plan.nfs.as_ref().map(|n| n.share_dir.clone()), None);
}

#[test]
fn the_provisioner_is_not_default_unless_asked() {
    let spec = "  storage_class:\n    nfs: {enabled: true}\n";
    let plan = plan_with(
        NFS_INVENTORY,
        spec,
        &description_with(vec![debian_set()], &[]),
    )
    .expect("plan");
    let values = chart_values(&plan, &format!("addons.{PROVISIONER_CHART}"));
    assert_eq!(values["storageClass"]["defaultClass"], false);
    assert_eq!(
        values["nfs"]["path"], "/share",
        "KubeKey's `/share/`, one spelling"
    );
}

#[test]
fn the_plan_refuses_what_the_nfs_class_and_the_packages_cannot_be_installed_with() {
    let full = description_with(vec![debian_set()], &[]);
    let mut no_chart = full.clone();
    no_chart.artifacts.retain(|a| a.name != PROVISIONER_CHART);
    let cases: Vec<(&str, &str, &Description, &str)> = vec![
        (
            NFS_INVENTORY,
            NFS_CLASS,
            &no_chart,
            "needs the chart `nfs-subdir-external-provisioner`",
        ),
        (
            INVENTORY,
            NFS_CLASS,
            &full,
            "the inventory has no `nfs` group",
        ),
        (
            NFS_INVENTORY,
            "  storage_class:\n    nfs: {enabled: true}\n  addons:\n  - {name: nfs-subdir-external-provisioner, sources: {chart: {name: metrics-server}}}\n",
            &full,
            "addon `nfs-subdir-external-provisioner` has the release name",
        ),
    ];
    for (inventory, spec, description, message) in cases {
        let error = plan_with(inventory, spec, description).expect_err(message);
        assert!(error.to_string().contains(message), "{error}");
    }
    let missing = description_with(vec![debian_set()], &["libtirpc3"]);
    let error = plan_with(INVENTORY, "", &missing).expect_err("missing package");
    assert!(
        matches!(&error, PlanError::MissingPackage { reference } if reference.contains("/libtirpc3:")),
        "{error}"
    );
    assert!(
        plan_with(NFS_INVENTORY, "", &no_chart).is_ok(),
        "no class, no chart needed"
    );
}

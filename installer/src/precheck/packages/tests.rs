use std::collections::BTreeSet;

use super::super::Stage::{AfterOs, AfterPackages, BeforeInstall};
use super::super::Status::{Fail, Pass, SetByInstall, Skip, Warn};
use super::super::fixtures::{Case, Fixture, ROOTS, expect, install, package_set};
use super::super::{ESTABLISHED_BY_PACKAGES, Stage, Status, established_by_packages};

/// The roots of [`ROOTS`] a Kubernetes node gets.
const KUBERNETES_ROOTS: &[&str] = &["conntrack", "ebtables", "ethtool", "nfs-common", "socat"];

/// `packages.distro` per node and stage: one [`Case`] each.
const CASES: &[Case] = &[
    distro(
        "no package sets",
        |f| f.bundle.packages.clear(),
        "node2",
        BeforeInstall,
        Skip,
        &["carries no operating-system packages"],
    ),
    distro(
        "lacking every root of its scope",
        |_| {},
        "node2",
        BeforeInstall,
        SetByInstall,
        &[
            "set by the install: ",
            "`conntrack`, `ebtables`, `ethtool`, `nfs-common`, `socat` from the bundle's `debian-12` `amd64` packages",
        ],
    ),
    distro(
        "the NFS server alone gets its own root only",
        |_| {},
        "node3",
        BeforeInstall,
        SetByInstall,
        &["`nfs-kernel-server` from the bundle's"],
    ),
    distro(
        "still to come after the os phase",
        |_| {},
        "node2",
        AfterOs,
        SetByInstall,
        &["`socat`"],
    ),
    distro(
        "every root installed",
        |f| install(f.node("node2"), KUBERNETES_ROOTS),
        "node2",
        BeforeInstall,
        Pass,
        &["`debian-12` `amd64`: every package"],
    ),
    distro(
        "every root installed, after the packages phase",
        |f| install(f.node("node2"), KUBERNETES_ROOTS),
        "node2",
        AfterPackages,
        Pass,
        &[],
    ),
    distro(
        "a root still missing after the packages phase",
        |f| {
            install(
                f.node("node2"),
                &["conntrack", "ebtables", "ethtool", "nfs-common"],
            );
        },
        "node2",
        AfterPackages,
        Fail,
        &[
            "node `node2`",
            "still lacks `socat` after kk's packages phase",
        ],
    ),
    distro(
        "a distribution the bundle does not carry",
        |f| f.node("node2").os.version_id = "11".to_owned(),
        "node2",
        BeforeInstall,
        Fail,
        &[
            "node `node2` runs `debian-11` `amd64`",
            "carries `debian-12` `amd64`",
            "lacks `conntrack`, `ebtables`, `ethtool`, `nfs-common`, `socat`",
            "fix: build the bundle with a `spec.osPackages` entry for `debian-11` `amd64`",
        ],
    ),
    distro(
        "an architecture the bundle does not carry",
        |f| f.node("node2").machine = "aarch64".to_owned(),
        "node2",
        BeforeInstall,
        Fail,
        &["runs `debian-12` `arm64`", "lacks `conntrack`"],
    ),
    distro(
        "an uncarried distribution with everything installed",
        |f| {
            let node = f.node("node2");
            node.os.id = "ubuntu".to_owned();
            node.os.version_id = "24.04".to_owned();
            install(node, KUBERNETES_ROOTS);
        },
        "node2",
        BeforeInstall,
        Pass,
        &["no packages for `ubuntu-24.04` `amd64`"],
    ),
    distro(
        "an uncarried distribution without dpkg",
        |f| {
            let node = f.node("node2");
            node.os.id = "rocky".to_owned();
            node.os.version_id = "9.4".to_owned();
            node.installed_packages = None;
        },
        "node2",
        AfterPackages,
        Fail,
        &["runs `rocky-9.4` `amd64`", "has no dpkg", "`socat`"],
    ),
    distro(
        "no root is for a node outside the scopes",
        |f| {
            f.bundle.packages[0]
                .roots
                .retain(|r| r.name != "nfs-kernel-server");
        },
        "node3",
        BeforeInstall,
        Skip,
        &["no package of the bundle is for this node"],
    ),
];

/// A case of `packages.distro`.
const fn distro(
    case: &'static str,
    change: fn(&mut Fixture),
    node: &'static str,
    stage: Stage,
    status: Status,
    words: &'static [&'static str],
) -> Case {
    Case {
        what: case,
        change,
        node,
        id: "packages.distro",
        stage,
        status,
        words,
    }
}

#[test]
fn packages_distro_by_node_and_stage() {
    for case in CASES {
        case.check();
    }
}

/// A set of another distribution beside the node's is not the node's; the node's own set
/// decides.
#[test]
fn the_set_of_the_nodes_distribution_and_arch_is_its_own() {
    let mut fixture = Fixture::with_packages();
    fixture.bundle.packages = vec![
        package_set("debian-11", "amd64"),
        package_set("debian-12", "arm64"),
    ];
    expect(
        &fixture.on("node2", "packages.distro"),
        Fail,
        &["carries `debian-11` `amd64`, `debian-12` `arm64`"],
    );
    fixture
        .bundle
        .packages
        .push(package_set("debian-12", "amd64"));
    expect(&fixture.on("node2", "packages.distro"), SetByInstall, &[]);
}

/// `kubeadm.commands`: a missing command a root of the node's set brings is `set` until the
/// packages phase, then judged as kubeadm does; one the bundle does not bring warns or fails
/// with a fix pointing at `spec.osPackages`.
#[test]
fn kubeadm_commands_the_bundle_brings() {
    let lacking = |fixture: &mut Fixture, commands: &[&str]| {
        fixture
            .node("node2")
            .commands
            .retain(|c| !commands.contains(&c.as_str()));
    };
    let mut fixture = Fixture::with_packages();
    lacking(&mut fixture, &["socat", "conntrack"]);
    let expected = [
        "set by the install: `conntrack` (package conntrack from the bundle), `socat` (package socat from the bundle)",
    ];
    expect(
        &fixture.on("node2", "kubeadm.commands"),
        SetByInstall,
        &expected,
    );
    expect(
        &fixture.on_at("node2", "kubeadm.commands", AfterOs),
        SetByInstall,
        &expected,
    );
    expect(
        &fixture.on_at("node2", "kubeadm.commands", AfterPackages),
        Fail,
        &["missing `conntrack`", "and `socat`"],
    );
    // A command no package brings: judged as before, the fix pointing at the set.
    lacking(&mut fixture, &["tc"]);
    expect(
        &fixture.on("node2", "kubeadm.commands"),
        Warn,
        &[
            "missing `tc`",
            "fix: add the packages that bring them",
            "`spec.osPackages` entry for `debian-12` `amd64`",
        ],
    );
    // Without a set for the node's distribution, nothing is brought.
    fixture.node("node2").os.version_id = "11".to_owned();
    let result = fixture.on("node2", "kubeadm.commands");
    expect(
        &result,
        Fail,
        &[
            "`conntrack`",
            "fix: build the bundle with a `spec.osPackages` entry for `debian-11` `amd64`",
        ],
    );
    assert!(
        !result.message.contains("from the distribution"),
        "{result:?}"
    );
    // A root of another scope does not bring its command to this node.
    let mut fixture = Fixture::with_packages();
    for root in &mut fixture.bundle.packages[0].roots {
        if root.name == "socat" {
            root.scope = bundle_spec::packages::PackageScope::NfsServer;
        }
    }
    lacking(&mut fixture, &["socat"]);
    expect(&fixture.on("node2", "kubeadm.commands"), Warn, &["`socat`"]);
}

/// Exactly the rules of [`ESTABLISHED_BY_PACKAGES`], judged for real, on every node with facts.
#[test]
fn established_by_packages_judges_only_those_rules_for_real() {
    let mut fixture = Fixture::with_packages();
    for node in ["node1", "node2"] {
        install(fixture.node(node), KUBERNETES_ROOTS);
        fixture.node(node).commands.push("mount.nfs".to_owned());
    }
    install(fixture.node("node3"), &["nfs-kernel-server"]);
    fixture.node("node3").commands.push("exportfs".to_owned());
    // Problems the packages phase does not fix are not its report's business.
    fixture.node("node1").swap_bytes = 1 << 30;
    let report = established_by_packages(&fixture.context(), &BTreeSet::new());
    assert!(report.cluster.is_empty());
    let mut expected = ESTABLISHED_BY_PACKAGES.to_vec();
    expected.sort_unstable();
    for (node, results) in &report.nodes {
        let mut ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, expected, "{node}");
        for result in results {
            assert!(matches!(result.status, Pass | Skip), "{node}: {result:?}");
        }
    }
    assert!(!report.failed(), "{}", report.render_table());
    // What the phase should have installed and did not fails now.
    if let Some(packages) = &mut fixture.node("node2").installed_packages {
        packages.remove("socat");
    }
    assert!(!fixture.node("node2").has_package("socat"));
    fixture.node("node2").commands.retain(|c| c != "socat");
    fixture.node("node3").commands.clear();
    let report = established_by_packages(&fixture.context(), &BTreeSet::new());
    let status = |node: &str, id: &str| {
        report.nodes[node]
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.status)
    };
    assert_eq!(status("node2", "packages.distro"), Some(Fail));
    assert_eq!(status("node2", "kubeadm.commands"), Some(Warn));
    assert_eq!(status("node3", "nfs.server_commands"), Some(Fail));
    assert_eq!(status("node1", "packages.distro"), Some(Pass));
    assert!(report.failed());
    let ignore: BTreeSet<String> = ["packages", "nfs"].map(str::to_owned).into();
    assert!(
        !established_by_packages(&fixture.context(), &ignore).failed(),
        "waivers apply"
    );
}

/// Before the install, a node lacking every package the bundle brings it is `set`, not
/// failed, on exactly the rules of [`ESTABLISHED_BY_PACKAGES`] (the NFS server's kernel aside,
/// which only warns).
#[test]
fn what_the_packages_bring_is_not_a_failure_before_the_install() {
    let mut fixture = Fixture::with_packages();
    for node in ["node1", "node2", "node3"] {
        fixture
            .node(node)
            .commands
            .retain(|c| !ROOTS.iter().any(|(name, _, _)| name == c));
    }
    let report = fixture.evaluate(&BTreeSet::new());
    assert!(!report.failed(), "{}", report.render_table());
    let mut set: Vec<&str> = report
        .nodes
        .values()
        .flatten()
        .filter(|r| r.status == SetByInstall)
        .map(|r| r.id.as_str())
        .collect();
    set.sort_unstable();
    set.dedup();
    let mut expected = ESTABLISHED_BY_PACKAGES.to_vec();
    expected.sort_unstable();
    assert_eq!(set, expected);
    let json = report.to_json();
    let node3 = json["nodes"]["node3"].as_array().expect("node3");
    let exportfs = node3
        .iter()
        .find(|r| r["id"] == "nfs.server_commands")
        .expect("listed");
    assert_eq!(exportfs["status"], "set");
    assert_eq!(
        exportfs["message"],
        "set by the install: `exportfs` (package nfs-kernel-server from the bundle)"
    );
}

/// What the install brings a node is the resolver's closure of what it lacks against what dpkg
/// says it has: dependencies first, what a dependency demands replacing named, and a closure
/// that cannot be made a failure naming the package and the dependency.
#[test]
fn the_closure_the_install_brings() {
    let mut fixture = Fixture::with_packages();
    expect(
        &fixture.on("node3", "packages.distro"),
        SetByInstall,
        &["(installs `nfs-common` 1.0-1, `nfs-kernel-server` 1.0-1)"],
    );
    // nfs-common is there, at a version too old for nfs-kernel-server.
    fixture
        .node("node3")
        .installed_packages
        .get_or_insert_default()
        .insert(
            "nfs-common".to_owned(),
            crate::facts::DpkgPackage {
                version: "0.9-1".to_owned(),
                provides: String::new(),
            },
        );
    expect(
        &fixture.on("node3", "packages.distro"),
        SetByInstall,
        &[
            "installs `nfs-common` 1.0-1, `nfs-kernel-server` 1.0-1",
            "replaces `nfs-common` 0.9-1 by 1.0-1, as `nfs-kernel-server → nfs-common (>= 1.0)` demands",
        ],
    );
    // A dependency neither the node nor the bundle satisfies.
    for record in &mut fixture.bundle.packages[0].packages {
        if record.name == "socat" {
            record.depends = "libc6 (>= 2.99)".to_owned();
        }
    }
    install(fixture.node("node2"), &["libc6"]);
    expect(
        &fixture.on("node2", "packages.distro"),
        Fail,
        &[
            "node `node2` (`debian-12` `amd64`) lacks `conntrack`",
            "`socat` depends on `libc6 (>= 2.99)`",
            "fix: bring the node to the release the bundle's packages come from (http://deb.example/debian bookworm)",
        ],
    );
}

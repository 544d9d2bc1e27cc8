use super::super::Stage::{AfterPackages, BeforeInstall};
use super::super::Status::{Fail, Pass, SetByInstall, Skip, Warn};
use super::super::fixtures::{Case, Fixture, expect};
use super::super::{Stage, Status};

/// The NFS node rules per node and stage: one [`Case`] each.
const CASES: &[Case] = &[
    // The NFS server's commands.
    case(
        "exportfs there",
        |f| f.node("node3").commands.push("exportfs".to_owned()),
        "node3",
        "nfs.server_commands",
        BeforeInstall,
        Pass,
        &["`exportfs` is there"],
    ),
    case(
        "exportfs brought",
        |_| {},
        "node3",
        "nfs.server_commands",
        BeforeInstall,
        SetByInstall,
        &["set by the install: `exportfs` (package nfs-kernel-server from the bundle)"],
    ),
    case(
        "exportfs not brought",
        without_packages,
        "node3",
        "nfs.server_commands",
        BeforeInstall,
        Fail,
        &[
            "node `node3`, the NFS server, lacks `exportfs`",
            "brings it in no package",
            "`storage: [nfs]`",
        ],
    ),
    case(
        "exportfs still missing after the packages phase",
        |_| {},
        "node3",
        "nfs.server_commands",
        AfterPackages,
        Fail,
        &["after kk's packages phase", "package nfs-kernel-server"],
    ),
    case(
        "not the NFS server",
        |_| {},
        "node2",
        "nfs.server_commands",
        BeforeInstall,
        Skip,
        &["not the NFS server"],
    ),
    // The clients.
    case(
        "mount.nfs there",
        |f| f.node("node2").commands.push("mount.nfs".to_owned()),
        "node2",
        "nfs.client",
        BeforeInstall,
        Pass,
        &["`mount.nfs` is there"],
    ),
    case(
        "mount.nfs brought",
        |_| {},
        "node2",
        "nfs.client",
        BeforeInstall,
        SetByInstall,
        &["`mount.nfs` (package nfs-common from the bundle)"],
    ),
    case(
        "mount.nfs not brought",
        without_packages,
        "node2",
        "nfs.client",
        BeforeInstall,
        Warn,
        &[
            "node `node2` lacks `mount.nfs`",
            "NFS volumes would fail to mount",
        ],
    ),
    case(
        "mount.nfs still missing after the packages phase",
        |_| {},
        "node2",
        "nfs.client",
        AfterPackages,
        Warn,
        &["after kk's packages phase", "package nfs-common"],
    ),
    case(
        "the NFS server alone mounts nothing",
        |_| {},
        "node3",
        "nfs.client",
        BeforeInstall,
        Skip,
        &["not a Kubernetes node"],
    ),
    // The NFS server's kernel.
    case(
        "nfsd",
        |_| {},
        "node3",
        "nfs.kernel",
        BeforeInstall,
        Pass,
        &["nfsd"],
    ),
    case(
        "no nfsd",
        |f| f.node("node3").nfsd = false,
        "node3",
        "nfs.kernel",
        BeforeInstall,
        Warn,
        &[
            "the kernel has no NFS server (nfsd): the install sets up exports and enables the server, but it cannot serve until the kernel has nfsd",
        ],
    ),
    case(
        "a client's kernel",
        |f| f.node("node2").nfsd = false,
        "node2",
        "nfs.kernel",
        BeforeInstall,
        Skip,
        &["not the NFS server"],
    ),
];

/// A case of rule `id`.
const fn case(
    case: &'static str,
    change: fn(&mut Fixture),
    node: &'static str,
    id: &'static str,
    stage: Stage,
    status: Status,
    words: &'static [&'static str],
) -> Case {
    Case {
        what: case,
        change,
        node,
        id,
        stage,
        status,
        words,
    }
}

/// The bundle carries no packages.
fn without_packages(fixture: &mut Fixture) {
    fixture.bundle.packages.clear();
}

#[test]
fn nfs_node_rules() {
    for case in CASES {
        case.check();
    }
}

/// Without an `nfs` group, no NFS rule applies to any node.
#[test]
fn no_nfs_group_no_nfs_rules() {
    let fixture = Fixture::three_nodes();
    for node in ["node1", "node2", "node3"] {
        for id in ["nfs.server_commands", "nfs.client", "nfs.kernel"] {
            expect(&fixture.on(node, id), Skip, &["no `nfs` group"]);
        }
    }
}

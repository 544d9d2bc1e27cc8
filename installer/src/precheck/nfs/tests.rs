use super::super::Stage::{AfterPackages, BeforeInstall};
use super::super::Status::{Fail, Pass, SetByInstall, Skip, Warn};
use super::super::fixtures::{Fixture, expect};
use super::super::{Stage, Status};

/// The NFS node rules per node and stage: `(what to change, node, id, stage, status, words)`.
#[test]
fn nfs_node_rules() {
    type Change = fn(&mut Fixture);
    let without_packages: Change = |f| f.bundle.packages.clear();
    let table: &[(&str, Change, &str, &str, Stage, Status, &[&str])] = &[
        // The NFS server's commands.
        (
            "exportfs there",
            |f| f.node("node3").commands.push("exportfs".to_owned()),
            "node3",
            "nfs.server_commands",
            BeforeInstall,
            Pass,
            &["`exportfs` is there"],
        ),
        (
            "exportfs brought",
            |_| {},
            "node3",
            "nfs.server_commands",
            BeforeInstall,
            SetByInstall,
            &["set by the install: `exportfs` (package nfs-kernel-server from the bundle)"],
        ),
        (
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
        (
            "exportfs still missing after the packages phase",
            |_| {},
            "node3",
            "nfs.server_commands",
            AfterPackages,
            Fail,
            &["after kk's packages phase", "package nfs-kernel-server"],
        ),
        (
            "not the NFS server",
            |_| {},
            "node2",
            "nfs.server_commands",
            BeforeInstall,
            Skip,
            &["not the NFS server"],
        ),
        // The clients.
        (
            "mount.nfs there",
            |f| f.node("node2").commands.push("mount.nfs".to_owned()),
            "node2",
            "nfs.client",
            BeforeInstall,
            Pass,
            &["`mount.nfs` is there"],
        ),
        (
            "mount.nfs brought",
            |_| {},
            "node2",
            "nfs.client",
            BeforeInstall,
            SetByInstall,
            &["`mount.nfs` (package nfs-common from the bundle)"],
        ),
        (
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
        (
            "mount.nfs still missing after the packages phase",
            |_| {},
            "node2",
            "nfs.client",
            AfterPackages,
            Warn,
            &["after kk's packages phase", "package nfs-common"],
        ),
        (
            "the NFS server alone mounts nothing",
            |_| {},
            "node3",
            "nfs.client",
            BeforeInstall,
            Skip,
            &["not a Kubernetes node"],
        ),
        // The NFS server's kernel.
        (
            "nfsd",
            |_| {},
            "node3",
            "nfs.kernel",
            BeforeInstall,
            Pass,
            &["nfsd"],
        ),
        (
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
        (
            "a client's kernel",
            |f| f.node("node2").nfsd = false,
            "node2",
            "nfs.kernel",
            BeforeInstall,
            Skip,
            &["not the NFS server"],
        ),
    ];
    for (case, change, node, id, stage, status, words) in table {
        let mut fixture = Fixture::with_packages();
        change(&mut fixture);
        let result = fixture.on_at(node, id, *stage);
        assert_eq!(result.status, *status, "{case}: {result:?}");
        for word in *words {
            assert!(
                result.message.contains(word),
                "{case}: `{}` lacks `{word}`",
                result.message
            );
        }
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

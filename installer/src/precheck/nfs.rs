//! `nfs.*` node rules: what the NFS server (the `nfs` group's host) and its clients (the
//! Kubernetes nodes, which mount the volumes) need, when the inventory has an `nfs` group.
//! The server's count is a cluster rule (`services`).

use super::packages::{Command, from_bundle, set_by_packages};
use super::{CheckResult, Node};
use crate::inventory::Role;

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![server_commands(node), client(node), kernel(node)]
}

/// Why an NFS rule does not apply to `node`, if it does not: no `nfs` group, or the node is
/// not what `applies` asks for (`what` names that).
fn not_applicable(node: &Node, id: &str, applies: bool, what: &str) -> Option<CheckResult> {
    if node.cx.inventory.role_members(Role::Nfs).is_empty() {
        Some(CheckResult::skip(id, "no `nfs` group: no NFS storage"))
    } else if !applies {
        Some(CheckResult::skip(id, format!("not {what}")))
    } else {
        None
    }
}

/// What a missing `command` is, for messages: after kk's packages phase, the package that
/// should have brought it; before, that the bundle brings it in no package for the node.
fn missing_because(command: &str, brought: Option<&bundle_spec::packages::RootPackage>) -> String {
    match brought {
        Some(root) => format!(
            "lacks `{command}` after kk's packages phase, which should have installed package {} from the bundle",
            root.name
        ),
        None => format!(
            "lacks `{command}`, and the bundle brings it in no package for the node's distribution"
        ),
    }
}

/// `nfs.server_commands`: the NFS server has `exportfs` (package nfs-kernel-server), which the
/// install runs to export the share, or the bundle brings it.
fn server_commands(node: &Node) -> CheckResult {
    const ID: &str = "nfs.server_commands";
    const COMMAND: &str = "exportfs";
    if let Some(skip) = not_applicable(node, ID, node.host.roles.is_nfs(), "the NFS server") {
        return skip;
    }
    match node.command(COMMAND) {
        Command::Present => CheckResult::pass(ID, format!("`{COMMAND}` is there")),
        Command::ToCome(root) => set_by_packages(ID, &[from_bundle(COMMAND, root)]),
        Command::Missing { brought } => CheckResult::fail(
            ID,
            format!(
                "node `{}`, the NFS server, {}; fix: build the bundle with `storage: [nfs]` under `spec.kubernetes` and a `spec.osPackages` entry for the node's distribution (kk adds nfs-kernel-server)",
                node.name(),
                missing_because(COMMAND, brought)
            ),
        ),
    }
}

/// `nfs.client`: a Kubernetes node has `mount.nfs` (package nfs-common), which the kubelet runs
/// to mount NFS volumes, or the bundle brings it. A warning: the cluster works without, but
/// its NFS volumes do not mount on that node.
fn client(node: &Node) -> CheckResult {
    const ID: &str = "nfs.client";
    const COMMAND: &str = "mount.nfs";
    if let Some(skip) = not_applicable(node, ID, node.is_kubernetes(), "a Kubernetes node") {
        return skip;
    }
    match node.command(COMMAND) {
        Command::Present => CheckResult::pass(ID, format!("`{COMMAND}` is there")),
        Command::ToCome(root) => set_by_packages(ID, &[from_bundle(COMMAND, root)]),
        Command::Missing { brought } => CheckResult::warn(
            ID,
            format!(
                "node `{}` {}: NFS volumes would fail to mount on it; fix: build the bundle with `storage: [nfs]` under `spec.kubernetes` and a `spec.osPackages` entry for the node's distribution (kk adds nfs-common)",
                node.name(),
                missing_because(COMMAND, brought)
            ),
        ),
    }
}

/// `nfs.kernel`: the NFS server's kernel has an NFS server (`nfsd`). A warning: the install
/// still sets up the exports and the service, which serve once the kernel has it.
fn kernel(node: &Node) -> CheckResult {
    const ID: &str = "nfs.kernel";
    if let Some(skip) = not_applicable(node, ID, node.host.roles.is_nfs(), "the NFS server") {
        return skip;
    }
    if node.facts.nfsd {
        CheckResult::pass(ID, "the kernel has an NFS server (nfsd)")
    } else {
        CheckResult::warn(
            ID,
            format!(
                "node `{}`: the kernel has no NFS server (nfsd): the install sets up exports and enables the server, but it cannot serve until the kernel has nfsd; fix: boot a kernel with the `nfsd` module (`modprobe nfsd` loads it)",
                node.name()
            ),
        )
    }
}

#[cfg(test)]
mod tests;

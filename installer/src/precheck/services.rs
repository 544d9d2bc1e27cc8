//! `nfs.*` and `image_registry.*`: the services kk installs beside Kubernetes.

use super::{CheckResult, Context, list};
use crate::inventory::{ImageRegistry, Role};

pub(super) fn cluster(cx: &Context) -> Vec<CheckResult> {
    vec![nfs_server_count(cx), image_registry_software(cx)]
}

fn names(cx: &Context, role: Role) -> Vec<String> {
    cx.inventory
        .role_members(role)
        .into_iter()
        .map(|h| h.name.clone())
        .collect()
}

/// `nfs.server_count`: one NFS server when the `nfs` group is used.
fn nfs_server_count(cx: &Context) -> CheckResult {
    const ID: &str = "nfs.server_count";
    let servers = names(cx, Role::Nfs);
    match servers.len() {
        0 => CheckResult::skip(ID, "no `nfs` group: no NFS server is installed"),
        1 => CheckResult::pass(ID, format!("NFS server {}", list(&servers))),
        n => CheckResult::fail(
            ID,
            format!(
                "{n} hosts in `nfs` ({}), but the NFS storage class uses one server; fix: list one host in `nfs`",
                list(&servers)
            ),
        ),
    }
}

/// `image_registry.software`: what the chosen registry needs.
///
/// With `kk` the registry is `kk-install` itself serving the unpacked bundle, so there is no
/// software to install (KubeKey checks for docker and docker-compose here) but there must be
/// a host to run it and images to serve. With `external` the bundle is pushed into a running
/// registry, and nothing is installed.
fn image_registry_software(cx: &Context) -> CheckResult {
    const ID: &str = "image_registry.software";
    let external = match &cx.config.image_registry {
        ImageRegistry::External(external) => external,
        ImageRegistry::Kk => return kk_registry(cx),
    };
    CheckResult::pass(
        ID,
        format!(
            "external registry {}: the bundle is pushed there, nothing to install",
            external.address
        ),
    )
}

fn kk_registry(cx: &Context) -> CheckResult {
    const ID: &str = "image_registry.software";
    let hosts = names(cx, Role::ImageRegistry);
    if hosts.is_empty() {
        return CheckResult::fail(
            ID,
            "kk's registry needs a host to run on, and group `image_registry` is empty; fix: list one host in `image_registry`, or use `image_registry.type: external`",
        );
    }
    if cx.bundle.images.is_empty() {
        return CheckResult::fail(
            ID,
            "the bundle carries no images for kk's registry to serve; fix: build the bundle with the cluster's images (e.g. a `kubernetes` version in the manifest)",
        );
    }
    CheckResult::pass(
        ID,
        format!(
            "kk-install serves {} images from {}",
            cx.bundle.images.len(),
            list(&hosts)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::Status::{Fail, Pass, Skip};
    use super::super::fixtures::{Fixture, config, expect, inventory};

    fn with_group(group: &str, hosts: &str) -> crate::inventory::Inventory {
        inventory(&format!(
            "apiVersion: install.kk.io/v1alpha1\nkind: Inventory\nspec:\n  hosts:\n    node1: {{}}\n    node2: {{}}\n  groups:\n    kube_control_plane: {{hosts: [node1, node2]}}\n    {group}: {{hosts: [{hosts}]}}\n"
        ))
    }

    #[test]
    fn nfs_counts() {
        let mut fixture = Fixture::three_nodes();
        expect(&fixture.cluster("nfs.server_count"), Skip, &["no `nfs`"]);
        fixture.inventory = with_group("nfs", "node2");
        expect(&fixture.cluster("nfs.server_count"), Pass, &["`node2`"]);
        fixture.inventory = with_group("nfs", "node1, node2");
        expect(
            &fixture.cluster("nfs.server_count"),
            Fail,
            &["2 hosts", "one host"],
        );
    }

    #[test]
    fn registries() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.cluster("image_registry.software"),
            Pass,
            &["2 images from `node1`"],
        );
        fixture.bundle.images.clear();
        expect(
            &fixture.cluster("image_registry.software"),
            Fail,
            &["no images"],
        );
        fixture.config =
            config("  image_registry: {type: external, address: harbor.example.com}\n");
        expect(
            &fixture.cluster("image_registry.software"),
            Pass,
            &["harbor.example.com"],
        );
        fixture.config = crate::inventory::Config::default();
        fixture.inventory = with_group("kube_worker", "node2");
        expect(
            &fixture.cluster("image_registry.software"),
            Fail,
            &["`image_registry` is empty"],
        );
    }
}

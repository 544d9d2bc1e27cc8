//! `airgap.*`: what an installation from a bundle needs beyond what KubeKey and kubeadm check:
//! the bundle covers the node's architecture, the disks hold what the bundle brings, the
//! registry's port is free, and the clocks agree.

use super::own::{self, Component, Holder};
use super::{CheckResult, Node, gib};
use crate::inventory::ImageRegistry;

/// Free space every node needs under `/usr/local/bin` for the binaries the install copies
/// there (kubelet, kubeadm, kubectl, containerd, runc, crictl, etcd, helm, CNI plugins: about
/// 600 MiB for one version, doubled for an upgrade's side-by-side copy and rounded up).
pub(super) const BINARIES_BYTES: u64 = 1 << 30;

/// A clock further off than this (seconds) is reported: etcd warns when members' clocks
/// differ by more than 1 s, and leases and token expiry go by wall time.
pub(super) const CLOCK_WARN_SECONDS: f64 = 2.0;

/// A clock further off than this (seconds) fails: certificates kk issues are valid from the
/// installer's "now", so a node behind by more would refuse them as not yet valid, and TLS
/// handshakes fail.
pub(super) const CLOCK_FAIL_SECONDS: f64 = 30.0;

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![
        arch_in_bundle(node),
        disk_space(node),
        registry_port(node),
        clock_skew(node),
    ]
}

/// Whether the node runs kk's registry.
pub(super) fn runs_registry(node: &Node) -> bool {
    matches!(node.cx.config.image_registry, ImageRegistry::Kk)
        && node.host.roles.is_image_registry()
}

/// `airgap.arch_in_bundle`: the bundle carries the node's platform.
fn arch_in_bundle(node: &Node) -> CheckResult {
    const ID: &str = "airgap.arch_in_bundle";
    let platform = format!("linux/{}", node.facts.arch());
    let platforms = &node.cx.bundle.platforms;
    if platforms.contains(&platform) {
        CheckResult::pass(ID, platform)
    } else {
        CheckResult::fail(
            ID,
            format!(
                "the node is {platform}, but the bundle carries only {}; fix: build the bundle with `{platform}` among its platforms",
                platforms.join(", ")
            ),
        )
    }
}

/// `airgap.disk_space`: the registry host holds the unpacked bundle under `/var/lib`; every
/// node holds the binaries under `/usr/local/bin`. The bundle's blobs already in kk's store
/// (an earlier install, the base of a delta) need no new room: the unpack verifies and keeps
/// them. A blob is named by its digest, so whoever put it there, it is the bundle's.
fn disk_space(node: &Node) -> CheckResult {
    const ID: &str = "airgap.disk_space";
    let mut needs = vec![("/usr/local/bin", BINARIES_BYTES, "the binaries")];
    let mut stored = None;
    if runs_registry(node) {
        let present = stored_bytes(node);
        needs.push((
            "/var/lib",
            node.cx.bundle.content_bytes.saturating_sub(present),
            "the unpacked bundle",
        ));
        stored = (present > 0).then_some(present);
    }
    let mut shown = Vec::new();
    for (path, need, what) in needs {
        let Some(&free) = node.facts.free_bytes.get(path) else {
            return CheckResult::warn(
                ID,
                format!(
                    "free space on {path} is unknown (`df` failed); fix: check that {path} (or its parent) exists"
                ),
            );
        };
        if free < need {
            return CheckResult::fail(
                ID,
                format!(
                    "{path} has {} free, less than the {} {what} need{}; fix: free or add space on {path}",
                    gib(free),
                    gib(need),
                    already(stored.filter(|_| path == "/var/lib")),
                ),
            );
        }
        shown.push(format!(
            "{path}: {} free, {} needed{}",
            gib(free),
            gib(need),
            already(stored.filter(|_| path == "/var/lib")),
        ));
    }
    CheckResult::pass(ID, shown.join("; "))
}

/// Bytes of the bundle's blobs that kk's store on the node holds already.
fn stored_bytes(node: &Node) -> u64 {
    node.facts
        .store_blobs
        .iter()
        .filter(|(hex, _)| node.cx.bundle.blobs.contains(*hex))
        .map(|(_, size)| size)
        .sum()
}

/// ` (N of the bundle already in kk's store)`, when some is.
fn already(stored: Option<u64>) -> String {
    stored.map_or_else(String::new, |bytes| {
        format!(" ({} of the bundle already in kk's store)", gib(bytes))
    })
}

/// `airgap.registry_port`: the registry's port is free on its host, or held by kk's own
/// registry there (a node kk installed).
fn registry_port(node: &Node) -> CheckResult {
    const ID: &str = "airgap.registry_port";
    if !runs_registry(node) {
        return CheckResult::skip(ID, "does not run kk's registry");
    }
    let port = node.cx.config.registry_address.port;
    match own::port(node, port, Component::Registry) {
        Holder::Free => CheckResult::pass(ID, format!("{port} free")),
        Holder::Own(detail) => CheckResult::pass(ID, detail),
        Holder::Other(who) => CheckResult::fail(
            ID,
            format!(
                "port {port}, for kk's registry, is in use ({who}); fix: stop it (`ss -ltnp 'sport = :{port}'` names it)"
            ),
        ),
    }
}

/// `airgap.clock_skew`: the node's clock agrees with the installer's.
fn clock_skew(node: &Node) -> CheckResult {
    const ID: &str = "airgap.clock_skew";
    let offset = node.facts.clock_offset;
    let direction = if offset < 0.0 { "behind" } else { "ahead of" };
    let found = format!("{:.1} s {direction} the installer's clock", offset.abs());
    let fix = "fix: set the clock (`date -s`, or chrony against a local time server)";
    if offset.abs() > CLOCK_FAIL_SECONDS {
        CheckResult::fail(
            ID,
            format!(
                "{found}, more than {CLOCK_FAIL_SECONDS} s: certificates would not yet be valid; {fix}"
            ),
        )
    } else if offset.abs() > CLOCK_WARN_SECONDS {
        CheckResult::warn(
            ID,
            format!("{found}, more than {CLOCK_WARN_SECONDS} s; {fix}"),
        )
    } else {
        CheckResult::pass(ID, found)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Status::{self, Fail, Pass, Skip, Warn};
    use super::super::fixtures::{Fixture, config, expect};
    use crate::facts::Listener;

    #[test]
    fn architectures_in_the_bundle() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.on("node2", "airgap.arch_in_bundle"),
            Pass,
            &["linux/amd64"],
        );
        fixture.node("node2").machine = "aarch64".to_owned();
        expect(
            &fixture.on("node2", "airgap.arch_in_bundle"),
            Fail,
            &["linux/arm64", "linux/amd64"],
        );
        fixture.bundle.platforms.push("linux/arm64".to_owned());
        expect(&fixture.on("node2", "airgap.arch_in_bundle"), Pass, &[]);
    }

    #[test]
    fn disk_space_for_the_store_and_binaries() {
        let mut fixture = Fixture::three_nodes();
        fixture.bundle.content_bytes = 10 << 30;
        fixture
            .node("node1")
            .free_bytes
            .insert("/var/lib".to_owned(), 10 << 30);
        expect(
            &fixture.on("node1", "airgap.disk_space"),
            Pass,
            &["/var/lib: 10.0 GiB free, 10.0 GiB needed"],
        );
        fixture
            .node("node1")
            .free_bytes
            .insert("/var/lib".to_owned(), (10 << 30) - 1);
        expect(
            &fixture.on("node1", "airgap.disk_space"),
            Fail,
            &["/var/lib", "the unpacked bundle"],
        );
        // A worker holds no store.
        fixture
            .node("node2")
            .free_bytes
            .insert("/var/lib".to_owned(), 1);
        expect(
            &fixture.on("node2", "airgap.disk_space"),
            Pass,
            &["/usr/local/bin"],
        );
        fixture
            .node("node2")
            .free_bytes
            .insert("/usr/local/bin".to_owned(), 512 << 20);
        expect(
            &fixture.on("node2", "airgap.disk_space"),
            Fail,
            &["0.5 GiB free", "1.0 GiB"],
        );
        fixture.node("node2").free_bytes.clear();
        expect(
            &fixture.on("node2", "airgap.disk_space"),
            Warn,
            &["unknown"],
        );
    }

    /// Free bytes on `/var/lib`, the store's blobs (by a digest's repeated character) with
    /// their sizes, the status expected and words of its message.
    type StoreCase<'a> = (u64, &'a [(char, u64)], Status, &'a [&'a str]);

    #[test]
    fn the_store_s_own_blobs_of_the_bundle_need_no_new_room() {
        let hex = |c: char| c.to_string().repeat(64);
        let table: [StoreCase<'_>; 5] = [
            (9 << 30, &[], Fail, &["less than the 10.0 GiB"]),
            (
                9 << 30,
                &[('a', 2 << 30)],
                Pass,
                &["8.0 GiB needed (2.0 GiB of the bundle already in kk's store)"],
            ),
            (
                7 << 30,
                &[('a', 2 << 30)],
                Fail,
                &[
                    "less than the 8.0 GiB",
                    "2.0 GiB of the bundle already in kk's store",
                ],
            ),
            // A blob the bundle does not carry gives no room.
            (
                9 << 30,
                &[('c', 5 << 30)],
                Fail,
                &["less than the 10.0 GiB"],
            ),
            // Everything there: nothing more needed.
            (
                0,
                &[('a', 4 << 30), ('b', 6 << 30)],
                Pass,
                &["0.0 GiB needed (10.0 GiB of the bundle already in kk's store)"],
            ),
        ];
        for (free, stored, status, words) in table {
            let mut fixture = Fixture::three_nodes();
            fixture.bundle.content_bytes = 10 << 30;
            fixture.bundle.blobs = [hex('a'), hex('b')].into();
            let node = fixture.node("node1");
            node.free_bytes.insert("/var/lib".to_owned(), free);
            node.store_blobs = stored.iter().map(|(c, size)| (hex(*c), *size)).collect();
            expect(&fixture.on("node1", "airgap.disk_space"), status, words);
        }
        // A worker's blobs (no registry there) count for nothing.
        let mut fixture = Fixture::three_nodes();
        fixture.bundle.blobs = [hex('a')].into();
        fixture.node("node2").store_blobs = [(hex('a'), 1 << 30)].into();
        let result = fixture.on("node2", "airgap.disk_space");
        assert!(!result.message.contains("kk's store"), "{result:?}");
    }

    #[test]
    fn registry_port() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.on("node1", "airgap.registry_port"),
            Pass,
            &["5443 free"],
        );
        expect(&fixture.on("node2", "airgap.registry_port"), Skip, &[]);
        fixture.node("node1").listening.push(Listener {
            address: "::".to_owned(),
            port: 5443,
        });
        expect(
            &fixture.on("node1", "airgap.registry_port"),
            Fail,
            &["5443", "in use"],
        );
        fixture.config = config("  image_registry: {auth: {registry: \"reg.local:5000\"}}\n");
        expect(
            &fixture.on("node1", "airgap.registry_port"),
            Pass,
            &["5000 free"],
        );
        fixture.config =
            config("  image_registry: {type: external, address: harbor.example.com}\n");
        expect(&fixture.on("node1", "airgap.registry_port"), Skip, &[]);
    }

    #[test]
    fn clock_skew_thresholds() {
        let mut fixture = Fixture::three_nodes();
        for (offset, status) in [
            (0.0, Pass),
            (2.0, Pass),
            (-2.5, Warn),
            (30.0, Warn),
            (30.5, Fail),
            (-120.0, Fail),
        ] {
            fixture.node("node2").clock_offset = offset;
            assert_eq!(
                fixture.on("node2", "airgap.clock_skew").status,
                status,
                "{offset}"
            );
        }
        expect(
            &fixture.on("node2", "airgap.clock_skew"),
            Fail,
            &["120.0 s behind", "chrony"],
        );
    }
}

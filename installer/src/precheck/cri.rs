//! `cri.*`: the container runtime, carried by the bundle, and an installed containerd.

use super::version::Version;
use super::{CheckResult, Context, Node, list};
use bundle_spec::manifest::ContainerRuntime;

/// The oldest containerd kk configures: 1.6 is the oldest release line with the CRI v1 API
/// Kubernetes 1.26+ requires, and the `certs.d` mirror layout kk writes.
pub(super) const MIN_CONTAINERD: Version = Version::new(1, 6, 0);

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![containerd_version(node)]
}

pub(super) fn cluster(cx: &Context) -> Vec<CheckResult> {
    vec![container_manager(cx)]
}

/// The binaries a runtime needs from the bundle.
fn runtime_binaries(runtime: ContainerRuntime) -> &'static [&'static str] {
    match runtime {
        ContainerRuntime::Containerd => &["containerd", "runc"],
        ContainerRuntime::Docker => &["docker", "cri-dockerd"],
    }
}

/// `cri.container_manager`: containerd or docker, with its binaries in the bundle.
fn container_manager(cx: &Context) -> CheckResult {
    const ID: &str = "cri.container_manager";
    let runtime = cx.config.cri.container_manager;
    let missing: Vec<&str> = runtime_binaries(runtime)
        .iter()
        .copied()
        .filter(|name| !cx.bundle.binaries.iter().any(|b| b == name))
        .collect();
    if missing.is_empty() {
        return CheckResult::pass(ID, format!("{runtime}, carried by the bundle"));
    }
    // The kubelet lost its built-in docker support (dockershim) in Kubernetes 1.24, and kk
    // installs 1.29 and newer: with docker, cri-dockerd is the kubelet's CRI.
    let why = if missing.contains(&"cri-dockerd") {
        " (Kubernetes 1.24 and newer reach docker only through cri-dockerd)"
    } else {
        ""
    };
    CheckResult::fail(
        ID,
        format!(
            "`cri.container_manager` is {runtime}, but the bundle lacks {}{why}; fix: build the bundle with {runtime}, or choose the runtime it carries",
            list(&missing)
        ),
    )
}

/// `cri.containerd_version`: an installed containerd is recent enough to be configured.
fn containerd_version(node: &Node) -> CheckResult {
    const ID: &str = "cri.containerd_version";
    if node.cx.config.cri.container_manager != ContainerRuntime::Containerd {
        return CheckResult::skip(ID, "the container manager is docker");
    }
    if !node.is_kubernetes() {
        return CheckResult::skip(ID, "not a Kubernetes node");
    }
    let Some(text) = node.facts.versions.get("containerd") else {
        return CheckResult::pass(ID, "no containerd installed; the bundle's is installed");
    };
    match Version::find(text) {
        Some(v) if v >= MIN_CONTAINERD => CheckResult::pass(
            ID,
            format!("containerd {v} installed (at least {MIN_CONTAINERD})"),
        ),
        Some(v) => CheckResult::fail(
            ID,
            format!(
                "containerd {v} is installed, older than {MIN_CONTAINERD}; fix: remove it (e.g. `apt-get remove containerd`) so the bundle's is installed"
            ),
        ),
        None => CheckResult::warn(
            ID,
            format!(
                "containerd is installed but its version is unreadable (`{text}`); fix: check `containerd --version`"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Status::{Fail, Pass, Skip, Warn};
    use super::super::fixtures::{Fixture, config, expect};

    #[test]
    fn runtimes_need_their_binaries() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.cluster("cri.container_manager"),
            Pass,
            &["containerd"],
        );
        fixture.config = config("  cri: {container_manager: docker}\n");
        expect(
            &fixture.cluster("cri.container_manager"),
            Fail,
            &["`docker`, `cri-dockerd`"],
        );
        fixture.bundle.binaries.push("docker".to_owned());
        expect(
            &fixture.cluster("cri.container_manager"),
            Fail,
            &["`cri-dockerd`", "1.24"],
        );
        fixture.bundle.binaries.push("cri-dockerd".to_owned());
        expect(&fixture.cluster("cri.container_manager"), Pass, &["docker"]);
    }

    #[test]
    fn containerd_versions() {
        let mut fixture = Fixture::three_nodes();
        expect(
            &fixture.on("node2", "cri.containerd_version"),
            Pass,
            &["no containerd"],
        );
        for (text, status) in [
            (
                "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1",
                Pass,
            ),
            ("containerd containerd.io 1.6.0 abc", Pass),
            (
                "containerd github.com/containerd/containerd v1.5.9 1407cab",
                Fail,
            ),
            ("garbage", Warn),
        ] {
            let versions = &mut fixture.node("node2").versions;
            versions.insert("containerd".to_owned(), text.to_owned());
            assert_eq!(
                fixture.on("node2", "cri.containerd_version").status,
                status,
                "{text}"
            );
        }
        fixture.config = config("  cri: {container_manager: docker}\n");
        expect(
            &fixture.on("node2", "cri.containerd_version"),
            Skip,
            &["docker"],
        );
    }
}

//! What kk itself installed on a node: the one place that tells kk's own listeners, static pods
//! and etcd data from anything else, so that a precheck run again on installed nodes
//! (`kk-install --phase precheck`) passes over kk's own cluster and still fails on the rest.
//!
//! Something counts as kk's only when two facts agree: kk's record on the node
//! (`/etc/kubekey/installed.json`, [`Facts::kk_phases`](crate::facts::Facts::kk_phases)) says
//! the phase that installs it is done there, and what is found is what that phase leaves (the
//! process holding the port is the component's, the manifest is one kubeadm or kk writes).
//! Either alone is not enough: a port of an installed node held by another process, or a
//! `kube-apiserver` of a cluster kk did not install, is still judged as foreign.

use super::Node;
use crate::inventory::EtcdDeploymentType;

/// A component kk installs that listens on a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Component {
    /// The API server, a static pod of kk's kubernetes phase.
    ApiServer,
    /// A worker's local haproxy in front of the API servers (`type: haproxy`), a static pod.
    Haproxy,
    /// The kubelet, kk's unit.
    Kubelet,
    /// kube-controller-manager, a static pod.
    ControllerManager,
    /// kube-scheduler, a static pod.
    Scheduler,
    /// etcd: kk's unit with external etcd, kubeadm's static pod with stacked etcd.
    Etcd,
    /// kk's registry (`kk-registry.service`, this binary's `registry serve`).
    Registry,
}

impl Component {
    /// The process holding the component's port, as the kernel names it (`comm`, at most 15
    /// characters: kube-controller-manager is `kube-controller`).
    fn process(self) -> &'static str {
        match self {
            Self::ApiServer => "kube-apiserver",
            Self::Haproxy => "haproxy",
            Self::Kubelet => "kubelet",
            Self::ControllerManager => "kube-controller",
            Self::Scheduler => "kube-scheduler",
            Self::Etcd => "etcd",
            Self::Registry => "kk-install",
        }
    }

    /// The component's name in messages.
    fn name(self) -> &'static str {
        match self {
            Self::ApiServer => "kube-apiserver",
            Self::Haproxy => "haproxy",
            Self::Kubelet => "kubelet",
            Self::ControllerManager => "kube-controller-manager",
            Self::Scheduler => "kube-scheduler",
            Self::Etcd => "etcd",
            Self::Registry => "registry",
        }
    }
}

/// The phase that installs `component` on `node`, as kk's record names it.
fn phase(node: &Node, component: Component) -> &'static str {
    match component {
        Component::Etcd
            if node.cx.config.etcd.deployment_type == EtcdDeploymentType::External =>
        {
            "etcd"
        }
        Component::Registry => "registry",
        _ => "kubernetes",
    }
}

/// Who holds a TCP port on a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Holder {
    /// Nothing listens on it.
    Free,
    /// kk's own component, as installed: `"6443 held by kk's kube-apiserver"`.
    Own(String),
    /// Something else: `` "`nginx` listens on 0.0.0.0" ``, or `"something listens on …"` when
    /// the process is unknown.
    Other(String),
}

/// Who holds `port` on `node`, where kk installs `component` on it.
pub(super) fn port(node: &Node, port: u16, component: Component) -> Holder {
    let facts = node.facts;
    let Some(listener) = facts.port_in_use(port) else {
        return Holder::Free;
    };
    let process = facts.port_holder(port);
    if process == Some(component.process()) && facts.kk_installed(phase(node, component)) {
        return Holder::Own(format!("{port} held by kk's {}", component.name()));
    }
    let who = process.map_or_else(|| "something".to_owned(), |p| format!("`{p}`"));
    Holder::Other(format!("{who} listens on {}", listener.address))
}

/// The static pod manifests kubeadm and kk write into `/etc/kubernetes/manifests`.
const OWN_MANIFESTS: &[&str] = &[
    "etcd.yaml",
    "kube-apiserver.yaml",
    "kube-controller-manager.yaml",
    "kube-scheduler.yaml",
    "kube-vip.yaml",
    "haproxy.yaml",
];

/// Whether `/etc/kubernetes/manifests` holds only what kk's kubernetes phase, done on `node`,
/// put there (kubeadm's control-plane pods, kk's kube-vip or haproxy).
pub(super) fn manifests(node: &Node) -> bool {
    node.facts.kk_installed("kubernetes")
        && node
            .facts
            .static_pods
            .iter()
            .all(|pod| OWN_MANIFESTS.contains(&pod.as_str()))
}

/// Whether `/var/lib/etcd` holds the data of kk's etcd member on `node` (the member's phase is
/// done there).
pub(super) fn etcd_data(node: &Node) -> bool {
    node.is_etcd_member() && node.facts.kk_installed(phase(node, Component::Etcd))
}

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

use std::net::IpAddr;

use super::{Context, Node};
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
        Component::Etcd if node.cx.config.etcd.deployment_type == EtcdDeploymentType::External => {
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

/// The control-plane node whose kk's kube-vip holds the virtual IP `address`: one kk's
/// kubernetes phase is done on, that runs kk's `kube-vip.yaml` static pod and has `address` on an
/// interface (kube-vip puts it on its leader's). `None`: not kk's, or the node was unreachable.
pub(super) fn kube_vip<'a>(cx: &'a Context, address: IpAddr) -> Option<&'a str> {
    let address = address.to_string();
    cx.inventory
        .hosts()
        .iter()
        .filter(|host| host.roles.is_control_plane())
        .find(|host| {
            cx.facts.get(&host.name).is_some_and(|facts| {
                facts.kk_installed("kubernetes")
                    && facts.static_pods.iter().any(|pod| pod == "kube-vip.yaml")
                    && facts.has_address(&address)
            })
        })
        .map(|host| host.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::super::Status::{self, Fail, Pass, Warn};
    use super::super::fixtures::{Fixture, INSTALLED_PHASES, config, expect, installed};

    /// What kk's components hold on node1 (control plane, etcd, registry, worker) once
    /// installed.
    const KK_PORTS: &[(u16, &str)] = &[
        (6443, "kube-apiserver"),
        (10250, "kubelet"),
        (10257, "kube-controller"),
        (10259, "kube-scheduler"),
        (2379, "etcd"),
        (2380, "etcd"),
        (5443, "kk-install"),
    ];

    /// node1 installed by kk (every phase), with `holders` instead of kk's where they say.
    fn node1(phases: &[&str], holders: &[(u16, &str)]) -> Fixture {
        let mut fixture = Fixture::three_nodes();
        let ports: Vec<(u16, &str)> = KK_PORTS
            .iter()
            .map(|&(port, process)| {
                let other = holders.iter().find(|&&(p, _)| p == port);
                other.map_or((port, process), |&(p, holder)| (p, holder))
            })
            .collect();
        installed(fixture.node("node1"), phases, &ports);
        fixture
    }

    #[test]
    fn kks_own_ports_pass_naming_the_component() {
        let fixture = node1(INSTALLED_PHASES, &[]);
        for (id, words) in [
            ("kubeadm.port.6443", "6443 held by kk's kube-apiserver"),
            ("kubeadm.port.10250", "10250 held by kk's kubelet"),
            (
                "kubeadm.port.10257",
                "10257 held by kk's kube-controller-manager",
            ),
            ("kubeadm.port.10259", "10259 held by kk's kube-scheduler"),
            ("kubeadm.port.2379", "2379 held by kk's etcd"),
            ("kubeadm.port.2380", "2380 held by kk's etcd"),
            ("airgap.registry_port", "5443 held by kk's registry"),
            ("kubeadm.manifests", "kk's own `kube-apiserver.yaml`"),
            ("etcd.installed", "kk's own etcd member"),
        ] {
            expect(&fixture.on("node1", id), Pass, &[words]);
        }
    }

    #[test]
    fn an_installed_node_passes_every_node_rule() {
        let fixture = node1(INSTALLED_PHASES, &[]);
        let report = fixture.evaluate(&std::collections::BTreeSet::new());
        let failed: Vec<_> = report.nodes["node1"]
            .iter()
            .filter(|r| r.status == Fail)
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }

    /// A case: node1 installed with `phases`, `holders` on its ports; rule `id` comes out
    /// `status`, its message naming `words`.
    type Case = (
        &'static str,
        &'static [&'static str],
        &'static [(u16, &'static str)],
        &'static str,
        Status,
        &'static [&'static str],
    );

    #[test]
    fn what_kk_did_not_install_still_fails() {
        const NOT_ETCD: &[&str] = &["os", "registry", "kubernetes"];
        const NOT_REGISTRY: &[&str] = &["os", "etcd", "kubernetes"];
        const NOTHING: &[&str] = &[];
        let cases: &[Case] = &[
            (
                "a foreign process on the API server's port",
                INSTALLED_PHASES,
                &[(6443, "nginx")],
                "kubeadm.port.6443",
                Fail,
                &["`nginx` listens on 0.0.0.0", "fix: "],
            ),
            (
                "a process ss could not name",
                INSTALLED_PHASES,
                &[(10250, "")],
                "kubeadm.port.10250",
                Fail,
                &["something listens on 0.0.0.0"],
            ),
            (
                "kk's name on a port that is another component's",
                INSTALLED_PHASES,
                &[(2379, "kube-apiserver")],
                "kubeadm.port.2379",
                Fail,
                &["`kube-apiserver` listens on"],
            ),
            (
                "a kube-apiserver where kk's record names no kubernetes phase",
                NOTHING,
                &[],
                "kubeadm.port.6443",
                Fail,
                &["`kube-apiserver` listens on"],
            ),
            (
                "an etcd where kk's etcd phase is not done",
                NOT_ETCD,
                &[],
                "kubeadm.port.2379",
                Fail,
                &["`etcd` listens on"],
            ),
            (
                "etcd data where kk's etcd phase is not done",
                NOT_ETCD,
                &[],
                "etcd.installed",
                Warn,
                &["/var/lib/etcd holds data"],
            ),
            (
                "a registry where kk's registry phase is not done",
                NOT_REGISTRY,
                &[],
                "airgap.registry_port",
                Fail,
                &["`kk-install` listens on"],
            ),
            (
                "static pods where kk's kubernetes phase is not done",
                &["os"],
                &[],
                "kubeadm.manifests",
                Fail,
                &["kubeadm reset"],
            ),
        ];
        for &(what, phases, holders, id, status, words) in cases {
            let fixture = node1(phases, holders);
            let result = fixture.on("node1", id);
            assert_eq!(result.status, status, "{what}: {result:?}");
            for word in words {
                assert!(
                    result.message.contains(word),
                    "{what}: {result:?} lacks `{word}`"
                );
            }
        }
    }

    #[test]
    fn a_foreign_static_pod_beside_kks_fails() {
        let mut fixture = node1(INSTALLED_PHASES, &[]);
        fixture
            .node("node1")
            .static_pods
            .push("nginx.yaml".to_owned());
        expect(
            &fixture.on("node1", "kubeadm.manifests"),
            Fail,
            &["`nginx.yaml`", "kubeadm reset"],
        );
    }

    #[test]
    fn stacked_etcd_data_is_kks_once_its_kubernetes_phase_is_done() {
        let mut fixture = node1(INSTALLED_PHASES, &[]);
        fixture.config = config("  etcd: {deployment_type: internal}\n");
        expect(
            &fixture.on("node1", "kubeadm.etcd_data_dir"),
            Pass,
            &["kk's own etcd member"],
        );
        expect(
            &fixture.on("node1", "kubeadm.port.2379"),
            Pass,
            &["held by kk's etcd"],
        );
        // The etcd phase (external etcd's) is not what installs a stacked member.
        let mut fixture = node1(&["os", "etcd"], &[]);
        fixture.config = config("  etcd: {deployment_type: internal}\n");
        expect(
            &fixture.on("node1", "kubeadm.etcd_data_dir"),
            Fail,
            &["/var/lib/etcd is not empty"],
        );
    }

    #[test]
    fn a_workers_local_haproxy_is_kks() {
        let mut fixture = Fixture::three_nodes();
        fixture.config = config("  kubernetes: {control_plane_endpoint: {type: haproxy}}\n");
        installed(
            fixture.node("node2"),
            INSTALLED_PHASES,
            &[(6443, "haproxy")],
        );
        expect(
            &fixture.on("node2", "kubeadm.port.6443"),
            Pass,
            &["6443 held by kk's haproxy"],
        );
        installed(
            fixture.node("node3"),
            INSTALLED_PHASES,
            &[(6443, "kube-apiserver")],
        );
        expect(
            &fixture.on("node3", "kubeadm.port.6443"),
            Fail,
            &["`kube-apiserver` listens on", "haproxy"],
        );
    }

    /// What, node1's phases, its static pod, the address beside its own, status, words.
    type VipCase = (
        &'static str,
        &'static [&'static str],
        &'static str,
        &'static str,
        Status,
        &'static str,
    );

    #[test]
    fn an_answering_virtual_ip_is_kks_only_where_its_kube_vip_holds_it() {
        let vip = config(
            "  kubernetes:\n    control_plane_endpoint:\n      type: kube-vip\n      kube_vip: {address: '10.0.0.100'}\n",
        );
        let cases: &[VipCase] = &[
            (
                "kk's kube-vip holds it",
                INSTALLED_PHASES,
                "kube-vip.yaml",
                "10.0.0.100",
                Pass,
                "10.0.0.100 held by kk's kube-vip on node `node1`",
            ),
            (
                "another machine answers",
                INSTALLED_PHASES,
                "kube-vip.yaml",
                "10.0.0.1",
                Fail,
                "already answers",
            ),
            (
                "no kube-vip of kk's",
                INSTALLED_PHASES,
                "kube-apiserver.yaml",
                "10.0.0.100",
                Fail,
                "already answers",
            ),
            (
                "kk's kubernetes phase not done",
                &["os"],
                "kube-vip.yaml",
                "10.0.0.100",
                Fail,
                "already answers",
            ),
        ];
        for &(what, phases, pod, address, status, words) in cases {
            let mut fixture = node1(phases, &[]);
            fixture.config = vip.clone();
            fixture.cluster.vip_answers = Some(true);
            let facts = fixture.node("node1");
            facts.static_pods = vec![pod.to_owned()];
            facts.addresses.insert(
                "eth0".to_owned(),
                vec!["10.0.0.1".to_owned(), address.to_owned()],
            );
            let result = fixture.cluster("kubernetes.kube_vip");
            assert_eq!(result.status, status, "{what}: {result:?}");
            assert!(result.message.contains(words), "{what}: {result:?}");
        }
    }
}

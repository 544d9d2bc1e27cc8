//! `kk-install plan` as text: what the cluster gets in a few lines (kubeadm's input and every
//! chart's values in full are in `--output json`), then per node, its steps in order.

use std::fmt::Write as _;

use super::{Action, ChartValues, KubernetesPlan, Plan, RegistryServer, Step};
use crate::install::render::kubernetes::EtcdMode;
use crate::inventory::Inventory;

impl Plan {
    /// The plan as text: per node, its steps in order.
    pub fn render(&self, inventory: &Inventory) -> String {
        let registry = match &self.registry.server {
            RegistryServer::Kk { hosts } => {
                let on = hosts
                    .iter()
                    .map(|host| format!("{} ({})", host.node, host.ip))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("registry {} on {on}", self.registry.address)
            }
            RegistryServer::External(external) => format!(
                "registry {} (external{}, the bundle pushed into it first)",
                self.registry.address,
                if external.harbor { ", Harbor" } else { "" }
            ),
        };
        let mut text = format!(
            "bundle {}\n{registry}\ncluster domain {}\n",
            self.bundle, self.cluster_domain
        );
        if let Some(kubernetes) = &self.kubernetes {
            text.push_str(&kubernetes_summary(kubernetes));
        }
        if let Some(packages) = &self.packages {
            for set in &packages.sets {
                let _ = writeln!(
                    text,
                    "packages {}: {} of {} ({})",
                    set.key,
                    count(set.set.packages.len(), "package"),
                    set.set.repository,
                    set.set
                        .roots
                        .iter()
                        .map(|root| root.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if let Some(nfs) = &self.nfs {
            let _ = writeln!(
                text,
                "nfs server on {} ({}): {} exported to {}",
                nfs.node,
                nfs.ip,
                nfs.share_dir,
                count(nfs.clients.len(), "cluster node")
            );
        }
        text.push_str(&pins_summary(self));
        // Step ids in one column, as wide as the longest.
        let width = self.steps.iter().map(|s| s.id.len()).max().unwrap_or(0);
        for host in inventory.hosts() {
            let _ = writeln!(text, "\n{}:", host.name);
            for step in self.steps.iter().filter(|s| s.nodes.contains(&host.name)) {
                let _ = writeln!(text, "  {:<width$} {}", step.id, describe(&step.action));
            }
        }
        let once: Vec<&Step> = self.steps.iter().filter(|s| s.nodes.is_empty()).collect();
        if !once.is_empty() {
            text.push_str("\non the installer machine:\n");
            for step in once {
                let _ = writeln!(text, "  {:<width$} {}", step.id, describe(&step.action));
            }
        }
        text
    }
}

/// Which images are pinned, or why none are.
fn pins_summary(plan: &Plan) -> String {
    match &plan.pins {
        Some(pins) => format!(
            "pins: {} of the bundle's images ({} names) pinned in containerd where a node holds them\n",
            plan.images.len(),
            pins.names.len()
        ),
        None => "pins: none, docker's image store is not containerd's CRI (kubelet's image GC may remove the bundle's images; they pull again from the registry)\n".to_owned(),
    }
}

/// Kubernetes in a few lines: who initialises, the endpoint, the ranges, etcd, every chart and
/// where its values come from.
fn kubernetes_summary(kubernetes: &KubernetesPlan) -> String {
    let cluster = &kubernetes.cluster;
    let etcd = match &cluster.etcd {
        EtcdMode::Stacked => "stacked".to_owned(),
        EtcdMode::External { endpoints, .. } => {
            format!("external ({})", count(endpoints.len(), "member"))
        }
    };
    let mut text = format!(
        "kubernetes {}: kubeadm init on {}, endpoint {}, pods {}, services {}, etcd {etcd}\n",
        cluster.version,
        cluster.node_name,
        cluster.endpoint,
        cluster.pod_subnet,
        cluster.service_subnet,
    );
    for (phase, what, chart) in kubernetes.charts() {
        let lines = count(chart.values.yaml().lines().count(), "line");
        let source = match &chart.values {
            ChartValues::Cni { .. } | ChartValues::StorageClass { .. } => {
                format!("values rendered from the config ({lines})")
            }
            ChartValues::Addon {
                file: None, set, ..
            } => {
                format!("no values file{}", set_pairs(set))
            }
            ChartValues::Addon {
                file: Some(file),
                set,
                ..
            } => format!(
                "values from `{}` ({lines}){}",
                file.display(),
                set_pairs(set)
            ),
        };
        let _ = writeln!(
            text,
            "chart {} as {phase}.{what}: {source}",
            chart.fetch.name
        );
    }
    text.push_str("(`--output json` shows kubeadm's input and every chart's values)\n");
    text
}

/// `n` and `word`, plural but for one.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// An addon's `--set` pairs, after a comma; nothing without any.
fn set_pairs(set: &[String]) -> String {
    if set.is_empty() {
        String::new()
    } else {
        format!(", --set {}", set.join(" "))
    }
}

/// A short description of an action for `kk-install plan`.
fn describe(action: &Action) -> String {
    match action {
        Action::Hooks => "run the hook scripts".to_owned(),
        Action::Precheck => "gather facts, check every rule".to_owned(),
        Action::Agent => "copy the node agent kk-node to /usr/local/bin".to_owned(),
        Action::Installer => "copy kk-install to /usr/local/bin".to_owned(),
        Action::Hostname => "host name = the inventory name".to_owned(),
        Action::Swap => "swap off, now and in /etc/fstab".to_owned(),
        Action::Modules => "load overlay, br_netfilter; /etc/modules-load.d/kk.conf".to_owned(),
        Action::Sysctl { ipv6 } => format!(
            "forwarding{} and bridge netfilter; /etc/sysctl.d/99-kk.conf",
            if *ipv6 { " (IPv4 and IPv6)" } else { "" }
        ),
        Action::RegistryLogin => {
            "log in to the external registry (/v2/ with the credentials)".to_owned()
        }
        Action::PushStore => {
            "unpack the bundle into <work dir>/store; say what happens to partial indexes"
                .to_owned()
        }
        Action::PushBundle => {
            "create Harbor's missing projects, push the store into the registry".to_owned()
        }
        Action::Hosts => "map every node and the registry in /etc/hosts".to_owned(),
        Action::VerifyOs => "check swap, modules and sysctls for real".to_owned(),
        Action::InstallPackages => {
            "install the bundle's packages the node lacks (dpkg -i, from the registry)".to_owned()
        }
        Action::VerifyPackages => "check the packages' commands for real".to_owned(),
        Action::NfsServer => {
            "share dir, kk's block of /etc/exports, exportfs -ra, nfs-server".to_owned()
        }
        Action::IssueCertificates => "make the cluster's certificates in <work dir>/pki".to_owned(),
        Action::SpreadCertificates => {
            "put a reissued apiserver/registry certificate where an older one is; restart"
                .to_owned()
        }
        Action::Certificates => "copy this node's certificates".to_owned(),
        Action::UnpackBundle => "copy the bundle, unpack it into /var/lib/kk/store".to_owned(),
        Action::RegistryService => "install and start kk-registry.service".to_owned(),
        Action::RegistryReady => "wait for the registry over TLS".to_owned(),
        Action::Fetch { binaries } => format!(
            "fetch {} from the registry",
            binaries
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Action::Containerd => "containerd config, mirrors, unit; start".to_owned(),
        Action::Docker => {
            "containerd, dockerd (daemon.json, certs.d mirrors), cri-dockerd: units; start"
                .to_owned()
        }
        Action::PullProbe => "pull the pause image through the mirrors".to_owned(),
        Action::EtcdService => "etcd unit; start the member".to_owned(),
        Action::EtcdHealth => "wait until every member is healthy".to_owned(),
        Action::KubeletService => "kubelet unit and kubeadm drop-in; enable".to_owned(),
        Action::BootstrapToken => "make the bootstrap token, or replace it once expired".to_owned(),
        Action::KubeVipBootstrap => "kube-vip static pod for kubeadm init".to_owned(),
        Action::KubeadmInit => "kubeadm config; kubeadm init".to_owned(),
        Action::JoinControlPlane => "kubeadm join --control-plane".to_owned(),
        Action::InternalLoadBalancer => "haproxy static pod over the control planes".to_owned(),
        Action::JoinWorker => "kubeadm join".to_owned(),
        Action::KubeVip => "kube-vip static pod".to_owned(),
        Action::Chart { chart } => format!(
            "chart {} into namespace {}: helm template, check images, kubectl apply",
            chart.fetch.name, chart.namespace
        ),
        Action::Multus { multus } => format!(
            "multus's manifest ({}), delegating to {}: check images, kubectl apply",
            multus.image, multus.delegate
        ),
        Action::LabelNodes { label } => format!(
            "kubectl label {} on {}",
            label.label,
            label.nodes.join(", ")
        ),
        Action::PinImages => {
            "pin the bundle's images the node holds (ctr label), unpin kk's others".to_owned()
        }
    }
}

//! The kubernetes phase: the kubelet's unit, kubeadm's config, `kubeadm init` once on the
//! first control plane, `kubeadm join` everywhere else, and the control-plane endpoint (kube-vip
//! on the control planes, or haproxy on the workers).
//!
//! Each step is a no-op on a node that has what it would make: a node with `kubelet.conf` has
//! been initialised or joined, and kubeadm is not run there again (a changed config is written
//! but not applied to a running node — kubeadm has no such operation).

use std::net::IpAddr;

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, sh};
use crate::install::bootstrap::{self, BootstrapToken, TokenError};
use crate::install::error::StepError;
use crate::install::plan::KubernetesPlan;
use crate::install::render::kubernetes::paths::{
    ADMIN_CONF, HAPROXY_CFG, HAPROXY_MANIFEST, KK_CONFIGS, KUBE_VIP_MANIFEST, KUBEADM_DROPIN,
    KUBELET_UNIT, SUPER_ADMIN_CONF,
};
use crate::install::render::kubernetes::{
    self as k8s, ClusterInput, EtcdMode, JoinInput, KubeVipInput, VipMode,
};
use crate::install::render::{self, paths};
use crate::inventory::{EndpointKind, KubeVipMode};
use crate::ssh::{Node, quote};

/// The file whose presence means the node has been initialised or joined.
const KUBELET_CONF: &str = "/etc/kubernetes/kubelet.conf";
/// containerd's CRI socket, as kubeadm and the kubelet take it.
const CRI_SOCKET: &str = "unix:///run/containerd/containerd.sock";

/// The token and the CA hash, once `kubernetes.token` ran.
#[derive(Debug, Clone)]
pub(crate) struct Bootstrap {
    pub(crate) token: BootstrapToken,
    pub(crate) ca_cert_hash: String,
}

fn kubernetes<'a>(cx: &'a Cx<'_>) -> Result<&'a KubernetesPlan, StepError> {
    cx.plan
        .kubernetes
        .as_ref()
        .ok_or_else(|| StepError::not_in_plan("the bundle carries no Kubernetes (no kubeadm)"))
}

fn bootstrap<'a>(cx: &'a Cx<'_>) -> Result<&'a Bootstrap, StepError> {
    cx.bootstrap.get().ok_or(StepError::NotRun {
        what: "no bootstrap token",
        step: "kubernetes.token",
    })
}

async fn is_joined(node: &Node) -> Result<bool, StepError> {
    let said = sh(node, &format!("[ -f {KUBELET_CONF} ] && echo yes || true")).await?;
    Ok(said.trim() == "yes")
}

/// `kubernetes.kubelet`: `kubelet.service` and kubeadm's drop-in, enabled; kubeadm starts it.
pub(super) async fn kubelet(cx: &Cx<'_>, node: &Node) -> StepResult {
    let mut outcome = put(
        cx,
        node,
        k8s::kubelet_unit().as_bytes(),
        KUBELET_UNIT,
        0o644,
    )
    .await?;
    outcome.merge(
        put(
            cx,
            node,
            k8s::kubeadm_dropin().as_bytes(),
            KUBEADM_DROPIN,
            0o644,
        )
        .await?,
    );
    outcome.merge(ensure_unit(node, "kubelet.service", outcome.changed, Start::Never).await?);
    Ok(outcome)
}

/// `kubernetes.token` (on the installer machine, every run): the recorded token, or a new one
/// when there is none or it expired — registered with `kubeadm token create` when the cluster
/// already exists; and the CA hash from the CA kk issued.
pub(crate) async fn token(cx: &Cx<'_>, first: Option<&Node>) -> Result<bool, StepError> {
    let issued = cx.pki.get().ok_or(super::pki::NOT_ISSUED)?;
    let ca_cert_hash = bootstrap::ca_cert_hash(issued.ca_cert_pem().as_bytes())?;
    let now = jiff::Timestamp::now();
    let recorded = BootstrapToken::load(cx.work_dir)?;
    let (token, changed) = match recorded {
        Some(token) if token.is_valid_at(now) => (token, false),
        _ => {
            let token = BootstrapToken::generate(now).map_err(TokenError::Generate)?;
            let first = first.ok_or_else(|| {
                StepError::not_in_plan("the first control plane is not connected")
            })?;
            let initialised =
                sh(first, &format!("[ -f {ADMIN_CONF} ] && echo yes || true")).await?;
            if initialised.trim() == "yes" {
                sh(
                    first,
                    &format!(
                        "/usr/local/bin/kubeadm token create {} --ttl {} --kubeconfig {ADMIN_CONF} 2>&1",
                        token.token,
                        token.ttl_from(now)
                    ),
                )
                .await?;
            }
            token.save(cx.work_dir)?;
            (token, true)
        }
    };
    let _ = cx.bootstrap.set(Bootstrap {
        token,
        ca_cert_hash,
    });
    Ok(changed)
}

/// The kube-vip manifest for `node`, mounting `kubeconfig`.
async fn kube_vip_manifest(
    cx: &Cx<'_>,
    node: &Node,
    kubeconfig: &str,
) -> Result<String, StepError> {
    let plan = kubernetes(cx)?;
    let EndpointKind::KubeVip(vip) = &cx.config.kubernetes.control_plane_endpoint.kind else {
        return Err(StepError::not_in_plan(
            "the control-plane endpoint is not kube-vip",
        ));
    };
    let ip = node_ip(plan, node.name())?;
    // BGP announces the address from the loopback (kube-vip's and KubeKey's way); ARP answers
    // on the interface that holds the node's address, found on the node itself.
    let interface = if vip.mode == KubeVipMode::Bgp {
        "lo".to_owned()
    } else {
        sh(
        node,
        &format!(
            "ip -o addr show | awk -v ip={} '{{split($4, a, \"/\"); if (a[1] == ip) {{print $2; exit}}}}'",
            quote(&ip.to_string())
        ),
    )
    .await?
    };
    let interface = interface.trim();
    if interface.is_empty() {
        return Err(StepError::NoInterface {
            node: node.name().to_owned(),
            ip,
        });
    }
    let mode = match vip.mode {
        KubeVipMode::Arp => VipMode::Arp,
        KubeVipMode::Bgp => VipMode::Bgp {
            router_id: ip,
            peers: plan
                .control_planes
                .iter()
                .filter(|(name, _)| name != node.name())
                .map(|(_, ip)| *ip)
                .collect(),
            asn: 65000,
        },
    };
    let image = plan
        .kube_vip_image
        .clone()
        .ok_or_else(|| StepError::not_in_plan("the plan has no kube-vip image"))?;
    Ok(k8s::kube_vip_manifest(&KubeVipInput {
        image,
        address: vip.address,
        port: plan.endpoint_port,
        interface: interface.to_owned(),
        mode,
        kubeconfig: kubeconfig.to_owned(),
    }))
}

/// `kubernetes.vip-bootstrap`: before `kubeadm init`, kube-vip on the first control plane, so
/// that the endpoint answers while init waits for the API server. From v1.29, `admin.conf` has
/// no rights until init has bound its group, so kube-vip uses `super-admin.conf` until
/// `kubernetes.vip` switches it.
pub(super) async fn vip_bootstrap(cx: &Cx<'_>, node: &Node) -> StepResult {
    if is_joined(node).await? {
        return Ok(Outcome::default());
    }
    let plan = kubernetes(cx)?;
    let kubeconfig = if k8s::kube_vip_needs_super_admin(&plan.version) {
        SUPER_ADMIN_CONF
    } else {
        ADMIN_CONF
    };
    let manifest = kube_vip_manifest(cx, node, kubeconfig).await?;
    put(cx, node, manifest.as_bytes(), KUBE_VIP_MANIFEST, 0o600).await
}

/// `kubernetes.vip`: kube-vip on every control plane with `admin.conf` (after init or join:
/// kubeadm's join refuses a non-empty manifests directory).
pub(super) async fn vip(cx: &Cx<'_>, node: &Node) -> StepResult {
    let manifest = kube_vip_manifest(cx, node, ADMIN_CONF).await?;
    put(cx, node, manifest.as_bytes(), KUBE_VIP_MANIFEST, 0o600).await
}

/// The kubelet's `--node-ip` for `node`: its plan address, and in a dual-stack cluster its
/// address of the other family too.
fn node_ips(cx: &Cx<'_>, name: &str) -> Result<Vec<IpAddr>, StepError> {
    let mut ips = vec![node_ip(kubernetes(cx)?, name)?];
    let dual = cx.config.cni.pod_cidr.is_dual_stack();
    if let Some(host) = cx.inventory.host(name)
        && dual
    {
        let other = if ips[0].is_ipv4() {
            host.internal_ipv6.map(IpAddr::V6)
        } else {
            host.internal_ipv4.map(IpAddr::V4)
        };
        ips.extend(other);
    }
    Ok(ips)
}

fn node_ip(plan: &KubernetesPlan, name: &str) -> Result<IpAddr, StepError> {
    plan.control_planes
        .iter()
        .chain(&plan.workers)
        .find(|(n, _)| n == name)
        .map(|(_, ip)| *ip)
        .ok_or_else(|| {
            StepError::not_in_plan(format!("`{name}` is not a Kubernetes node of the plan"))
        })
}

/// kubeadm's `ClusterConfiguration` inputs for the first control plane.
fn cluster_input(cx: &Cx<'_>, node: &Node) -> Result<ClusterInput, StepError> {
    let plan = kubernetes(cx)?;
    let bootstrap = bootstrap(cx)?;
    let cni = &cx.config.cni;
    let etcd = if plan.stacked_etcd {
        EtcdMode::Stacked
    } else {
        EtcdMode::External {
            endpoints: render::etcd_endpoints(&cx.plan.etcd_members)
                .split(',')
                .map(str::to_owned)
                .collect(),
            ca_file: format!("{}/ca.crt", paths::ETCD_PKI),
            cert_file: "/etc/kubernetes/pki/apiserver-etcd-client.crt".to_owned(),
            key_file: "/etc/kubernetes/pki/apiserver-etcd-client.key".to_owned(),
        }
    };
    let mut cert_sans = vec![plan.endpoint_host.clone()];
    if let EndpointKind::KubeVip(vip) = &cx.config.kubernetes.control_plane_endpoint.kind {
        cert_sans.push(vip.address.to_string());
    }
    Ok(ClusterInput {
        version: plan.version.clone(),
        node_name: node.name().to_owned(),
        advertise_address: node_ip(plan, node.name())?,
        node_ips: node_ips(cx, node.name())?,
        bind_port: plan.endpoint_port,
        endpoint: plan.endpoint(),
        cert_sans,
        pod_subnet: cni.pod_cidr.to_string(),
        service_subnet: cni.service_cidr.to_string(),
        dns_domain: "cluster.local".to_owned(),
        node_mask_v4: cni.ipv4_mask_size,
        node_mask_v6: cni.ipv6_mask_size,
        max_pods: cni.max_pods,
        proxy_mode: cx.config.kubernetes.kube_proxy_mode.as_str().to_owned(),
        etcd,
        token: bootstrap.token.token.clone(),
        token_ttl: bootstrap.token.ttl_from(jiff::Timestamp::now()),
        cri_socket: CRI_SOCKET.to_owned(),
    })
}

/// `kubernetes.init`: kk's kubeadm config, and `kubeadm init` unless the node was initialised.
pub(super) async fn init(cx: &Cx<'_>, node: &Node) -> StepResult {
    let path = format!("{KK_CONFIGS}/kubeadm-init.yaml");
    if is_joined(node).await? {
        return Ok(Outcome {
            files: vec![path],
            ..Outcome::default()
        });
    }
    let config = k8s::init_config(&cluster_input(cx, node)?)?;
    let mut outcome = put(cx, node, config.as_bytes(), &path, 0o600).await?;
    sh(
        node,
        &format!(
            "/usr/local/bin/kubeadm init --config {path} 2>&1 && {}",
            admin_kubeconfig()
        ),
    )
    .await?;
    outcome.changed = true;
    Ok(outcome)
}

/// Gives root on a control plane `kubectl` access, as kubeadm suggests.
fn admin_kubeconfig() -> String {
    format!("mkdir -p /root/.kube && install -m 0600 {ADMIN_CONF} /root/.kube/config")
}

/// `kubernetes.join-control-plane` and `kubernetes.join-worker`: kk's join config, and
/// `kubeadm join` unless the node has joined.
pub(super) async fn join(cx: &Cx<'_>, node: &Node, control_plane: bool) -> StepResult {
    let path = format!("{KK_CONFIGS}/kubeadm-join.yaml");
    if is_joined(node).await? {
        return Ok(Outcome {
            files: vec![path],
            ..Outcome::default()
        });
    }
    let plan = kubernetes(cx)?;
    let bootstrap = bootstrap(cx)?;
    let ip = node_ip(plan, node.name())?;
    // haproxy's static pod is in place before a worker joins (the kubelet needs the endpoint
    // to register), and kubeadm's join refuses a non-empty manifests directory unless told.
    let ignore = if !control_plane && plan.haproxy_image.is_some() {
        vec!["DirAvailable--etc-kubernetes-manifests".to_owned()]
    } else {
        Vec::new()
    };
    let config = k8s::join_config(&JoinInput {
        version: plan.version.clone(),
        node_name: node.name().to_owned(),
        node_ips: node_ips(cx, node.name())?,
        endpoint: plan.endpoint(),
        token: bootstrap.token.token.clone(),
        ca_cert_hash: bootstrap.ca_cert_hash.clone(),
        control_plane: control_plane.then_some((ip, plan.endpoint_port)),
        ignore_preflight_errors: ignore,
        cri_socket: CRI_SOCKET.to_owned(),
    })?;
    let mut outcome = put(cx, node, config.as_bytes(), &path, 0o600).await?;
    let after = if control_plane {
        format!(" && {}", admin_kubeconfig())
    } else {
        String::new()
    };
    sh(
        node,
        &format!("/usr/local/bin/kubeadm join --config {path} 2>&1{after}"),
    )
    .await?;
    outcome.changed = true;
    Ok(outcome)
}

/// `kubernetes.haproxy`: the worker's load balancer over the control planes, as a static pod.
pub(super) async fn haproxy(cx: &Cx<'_>, node: &Node) -> StepResult {
    let plan = kubernetes(cx)?;
    let image = plan
        .haproxy_image
        .as_deref()
        .ok_or_else(|| StepError::not_in_plan("the plan has no haproxy image"))?;
    let cfg = k8s::haproxy_cfg(plan.endpoint_port, &plan.control_planes);
    let sha = bundle_spec::Sha256Digest::of(cfg.as_bytes()).hex();
    let mut outcome = put(cx, node, cfg.as_bytes(), HAPROXY_CFG, 0o644).await?;
    let manifest = k8s::haproxy_manifest(image, &sha);
    outcome.merge(put(cx, node, manifest.as_bytes(), HAPROXY_MANIFEST, 0o600).await?);
    Ok(outcome)
}

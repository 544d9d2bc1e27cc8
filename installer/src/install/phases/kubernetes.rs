//! The kubernetes phase: the kubelet's unit, kubeadm's config, `kubeadm init` once on the
//! first control plane, `kubeadm join` everywhere else, and the control-plane endpoint (kube-vip
//! on the control planes, or haproxy on the workers).
//!
//! Each step is a no-op on a node that has what it would make: a node with `kubelet.conf` has
//! been initialised or joined, and kubeadm is not run there again (a changed config is written
//! but not applied to a running node — kubeadm has no such operation).

use std::net::IpAddr;

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, sh};
use crate::install::bootstrap::{self, BootstrapToken};
use crate::install::plan::KubernetesPlan;
use crate::install::render::kubernetes::paths::{
    ADMIN_CONF, CRI_SOCKET, HAPROXY_CFG, HAPROXY_MANIFEST, KK_CONFIGS, KUBE_VIP_MANIFEST,
    KUBEADM_DROPIN, KUBELET_UNIT, SUPER_ADMIN_CONF,
};
use crate::install::render::kubernetes::{
    self as k8s, InitToken, JoinInput, KubeVipInput, VipMode,
};
use crate::inventory::{EndpointKind, KubeVipMode};
use crate::ssh::{Node, quote};

/// The file whose presence means the node has been initialised or joined.
const KUBELET_CONF: &str = "/etc/kubernetes/kubelet.conf";

/// The token and the CA hash, once `kubernetes.token` ran.
#[derive(Debug, Clone)]
pub(crate) struct Bootstrap {
    pub(crate) token: BootstrapToken,
    pub(crate) ca_cert_hash: String,
}

fn kubernetes<'a>(cx: &'a Cx<'_>) -> Result<&'a KubernetesPlan, String> {
    cx.plan
        .kubernetes
        .as_ref()
        .ok_or_else(|| "the bundle carries no Kubernetes (no kubeadm)".to_owned())
}

fn bootstrap<'a>(cx: &'a Cx<'_>) -> Result<&'a Bootstrap, String> {
    cx.bootstrap
        .get()
        .ok_or_else(|| "no bootstrap token (step `kubernetes.token` did not run)".to_owned())
}

async fn is_joined(node: &Node) -> Result<bool, String> {
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
pub(crate) async fn token(cx: &Cx<'_>, first: Option<&Node>) -> Result<bool, String> {
    let issued = cx
        .pki
        .get()
        .ok_or("the certificates were not made (step `pki.issue` did not run)")?;
    let ca_cert_hash = bootstrap::ca_cert_hash(issued.ca_cert_pem().as_bytes())?;
    let now = jiff::Timestamp::now();
    let recorded = BootstrapToken::load(cx.work_dir)?;
    let (token, changed) = match recorded {
        Some(token) if token.is_valid_at(now) => (token, false),
        _ => {
            let token = BootstrapToken::generate(now)
                .map_err(|e| format!("cannot make a bootstrap token: {e}"))?;
            let first = first.ok_or("the first control plane is not connected")?;
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
async fn kube_vip_manifest(cx: &Cx<'_>, node: &Node, kubeconfig: &str) -> Result<String, String> {
    let plan = kubernetes(cx)?;
    let EndpointKind::KubeVip(vip) = &cx.config.kubernetes.control_plane_endpoint.kind else {
        return Err("the control-plane endpoint is not kube-vip".to_owned());
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
        return Err(format!("no interface of `{}` holds {ip}", node.name()));
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
        .ok_or("the plan has no kube-vip image")?;
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

/// The kubelet's `--node-ip` for `node`, as the plan decided it.
fn node_ips(plan: &KubernetesPlan, name: &str) -> Result<Vec<IpAddr>, String> {
    plan.node_ips
        .get(name)
        .cloned()
        .ok_or_else(|| format!("`{name}` is not a Kubernetes node of the plan"))
}

fn node_ip(plan: &KubernetesPlan, name: &str) -> Result<IpAddr, String> {
    plan.control_planes
        .iter()
        .chain(&plan.workers)
        .find(|(n, _)| n == name)
        .map(|(_, ip)| *ip)
        .ok_or_else(|| format!("`{name}` is not a Kubernetes node of the plan"))
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
    let plan = kubernetes(cx)?;
    let bootstrap = bootstrap(cx)?;
    let ttl = bootstrap.token.ttl_from(jiff::Timestamp::now());
    let token = InitToken {
        token: &bootstrap.token.token,
        ttl: &ttl,
    };
    let config = k8s::init_config(&plan.cluster, token)?;
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
        node_ips: node_ips(plan, node.name())?,
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
        .ok_or("the plan has no haproxy image")?;
    let cfg = k8s::haproxy_cfg(plan.endpoint_port, &plan.control_planes);
    let sha = bundle_spec::Sha256Digest::of(cfg.as_bytes()).hex();
    let mut outcome = put(cx, node, cfg.as_bytes(), HAPROXY_CFG, 0o644).await?;
    let manifest = k8s::haproxy_manifest(image, &sha);
    outcome.merge(put(cx, node, manifest.as_bytes(), HAPROXY_MANIFEST, 0o600).await?);
    Ok(outcome)
}

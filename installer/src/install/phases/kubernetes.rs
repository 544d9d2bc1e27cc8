//! The kubernetes phase: the kubelet's unit, kubeadm's config, `kubeadm init` once on the
//! first control plane, `kubeadm join` everywhere else, and the control-plane endpoint (kube-vip
//! on the control planes, or haproxy on the workers).
//!
//! Each step is a no-op on a node that has what it would make: a node with `kubelet.conf` has
//! been initialised or joined, and kubeadm is not run there again (a changed config is written
//! but not applied to a running node — kubeadm has no such operation).

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, sh};
use crate::install::bootstrap::{self, BootstrapToken, TokenError};
use crate::install::error::StepError;
use crate::install::plan::{KubeVipPlan, KubernetesPlan, VipInterface};
use crate::install::render::kubernetes::paths::{
    ADMIN_CONF, HAPROXY_CFG, HAPROXY_MANIFEST, KK_CONFIGS, KUBE_VIP_MANIFEST, KUBEADM_DROPIN,
    KUBELET_UNIT,
};
use crate::install::render::kubernetes::{self as k8s, InitToken, JoinToken, KubeVipInput};
use crate::ssh::{Node, quote};

/// The file whose presence means the node has been initialised or joined.
const KUBELET_CONF: &str = "/etc/kubernetes/kubelet.conf";

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

fn kube_vip<'a>(cx: &'a Cx<'_>) -> Result<&'a KubeVipPlan, StepError> {
    kubernetes(cx)?
        .kube_vip
        .as_ref()
        .ok_or_else(|| StepError::not_in_plan("the control-plane endpoint is not kube-vip"))
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
    let cri_unit = &kubernetes(cx)?.cri_unit;
    let mut outcome = put(
        cx,
        node,
        k8s::kubelet_unit(cri_unit).as_bytes(),
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
    let vip = kube_vip(cx)?;
    let announce = vip.nodes.get(node.name()).ok_or_else(|| {
        StepError::not_in_plan(format!("the plan runs no kube-vip on `{}`", node.name()))
    })?;
    let interface = match &announce.interface {
        VipInterface::Named { name } => name.clone(),
        VipInterface::Holding { address } => {
            let found = sh(
                node,
                &format!(
                    "ip -o addr show | awk -v ip={} '{{split($4, a, \"/\"); if (a[1] == ip) {{print $2; exit}}}}'",
                    quote(&address.to_string())
                ),
            )
            .await?;
            let found = found.trim();
            if found.is_empty() {
                return Err(StepError::NoInterface {
                    node: node.name().to_owned(),
                    ip: *address,
                });
            }
            found.to_owned()
        }
    };
    Ok(k8s::kube_vip_manifest(&KubeVipInput {
        image: vip.image.clone(),
        address: vip.address,
        port: vip.port,
        interface,
        mode: announce.mode.clone(),
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
    let kubeconfig = &kube_vip(cx)?.bootstrap_kubeconfig;
    let manifest = kube_vip_manifest(cx, node, kubeconfig).await?;
    put(cx, node, manifest.as_bytes(), KUBE_VIP_MANIFEST, 0o600).await
}

/// `kubernetes.vip`: kube-vip on every control plane with `admin.conf` (after init or join:
/// kubeadm's join refuses a non-empty manifests directory).
pub(super) async fn vip(cx: &Cx<'_>, node: &Node) -> StepResult {
    let manifest = kube_vip_manifest(cx, node, ADMIN_CONF).await?;
    put(cx, node, manifest.as_bytes(), KUBE_VIP_MANIFEST, 0o600).await
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
    let input = kubernetes(cx)?.joins.get(node.name()).ok_or_else(|| {
        StepError::not_in_plan(format!("the plan does not join `{}`", node.name()))
    })?;
    let bootstrap = bootstrap(cx)?;
    let token = JoinToken {
        token: &bootstrap.token.token,
        ca_cert_hash: &bootstrap.ca_cert_hash,
    };
    let config = k8s::join_config(input, token)?;
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

//! The etcd phase (`etcd.deployment_type: external`): `etcd.service` on every `etcd` host,
//! TLS with client-certificate authentication for clients and peers, healthy before the phase
//! ends.
//!
//! Members are started without waiting (`systemctl start --no-block`): with `Type=notify` a
//! member reports ready only once the cluster has quorum, so a blocking start of the first
//! member would wait for members that are started after it.

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, sh};
use crate::install::error::StepError;
use crate::install::render::{self, paths};
use crate::ssh::Node;

/// `etcd.service`: data directory (0700), `/etc/etcd.env`, the unit; the member started, and
/// restarted only when its settings changed — a healthy member is not touched on a rerun.
pub(super) async fn service(cx: &Cx<'_>, node: &Node) -> StepResult {
    let (_, ip) = cx
        .plan
        .etcd_members
        .iter()
        .find(|(name, _)| name == node.name())
        .ok_or_else(|| {
            StepError::not_in_plan(format!(
                "`{}` is not an etcd member of the plan",
                node.name()
            ))
        })?;
    let said = sh(
        node,
        "if [ ! -d /var/lib/etcd ]; then mkdir -p /var/lib/etcd && echo made; fi; \
         [ \"$(stat -c %a /var/lib/etcd)\" = 700 ] || { chmod 0700 /var/lib/etcd && echo mode; }",
    )
    .await?;
    let env = render::etcd_env(node.name(), *ip, &cx.plan.etcd_members);
    let mut outcome = put(cx, node, env.as_bytes(), "/etc/etcd.env", 0o644).await?;
    let unit = put(
        cx,
        node,
        render::etcd_unit().as_bytes(),
        "/etc/systemd/system/etcd.service",
        0o644,
    )
    .await?;
    outcome.merge(unit);
    let started = ensure_unit(node, "etcd.service", outcome.changed, Start::NoWait).await?;
    outcome.merge(started);
    outcome.changed |= !said.trim().is_empty();
    Ok(outcome)
}

/// `etcd.health`: `etcdctl endpoint health --cluster` with the healthcheck client certificate
/// reports every member healthy (retried while the cluster forms, up to two minutes).
pub(super) async fn health(cx: &Cx<'_>, node: &Node) -> StepResult {
    let pki = paths::ETCD_PKI;
    // `--cluster` asks every member for its client URLs; a member that has not published them
    // yet is left out, not reported unhealthy, so the loop waits until all are counted.
    let members = cx.plan.etcd_members.len();
    let command = format!(
        "e() {{ ETCDCTL_API=3 /usr/local/bin/etcdctl --endpoints {endpoints} --cacert {pki}/ca.crt \
           --cert {pki}/healthcheck-client.crt --key {pki}/healthcheck-client.key \
           --dial-timeout 3s --command-timeout 5s endpoint health --cluster 2>&1; }}; \
         i=0; while [ $i -lt 120 ]; do out=$(e); \
           [ \"$(printf '%s\\n' \"$out\" | grep -c 'is healthy')\" -ge {members} ] && {{ echo \"$out\"; exit 0; }}; \
           i=$((i+1)); sleep 1; done; \
         echo \"$out\"; systemctl status --no-pager etcd.service; journalctl -u etcd.service -n 20 --no-pager; exit 1",
        endpoints = render::etcd_endpoints(&cx.plan.etcd_members),
    );
    let said = sh(node, &command).await?;
    let healthy = said.matches("is healthy").count();
    if healthy < cx.plan.etcd_members.len() {
        return Err(StepError::EtcdUnhealthy {
            healthy,
            members: cx.plan.etcd_members.len(),
            said,
        });
    }
    Ok(Outcome::default())
}

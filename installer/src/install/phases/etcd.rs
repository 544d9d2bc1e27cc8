//! The etcd phase (`etcd.deployment_type: external`): `etcd.service` on every `etcd` host,
//! TLS with client-certificate authentication for clients and peers, healthy before the phase
//! ends.
//!
//! Members are started without waiting (`systemctl start --no-block`): with `Type=notify` a
//! member reports ready only once the cluster has quorum, so a blocking start of the first
//! member would wait for members that are started after it.

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, sh};
use crate::install::error::StepError;
use crate::install::plan::{self, etcd::EtcdStart};
use crate::install::render::{self, paths};
use crate::ssh::{Node, quote};

/// Held by a member without data from finding the running cluster until it has started.
static UNSTARTED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `etcd.service`: data directory (0700), `/etc/etcd.env`, the unit; the member started, and
/// restarted only when its settings changed — a healthy member is not touched on a rerun.
///
/// A member without data joins a cluster that already runs (a host added to the `etcd` group
/// of an installed cluster): `member add` on a healthy member unless it is listed already,
/// then it starts with `initial-cluster-state: existing` (see [`plan::etcd`]).
pub(super) async fn service(cx: &Cx<'_>, node: &Node) -> StepResult {
    let members = &cx.plan.etcd_members;
    let (_, ip) = members
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
    let has_data = sh(node, "[ -d /var/lib/etcd/member ] && echo data || true")
        .await?
        .contains("data");
    // Members without data decide and start one at a time: hosts added together (two, to keep
    // the count odd) must each see the other's `member add` to name it in their
    // `initial-cluster`, which etcd checks against the running cluster's member list.
    let _one_at_a_time = if has_data {
        None
    } else {
        Some(UNSTARTED.lock().await)
    };
    let running = if has_data {
        None
    } else {
        let others: Vec<_> = members
            .iter()
            .filter(|(name, _)| name != node.name())
            .cloned()
            .collect();
        running_cluster(node, &others).await?
    };
    let listed = running.as_ref().map(|(_, listed)| listed.as_slice());
    let start = plan::etcd::etcd_start(node.name(), *ip, has_data, listed, members);
    let rendered = render::etcd_env(node.name(), *ip, members);
    let env = match &start {
        EtcdStart::OwnData => {
            let current = sh(node, "cat /etc/etcd.env 2>/dev/null || true").await?;
            render::etcd_env_keeping_bootstrap(&rendered, &current)
        }
        EtcdStart::Bootstrap => rendered,
        EtcdStart::Join {
            add,
            initial_cluster,
        } => {
            if *add {
                let endpoints = running.as_ref().map_or("", |(e, _)| e.as_str());
                member_add(node, endpoints, *ip).await?;
            }
            render::etcd_env_joining(node.name(), *ip, initial_cluster)
        }
    };
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
    if let EtcdStart::Join { add: true, .. } = start {
        outcome.changed = true;
        outcome
            .notes
            .push("joined the running etcd cluster (`member add`)".to_owned());
    }
    Ok(outcome)
}

/// `etcdctl` with the healthcheck client certificate, as a shell function `e`.
fn etcdctl_function() -> String {
    let pki = paths::ETCD_PKI;
    format!(
        "e() {{ ETCDCTL_API=3 /usr/local/bin/etcdctl --cacert {pki}/ca.crt \
           --cert {pki}/healthcheck-client.crt --key {pki}/healthcheck-client.key \
           --dial-timeout 3s --command-timeout 5s \"$@\"; }}"
    )
}

/// Asked from `node`: the `members` that answer healthy (comma-separated client URLs) and the
/// members they list; `None` when none answers: no cluster runs yet (or it has no quorum, and
/// a member then bootstraps with the plan's members as it always did).
pub(crate) async fn running_cluster(
    node: &Node,
    members: &[(String, std::net::IpAddr)],
) -> Result<Option<(String, Vec<plan::etcd::ListedMember>)>, StepError> {
    if members.is_empty() {
        return Ok(None);
    }
    // `endpoint health` commits a read through raft: an endpoint is healthy only in a cluster
    // with quorum, so the members of a fresh install that are still waiting for each other do
    // not count as a running cluster. etcdctl 3.4 prints health lines on stderr.
    let command = format!(
        "{e}; h=$(e --endpoints {endpoints} endpoint health 2>&1 \
           | sed -n 's/^\\(https:[^ ]*\\) is healthy.*/\\1/p' | paste -sd, -); \
         if [ -n \"$h\" ]; then echo \"running $h\"; e --endpoints \"$h\" member list; fi",
        e = etcdctl_function(),
        endpoints = render::etcd_endpoints(members),
    );
    let said = sh(node, &command).await?;
    let mut lines = said.lines();
    let Some(endpoints) = lines.next().and_then(|l| l.strip_prefix("running ")) else {
        return Ok(None);
    };
    let rest: Vec<&str> = lines.collect();
    Ok(Some((
        endpoints.to_owned(),
        plan::etcd::parse_member_list(&rest.join("\n")),
    )))
}

/// `etcdctl member add` of `node` at `ip` through the healthy `endpoints`.
async fn member_add(node: &Node, endpoints: &str, ip: std::net::IpAddr) -> Result<(), StepError> {
    let command = format!(
        "{e}; e --endpoints {endpoints} member add {name} --peer-urls={url}",
        e = etcdctl_function(),
        endpoints = quote(endpoints),
        name = quote(node.name()),
        url = plan::etcd::peer_url(ip),
    );
    sh(node, &command).await?;
    Ok(())
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

/// `etcdctl member remove` of the member `id` through the healthy `endpoints` (`delete-node`).
pub(crate) async fn member_remove(node: &Node, endpoints: &str, id: &str) -> Result<(), StepError> {
    let command = format!(
        "{e}; e --endpoints {endpoints} member remove {id}",
        e = etcdctl_function(),
        endpoints = quote(endpoints),
        id = quote(id),
    );
    sh(node, &command).await?;
    Ok(())
}

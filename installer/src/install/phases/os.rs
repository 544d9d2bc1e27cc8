//! The os phase: the node agent (and the registry host's kk-install), swap, kernel modules, sysctls, `/etc/hosts`,
//! and the check that they hold.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::IpAddr;

use super::{Cx, Outcome, StepResult, put, put_file, sh};
use crate::install::error::StepError;
use crate::install::render::{self, paths};
use crate::precheck::{self, Context};
use crate::ssh::{Node, fan_out};

/// `os.agent`: the node agent at `/usr/local/bin/kk-node` (the node fetches binaries and waits
/// for the registry with it).
pub(super) async fn agent(cx: &Cx<'_>, node: &Node) -> StepResult {
    put_file(node, cx.agent_binary, paths::KK_NODE, 0o755).await
}

/// `os.installer`: this kk-install at `/usr/local/bin/kk-install` on the registry host (it
/// unpacks and serves the bundle with it).
pub(super) async fn installer(cx: &Cx<'_>, node: &Node) -> StepResult {
    put_file(node, cx.installer_binary, paths::KK_INSTALL, 0o755).await
}

/// `os.hostname`: the host name set to the inventory name (`hostnamectl`, or `/etc/hostname`
/// where systemd-hostnamed is not running), unless it is already.
pub(super) async fn hostname(node: &Node) -> StepResult {
    let said = sh(
        node,
        &format!(
            "n={}; [ \"$(hostname)\" = \"$n\" ] && exit 0; \
             hostnamectl set-hostname \"$n\" 2>/dev/null || {{ echo \"$n\" > /etc/hostname && hostname \"$n\"; }} || exit 1; echo changed",
            crate::ssh::quote(node.name())
        ),
    )
    .await?;
    Ok(Outcome {
        changed: !said.trim().is_empty(),
        ..Outcome::default()
    })
}

/// `os.swap`: swap off now, and its `/etc/fstab` lines commented out so it stays off.
pub(super) async fn swap(node: &Node) -> StepResult {
    let said = sh(
        node,
        "if [ -n \"$(tail -n +2 /proc/swaps)\" ]; then swapoff -a && echo swapoff; fi; \
         if grep -Eq '^[^#][^[:space:]]*[[:space:]]+[^[:space:]]+[[:space:]]+swap[[:space:]]' /etc/fstab 2>/dev/null; then \
           sed -i -E 's@^([^#][^[:space:]]*[[:space:]]+[^[:space:]]+[[:space:]]+swap[[:space:]].*)$@# kk-install: swap off for the kubelet: \\1@' /etc/fstab \
           && echo fstab; fi",
    )
    .await?;
    Ok(Outcome {
        changed: !said.trim().is_empty(),
        ..Outcome::default()
    })
}

/// `os.modules`: `overlay` and `br_netfilter` loaded (unless already) and loaded at boot.
pub(super) async fn modules(cx: &Cx<'_>, node: &Node) -> StepResult {
    let mut outcome = put(
        cx,
        node,
        render::modules_conf().as_bytes(),
        "/etc/modules-load.d/kk.conf",
        0o644,
    )
    .await?;
    // Judged by what the modules provide, not by `/sys/module`: a kernel with them built in
    // has no module to load.
    let said = sh(node, &format!("{LOADED}; for m in overlay br_netfilter; do loaded $m || {{ modprobe $m && echo $m; }} || exit 1; done")).await?;
    outcome.changed |= !said.trim().is_empty();
    Ok(outcome)
}

/// A shell function: whether module `$1` is in effect (`overlay` as a known file system,
/// `br_netfilter` by its `net.bridge` sysctls), as the precheck's facts judge it.
const LOADED: &str = "loaded() { case $1 in \
    overlay) grep -qw overlay /proc/filesystems ;; \
    br_netfilter) [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ;; \
    *) [ -d /sys/module/$1 ] ;; esac; }";

/// `os.sysctl`: `/etc/sysctl.d/99-kk.conf`, and each value set now where it differs.
pub(super) async fn sysctl(cx: &Cx<'_>, node: &Node, ipv6: bool) -> StepResult {
    let mut outcome = put(
        cx,
        node,
        render::sysctl_conf(ipv6).as_bytes(),
        "/etc/sysctl.d/99-kk.conf",
        0o644,
    )
    .await?;
    let mut command = String::new();
    for (key, value) in render::sysctls(ipv6) {
        let _ = write!(
            command,
            "[ \"$(sysctl -n {key})\" = {value} ] || {{ sysctl -qw {key}={value} && echo {key}; }} || exit 1; "
        );
    }
    let said = sh(node, &command).await?;
    outcome.changed |= !said.trim().is_empty();
    Ok(outcome)
}

/// `os.hosts`: every node's name and the registry's name in `/etc/hosts`, in a block kk owns.
pub(super) async fn hosts(cx: &Cx<'_>, node: &Node) -> StepResult {
    let current = sh(node, "cat /etc/hosts 2>/dev/null || true").await?;
    let entries: Vec<(IpAddr, Vec<String>)> = cx
        .plan
        .etc_hosts
        .get(node.name())
        .ok_or_else(|| {
            StepError::not_in_plan(format!(
                "the plan has no `/etc/hosts` for `{}`",
                node.name()
            ))
        })?
        .iter()
        .map(|entry| (entry.ip, entry.names.clone()))
        .collect();
    let wanted = render::hosts_file(&current, &entries);
    if wanted == current {
        return Ok(Outcome {
            files: vec!["/etc/hosts".to_owned()],
            ..Outcome::default()
        });
    }
    put(cx, node, wanted.as_bytes(), "/etc/hosts", 0o644).await
}

/// `os.verify` (on the installer machine): the precheck rules the os phase establishes,
/// judged for real on facts gathered again.
pub(crate) async fn verify(cx: &Cx<'_>, nodes: &[&Node]) -> Result<(), StepError> {
    judge_again(cx, nodes, "os", precheck::established_by_os).await
}

/// The rules of a phase that establishes precheck conditions (`judge`: which rules, judged
/// how), on the nodes' facts gathered again after it; any that fails stops the install,
/// naming node and rule.
pub(super) async fn judge_again(
    cx: &Cx<'_>,
    nodes: &[&Node],
    phase: &'static str,
    judge: fn(&Context<'_>, &BTreeSet<String>) -> precheck::Report,
) -> Result<(), StepError> {
    let checks = cx.checks;
    let gathered = fan_out(nodes, checks.reach.concurrency, |node| {
        crate::facts::gather(node)
    })
    .await;
    let mut facts = BTreeMap::new();
    for (node, result) in nodes.iter().zip(gathered) {
        facts.insert(node.name().to_owned(), result?);
    }
    let context = Context {
        inventory: checks.inventory,
        config: checks.config,
        facts: &facts,
        bundle: checks.bundle,
        cluster: &precheck::ClusterFacts::default(),
    };
    not_established(phase, &judge(&context, checks.ignore))
}

/// The failures of `report`, of the rules `phase` establishes, as the step's error; none: ok.
fn not_established(phase: &'static str, report: &precheck::Report) -> Result<(), StepError> {
    let failures: Vec<String> = report
        .nodes
        .iter()
        .flat_map(|(node, results)| {
            results
                .iter()
                .filter(|r| r.status == precheck::Status::Fail)
                .map(move |r| format!("{node}: {}: {}", r.id, r.message))
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(StepError::NotEstablished { phase, failures })
    }
}

//! The runtime phase (and the binaries of the etcd phase): nodes fetch their binaries from
//! kk's registry with their own kk-install; containerd gets its config, kk's registry as the
//! mirror of every registry host the bundle's images are named by, and its unit; the pause
//! image is pulled by its original name as a probe.

use serde::Deserialize;
use std::fmt::Write as _;

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, sh};
use crate::install::error::StepError;
use crate::install::plan::BinaryFetch;
use crate::install::render::{self, paths};
use crate::ssh::{Node, quote};

/// What `kk-install fetch --output json` prints (see [`crate::fetch::Fetched`]).
#[derive(Debug, Deserialize)]
struct Fetched {
    files: std::collections::BTreeMap<String, String>,
    unchanged: bool,
}

/// `*.binaries`: each binary fetched by the node itself, from the registry, by digest.
pub(super) async fn fetch(cx: &Cx<'_>, node: &Node, binaries: &[BinaryFetch]) -> StepResult {
    let mut outcome = Outcome::default();
    for binary in binaries {
        let mut command = format!(
            "{kk} fetch --registry {registry} --ca {ca} --into {into} --output json",
            kk = paths::KK_INSTALL,
            registry = quote(&cx.plan.registry.address),
            ca = paths::TRUST_CA,
            into = quote(&binary.into),
        );
        for digest in &binary.digests {
            let _ = write!(command, " --expect {digest}");
        }
        for file in &binary.files {
            let _ = write!(command, " --file {}", quote(file));
        }
        let _ = write!(command, " {}", quote(&binary.reference));
        let printed = sh(node, &command).await?;
        let fetched: Fetched =
            serde_json::from_str(printed.trim()).map_err(|source| StepError::FetchOutput {
                printed: printed.clone(),
                source,
            })?;
        outcome.changed |= !fetched.unchanged;
        outcome.files.extend(fetched.files.into_keys());
    }
    Ok(outcome)
}

/// `<dir>/<host>/hosts.toml` for every registry host the bundle's images are named by, each
/// making kk's registry that host's mirror: containerd's `certs.d` and dockerd's read the same
/// content.
pub(super) fn mirror_files(cx: &Cx<'_>, dir: &str) -> Vec<(String, String)> {
    cx.plan
        .image_hosts
        .iter()
        .map(|host| {
            (
                format!("{dir}/{host}/hosts.toml"),
                render::hosts_toml(
                    host,
                    &cx.plan.registry.address,
                    cx.plan.registry.upstream_fallback,
                ),
            )
        })
        .collect()
}

/// `runtime.containerd`: config, mirrors, crictl config and unit; containerd enabled, and
/// restarted when any of them changed.
pub(super) async fn containerd(cx: &Cx<'_>, node: &Node) -> StepResult {
    let major = render::containerd_major(&cx.plan.containerd_version).ok_or_else(|| {
        StepError::not_in_plan(format!(
            "the bundle's containerd version `{}` is not a version",
            cx.plan.containerd_version
        ))
    })?;
    let mut files: Vec<(String, String)> = vec![
        (
            "/etc/containerd/config.toml".to_owned(),
            render::containerd_config(major, &cx.plan.pause_image),
        ),
        (
            "/etc/crictl.yaml".to_owned(),
            render::crictl_yaml().to_owned(),
        ),
    ];
    files.extend(mirror_files(cx, paths::CERTS_D));
    let mut outcome = Outcome::default();
    for (path, content) in &files {
        outcome.merge(put(cx, node, content.as_bytes(), path, 0o644).await?);
    }
    let unit = put(
        cx,
        node,
        render::containerd_unit().as_bytes(),
        "/etc/systemd/system/containerd.service",
        0o644,
    )
    .await?;
    outcome.merge(unit);
    let started = ensure_unit(node, "containerd.service", outcome.changed, Start::Wait).await?;
    outcome.merge(started);
    Ok(outcome)
}

/// `runtime.pull`: the pause image pulled by its original name through `certs.d`: a node whose
/// mirrors or trust are wrong fails here, naming itself, not later inside kubeadm.
pub(super) async fn pull_probe(cx: &Cx<'_>, node: &Node) -> StepResult {
    sh(
        node,
        &format!(
            "/usr/local/bin/ctr -n k8s.io images pull --hosts-dir {} {} >/dev/null",
            paths::CERTS_D,
            quote(&cx.plan.pause_image)
        ),
    )
    .await?;
    Ok(Outcome::default())
}

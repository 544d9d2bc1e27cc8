//! The docker runtime (`runtime.docker`): containerd from docker's tarball as its own service,
//! dockerd on it with `daemon.json` and kk's registry as the mirror of every image host in
//! `/etc/docker/certs.d`, and cri-dockerd behind its socket unit; then the probe pull through
//! dockerd.

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, registry, sh};
use crate::install::error::StepError;
use crate::install::render::{self, docker};
use crate::ssh::{Node, quote};

/// `runtime.docker`: each service's files, then each service (re)started when what it reads
/// changed, in the order they depend on each other.
pub(super) async fn docker(cx: &Cx<'_>, node: &Node) -> StepResult {
    let plan = cx.plan.docker.as_ref().ok_or_else(|| {
        StepError::not_in_plan("`runtime.docker` without docker in the plan".to_owned())
    })?;
    let containerd = [
        (
            "/etc/containerd/config.toml".to_owned(),
            docker::containerd_config().to_owned(),
        ),
        (
            "/etc/systemd/system/containerd.service".to_owned(),
            render::containerd_unit().to_owned(),
        ),
    ];
    let mut dockerd = vec![
        (
            docker::DAEMON_JSON.to_owned(),
            docker::daemon_json().to_owned(),
            0o644,
        ),
        (
            "/etc/systemd/system/docker.service".to_owned(),
            docker::docker_unit(),
            0o644,
        ),
    ];
    dockerd.extend(mirror_files(cx, node)?);
    let cri_dockerd = [
        (
            "/etc/systemd/system/cri-docker.socket".to_owned(),
            docker::cri_dockerd_socket(),
        ),
        (
            "/etc/systemd/system/cri-docker.service".to_owned(),
            docker::cri_dockerd_unit(&plan.cri_dockerd_flags),
        ),
        ("/etc/crictl.yaml".to_owned(), docker::crictl_yaml()),
    ]
    .map(|(path, content)| (path, content, 0o644));
    let containerd = containerd.map(|(path, content)| (path, content, 0o644));
    let mut outcome = Outcome::default();
    for (unit, files) in [
        ("containerd.service", &containerd[..]),
        ("docker.service", &dockerd[..]),
        ("cri-docker.socket", &cri_dockerd[..]),
    ] {
        let mut written = Outcome::default();
        for (path, content, mode) in files {
            written.merge(put(cx, node, content.as_bytes(), path, *mode).await?);
        }
        let changed = written.changed;
        outcome.merge(written);
        outcome.merge(ensure_unit(node, unit, changed, Start::Wait).await?);
        if unit == "cri-docker.socket" {
            // The service is started by its socket too; it is started here so that a broken
            // cri-dockerd fails this step, naming the node, not kubeadm's preflight.
            outcome.merge(ensure_unit(node, "cri-docker.service", changed, Start::Wait).await?);
        }
    }
    Ok(outcome)
}

/// `/etc/docker/certs.d/<host>/hosts.toml` of every image host, with the path and mode each is
/// put with: root-only when it holds the external registry's credentials (the plan's
/// `mirror_auth`, its password read from the installer machine's environment, never logged).
fn mirror_files(cx: &Cx<'_>, node: &Node) -> Result<Vec<(String, String, u32)>, StepError> {
    let mirror_auth = cx.plan.docker.as_ref().and_then(|d| d.mirror_auth.as_ref());
    let credentials = registry::credentials(cx)?;
    let auth = mirror_auth.and_then(|wanted| {
        credentials
            .iter()
            .find(|(auth, _)| *auth == wanted)
            .map(|(auth, password)| (auth.username.as_str(), password.as_str()))
    });
    let mode = if auth.is_some() { 0o600 } else { 0o644 };
    let mirror = cx.plan.registry.mirror(node.name());
    Ok(cx
        .plan
        .image_hosts
        .iter()
        .map(|host| {
            (
                format!("{}/{host}/hosts.toml", docker::CERTS_D),
                docker::hosts_toml(host, &mirror, auth),
                mode,
            )
        })
        .collect())
}

/// `runtime.pull` with docker: the pause image pulled by its original name through dockerd,
/// which resolves it through `/etc/docker/certs.d`: wrong mirrors or trust fail here.
pub(super) async fn pull_probe(cx: &Cx<'_>, node: &Node) -> StepResult {
    sh(
        node,
        &format!(
            "/usr/local/bin/docker pull --quiet {} >/dev/null",
            quote(&cx.plan.pause_image)
        ),
    )
    .await?;
    Ok(Outcome::default())
}

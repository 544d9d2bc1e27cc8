//! The runtime phase (and the binaries of the etcd phase): nodes fetch their binaries from
//! kk's registry with their own kk-install; containerd gets its config, kk's registry as the
//! mirror of every registry host the bundle's images are named by, and its unit; the pause
//! image is pulled by its original name as a probe.

use serde::Deserialize;
use std::fmt::Write as _;

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, registry, sh};
use crate::install::error::StepError;
use crate::install::plan::{BinaryFetch, ContainerdPlan, runtime};
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
            "{fetch} --into {into} --output json",
            fetch = registry::fetch_command(cx, node),
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

/// containerd's `certs.d/<host>/hosts.toml` for every registry host the bundle's images are
/// named by, each making the cluster's registry (kk's or an external one) that host's mirror
/// (dockerd's, which may carry the registry's credentials, are the docker step's).
fn mirror_files(cx: &Cx<'_>, node: &Node) -> Vec<(String, String)> {
    cx.plan
        .image_hosts
        .iter()
        .map(|host| {
            (
                format!("{}/{host}/hosts.toml", paths::CERTS_D),
                render::hosts_toml(host, &cx.plan.registry.mirror(node.name())),
            )
        })
        .collect()
}

/// `runtime.containerd`: config, mirrors, crictl config and unit; containerd enabled, and
/// restarted when any of them changed.
pub(super) async fn containerd(cx: &Cx<'_>, node: &Node) -> StepResult {
    let major = containerd_plan(cx)?.major;
    let auth = registry::credentials(cx)?;
    let entries: Vec<(&str, &str, &str)> = auth
        .iter()
        .map(|(entry, password)| {
            (
                entry.host.as_str(),
                entry.username.as_str(),
                password.as_str(),
            )
        })
        .collect();
    let config = format!(
        "{}{}",
        render::containerd_config(major, &cx.plan.pause_image),
        render::containerd_registry_auth(major, &entries)
    );
    // A config holding a password is for root's eyes only.
    let config_mode = if entries.is_empty() { 0o644 } else { 0o600 };
    let mut files: Vec<(String, String, u32)> = vec![
        (
            "/etc/containerd/config.toml".to_owned(),
            config,
            config_mode,
        ),
        (
            "/etc/crictl.yaml".to_owned(),
            render::crictl_yaml().to_owned(),
            0o644,
        ),
    ];
    files.extend(
        mirror_files(cx, node)
            .into_iter()
            .map(|(path, content)| (path, content, 0o644)),
    );
    let mut outcome = Outcome::default();
    for (path, content, mode) in &files {
        outcome.merge(put(cx, node, content.as_bytes(), path, *mode).await?);
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
    effective_config(cx, node).await?;
    Ok(outcome)
}

/// The containerd runtime's plan; a step of the containerd runtime in a docker plan is a plan
/// the phases cannot execute.
fn containerd_plan<'a>(cx: &'a Cx<'_>) -> Result<&'a ContainerdPlan, StepError> {
    cx.plan.containerd.as_ref().ok_or_else(|| {
        StepError::not_in_plan("the containerd runtime's settings (the plan is docker's)")
    })
}

/// The config containerd runs with, merged from kk's file, its defaults and every drop-in, as
/// `containerd config dump` prints it, judged against the plan: a drop-in that overrides kk's
/// registry hosts, sandbox image or cgroup driver stops the install, named. The dump reads the
/// files as they are now, so a drop-in put there after containerd started is caught too, before
/// a restart would bring it into force.
async fn effective_config(cx: &Cx<'_>, node: &Node) -> Result<(), StepError> {
    let expected = containerd_plan(cx)?;
    let dump = sh(node, &runtime::dump_command()).await?;
    let mut findings = expected
        .judge(&dump)
        .map_err(|source| StepError::ContainerdDump {
            node: node.name().to_owned(),
            source: Box::new(source),
        })?;
    if findings.is_empty() {
        return Ok(());
    }
    let files = match runtime::imports_command(&runtime::imports(&dump)) {
        Some(command) => runtime::split_imports(&sh(node, &command).await?),
        None => Vec::new(),
    };
    for finding in &mut findings {
        finding.attribute(expected.major, &files);
    }
    Err(StepError::ContainerdConfig {
        node: node.name().to_owned(),
        findings: findings.iter().map(ToString::to_string).collect(),
        drop_ins: paths::CONTAINERD_DROP_INS,
    })
}

/// `runtime.pull`: the pause image pulled by its original name through `certs.d`: a node whose
/// mirrors or trust are wrong fails here, naming itself, not later inside kubeadm. The step's
/// note names the endpoint that served the image, from ctr's own debug log of the pull
/// (`--local`: ctr resolves and fetches itself, so the log is ctr's on containerd 1.7 and 2.x
/// alike; 2.x's default would hand the pull to the daemon). Like the CRI plugin, it fetches the
/// node's platform only: ctr 2.x fetches every platform's manifest of an index unless told to
/// skip them, and a bundle carries only its platforms'.
pub(super) async fn pull_probe(cx: &Cx<'_>, node: &Node) -> StepResult {
    let image = &cx.plan.pause_image;
    let skip_metadata = if containerd_plan(cx)?.major >= 2 {
        " --skip-metadata"
    } else {
        ""
    };
    // With an external registry's credentials, `ctr --user` reads them from the node's
    // root-only file, so the command kk sends and logs holds no password.
    let user = if cx.plan.registry_auth.is_empty() {
        String::new()
    } else {
        format!(" --user \"$(cat {})\"", paths::REGISTRY_AUTH)
    };
    let log = sh(
        node,
        &format!(
            "/usr/local/bin/ctr --debug -n k8s.io images pull --local{skip_metadata}{user} --hosts-dir {} {} 2>&1 >/dev/null",
            paths::CERTS_D,
            quote(image)
        ),
    )
    .await?;
    let served = served_by(&log);
    let endpoint = if served.is_empty() {
        format!("{image}: pulled (ctr's log names no endpoint)")
    } else {
        format!("{image}: served by {}", served.join(", "))
    };
    Ok(Outcome {
        notes: vec![endpoint],
        ..Outcome::default()
    })
}

/// The endpoints that answered a manifest request with success in ctr's debug log of a pull
/// (`msg="fetch response received" host=… response.status="200 OK" url=…`), each as its URL's
/// scheme and host, in order, once.
fn served_by(log: &str) -> Vec<String> {
    let mut served: Vec<String> = Vec::new();
    for line in log.lines() {
        if !line.contains("msg=\"fetch response received\"") {
            continue;
        }
        let ok = field(line, "response.status").is_some_and(|status| status.starts_with('2'));
        let Some(url) = field(line, "url") else {
            continue;
        };
        if !ok || !url.contains("/manifests/") {
            continue;
        }
        let endpoint = url.split("/v2/").next().unwrap_or(url).to_owned();
        if !served.contains(&endpoint) {
            served.push(endpoint);
        }
    }
    served
}

/// The value of `key` in a logfmt line (`key="quoted value"` or `key=bare`).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[start..];
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next(),
        None => rest.split(' ').next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of real ctr debug logs (containerd 1.7.24 and 2.1.9, `images pull --local`): a
    /// mirror that does not have the image, then the one that serves it.
    #[test]
    fn the_endpoint_that_served_the_manifest_is_named() {
        let log = "time=\"2026-11-27T00:58:26Z\" level=debug msg=\"fetch response received\" host=\"127.0.0.1:5998\" response.header.content-type=\"text/html;charset=utf-8\" response.status=\"404 File not found\" url=\"http://127.0.0.1:5998/v2/pause/manifests/3.10?ns=registry.k8s.io\"\n\
                   time=\"2026-11-27T00:58:26Z\" level=info msg=\"trying next host - response was http.StatusNotFound\" host=\"127.0.0.1:5998\"\n\
                   time=\"2026-11-27T00:58:27Z\" level=debug msg=\"fetch response received\" host=\"10.250.0.11:5443\" response.header.docker-content-digest=\"sha256:ab\" response.status=\"200 OK\" url=\"https://10.250.0.11:5443/v2/pause/manifests/3.10?ns=registry.k8s.io\"\n\
                   time=\"2026-11-27T00:58:27Z\" level=debug msg=\"fetch response received\" host=\"10.250.0.11:5443\" response.status=\"200 OK\" url=\"https://10.250.0.11:5443/v2/pause/manifests/sha256:ab?ns=registry.k8s.io\"\n\
                   time=\"2026-11-27T00:58:27Z\" level=debug msg=\"fetch response received\" host=\"10.250.0.11:5443\" response.status=\"200 OK\" url=\"https://10.250.0.11:5443/v2/pause/blobs/sha256:cd?ns=registry.k8s.io\"\n";
        assert_eq!(served_by(log), ["https://10.250.0.11:5443"]);
        assert_eq!(served_by("ctr: not found\n"), Vec::<String>::new());
    }
}

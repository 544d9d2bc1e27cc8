//! The registry phase: the verified bundle goes to each registry host once, is unpacked there
//! by the same verifying unpack as `kk-install unpack`, and is served by `kk-registry.service`;
//! then every node proves it reaches and trusts each registry host.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Cx, Outcome, Start, StepResult, ensure_unit, put, put_file, sh};
use crate::install::error::StepError;
use crate::install::plan::RegistryAuth;
use crate::install::render::{self, paths};
use crate::ssh::{Node, quote};

/// `registry.unpack`: the bundle into `/var/lib/kk/store` on the registry host, unless the
/// store holds it already (its header is kept under `kk-bundle/<identity>/`).
pub(super) async fn unpack(cx: &Cx<'_>, node: &Node) -> StepResult {
    let marker = format!("{}/kk-bundle/{}", paths::STORE, cx.plan.bundle.hex());
    let present = sh(
        node,
        &format!("[ -d {} ] && echo yes || true", quote(&marker)),
    )
    .await?;
    if present.trim() == "yes" {
        return Ok(Outcome::default());
    }
    let files = bundle_files(cx.bundle_path)?;
    let incoming = format!("{}/{}", paths::INCOMING, cx.plan.bundle.hex());
    let mut outcome = Outcome {
        changed: true,
        ..Outcome::default()
    };
    let mut first = String::new();
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            StepError::not_in_plan(format!("`{}` has no usable file name", file.display()))
        })?;
        let remote = format!("{incoming}/{name}");
        if first.is_empty() {
            first.clone_from(&remote);
        }
        node.upload(file, &remote, 0o600).await?;
        outcome.sent += std::fs::metadata(file).map_or(0, |m| m.len());
    }
    // The copy is removed whether the unpack worked or not: a rerun uploads it again rather
    // than trusting a file it did not verify itself. An unpack left running by a killed
    // installer holds the lock; the rerun waits for it and finds the store complete.
    let unpack = format!(
        "if [ -d {marker} ]; then echo present; else {kk} unpack --bundle {first} --store {store}; fi",
        marker = quote(&marker),
        kk = paths::KK_INSTALL,
        first = quote(&first),
        store = paths::STORE,
    );
    let said = sh(
        node,
        &format!(
            "flock -w 3600 {lock} sh -c {unpack}; rc=$?; rm -rf {incoming}; exit $rc",
            lock = quote(&format!("{}/.unpack.lock", paths::INCOMING)),
            unpack = quote(&unpack),
            incoming = quote(&incoming),
        ),
    )
    .await?;
    outcome.changed = said.trim() != "present";
    Ok(outcome)
}

/// The files of the bundle: the file itself, or a parts index with every part it lists.
fn bundle_files(path: &Path) -> Result<Vec<PathBuf>, StepError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let Some(stem) = name.strip_suffix(".split.json") else {
        return Ok(vec![path.to_owned()]);
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = vec![path.to_owned()];
    let prefix = format!("{stem}.part");
    let entries = std::fs::read_dir(dir).map_err(StepError::io("list", dir))?;
    let mut parts: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    parts.sort();
    files.extend(parts);
    Ok(files)
}

/// `registry.service`: `kk-registry.service` installed, enabled and running; restarted when
/// its unit or its certificate changed.
pub(super) async fn service(cx: &Cx<'_>, node: &Node) -> StepResult {
    let cert = sh(
        node,
        &format!("sha256sum < {} | cut -d' ' -f1", paths::REGISTRY_CERT),
    )
    .await?;
    let Some(host) = cx
        .plan
        .registry
        .hosts()
        .iter()
        .find(|host| host.node == node.name())
    else {
        return Err(StepError::not_in_plan(
            "kk's registry service on a host that does not serve it",
        ));
    };
    let listen = render::registry_listen(host.ip, cx.plan.registry.port);
    // The certificate's digest is part of the unit, so a new certificate restarts the service.
    let unit = format!(
        "{}# serving certificate sha256 {}\n",
        render::registry_unit(&listen),
        cert.trim()
    );
    let mut outcome = put(
        cx,
        node,
        unit.as_bytes(),
        "/etc/systemd/system/kk-registry.service",
        0o644,
    )
    .await?;
    let started = ensure_unit(node, "kk-registry.service", outcome.changed, Start::Wait).await?;
    outcome.merge(started);
    Ok(outcome)
}

/// `registry.ready`: the node reaches every registry host its mirrors list (by the name with
/// one host, by IP with several) over TLS verified with the registry's CA (the same path every
/// later pull takes). An external registry's CA and
/// credentials are put on the node first, and the registry must accept the credentials from
/// there too.
pub(super) async fn ready(cx: &Cx<'_>, node: &Node) -> StepResult {
    let mut outcome = Outcome::default();
    if let Some(external) = cx.plan.registry.external() {
        if let Some(ca_file) = &external.ca_file {
            outcome.merge(put_file(node, ca_file, &cx.plan.registry.ca, 0o644).await?);
        }
        for (auth, password) in credentials(cx)? {
            let line = format!("{}:{password}\n", auth.username);
            outcome.merge(put(cx, node, line.as_bytes(), paths::REGISTRY_AUTH, 0o600).await?);
        }
    }
    sh(
        node,
        &format!(
            "{kk} ping{registries} --ca {ca} --wait 60{auth}",
            kk = paths::KK_NODE,
            registries = registry_flags(cx, node),
            ca = quote(&cx.plan.registry.ca),
            auth = auth_flag(cx),
        ),
    )
    .await?;
    Ok(outcome)
}

/// `kk-node fetch` on `node` from the plan's registry hosts in the node's mirror order,
/// trusting its CA, with its credentials file when it wants credentials; the caller adds what
/// to fetch and where.
pub(super) fn fetch_command(cx: &Cx<'_>, node: &Node) -> String {
    format!(
        "{kk} fetch{registries} --ca {ca}{auth}",
        kk = paths::KK_NODE,
        registries = registry_flags(cx, node),
        ca = quote(&cx.plan.registry.ca),
        auth = auth_flag(cx),
    )
}

/// ` --registry <host:port>` for each of `node`'s mirrors, in its order.
fn registry_flags(cx: &Cx<'_>, node: &Node) -> String {
    cx.plan
        .registry
        .mirrors_for(node.name())
        .iter()
        .fold(String::new(), |mut flags, address| {
            let _ = write!(flags, " --registry {}", quote(address));
            flags
        })
}

/// ` --auth-file <file>` for `kk-install fetch` and `ping` when the registry wants
/// credentials; empty otherwise.
fn auth_flag(cx: &Cx<'_>) -> String {
    if cx.plan.registry_auth.is_empty() {
        String::new()
    } else {
        format!(" --auth-file {}", paths::REGISTRY_AUTH)
    }
}

/// Each credentials entry of the plan with its password, read from the installer machine's
/// environment (never printed or logged).
pub(super) fn credentials<'a>(cx: &Cx<'a>) -> Result<Vec<(&'a RegistryAuth, String)>, StepError> {
    cx.plan
        .registry_auth
        .iter()
        .map(|auth| {
            let password = std::env::var(&auth.password_env).map_err(|_| {
                crate::push::PushError::PasswordUnset {
                    registry: auth.host.clone(),
                    username: auth.username.clone(),
                    variable: auth.password_env.clone(),
                }
            })?;
            Ok((auth, password))
        })
        .collect()
}

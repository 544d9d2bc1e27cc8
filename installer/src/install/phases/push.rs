//! The push phase (external registry only), on the installer machine before any node is
//! touched: the credentials checked, the bundle unpacked into the work directory's store and
//! what happens to partial indexes said, then Harbor's missing projects created and the store
//! pushed. Every step is idempotent: a rerun finds the store unpacked, the projects there and
//! every blob and manifest in the registry, and sends none again.

use std::path::PathBuf;

use super::Cx;
use crate::install::error::StepError;
use crate::install::plan::ExternalPlan;
use crate::push::{self, Credentials, PushTarget, Registry};
use crate::registry::Store;

/// Blobs uploaded at once.
const JOBS: usize = 4;

/// `push.login`: the registry accepts the credentials (or needs none).
pub(super) async fn login(cx: &Cx<'_>) -> Result<Option<String>, StepError> {
    let (_, target) = target(cx)?;
    Registry::new(&target)?.login().await?;
    Ok(Some(match &target.credentials {
        Some(credentials) => format!(
            "push: registry {} accepts user {}",
            target.host, credentials.username
        ),
        None => format!("push: registry {} answers without credentials", target.host),
    }))
}

/// `push.store`: the bundle unpacked into `<work dir>/store` (verified; only what the store
/// lacks is written), and the partial-index decision said before anything is pushed.
pub(super) async fn store(cx: &Cx<'_>) -> Result<Option<String>, StepError> {
    let (_, target) = target(cx)?;
    let store = local_store(cx).await?;
    let partial = push::preview(&store, &target.platforms)?;
    let summary = push::summary(&partial);
    Ok((!summary.is_empty()).then(|| format!("push: {}", summary.trim_end())))
}

/// `push.bundle`: Harbor's missing projects created, then the store pushed.
pub(super) async fn bundle(cx: &Cx<'_>) -> Result<Option<String>, StepError> {
    let (external, target) = target(cx)?;
    let store = local_store(cx).await?;
    let mut lines = Vec::new();
    if external.harbor {
        let projects = Registry::new(&target)?
            .ensure_projects(&external.projects)
            .await?;
        lines.push(format!(
            "push: Harbor projects created: {}; present: {}",
            list(&projects.created),
            list(&projects.present)
        ));
    }
    let report = push::push(&store, &target, JOBS).await?;
    lines.push(format!(
        "push: {} repositories, {} manifests into {}: {} blobs uploaded, {} mounted, {} already there",
        report.repositories,
        report.manifests,
        target.host,
        report.blobs_uploaded,
        report.blobs_mounted,
        report.blobs_present
    ));
    let outcome = push::outcome(&report);
    if !outcome.is_empty() {
        lines.push(outcome.trim_end().to_owned());
    }
    Ok(Some(lines.join("\n")))
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// The external registry of the plan and the push target for it, the password read from the
/// installer machine's environment (never printed).
fn target<'a>(cx: &Cx<'a>) -> Result<(&'a ExternalPlan, PushTarget), StepError> {
    let registry = &cx.plan.registry;
    let external = registry.external().ok_or_else(|| {
        StepError::not_in_plan("the push phase runs only with an external registry")
    })?;
    let credentials =
        super::registry::credentials(cx)?
            .into_iter()
            .next()
            .map(|(auth, password)| Credentials {
                username: auth.username.clone(),
                password,
            });
    Ok((
        external,
        PushTarget {
            host: registry.address.clone(),
            plain_http: false,
            allow_plain_http_password: false,
            ca_file: external.ca_file.clone(),
            credentials,
            platforms: external.platforms.clone(),
        },
    ))
}

/// The installer machine's store with the bundle in it: unpacked (verified) unless the store
/// already holds the bundle's header.
async fn local_store(cx: &Cx<'_>) -> Result<Store, StepError> {
    let dir: PathBuf = cx.work_dir.join("store");
    let marker = dir.join("kk-bundle").join(cx.plan.bundle.hex());
    let bundle_path = cx.bundle_path.to_owned();
    let store_dir = dir.clone();
    tokio::task::spawn_blocking(move || -> Result<Store, StepError> {
        if !marker.is_dir() {
            let mut bundle =
                bundle_spec::Bundle::open(&bundle_path).map_err(|source| StepError::Bundle {
                    path: bundle_path.clone(),
                    source: Box::new(source),
                })?;
            crate::registry::unpack(&mut bundle, &store_dir, &mut |_| {}).map_err(|source| {
                StepError::Bundle {
                    path: bundle_path.clone(),
                    source: Box::new(source),
                }
            })?;
        }
        Store::open(&store_dir).map_err(|source| StepError::Store {
            path: store_dir.clone(),
            source: Box::new(source),
        })
    })
    .await?
}

//! The pki phase: the certificates are made once, on the installer machine, in the work
//! directory (the master copy), then each node gets exactly the files the plan gives it.

use super::{Cx, Put, StepResult, put_many};
use crate::install::error::StepError;
use crate::install::plan::CertificateSet;
use crate::pki;
use crate::ssh::Node;

/// `pki.issue` (on the installer machine): every certificate the plan needs, under
/// `<work dir>/pki`; what exists is kept.
pub(crate) fn issue(cx: &Cx<'_>) -> Result<(), StepError> {
    let issued = pki::ensure(&cx.work_dir.join("pki"), &cx.plan.pki.spec)?;
    // A second call in the same run finds the same files; the first result stands.
    let _ = cx.pki.set(issued);
    Ok(())
}

/// What a step that needs the certificates reports when `pki.issue` has not run.
pub(super) const NOT_ISSUED: StepError = StepError::NotRun {
    what: "the certificates were not made",
    step: "pki.issue",
};

/// `pki.copy`: the CA every node trusts the registry with; the registry's pair on its host;
/// kubeadm's tree on control planes; each etcd member's own server and peer pairs.
pub(super) async fn copy(cx: &Cx<'_>, node: &Node) -> StepResult {
    let issued = cx.pki.get().ok_or(NOT_ISSUED)?;
    let sets = cx.plan.pki.nodes.get(node.name()).ok_or_else(|| {
        StepError::not_in_plan(format!("the plan gives `{}` no certificates", node.name()))
    })?;
    let files = sets.iter().flat_map(|set| match set {
        CertificateSet::Trust => issued.trust_files(),
        CertificateSet::Registry => issued.registry_files(),
        CertificateSet::ControlPlane => issued.control_plane_files(),
        CertificateSet::StackedEtcd => issued.stacked_etcd_files(),
        CertificateSet::EtcdMember => issued.etcd_member_files(node.name()),
    });
    let files: Vec<_> = files.collect();
    let mut seen = std::collections::BTreeSet::new();
    let puts: Vec<Put<'_>> = files
        .iter()
        .filter(|file| seen.insert(file.remote.as_str()))
        .map(|file| Put {
            local: &file.local,
            path: &file.remote,
            mode: file.mode,
        })
        .collect();
    put_many(cx.work_dir, node, &puts).await
}

/// The master copy's certificates that name control planes or the registry: the ones
/// `pki.issue` reissues when the inventory grew.
const NAMING: [&str; 2] = ["apiserver.crt", "registry.crt"];

/// `pki.spread`: [`NAMING`]'s certificates put where a node holds an older one with the same
/// key, what reads them restarted one node at a time (`certs renew`'s machinery).
pub(super) async fn spread(cx: &Cx<'_>, nodes: &[&Node]) -> Result<Option<String>, StepError> {
    let issued = cx.pki.get().ok_or(NOT_ISSUED)?;
    let files: Vec<std::path::PathBuf> = NAMING
        .iter()
        .map(std::path::PathBuf::from)
        .filter(|file| issued.dir().join(file).is_file())
        .collect();
    let control_planes: Vec<String> = cx
        .plan
        .kubernetes
        .as_ref()
        .map(|k| {
            k.control_planes
                .iter()
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    let done = crate::certs::spread(
        nodes,
        &control_planes,
        issued.dir(),
        &files,
        cx.checks.reach.concurrency,
    )
    .await?;
    let reissued: Vec<String> = issued
        .reissued()
        .iter()
        .map(|f| format!("`{}`", f.display()))
        .collect();
    let mut lines = Vec::new();
    if !reissued.is_empty() {
        lines.push(format!(
            "pki: reissued {} with its own key to name what the cluster gained",
            reissued.join(", ")
        ));
    }
    lines.extend(done.iter().map(|d| format!("pki: {}: {}", d.node, d.what)));
    Ok((!lines.is_empty()).then(|| lines.join("\n")))
}

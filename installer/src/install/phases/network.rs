//! The network and addons phases: a chart of the bundle, on the first control plane, fetched
//! from kk's registry as the `.tgz` itself, rendered by the bundle's helm (`helm template`, no
//! repository), its images checked against the bundle, applied with the bundle's kubectl.
//!
//! Why `helm template` + `kubectl apply --server-side` rather than `helm upgrade --install`:
//! kk sees the rendered manifest before anything reaches the cluster, so a chart that names an
//! image the bundle lacks (the commonest airgap failure) stops the install there, naming the
//! chart and the images, instead of leaving pods in `ImagePullBackOff`; and server-side apply
//! is idempotent, so a rerun changes nothing.

use std::fmt::Write as _;

use bundle_spec::charts::missing_images;

use super::{Cx, StepResult, put, runtime, sh};
use crate::install::error::StepError;
use crate::install::plan::{ChartInstall, ChartValues, MultusInstall, NodeLabel};
use crate::install::render::kubernetes::paths::{ADMIN_CONF, KK_CONFIGS};
use crate::install::render::multus::multus_manifest;
use crate::ssh::SshError;
use crate::ssh::{Node, quote};

/// Where a chart's values and rendered manifest are kept on the node.
fn charts_dir() -> String {
    format!("{KK_CONFIGS}/charts")
}

/// `network.cni`, `addons.<name>`: fetch, values, render, check, apply.
pub(super) async fn chart(cx: &Cx<'_>, node: &Node, chart: &ChartInstall) -> StepResult {
    let mut outcome = runtime::fetch(cx, node, std::slice::from_ref(&chart.fetch)).await?;
    let values_path = format!("{}/{}.values.yaml", charts_dir(), chart.release);
    let values = chart.values.yaml();
    outcome.merge(put(cx, node, values.as_bytes(), &values_path, 0o600).await?);
    let rendered = render(cx, node, chart, &values_path).await?;
    let missing =
        missing_images(&rendered, &cx.plan.images).map_err(|source| StepError::ChartYaml {
            chart: chart.fetch.name.clone(),
            source: Box::new(source),
        })?;
    if !missing.is_empty() {
        return Err(StepError::ChartImages {
            chart: chart.fetch.name.clone(),
            images: missing,
        });
    }
    outcome.merge(apply(cx, node, chart, &rendered).await?);
    Ok(outcome)
}

/// `helm template` of the fetched `.tgz` with the values (and an addon's `--set` pairs).
async fn render(
    cx: &Cx<'_>,
    node: &Node,
    chart: &ChartInstall,
    values_path: &str,
) -> Result<String, StepError> {
    let file = chart
        .fetch
        .files
        .first()
        .ok_or_else(|| StepError::not_in_plan("the chart has no file name"))?;
    let version = cx
        .plan
        .kubernetes
        .as_ref()
        .map(|k| k.version.clone())
        .unwrap_or_default();
    let mut template = format!(
        "/usr/local/bin/helm template {release} {tgz} --namespace {namespace} --include-crds \
         --kube-version {version} --values {values_path}",
        release = quote(&chart.release),
        tgz = quote(&format!("{}/{file}", chart.fetch.into)),
        namespace = quote(&chart.namespace),
        version = quote(&version),
    );
    if let ChartValues::Addon { set, .. } = &chart.values {
        for pair in set {
            let _ = write!(template, " --set {}", quote(pair));
        }
    }
    sh(node, &template)
        .await
        .map_err(|source| chart_failed("helm template", chart, source))
}

/// The rendered manifest, its namespace first, kept on the node and applied server-side.
async fn apply(cx: &Cx<'_>, node: &Node, chart: &ChartInstall, rendered: &str) -> StepResult {
    let manifest = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n---\n{rendered}",
        chart.namespace
    );
    let path = format!("{}/{}.yaml", charts_dir(), chart.release);
    let outcome = put(cx, node, manifest.as_bytes(), &path, 0o600).await?;
    sh(
        node,
        &format!(
            "/usr/local/bin/kubectl apply --server-side --force-conflicts --field-manager kk-install \
             --kubeconfig {ADMIN_CONF} -f {path} 2>&1"
        ),
    )
    .await
    .map_err(|source| chart_failed("kubectl apply", chart, source))?;
    Ok(outcome)
}

/// `network.multus`: upstream's manifest fetched from the registry and read back, rendered
/// with the plan's image and delegate, its images checked against the bundle, kept on the node
/// and applied with the bundle's kubectl. Client-side `kubectl apply` rather than server-side,
/// because it says per object whether it changed it (`unchanged`), so a rerun reports no
/// change.
pub(super) async fn multus(cx: &Cx<'_>, node: &Node, multus: &MultusInstall) -> StepResult {
    let mut outcome = runtime::fetch(cx, node, std::slice::from_ref(&multus.fetch)).await?;
    let file = multus
        .fetch
        .files
        .first()
        .ok_or_else(|| StepError::not_in_plan("multus's manifest has no file name"))?;
    let fetched = format!("{}/{file}", multus.fetch.into);
    let upstream = sh(node, &format!("cat {}", quote(&fetched))).await?;
    let rendered = multus_manifest(&fetched, &upstream, &multus.image, &multus.delegate).map_err(
        |source| StepError::MultusManifest {
            source: Box::new(source),
        },
    )?;
    let images =
        missing_images(&rendered, &cx.plan.images).map_err(|source| StepError::ChartYaml {
            chart: "multus".to_owned(),
            source: Box::new(source),
        })?;
    if !images.is_empty() {
        return Err(StepError::MultusImages { images });
    }
    let path = format!("{}/multus.yaml", charts_dir());
    outcome.merge(put(cx, node, rendered.as_bytes(), &path, 0o600).await?);
    let printed = sh(
        node,
        &format!("/usr/local/bin/kubectl apply --kubeconfig {ADMIN_CONF} -f {path} 2>&1"),
    )
    .await
    .map_err(|source| StepError::MultusApply {
        source: Box::new(source),
    })?;
    outcome.changed |= applied_something(&printed);
    Ok(outcome)
}

/// Whether `kubectl apply` changed an object: it prints `<kind>/<name> created`, `configured`
/// or `unchanged` per object.
fn applied_something(printed: &str) -> bool {
    printed
        .lines()
        .any(|line| !line.trim().is_empty() && !line.ends_with(" unchanged"))
}

/// `network.label`: the label on its nodes, with the bundle's kubectl; `--overwrite` makes a
/// rerun change nothing.
pub(super) async fn label(node: &Node, label: &NodeLabel) -> StepResult {
    let nodes: Vec<String> = label.nodes.iter().map(|name| quote(name)).collect();
    let printed = sh(
        node,
        &format!(
            "/usr/local/bin/kubectl label nodes {} {} --overwrite --kubeconfig {ADMIN_CONF} 2>&1",
            nodes.join(" "),
            quote(&label.label),
        ),
    )
    .await
    .map_err(|source| StepError::Label {
        label: label.label.clone(),
        source: Box::new(source),
    })?;
    Ok(super::Outcome {
        changed: newly_labelled(&printed),
        ..super::Outcome::default()
    })
}

/// Whether `kubectl label` says it labelled a node: `node/<name> labeled` per node it changed,
/// `node/<name> not labeled` per node that had the label already.
fn newly_labelled(printed: &str) -> bool {
    printed
        .lines()
        .any(|line| line.ends_with(" labeled") && !line.ends_with(" not labeled"))
}

/// `tool`'s failure on `chart`.
fn chart_failed(tool: &'static str, chart: &ChartInstall, source: SshError) -> StepError {
    StepError::Chart {
        tool,
        chart: chart.fetch.name.clone(),
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use super::{applied_something, newly_labelled};

    #[test]
    fn a_manifest_changes_the_cluster_only_when_kubectl_changed_an_object() {
        for (printed, changed) in [
            ("daemonset.apps/kube-multus-ds created\n", true),
            (
                "serviceaccount/multus unchanged\ndaemonset.apps/kube-multus-ds configured\n",
                true,
            ),
            (
                "serviceaccount/multus unchanged\ndaemonset.apps/kube-multus-ds unchanged\n",
                false,
            ),
            ("", false),
        ] {
            assert_eq!(applied_something(printed), changed, "{printed:?}");
        }
    }

    #[test]
    fn a_label_changes_the_node_only_when_kubectl_labelled_it() {
        for (printed, changed) in [
            ("node/cp1 labeled\n", true),
            ("node/cp1 not labeled\nnode/cp2 labeled\n", true),
            ("node/cp1 not labeled\n", false),
            ("", false),
        ] {
            assert_eq!(newly_labelled(printed), changed, "{printed:?}");
        }
    }
}

//! The precheck phase (on the installer machine): every node's facts gathered, the cluster
//! measured, every rule judged.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{self, Reach};
use crate::facts::Facts;
use crate::inventory::{Config, Inventory};
use crate::precheck::{self, BundleFacts, Context, Report};
use crate::ssh::Node;
use crate::ssh::SshError;

/// What the precheck reads: the cluster as configured, the bundle, the nodes.
#[derive(Debug, Clone, Copy)]
pub struct Checks<'a> {
    /// The inventory.
    pub inventory: &'a Inventory,
    /// The config.
    pub config: &'a Config,
    /// What the precheck needs from the bundle.
    pub bundle: &'a BundleFacts,
    /// How nodes are reached; the work directory.
    pub reach: &'a Reach,
    /// fio's data size for the etcd disk check.
    pub fio_size: &'a str,
    /// Rules waived by id or prefix.
    pub ignore: &'a BTreeSet<String>,
}

/// Which rules a precheck judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rules {
    /// Every rule: the first run.
    All,
    /// The node rules only: a rerun's check of nodes added since. The cluster rules would now
    /// see kk's own cluster (its etcd's ports, its virtual IP answering).
    NodesOnly,
}

/// `precheck.rules`: the report on `nodes`; the caller stops the install when it failed.
pub(crate) async fn rules(
    checks: &Checks<'_>,
    nodes: &[&Node],
    rules: Rules,
) -> Result<Report, SshError> {
    let mut report = report(checks, nodes).await?;
    if rules == Rules::NodesOnly {
        report.cluster.clear();
    }
    Ok(report)
}

/// Gathers facts and measurements from every node and evaluates every rule.
pub(crate) async fn report(checks: &Checks<'_>, nodes: &[&Node]) -> Result<Report, SshError> {
    let facts = cluster::gather(nodes, checks.reach).await?;
    Ok(judge(checks, nodes, &facts).await)
}

/// Measures the cluster (etcd disks, the virtual IP) and evaluates every rule on the `facts`
/// already gathered from `nodes`.
pub async fn judge(
    checks: &Checks<'_>,
    nodes: &[&Node],
    facts: &BTreeMap<String, Facts>,
) -> Report {
    let measured = cluster::measure(
        checks.inventory,
        checks.config,
        nodes,
        facts,
        checks.fio_size,
    )
    .await;
    let context = Context {
        inventory: checks.inventory,
        config: checks.config,
        facts,
        bundle: checks.bundle,
        cluster: &measured,
    };
    precheck::evaluate(&context, checks.ignore)
}

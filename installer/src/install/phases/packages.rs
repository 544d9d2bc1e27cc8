//! The packages phase: on each node, the bundle's operating-system packages it lacks for its
//! roots, fetched by the node from kk's registry and installed with `dpkg -i` in install order;
//! then the precheck rules the packages establish judged again.
//!
//! Nothing here touches the node's apt sources or runs `apt-get update`: the node's `dpkg`
//! state goes through the same resolver the builder used ([`resolve`]), so the node installs
//! exactly the part of the bundle's closure it lacks, and an installed package is replaced only
//! where a dependency demands it (the step says so). A rerun finds nothing lacking and neither
//! fetches nor installs.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bundle_spec::packages::PackageRecord;
use bundle_spec::packages::resolve::{Installed, Replaced, Resolution, resolve};

use super::{Cx, Outcome, StepResult, sh};
use crate::install::error::StepError;
use crate::install::plan::{PackagesPlan, PlannedSet};
use crate::precheck;
use crate::ssh::{Node, quote};

/// Prints the node's `ID-VERSION_ID`, its Debian architecture, then what `dpkg` has installed
/// in the format [`Installed::from_dpkg_query`] reads.
const NODE_STATE: &str = ". /etc/os-release && echo \"$ID-$VERSION_ID\" && dpkg --print-architecture \
     && dpkg-query -W -f='${Package}\\t${Version}\\t${Provides}\\t${db:Status-Status}\\n'";

/// What a node is and has, as [`NODE_STATE`] prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeState {
    /// `ID-VERSION_ID` (`debian-12`).
    distro: String,
    /// `dpkg --print-architecture` (`amd64`).
    arch: String,
    /// The installed packages.
    installed: Installed,
}

impl NodeState {
    fn parse(printed: &str) -> Option<Self> {
        let mut lines = printed.splitn(3, '\n');
        let distro = lines.next()?.trim().to_owned();
        let arch = lines.next()?.trim().to_owned();
        if distro.is_empty() || arch.is_empty() {
            return None;
        }
        Some(Self {
            distro,
            arch,
            installed: Installed::from_dpkg_query(lines.next().unwrap_or_default()),
        })
    }
}

/// `packages.install`: the node's lacking packages fetched and installed, its roots then
/// checked with `dpkg -s`.
pub(super) async fn install(cx: &Cx<'_>, node: &Node) -> StepResult {
    let plan = cx
        .plan
        .packages
        .as_ref()
        .ok_or_else(|| StepError::not_in_plan("the plan has no packages"))?;
    let printed = sh(node, NODE_STATE).await?;
    let state = NodeState::parse(&printed).ok_or_else(|| {
        StepError::not_in_plan(format!(
            "`{}` did not say its distribution and architecture: {printed}",
            node.name()
        ))
    })?;
    let (set, roots) = choose_set(plan, node.name(), &state)?;
    let wanted = Wanted::resolve(node.name(), set, roots, &state.installed)?;
    if wanted.records.is_empty() {
        return Ok(Outcome::default());
    }
    let fetch = fetch_command(&super::registry::fetch_command(cx, node), set, &wanted)?;
    let fetched = sh(node, &fetch).await?;
    let files = fetched_files(&fetched)?;
    sh(node, &dpkg_command(set, &wanted)).await?;
    check_roots(node, roots).await?;
    let mut notes = vec![format!(
        "installed {}",
        wanted
            .records
            .iter()
            .map(|r| format!("{} {}", r.name, r.version))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    notes.extend(wanted.replaced.iter().map(replaced_note));
    Ok(Outcome {
        changed: true,
        files,
        notes,
        ..Outcome::default()
    })
}

/// The set of the node's distribution and architecture, and the node's roots in it; none is a
/// failure naming node, distribution and the roots it lacks (the precheck catches it first).
fn choose_set<'p>(
    plan: &'p PackagesPlan,
    node: &str,
    state: &NodeState,
) -> Result<(&'p PlannedSet, &'p [String]), StepError> {
    match plan.set(&state.distro, &state.arch) {
        Some(set) => Ok((set, plan.roots_of(node, &set.key))),
        None => Err(StepError::NoPackageSet {
            node: node.to_owned(),
            distro: state.distro.clone(),
            arch: state.arch.clone(),
            roots: plan.all_roots_of(node),
        }),
    }
}

/// What a node installs: the records of the resolution, in install order.
#[derive(Debug)]
struct Wanted<'s> {
    records: Vec<&'s PackageRecord>,
    replaced: Vec<Replaced>,
}

impl<'s> Wanted<'s> {
    fn resolve(
        node: &str,
        set: &'s PlannedSet,
        roots: &[String],
        installed: &Installed,
    ) -> Result<Self, StepError> {
        let available = &set.set.packages;
        let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
        let Resolution { install, replaced } =
            resolve(available, &roots, installed).map_err(|source| StepError::Resolve {
                node: node.to_owned(),
                set: set.key.clone(),
                source: Box::new(source),
            })?;
        let records = install
            .into_iter()
            .map(|index| {
                available.get(index).ok_or_else(|| {
                    StepError::not_in_plan(format!(
                        "the resolver named package {index} of {}",
                        set.key
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { records, replaced })
    }
}

/// One shell command fetching every wanted `.deb` from the registry into the set's directory,
/// each verified by the manifest digest the bundle lists (one `kk-install fetch` per package,
/// each printing one JSON line).
fn fetch_command(fetch: &str, set: &PlannedSet, wanted: &Wanted<'_>) -> Result<String, StepError> {
    let mut command = "set -e".to_owned();
    for record in &wanted.records {
        let digest = set.digests.get(&record.reference).ok_or_else(|| {
            StepError::not_in_plan(format!("the plan has no digest for `{}`", record.reference))
        })?;
        let _ = write!(
            command,
            "; {fetch} --into {into} --output json",
            into = quote(&set.dir()),
        );
        let _ = write!(
            command,
            " --expect {digest} --file {} {}",
            quote(&record.filename),
            quote(&record.reference)
        );
    }
    Ok(command)
}

/// The files the fetches installed, from their JSON lines.
fn fetched_files(printed: &str) -> Result<Vec<String>, StepError> {
    /// What `kk-install fetch --output json` prints (see [`crate::fetch::Fetched`]).
    #[derive(serde::Deserialize)]
    struct Fetched {
        files: BTreeMap<String, String>,
    }
    let mut files = Vec::new();
    for line in printed.lines().filter(|l| !l.trim().is_empty()) {
        let fetched: Fetched =
            serde_json::from_str(line.trim()).map_err(|source| StepError::FetchOutput {
                printed: line.to_owned(),
                source,
            })?;
        files.extend(fetched.files.into_keys());
    }
    Ok(files)
}

/// `dpkg -i` of the wanted files in install order, in one call, without questions.
fn dpkg_command(set: &PlannedSet, wanted: &Wanted<'_>) -> String {
    let dir = set.dir();
    let files: Vec<String> = wanted
        .records
        .iter()
        .map(|record| quote(&format!("{dir}/{}", record.filename)))
        .collect();
    format!("DEBIAN_FRONTEND=noninteractive dpkg -i {}", files.join(" "))
}

/// Each root installed, as `dpkg -s` says; the first that is not fails the step.
async fn check_roots(node: &Node, roots: &[String]) -> Result<(), StepError> {
    for root in roots {
        let said = sh(
            node,
            &format!("dpkg -s {} 2>&1 | grep -E '^Status:' || true", quote(root)),
        )
        .await?;
        if said.trim() != "Status: install ok installed" {
            return Err(StepError::NotInstalled {
                node: node.name().to_owned(),
                package: root.clone(),
                said: said.trim().to_owned(),
            });
        }
    }
    Ok(())
}

/// The step's line for a package replaced at another version.
fn replaced_note(replaced: &Replaced) -> String {
    format!(
        "replaced {} {} by {}, demanded by {}",
        replaced.name, replaced.installed, replaced.by, replaced.demanded_by
    )
}

/// `packages.verify` (on the installer machine): the precheck rules the packages establish,
/// judged for real on facts gathered again.
pub(crate) async fn verify(cx: &Cx<'_>, nodes: &[&Node]) -> Result<(), StepError> {
    super::os::judge_again(cx, nodes, "packages", precheck::established_by_packages).await
}

#[cfg(test)]
mod tests;

//! `packages.*`: the operating-system packages the bundle carries for the nodes, and what they
//! bring that other rules look for (a command on `PATH`).
//!
//! A node gets the packages of the bundle's set of its distribution release and architecture
//! (`/etc/os-release` `ID`-`VERSION_ID`, Debian's name of `uname -m`): of that set's roots,
//! those whose scope covers the node, less what dpkg says the node has, with the dependencies
//! the node lacks, as the resolver computes them (the same resolver, on the same data, as kk's
//! packages phase). Until that phase has run, what a root brings is [`Status::SetByInstall`];
//! after it ([`Stage::AfterPackages`]), a root still missing fails.

use std::fmt::Write as _;

use bundle_spec::packages::resolve::{self, Resolution};
use bundle_spec::packages::{PackageScope, PackageSet, RootPackage};

use super::{CheckResult, Node, SET_BY, Stage, Status, list};

pub(super) fn node(node: &Node) -> Vec<CheckResult> {
    vec![distro(node)]
}

/// What a node has of a command a rule looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Command<'a> {
    /// Found on the node.
    Present,
    /// Missing now; a root of the bundle's packages for the node brings it, and kk's packages
    /// phase has not run yet.
    ToCome(&'a RootPackage),
    /// Missing; `brought` is the root that should have brought it when kk's packages phase
    /// has run and did not.
    Missing {
        /// The root that brings the command, after the packages phase.
        brought: Option<&'a RootPackage>,
    },
}

impl<'a> Node<'a> {
    /// The bundle's package set of the node's distribution release and architecture.
    pub(super) fn package_set(&self) -> Option<&'a PackageSet> {
        let distro = self.facts.distro()?;
        let arch = self.facts.deb_arch()?;
        self.cx
            .bundle
            .packages
            .iter()
            .find(|set| set.distro == distro && set.arch == arch)
    }

    /// Whether a root package of `scope` is for this node.
    pub(super) fn in_scope(&self, scope: PackageScope) -> bool {
        match scope {
            PackageScope::All => true,
            PackageScope::Kubernetes => self.is_kubernetes(),
            PackageScope::NfsServer => self.host.roles.is_nfs(),
        }
    }

    /// What the node has of `command`: present, to come with the bundle's packages, or
    /// missing.
    pub(super) fn command(&self, command: &str) -> Command<'a> {
        if self.facts.has_command(command) {
            return Command::Present;
        }
        let brought = self.package_set().and_then(|set| {
            set.roots.iter().find(|root| {
                self.in_scope(root.scope) && root.commands.iter().any(|c| c == command)
            })
        });
        match (brought, self.stage) {
            (Some(root), Stage::BeforeInstall | Stage::AfterOs) => Command::ToCome(root),
            (brought, _) => Command::Missing { brought },
        }
    }

    /// The node's distribution release and architecture, for messages: `` `debian-12` `amd64` ``.
    fn platform(&self) -> String {
        let os = &self.facts.os;
        let distro = self.facts.distro().map_or_else(
            || format!("{}-{}", os.id, os.version_id),
            |distro| distro.to_string(),
        );
        let arch = self.facts.deb_arch().unwrap_or(&self.facts.machine);
        format!("`{distro}` `{arch}`")
    }
}

/// The message of a command a root of the bundle brings: `` `socat` (package socat from the
/// bundle) ``.
pub(super) fn from_bundle(command: &str, root: &RootPackage) -> String {
    format!("`{command}` (package {} from the bundle)", root.name)
}

/// The [`Status::SetByInstall`] result of commands the bundle's packages bring, each as
/// [`from_bundle`] names it.
pub(super) fn set_by_packages(id: &str, brought: &[String]) -> CheckResult {
    CheckResult::new(
        id,
        Status::SetByInstall,
        format!("{SET_BY}{}", brought.join(", ")),
    )
}

/// `packages.distro`: a node the bundle's packages are for has them, or the bundle carries
/// its distribution release and architecture, so that kk's packages phase installs what it
/// lacks.
fn distro(node: &Node) -> CheckResult {
    const ID: &str = "packages.distro";
    let sets = &node.cx.bundle.packages;
    if sets.is_empty() {
        return CheckResult::skip(ID, "the bundle carries no operating-system packages");
    }
    let for_node =
        |set: &'_ PackageSet| -> bool { set.roots.iter().any(|root| node.in_scope(root.scope)) };
    if !sets.iter().any(for_node) {
        return CheckResult::skip(ID, "no package of the bundle is for this node");
    }
    match node.package_set() {
        Some(set) => with_set(node, set, ID),
        None => without_set(node, ID),
    }
}

/// The names of `roots` the node has not installed (every one when it has no dpkg), sorted,
/// once each.
fn lacking<'r>(node: &Node, roots: impl Iterator<Item = &'r RootPackage>) -> Vec<&'r str> {
    let mut names: Vec<&str> = roots
        .filter(|root| node.in_scope(root.scope))
        .map(|root| root.name.as_str())
        .filter(|name| !node.facts.has_package(name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// `packages.distro` on a node whose distribution and architecture the bundle carries.
fn with_set(node: &Node, set: &PackageSet, id: &str) -> CheckResult {
    let name = node.name();
    let platform = node.platform();
    let lacking = lacking(node, set.roots.iter());
    if lacking.is_empty() {
        return CheckResult::pass(
            id,
            format!("{platform}: every package the bundle carries for the node is installed"),
        );
    }
    if node.stage == Stage::AfterPackages {
        return CheckResult::fail(
            id,
            format!(
                "node `{name}` ({platform}) still lacks {} after kk's packages phase, which should have installed them from the bundle; fix: see what `dpkg --audit` says on the node, then run the install again",
                list(&lacking)
            ),
        );
    }
    match resolve::resolve(&set.packages, &lacking, &node.facts.installed()) {
        Ok(resolution) => CheckResult::new(
            id,
            Status::SetByInstall,
            format!(
                "{SET_BY}{} from the bundle's {platform} packages{}",
                list(&lacking),
                installs(set, &resolution)
            ),
        ),
        Err(error) => CheckResult::fail(
            id,
            format!(
                "node `{name}` ({platform}) lacks {}, and the bundle's packages cannot be installed on it: {error}; fix: bring the node to the release the bundle's packages come from ({}), or build the bundle from the repository the node uses",
                list(&lacking),
                set.repository
            ),
        ),
    }
}

/// What a resolution installs, for a message: `` (installs `a` 1.0, `b` 2.0; replaces `c` 1.0
/// by 1.1, as `b → c (>= 1.1)` demands)``: dpkg would upgrade it, which kk does only then.
fn installs(set: &PackageSet, resolution: &Resolution) -> String {
    let installed: Vec<String> = resolution
        .install
        .iter()
        .filter_map(|&index| set.packages.get(index))
        .map(|record| format!("`{}` {}", record.name, record.version))
        .collect();
    if installed.is_empty() {
        return String::new();
    }
    let mut text = format!(" (installs {}", installed.join(", "));
    for replaced in &resolution.replaced {
        let _ = write!(
            text,
            "; replaces `{}` {} by {}, as `{}` demands",
            replaced.name, replaced.installed, replaced.by, replaced.demanded_by
        );
    }
    text.push(')');
    text
}

/// `packages.distro` on a node whose distribution or architecture the bundle does not carry:
/// a failure when the node lacks a root meant for it, since nothing can bring it.
fn without_set(node: &Node, id: &str) -> CheckResult {
    let sets = &node.cx.bundle.packages;
    let name = node.name();
    let platform = node.platform();
    let lacking = lacking(node, sets.iter().flat_map(|set| set.roots.iter()));
    let carried: Vec<String> = sets
        .iter()
        .map(|set| format!("`{}` `{}`", set.distro, set.arch))
        .collect();
    let carried = carried.join(", ");
    if lacking.is_empty() {
        return CheckResult::pass(
            id,
            format!(
                "the bundle carries no packages for {platform} (only for {carried}), and the node has every one meant for it"
            ),
        );
    }
    let lacks = if node.facts.installed_packages.is_some() {
        format!("lacks {}", list(&lacking))
    } else {
        format!(
            "has no dpkg, so none of {} counts as installed",
            list(&lacking)
        )
    };
    CheckResult::fail(
        id,
        format!(
            "node `{name}` runs {platform}, which the bundle carries no packages for (it carries {carried}), and {lacks}; fix: build the bundle with a `spec.osPackages` entry for {platform}"
        ),
    )
}

#[cfg(test)]
mod tests;

//! The packages phase of the plan: which nodes install which of the bundle's operating-system
//! packages. A root package is for the nodes of its scope ([`PackageScope`]); a node installs,
//! from the set of its own distribution and architecture (known only once the node answers),
//! the part of that set's closure it lacks for its roots. Every record carries the manifest
//! digest the bundle lists for its artifact, so the node fetches it verified.

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::Sha256Digest;
use bundle_spec::packages::{PackageScope, PackageSet};
use serde::Serialize;

use crate::install::error::PlanError;
use crate::inventory::{Inventory, K8S_CLUSTER, Role};

/// Where a node keeps the `.deb`s it fetched: `<dir>/<distro>-<arch>/`.
pub const PACKAGES_DIR: &str = "/var/lib/kk/packages";

/// The bundle's packages as the install uses them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackagesPlan {
    /// The bundle's sets, one per distribution release and architecture.
    pub sets: Vec<PlannedSet>,
    /// By inventory name: the root packages the node needs, by set key (`debian-12-amd64`).
    /// Only nodes some root's scope covers are listed.
    pub roots: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

/// A set of the bundle, with the manifest digest of each record's artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedSet {
    /// `<distro>-<arch>` (`debian-12-amd64`): the set's key and its directory on the node.
    pub key: String,
    /// The set as the bundle describes it.
    pub set: PackageSet,
    /// By record reference: the manifest digest the bundle lists for it.
    pub digests: BTreeMap<String, Sha256Digest>,
}

impl PlannedSet {
    /// The directory the node fetches this set's `.deb`s into.
    pub fn dir(&self) -> String {
        format!("{PACKAGES_DIR}/{}", self.key)
    }
}

impl PackagesPlan {
    /// The plan of the bundle's `sets`, each record's digest looked up in `digests` (by
    /// reference); `None` when the bundle carries no packages.
    pub(super) fn new(
        inventory: &Inventory,
        sets: &[PackageSet],
        digests: &BTreeMap<String, Sha256Digest>,
    ) -> Result<Option<Self>, PlanError> {
        if sets.is_empty() {
            return Ok(None);
        }
        let planned = sets
            .iter()
            .map(|set| planned_set(set, digests))
            .collect::<Result<Vec<_>, _>>()?;
        let mut roots: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for set in &planned {
            for root in &set.set.roots {
                for node in scope_nodes(inventory, root.scope) {
                    let names = roots
                        .entry(node)
                        .or_default()
                        .entry(set.key.clone())
                        .or_default();
                    if !names.contains(&root.name) {
                        names.push(root.name.clone());
                    }
                }
            }
        }
        Ok(Some(Self {
            sets: planned,
            roots,
        }))
    }

    /// The nodes that install packages, in inventory order.
    pub fn nodes(&self, inventory: &Inventory) -> Vec<String> {
        inventory
            .hosts()
            .iter()
            .filter(|host| self.roots.contains_key(&host.name))
            .map(|host| host.name.clone())
            .collect()
    }

    /// The set for `distro` (`debian-12`) on `arch` (`amd64`), if the bundle carries one.
    pub fn set(&self, distro: &str, arch: &str) -> Option<&PlannedSet> {
        let key = set_key(distro, arch);
        self.sets.iter().find(|set| set.key == key)
    }

    /// The roots `node` needs from the set `key`.
    pub fn roots_of(&self, node: &str, key: &str) -> &[String] {
        self.roots
            .get(node)
            .and_then(|by_set| by_set.get(key))
            .map_or(&[], Vec::as_slice)
    }

    /// Every root `node` needs from any set, sorted: what it lacks when no set fits it.
    pub fn all_roots_of(&self, node: &str) -> Vec<String> {
        let all: BTreeSet<&String> = self
            .roots
            .get(node)
            .into_iter()
            .flat_map(BTreeMap::values)
            .flatten()
            .collect();
        all.into_iter().cloned().collect()
    }
}

/// `<distro>-<arch>`.
pub fn set_key(distro: &str, arch: &str) -> String {
    format!("{distro}-{arch}")
}

fn planned_set(
    set: &PackageSet,
    digests: &BTreeMap<String, Sha256Digest>,
) -> Result<PlannedSet, PlanError> {
    let digests = set
        .packages
        .iter()
        .map(|record| {
            digests
                .get(&record.reference)
                .map(|digest| (record.reference.clone(), *digest))
                .ok_or_else(|| PlanError::MissingPackage {
                    reference: record.reference.clone(),
                })
        })
        .collect::<Result<_, _>>()?;
    Ok(PlannedSet {
        key: set_key(&set.distro.to_string(), &set.arch),
        set: set.clone(),
        digests,
    })
}

/// The nodes a root of `scope` is for, by inventory name.
fn scope_nodes(inventory: &Inventory, scope: PackageScope) -> Vec<String> {
    let hosts = match scope {
        PackageScope::All => inventory.hosts().iter().collect(),
        PackageScope::Kubernetes => inventory.group_members(K8S_CLUSTER),
        PackageScope::NfsServer => inventory.role_members(Role::Nfs),
    };
    hosts.into_iter().map(|host| host.name.clone()).collect()
}

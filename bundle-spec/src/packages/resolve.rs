//! The dependency closure of some packages over a set of available ones, against what an
//! installation already has.

use std::collections::BTreeMap;

mod order;

use self::order::Edge;
use super::PackageRecord;
use super::control::{Relation, compare_versions, parse_relations};

/// A package an installation has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledPackage {
    /// Its version.
    pub version: String,
    /// Its `Provides`, as written.
    pub provides: String,
}

/// What an installation already has, by package name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    /// The packages, by name.
    pub packages: BTreeMap<String, InstalledPackage>,
}

impl Installed {
    /// What `dpkg-query -W -f='${Package}\t${Version}\t${Provides}\t${db:Status-Status}\n'`
    /// prints, keeping the packages whose status is `installed`.
    pub fn from_dpkg_query(text: &str) -> Self {
        let packages = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                let (name, version, provides, status) = (
                    fields.next()?,
                    fields.next()?,
                    fields.next()?,
                    fields.next()?,
                );
                (status.trim() == "installed" && !name.is_empty()).then(|| {
                    let package = InstalledPackage {
                        version: version.to_owned(),
                        provides: provides.to_owned(),
                    };
                    (name.to_owned(), package)
                })
            })
            .collect();
        Self { packages }
    }

    /// What every installation of a distribution has: the index's `Priority: required` and
    /// `Essential: yes` packages, and what they depend on (in bookworm `libc6` is `optional`,
    /// yet no Debian system lacks it: `dpkg` and `coreutils` need it).
    ///
    /// The walk is by name only: a baseline says what is there, at the index's versions; a
    /// dependency group is met by a member of the baseline (by name or `Provides`), else by its
    /// first alternative the index has. A field that does not parse adds nothing here: the
    /// resolver reports it if a requested package needs that record.
    pub fn baseline(index: &[super::control::IndexEntry]) -> Self {
        let by_name: BTreeMap<&str, &super::control::IndexEntry> = index
            .iter()
            .map(|entry| (entry.record.name.as_str(), entry))
            .collect();
        let mut chosen: BTreeMap<&str, &super::control::IndexEntry> = index
            .iter()
            .filter(|entry| entry.priority == "required" || entry.essential)
            .map(|entry| (entry.record.name.as_str(), entry))
            .collect();
        let mut pending: Vec<&super::control::IndexEntry> = chosen.values().copied().collect();
        while let Some(entry) = pending.pop() {
            for group in baseline_groups(&entry.record) {
                let met = group.iter().any(|relation| {
                    chosen.contains_key(relation.name.as_str())
                        || chosen
                            .values()
                            .any(|c| provides_name(&c.record, &relation.name))
                });
                if met {
                    continue;
                }
                let found = group.iter().find_map(|relation| {
                    by_name.get(relation.name.as_str()).copied().or_else(|| {
                        index
                            .iter()
                            .find(|candidate| provides_name(&candidate.record, &relation.name))
                    })
                });
                if let Some(found) = found {
                    chosen.insert(found.record.name.as_str(), found);
                    pending.push(found);
                }
            }
        }
        let packages = chosen
            .into_values()
            .map(|entry| {
                let package = InstalledPackage {
                    version: entry.record.version.clone(),
                    provides: entry.record.provides.clone(),
                };
                (entry.record.name.clone(), package)
            })
            .collect();
        Self { packages }
    }
}

/// The `Pre-Depends` and `Depends` groups of `record`, leaving out a field that does not parse.
fn baseline_groups(record: &PackageRecord) -> Vec<Vec<Relation>> {
    [
        ("Pre-Depends", &record.pre_depends),
        ("Depends", &record.depends),
    ]
    .into_iter()
    .filter_map(|(field, text)| parse_relations(&record.name, field, text).ok())
    .flatten()
    .collect()
}

/// Whether `record`'s `Provides` names `name`.
fn provides_name(record: &PackageRecord, name: &str) -> bool {
    !record.provides.is_empty()
        && parse_relations(&record.name, "Provides", &record.provides)
            .is_ok_and(|groups| groups.iter().flatten().any(|p| p.name == name))
}

/// A package of the closure that replaces one the installation has at another version,
/// because a dependency demands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The package.
    pub name: String,
    /// The version installed now.
    pub installed: String,
    /// The version that replaces it.
    pub by: String,
    /// The dependency that demands it (`nfs-common` → `libtirpc3 (>= 1.3.3)`).
    pub demanded_by: String,
}

/// The closure: what to install, in install order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Indices into the available packages, every package after those it depends on
    /// (`Pre-Depends` and `Depends`; a dependency cycle is broken where it closes).
    pub install: Vec<usize>,
    /// Installed packages the closure replaces at another version.
    pub replaced: Vec<Replaced>,
}

/// Why no closure exists.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A requested package is not available (nor installed).
    #[error("no package `{name}` is available")]
    UnknownRoot {
        /// The name asked for.
        name: String,
    },
    /// No available or installed package satisfies a dependency.
    #[error("`{package}` depends on `{dependency}`, which no available package satisfies")]
    Unsatisfiable {
        /// The package whose dependency fails.
        package: String,
        /// The dependency as written (`libc6 (>= 2.99)`, `a | b`).
        dependency: String,
    },
    /// A record's field does not parse.
    #[error(transparent)]
    Control(#[from] super::control::ControlError),
}

/// The closure of `roots` over `available`: every root not already installed (a root installed
/// at any version counts as there, kk never upgrades on its own), and every dependency of a
/// package in the closure that `installed` does not satisfy, by the available package that
/// satisfies it (a real package of that name first, then one that `Provides` it; the highest
/// version among several).
///
/// A group of alternatives is satisfied by its first alternative that the installation or the
/// closure already satisfies; failing that, by its first alternative that an available package
/// satisfies.
pub fn resolve(
    available: &[PackageRecord],
    roots: &[&str],
    installed: &Installed,
) -> Result<Resolution, ResolveError> {
    let mut closure = Closure::new(available, installed)?;
    for root in roots {
        closure.add_root(root)?;
    }
    closure.complete()?;
    Ok(Resolution {
        install: order::install_order(&closure.selected, &closure.edges),
        replaced: closure.replaced,
    })
}

/// The state of a resolution: the selection (indices into `available`, in selection order),
/// each selected package's edges, and the indices of names and virtual names.
struct Closure<'a> {
    available: &'a [PackageRecord],
    installed: &'a Installed,
    /// `Provides` of the installed packages, parsed once.
    installed_provides: Vec<(&'a str, Vec<Relation>)>,
    /// Real packages by name.
    by_name: BTreeMap<&'a str, Vec<usize>>,
    /// Providers by virtual name, with the provided version (`Provides: foo (= 1.2)`).
    providers: BTreeMap<String, Vec<(usize, Option<String>)>>,
    /// The selected packages, in selection order.
    selected: Vec<usize>,
    /// The selected package of each name.
    selected_names: BTreeMap<&'a str, usize>,
    edges: BTreeMap<usize, Vec<Edge>>,
    replaced: Vec<Replaced>,
}

impl<'a> Closure<'a> {
    fn new(available: &'a [PackageRecord], installed: &'a Installed) -> Result<Self, ResolveError> {
        let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut providers: BTreeMap<String, Vec<(usize, Option<String>)>> = BTreeMap::new();
        for (index, record) in available.iter().enumerate() {
            by_name.entry(&record.name).or_default().push(index);
            for provided in parse_relations(&record.name, "Provides", &record.provides)?
                .into_iter()
                .flatten()
            {
                let version = provided.constraint.map(|(_, version)| version);
                providers
                    .entry(provided.name)
                    .or_default()
                    .push((index, version));
            }
        }
        let installed_provides = installed
            .packages
            .iter()
            .map(|(name, package)| {
                let relations = parse_relations(name, "Provides", &package.provides)?;
                Ok((name.as_str(), relations.into_iter().flatten().collect()))
            })
            .collect::<Result<_, ResolveError>>()?;
        Ok(Self {
            available,
            installed,
            installed_provides,
            by_name,
            providers,
            selected: Vec::new(),
            selected_names: BTreeMap::new(),
            edges: BTreeMap::new(),
            replaced: Vec::new(),
        })
    }

    /// Selects a root unless the installation has it (at any version, or as a virtual package
    /// an installed package provides).
    fn add_root(&mut self, root: &str) -> Result<(), ResolveError> {
        let relation = Relation {
            name: root.to_owned(),
            arch_qualifier: None,
            constraint: None,
        };
        if self.installed.packages.contains_key(root)
            || self.installed_satisfies(&relation)
            || self.selected_satisfying(&relation).is_some()
        {
            return Ok(());
        }
        let index = self
            .candidate(&relation)
            .ok_or_else(|| ResolveError::UnknownRoot {
                name: root.to_owned(),
            })?;
        self.select(index);
        Ok(())
    }

    fn select(&mut self, index: usize) {
        self.selected.push(index);
        self.selected_names
            .insert(&self.available[index].name, index);
    }

    /// Walks the selection, selecting what each selected package's dependencies need.
    fn complete(&mut self) -> Result<(), ResolveError> {
        let mut next = 0;
        while let Some(&index) = self.selected.get(next) {
            next += 1;
            let record = &self.available[index];
            let pre_depends = parse_relations(&record.name, "Pre-Depends", &record.pre_depends)?;
            let depends = parse_relations(&record.name, "Depends", &record.depends)?;
            for (group, pre) in pre_depends
                .iter()
                .map(|group| (group, true))
                .chain(depends.iter().map(|group| (group, false)))
            {
                if let Some(to) = self.satisfy(index, group)? {
                    self.edges.entry(index).or_default().push(Edge { to, pre });
                }
            }
        }
        Ok(())
    }

    /// Satisfies one group of `index`'s dependencies: `None` when the installation satisfies
    /// it, else the selected package that does (selecting it if need be).
    fn satisfy(&mut self, index: usize, group: &[Relation]) -> Result<Option<usize>, ResolveError> {
        for relation in group {
            if self.installed_satisfies(relation) {
                return Ok(None);
            }
            if let Some(to) = self.selected_satisfying(relation) {
                return Ok(Some(to));
            }
        }
        let package = &self.available[index].name;
        let chosen = group.iter().find_map(|relation| {
            let candidate = self.candidate(relation)?;
            // One version per name: a candidate whose name is already selected at another
            // version cannot join the closure.
            (!self
                .selected_names
                .contains_key(self.available[candidate].name.as_str()))
            .then_some(candidate)
        });
        let Some(chosen) = chosen else {
            return Err(ResolveError::Unsatisfiable {
                package: package.clone(),
                dependency: written(group),
            });
        };
        let record = &self.available[chosen];
        if let Some(now) = self.installed.packages.get(&record.name) {
            self.replaced.push(Replaced {
                name: record.name.clone(),
                installed: now.version.clone(),
                by: record.version.clone(),
                demanded_by: format!("{package} → {}", written(group)),
            });
        }
        self.select(chosen);
        Ok(Some(chosen))
    }

    /// Whether an installed package satisfies `relation`, by name or by `Provides`.
    fn installed_satisfies(&self, relation: &Relation) -> bool {
        self.installed
            .packages
            .get(&relation.name)
            .is_some_and(|package| relation.allows(&package.version))
            || self.installed_provides.iter().any(|(_, provides)| {
                provides
                    .iter()
                    .any(|provided| provides_satisfy(provided, relation))
            })
    }

    /// The selected package that satisfies `relation`, by name or by `Provides`.
    fn selected_satisfying(&self, relation: &Relation) -> Option<usize> {
        let by_name = self
            .selected_names
            .get(relation.name.as_str())
            .copied()
            .filter(|&index| relation.allows(&self.available[index].version));
        by_name.or_else(|| {
            self.providers
                .get(&relation.name)?
                .iter()
                .find_map(|(index, version)| {
                    (self
                        .selected_names
                        .get(self.available[*index].name.as_str())
                        == Some(index)
                        && provided_version_allows(version.as_deref(), relation))
                    .then_some(*index)
                })
        })
    }

    /// The available package that satisfies `relation`: the highest version of that name,
    /// else the highest version of the first provider by name.
    fn candidate(&self, relation: &Relation) -> Option<usize> {
        let real = self
            .by_name
            .get(relation.name.as_str())
            .into_iter()
            .flatten()
            .copied()
            .filter(|&index| relation.allows(&self.available[index].version));
        if let Some(index) = self.highest(real) {
            return Some(index);
        }
        let providers: Vec<usize> = self
            .providers
            .get(&relation.name)
            .into_iter()
            .flatten()
            .filter(|(_, version)| provided_version_allows(version.as_deref(), relation))
            .map(|(index, _)| *index)
            .collect();
        let first_name = providers
            .iter()
            .map(|&index| self.available[index].name.as_str())
            .min()?;
        self.highest(
            providers
                .into_iter()
                .filter(|&index| self.available[index].name == first_name),
        )
    }

    /// The highest version among `indices` (the first listed among equal versions).
    fn highest(&self, indices: impl Iterator<Item = usize>) -> Option<usize> {
        indices.reduce(|best, index| {
            let ordering = compare_versions(
                &self.available[index].version,
                &self.available[best].version,
            );
            if ordering.is_gt() { index } else { best }
        })
    }
}

/// Whether a `Provides` entry satisfies `relation`: a versioned dependency only by a versioned
/// provide, as dpkg has it.
fn provides_satisfy(provided: &Relation, relation: &Relation) -> bool {
    provided.name == relation.name
        && provided_version_allows(
            provided.constraint.as_ref().map(|(_, v)| v.as_str()),
            relation,
        )
}

fn provided_version_allows(version: Option<&str>, relation: &Relation) -> bool {
    match (version, &relation.constraint) {
        (_, None) => true,
        (Some(version), Some(_)) => relation.allows(version),
        (None, Some(_)) => false,
    }
}

/// A group of alternatives as Debian writes it (`a | b (>= 2)`).
fn written(group: &[Relation]) -> String {
    group
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests;

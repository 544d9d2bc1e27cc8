//! The dependency closure of some packages over a set of available ones, against what an
//! installation already has.
//!
//! (API fixed for the helpers; the bodies are written by the packages helper.)

use std::collections::BTreeMap;

use super::PackageRecord;

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
    pub fn from_dpkg_query(_text: &str) -> Self {
        Self::default()
    }

    /// What every installation of a distribution has: the index's `Priority: required` and
    /// `Essential: yes` packages.
    pub fn baseline(_index: &[super::control::IndexEntry]) -> Self {
        Self::default()
    }
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
pub fn resolve(
    _available: &[PackageRecord],
    _roots: &[&str],
    _installed: &Installed,
) -> Result<Resolution, ResolveError> {
    Ok(Resolution::default())
}

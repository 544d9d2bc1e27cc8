//! `spec.osPackages`: the operating-system packages a bundle carries for the nodes.

use std::path::PathBuf;

use super::SourceLocation;
use crate::packages::Distro;

/// One entry of `spec.osPackages`: a distribution release, the architectures, the repository
/// and the packages asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OsPackages {
    /// `distro` (`debian-12`).
    pub distro: Distro,
    /// `arch`: Debian architecture names (`amd64`); when the manifest gives none, those of
    /// `spec.platforms`.
    pub arches: Vec<String>,
    /// `repository`.
    pub repository: PackageRepository,
    /// `packages`: names asked for, in manifest order (the catalog's are added by the builder).
    pub packages: Vec<String>,
    /// Where the entry is in the manifest.
    pub at: SourceLocation,
}

/// `repository`: a Debian-format repository (a "dist" with `InRelease`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackageRepository {
    /// `url`: the repository's base (`http://deb.debian.org/debian`).
    pub url: String,
    /// `suite` (`bookworm`).
    pub suite: String,
    /// `components` (default `[main]`).
    pub components: Vec<String>,
    /// `keyring`: an `OpenPGP` keyring file (binary or armored), relative to the manifest's
    /// directory unless absolute.
    pub keyring: PathBuf,
}

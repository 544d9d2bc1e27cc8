//! OS packages: one set of `spec.osPackages` for one architecture, from a signed Debian-format
//! repository to verified `.deb`s in the cache.
//!
//! The chain of trust is Debian's own: the keyring verifies `InRelease` (module `signed`), whose
//! signed Release text gives the sha256 of each `Packages` index (module `release`), whose entries
//! give the sha256 of each `.deb`. Every download goes through the cache with the digest the
//! previous link gave, so nothing unverified is ever kept.
//!
//! The closure is computed by the same resolver the installer runs against a node
//! ([`bundle_spec::packages::resolve`]), here against what every installation has (`Priority:
//! required`, `Essential: yes`), so the bundle carries exactly what a minimal node may lack.

mod error;
mod release;
mod signed;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use bundle_spec::Sha256Digest;
use bundle_spec::layout::package_reference;
use bundle_spec::lock::LockedPackage;
use bundle_spec::manifest::OsPackages;
use bundle_spec::packages::control::{IndexEntry, parse_index};
use bundle_spec::packages::resolve::{Installed, ResolveError, resolve};
use bundle_spec::packages::{PackageFormat, PackageRecord, PackageSet, RootPackage};
use futures_util::{StreamExt as _, TryStreamExt as _, stream};

pub use error::PackagesError;

use crate::cache::{Cache, CachedBlob};
use crate::fetch::HttpFetcher;
use error::describe;
use release::{Release, parse_release};

/// One set to resolve: an `osPackages` entry, one of its architectures, and every root.
#[derive(Debug, Clone)]
pub struct PackageRequest<'a> {
    /// The manifest's entry.
    pub entry: &'a OsPackages,
    /// The Debian architecture.
    pub arch: &'a str,
    /// The packages asked for: the manifest's, then the catalog's, each name once.
    pub roots: Vec<RootPackage>,
    /// The manifest's directory, which a relative `keyring` is relative to.
    pub manifest_dir: &'a Path,
    /// How many `.deb`s download at once.
    pub jobs: usize,
}

/// A set resolved, with its `.deb`s verified in the cache.
#[derive(Debug, Clone)]
pub struct ResolvedPackages {
    /// The set, as the description carries it.
    pub set: PackageSet,
    /// One lock entry per `.deb`, in install order.
    pub locked: Vec<LockedPackage>,
    /// The `.deb`s in the cache, in the order of `set.packages`.
    pub blobs: Vec<CachedBlob>,
}

/// The roots of `entry`: its `packages` (scope all, reason `manifest`), then `catalog`'s
/// (the packages `spec.kubernetes` needs), skipping a name already there.
pub fn roots(entry: &OsPackages, catalog: &[RootPackage]) -> Vec<RootPackage> {
    let mut roots: Vec<RootPackage> = entry
        .packages
        .iter()
        .map(|name| RootPackage {
            name: name.clone(),
            scope: bundle_spec::packages::PackageScope::All,
            commands: Vec::new(),
            reason: "manifest".to_owned(),
        })
        .collect();
    for root in catalog {
        if !roots.iter().any(|known| known.name == root.name) {
            roots.push(root.clone());
        }
    }
    roots
}

/// Resolves `request` against its repository and fetches the closure's `.deb`s into `cache`.
///
/// With `locked` (`--locked`), the closure must be exactly the lock's packages for the set
/// (names, versions, sha256, in order), else nothing is downloaded.
pub async fn resolve_packages(
    request: &PackageRequest<'_>,
    fetcher: &HttpFetcher,
    cache: &Cache,
    locked: Option<&[LockedPackage]>,
) -> Result<ResolvedPackages, PackagesError> {
    let repo = Repo::of(request.entry);
    let release = repo.release(fetcher, request.manifest_dir).await?;
    let index = repo.index(&release, request.arch, fetcher, cache).await?;
    let packages = repo.closure(request, &index)?;
    let locked_entries = packages
        .iter()
        .map(|(record, path)| LockedPackage {
            distro: request.entry.distro.to_string(),
            arch: request.arch.to_owned(),
            name: record.name.clone(),
            version: record.version.clone(),
            url: format!("{}/{path}", repo.url),
            digest: record.sha256,
            size: record.size,
        })
        .collect::<Vec<_>>();
    if let Some(locked) = locked {
        repo.check_locked(request, &locked_entries, locked)?;
    }
    // In order (`buffered`), so `blobs[i]` is the `.deb` of `set.packages[i]`.
    let blobs: Vec<CachedBlob> = stream::iter(&locked_entries)
        .map(|entry| fetcher.download(&entry.url, Some(entry.digest), cache, &|_, _| {}))
        .buffered(request.jobs.max(1))
        .try_collect()
        .await
        .map_err(|source| PackagesError::Deb {
            repository: repo.name.clone(),
            source,
        })?;
    Ok(ResolvedPackages {
        set: PackageSet {
            distro: request.entry.distro.clone(),
            arch: request.arch.to_owned(),
            format: PackageFormat::Deb,
            repository: repo.name.clone(),
            roots: request.roots.clone(),
            packages: packages.into_iter().map(|(record, _)| record).collect(),
        },
        locked: locked_entries,
        blobs,
    })
}

/// A repository of an `osPackages` entry.
struct Repo<'a> {
    entry: &'a OsPackages,
    /// Its base URL, without a trailing `/`.
    url: &'a str,
    /// `URL SUITE`, for messages and the set's `repository`.
    name: String,
}

impl<'a> Repo<'a> {
    fn of(entry: &'a OsPackages) -> Self {
        let repository = &entry.repository;
        Self {
            entry,
            url: &repository.url,
            name: format!("{} {}", repository.url, repository.suite),
        }
    }

    /// The signed Release text, verified with the keyring, parsed.
    async fn release(
        &self,
        fetcher: &HttpFetcher,
        manifest_dir: &Path,
    ) -> Result<Release, PackagesError> {
        let suite = &self.entry.repository.suite;
        let inrelease = fetcher
            .text(&format!("{}/dists/{suite}/InRelease", self.url))
            .await
            .map_err(|source| PackagesError::InRelease {
                repository: self.name.clone(),
                source,
            })?;
        // `join` keeps an absolute keyring path as it is.
        let keyring: PathBuf = manifest_dir.join(&self.entry.repository.keyring);
        let keys = std::fs::read(&keyring).map_err(|source| PackagesError::Keyring {
            repository: self.name.clone(),
            keyring: keyring.clone(),
            source,
        })?;
        let text = signed::verify_inrelease(&inrelease, &keys).map_err(|source| {
            PackagesError::Signature {
                repository: self.name.clone(),
                keyring,
                source,
            }
        })?;
        parse_release(&text).map_err(|source| PackagesError::Release {
            repository: self.name.clone(),
            source,
        })
    }

    /// The `Packages` indices of every component for `arch`, verified against the Release,
    /// parsed and merged (in component order).
    async fn index(
        &self,
        release: &Release,
        arch: &str,
        fetcher: &HttpFetcher,
        cache: &Cache,
    ) -> Result<Vec<IndexEntry>, PackagesError> {
        let suite = &self.entry.repository.suite;
        let mut merged = Vec::new();
        for component in &self.entry.repository.components {
            let (entry, compression) =
                release
                    .packages_index(component, arch)
                    .ok_or_else(|| PackagesError::NoIndex {
                        repository: self.name.clone(),
                        component: component.clone(),
                        arch: arch.to_owned(),
                    })?;
            let url = format!("{}/dists/{suite}/{}", self.url, entry.path);
            // Through the cache, keyed by the Release's sha256: an unchanged index is not
            // downloaded again, and a changed one never enters the cache.
            let blob = fetcher
                .download(&url, Some(entry.sha256), cache, &|_, _| {})
                .await
                .map_err(|source| PackagesError::IndexFetch {
                    repository: self.name.clone(),
                    source,
                })?;
            let bytes = std::fs::read(&blob.path).map_err(|source| PackagesError::IndexRead {
                repository: self.name.clone(),
                source: crate::cache::CacheError::File {
                    path: blob.path.clone(),
                    source,
                },
            })?;
            let text = release::index_text(&bytes, entry, compression).map_err(|source| {
                PackagesError::Release {
                    repository: self.name.clone(),
                    source,
                }
            })?;
            merged.extend(parse_index(&text).map_err(|source| PackagesError::Control {
                repository: self.name.clone(),
                source,
            })?);
        }
        Ok(merged)
    }

    /// The closure of the request's roots over `index`, in install order: each record named
    /// as its artifact, with its path below the repository's URL.
    fn closure(
        &self,
        request: &PackageRequest<'_>,
        index: &[IndexEntry],
    ) -> Result<Vec<(PackageRecord, String)>, PackagesError> {
        let records: Vec<PackageRecord> = index.iter().map(|entry| entry.record.clone()).collect();
        let names: Vec<&str> = request
            .roots
            .iter()
            .map(|root| root.name.as_str())
            .collect();
        let resolution = resolve(&records, &names, &Installed::baseline(index)).map_err(
            |error| match error {
                ResolveError::UnknownRoot { name } => PackagesError::UnknownPackage {
                    repository: self.name.clone(),
                    name,
                    arch: request.arch.to_owned(),
                },
                ResolveError::Unsatisfiable {
                    package,
                    dependency,
                } => PackagesError::Unsatisfiable {
                    repository: self.name.clone(),
                    arch: request.arch.to_owned(),
                    package,
                    dependency,
                },
                ResolveError::Control(source) => PackagesError::Control {
                    repository: self.name.clone(),
                    source,
                },
            },
        )?;
        let distro = request.entry.distro.to_string();
        resolution
            .install
            .iter()
            .map(|&at| {
                let entry = &index[at];
                let mut record = entry.record.clone();
                record.reference =
                    package_reference(&distro, request.arch, &record.name, &record.version)
                        .map_err(|source| PackagesError::Reference {
                            repository: self.name.clone(),
                            source: Box::new(source),
                        })?;
                Ok((record, entry.path.clone()))
            })
            .collect()
    }

    /// `--locked`: `resolved` must be the lock's entries of the set, in order.
    fn check_locked(
        &self,
        request: &PackageRequest<'_>,
        resolved: &[LockedPackage],
        lock: &[LockedPackage],
    ) -> Result<(), PackagesError> {
        let distro = request.entry.distro.to_string();
        let key = |p: &LockedPackage| (p.name.clone(), p.version.clone(), p.digest);
        let locked: Vec<(String, String, Sha256Digest)> = lock
            .iter()
            .filter(|p| p.distro == distro && p.arch == request.arch)
            .map(key)
            .collect();
        let resolved: Vec<(String, String, Sha256Digest)> = resolved.iter().map(key).collect();
        let shown = |entry: Option<&(String, String, Sha256Digest)>| {
            entry.map_or_else(
                || "nothing more".to_owned(),
                |(name, version, sha256)| describe(name, version, sha256),
            )
        };
        let first =
            (0..resolved.len().max(locked.len())).find(|&at| resolved.get(at) != locked.get(at));
        match first {
            None => Ok(()),
            Some(at) => Err(PackagesError::LockDrift {
                repository: self.name.clone(),
                set: format!("{distro} {}", request.arch),
                resolved: shown(resolved.get(at)),
                locked: shown(locked.get(at)),
            }),
        }
    }
}

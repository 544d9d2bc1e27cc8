//! `spec.osPackages`: the operating-system packages a bundle carries for the nodes.

use std::path::PathBuf;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::raw::{RawArches, RawOsPackages, RawPackageRepository};
use super::rules::{Seen, required};
use super::url::check_http_url;
use super::{ManifestError, SourceLocation};
use crate::packages::{Distro, PackageFormat, deb_arch};
use crate::platform::Platform;

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

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &[Spanned<RawOsPackages>],
    platforms: &[Platform],
) -> Result<Vec<OsPackages>, ManifestError> {
    let platform_arches = platform_arches(platforms);
    let mut seen = Seen::default();
    raw.iter()
        .map(|entry| {
            let packages = validate(file, entry, &platform_arches)?;
            for arch in &packages.arches {
                let key = (packages.distro.clone(), arch.clone());
                seen.insert(key, &packages.at).map_err(|first| {
                    ManifestError::DuplicatePackageSet {
                        at: packages.at.clone(),
                        distro: packages.distro.to_string(),
                        arch: arch.clone(),
                        first,
                    }
                })?;
            }
            Ok(packages)
        })
        .collect()
}

/// The Debian architectures of `platforms`, each once, in platform order.
fn platform_arches(platforms: &[Platform]) -> Vec<String> {
    let mut arches: Vec<String> = Vec::new();
    for platform in platforms {
        if let Some(arch) = deb_arch(platform.architecture(), platform.variant())
            && !arches.iter().any(|known| known == arch)
        {
            arches.push(arch.to_owned());
        }
    }
    arches
}

fn validate(
    file: &Arc<str>,
    raw: &Spanned<RawOsPackages>,
    platform_arches: &[String],
) -> Result<OsPackages, ManifestError> {
    let at = SourceLocation::of(file, raw);
    let distro = distro(file, required(raw.value.distro.as_ref(), "distro", &at)?)?;
    let arches = match raw.value.arch.as_ref() {
        Some(arch) => arches(file, arch, platform_arches)?,
        None => platform_arches.to_vec(),
    };
    let repository = repository(
        file,
        required(raw.value.repository.as_ref(), "repository", &at)?,
    )?;
    let packages = raw
        .value
        .packages
        .iter()
        .map(|name| package_name(file, name))
        .collect::<Result<_, _>>()?;
    Ok(OsPackages {
        distro,
        arches,
        repository,
        packages,
        at,
    })
}

fn distro(file: &Arc<str>, raw: &Spanned<String>) -> Result<Distro, ManifestError> {
    let invalid = |problem| ManifestError::InvalidDistro {
        at: SourceLocation::of(file, raw),
        distro: raw.value.clone(),
        problem,
    };
    let distro = Distro::parse(&raw.value).ok_or_else(|| invalid("it is not `ID-VERSION_ID`"))?;
    match distro.format() {
        Some(PackageFormat::Deb) => Ok(distro),
        None => Err(invalid("kk carries packages only for Debian and Ubuntu")),
    }
}

fn arches(
    file: &Arc<str>,
    raw: &Spanned<RawArches>,
    platform_arches: &[String],
) -> Result<Vec<String>, ManifestError> {
    let check = |arch: &str, at: SourceLocation| {
        if platform_arches.iter().any(|known| known == arch) {
            Ok(arch.to_owned())
        } else {
            Err(ManifestError::InvalidPackageArch {
                at,
                arch: arch.to_owned(),
                expected: platform_arches
                    .iter()
                    .map(|arch| format!("`{arch}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    };
    let arches: Vec<String> = match &raw.value {
        RawArches::One(arch) => vec![check(arch, SourceLocation::of(file, raw))?],
        RawArches::Many(list) if list.is_empty() => {
            return Err(ManifestError::EmptyValue {
                at: SourceLocation::of(file, raw),
                field: "arch",
                hint: "list at least one, or omit it for the platforms' architectures",
            });
        }
        RawArches::Many(list) => list
            .iter()
            .map(|arch| check(&arch.value, SourceLocation::of(file, arch)))
            .collect::<Result<_, _>>()?,
    };
    Ok(arches)
}

fn repository(
    file: &Arc<str>,
    raw: &Spanned<RawPackageRepository>,
) -> Result<PackageRepository, ManifestError> {
    let at = SourceLocation::of(file, raw);
    let url = required(raw.value.url.as_ref(), "url", &at)?;
    check_http_url(&url.value).map_err(|problem| ManifestError::InvalidUrl {
        at: SourceLocation::of(file, url),
        url: url.value.clone(),
        problem,
    })?;
    let suite = required(raw.value.suite.as_ref(), "suite", &at)?;
    let suite = non_empty(file, suite, "suite", "name the suite, e.g. `bookworm`")?;
    let components = match raw.value.components.as_ref() {
        None => vec!["main".to_owned()],
        Some(list) if list.value.is_empty() => {
            return Err(ManifestError::EmptyValue {
                at: SourceLocation::of(file, list),
                field: "components",
                hint: "list at least one, or omit it for `[main]`",
            });
        }
        Some(list) => list
            .value
            .iter()
            .map(|component| {
                non_empty(
                    file,
                    component,
                    "components",
                    "name a component, e.g. `main`",
                )
            })
            .collect::<Result<_, _>>()?,
    };
    let keyring = required(raw.value.keyring.as_ref(), "keyring", &at)?;
    let keyring = non_empty(
        file,
        keyring,
        "keyring",
        "give the repository's OpenPGP keyring file",
    )?;
    Ok(PackageRepository {
        // The builder appends `/dists/…` and `/pool/…`; a trailing slash would double it.
        url: url.value.trim_end_matches('/').to_owned(),
        suite,
        components,
        keyring: PathBuf::from(keyring),
    })
}

fn non_empty(
    file: &Arc<str>,
    raw: &Spanned<String>,
    field: &'static str,
    hint: &'static str,
) -> Result<String, ManifestError> {
    if raw.value.trim().is_empty() {
        Err(ManifestError::EmptyValue {
            at: SourceLocation::of(file, raw),
            field,
            hint,
        })
    } else {
        Ok(raw.value.clone())
    }
}

/// A Debian package name (Debian policy 5.6.1): lowercase letters, digits, `+`, `-` and `.`,
/// at least two characters, starting with a letter or digit.
fn package_name(file: &Arc<str>, raw: &Spanned<String>) -> Result<String, ManifestError> {
    let name = &raw.value;
    let allowed = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
    let valid = name.len() >= 2
        && name.bytes().next().is_some_and(allowed)
        && name
            .bytes()
            .all(|byte| allowed(byte) || b"+-.".contains(&byte));
    if valid {
        Ok(name.clone())
    } else {
        Err(ManifestError::InvalidPackageName {
            at: SourceLocation::of(file, raw),
            name: name.clone(),
        })
    }
}

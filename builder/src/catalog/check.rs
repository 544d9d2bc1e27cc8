//! The invariants of the catalog data that [`Catalog::expand`](super::Catalog::expand) relies on,
//! and the error naming the one broken.

use std::collections::BTreeMap;

use super::{
    AddonKind, BinaryData, CniKind, Data, MinorData, StorageKind, VersionFrom, parse_minor,
};

impl Data {
    /// The invariants [`Catalog::expand`](super::Catalog::expand) relies on.
    pub(super) fn check(&self) -> Result<(), CatalogError> {
        for binary in &self.binaries {
            binary.check()?;
        }
        for kind in StorageKind::ALL {
            let Some(storage) = self.storage.get(&kind) else {
                return Err(CatalogError::NoStorage { kind: kind.name() });
            };
            if storage.images.is_empty() {
                return Err(CatalogError::StorageWithoutImages { kind: kind.name() });
            }
        }
        for kind in AddonKind::ALL {
            let Some(addon) = self.addons.get(&kind) else {
                return Err(CatalogError::NoAddon { kind: kind.name() });
            };
            if addon.images.is_empty() {
                return Err(CatalogError::AddonWithoutImages { kind: kind.name() });
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for package in &self.packages {
            if !names.insert(package.name.as_str()) {
                return Err(CatalogError::DuplicatePackage {
                    name: package.name.clone(),
                });
            }
        }
        for (id, cni) in &self.cnis {
            if cni.images.is_empty() {
                return Err(CatalogError::CniWithoutImages { id: id.clone() });
            }
        }
        let mut previous: Option<(u32, u32)> = None;
        for minor in &self.kubernetes {
            let number = parse_minor(&minor.minor).ok_or_else(|| CatalogError::InvalidMinor {
                minor: minor.minor.clone(),
            })?;
            if previous.is_some_and(|previous| previous >= number) {
                return Err(CatalogError::MinorOrder {
                    minor: minor.minor.clone(),
                });
            }
            previous = Some(number);
            self.check_minor(minor)?;
        }
        Ok(())
    }

    fn check_minor(&self, minor: &MinorData) -> Result<(), CatalogError> {
        let name = &minor.minor;
        // The kubeadm ranges must tile 0..=latestPatch, in order.
        let mut next = 0;
        for set in &minor.kubeadm {
            let [first, last] = set.patches;
            if first != next || last < first {
                return Err(CatalogError::KubeadmRange {
                    minor: name.clone(),
                    first,
                    last,
                    next,
                });
            }
            next = last + 1;
        }
        if next != minor.latest_patch + 1 {
            return Err(CatalogError::KubeadmEnd {
                minor: name.clone(),
                end: next.saturating_sub(1),
                latest: minor.latest_patch,
            });
        }
        for binary in &self.binaries {
            if binary.version_from != VersionFrom::Component {
                continue;
            }
            let version = minor.components.get(&binary.name).ok_or_else(|| {
                CatalogError::NoComponentVersion {
                    minor: name.clone(),
                    binary: binary.name.clone(),
                }
            })?;
            let unpinned = binary
                .sha256
                .as_ref()
                .is_some_and(|pinned| !pinned.contains_key(version));
            if unpinned {
                return Err(CatalogError::Unpinned {
                    minor: name.clone(),
                    binary: binary.name.clone(),
                    version: version.clone(),
                });
            }
        }
        for component in minor.components.keys() {
            if !self.binaries.iter().any(|binary| &binary.name == component) {
                return Err(CatalogError::ComponentNotBinary {
                    minor: name.clone(),
                    component: component.clone(),
                });
            }
        }
        for kind in CniKind::ALL {
            let id = minor.cnis.get(&kind).ok_or_else(|| CatalogError::NoCni {
                minor: name.clone(),
                kind: kind.name(),
            })?;
            let cni = self
                .cnis
                .get(id)
                .ok_or_else(|| CatalogError::UndefinedCni {
                    minor: name.clone(),
                    id: id.clone(),
                })?;
            if cni.cni != kind {
                return Err(CatalogError::WrongCniKind {
                    minor: name.clone(),
                    id: id.clone(),
                    kind: kind.name(),
                });
            }
        }
        Ok(())
    }
}

impl BinaryData {
    fn check(&self) -> Result<(), CatalogError> {
        let name = &self.name;
        // Exactly one way to verify the file: a checksum file, pins, or (when upstream
        // publishes neither) the lock of the first build.
        match (&self.checksum_url, &self.sha256, self.trust_on_first_use) {
            (Some(_), None, false) | (None, Some(_), false) | (None, None, true) => {}
            _ => {
                return Err(CatalogError::ChecksumSource {
                    binary: name.clone(),
                });
            }
        }
        for digests in self.sha256.iter().flat_map(BTreeMap::values) {
            for (arch, hex) in digests {
                let valid = hex.len() == 64
                    && hex
                        .bytes()
                        .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
                if !valid {
                    return Err(CatalogError::InvalidSha256 {
                        binary: name.clone(),
                        arch: arch.clone(),
                    });
                }
            }
        }
        // Pins are keyed by version, which only a component's is known in advance.
        if self.version_from != VersionFrom::Component && self.sha256.is_some() {
            return Err(CatalogError::PinnedWithoutComponent {
                binary: name.clone(),
                version_from: format!("{:?}", self.version_from),
            });
        }
        Ok(())
    }
}

/// Catalog data that breaks an invariant: a defect of the catalog shipped with kk-bundle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The text is not YAML of the catalog's shape.
    #[error("the catalog is not yaml of its shape")]
    Yaml(#[from] serde_saphyr::Error),
    /// A storage kind has no entry.
    #[error("no `storage.{kind}` entry")]
    NoStorage {
        /// The kind's name.
        kind: &'static str,
    },
    /// A storage kind has no images.
    #[error("storage `{kind}` lists no images")]
    StorageWithoutImages {
        /// The kind's name.
        kind: &'static str,
    },
    /// An addon has no entry.
    #[error("no `addons.{kind}` entry")]
    NoAddon {
        /// The addon's name.
        kind: &'static str,
    },
    /// An addon has no images.
    #[error("addon `{kind}` lists no images")]
    AddonWithoutImages {
        /// The addon's name.
        kind: &'static str,
    },
    /// A package is listed twice.
    #[error("package `{name}` is listed twice")]
    DuplicatePackage {
        /// The package.
        name: String,
    },
    /// A network plugin has no images.
    #[error("network plugin `{id}` lists no images")]
    CniWithoutImages {
        /// The plugin's id.
        id: String,
    },
    /// A minor is not `vMAJOR.MINOR`.
    #[error("`{minor}` is not a minor like `v1.31`")]
    InvalidMinor {
        /// The minor as written.
        minor: String,
    },
    /// The minors are not in increasing order.
    #[error("`{minor}` is out of order or repeated")]
    MinorOrder {
        /// The minor out of order.
        minor: String,
    },
    /// A kubeadm patch range leaves a gap or overlaps.
    #[error("{minor}: kubeadm range [{first}, {last}] does not start at patch {next}")]
    KubeadmRange {
        /// The minor.
        minor: String,
        /// The range's first patch.
        first: u32,
        /// Its last patch.
        last: u32,
        /// The patch it should start at.
        next: u32,
    },
    /// The kubeadm patch ranges stop before the latest patch.
    #[error("{minor}: kubeadm ranges end at patch {end} but latestPatch is {latest}")]
    KubeadmEnd {
        /// The minor.
        minor: String,
        /// The last patch the ranges cover.
        end: u32,
        /// `latestPatch`.
        latest: u32,
    },
    /// A binary versioned by component has no version in a minor.
    #[error("{minor}: no version for `{binary}`")]
    NoComponentVersion {
        /// The minor.
        minor: String,
        /// The binary.
        binary: String,
    },
    /// A component's version has no pinned sha256.
    #[error("{minor}: `{binary}` {version} has no pinned sha256")]
    Unpinned {
        /// The minor.
        minor: String,
        /// The binary.
        binary: String,
        /// Its version there.
        version: String,
    },
    /// A minor names a component that is no binary.
    #[error("{minor}: component `{component}` is not a binary")]
    ComponentNotBinary {
        /// The minor.
        minor: String,
        /// The component.
        component: String,
    },
    /// A minor has no entry for a kind of network plugin.
    #[error("{minor}: no {kind} entry")]
    NoCni {
        /// The minor.
        minor: String,
        /// The kind's name.
        kind: &'static str,
    },
    /// A minor names a network plugin the catalog does not define.
    #[error("{minor}: network plugin `{id}` is not defined")]
    UndefinedCni {
        /// The minor.
        minor: String,
        /// The plugin's id.
        id: String,
    },
    /// A minor names a network plugin of another kind.
    #[error("{minor}: `{id}` is not a {kind} entry")]
    WrongCniKind {
        /// The minor.
        minor: String,
        /// The plugin's id.
        id: String,
        /// The kind expected.
        kind: &'static str,
    },
    /// A binary has more or fewer than one of `checksumUrl`, `sha256` and `trustOnFirstUse`.
    #[error(
        "binary `{binary}` needs exactly one of `checksumUrl`, `sha256` and `trustOnFirstUse: true`"
    )]
    ChecksumSource {
        /// The binary.
        binary: String,
    },
    /// A pinned sha256 is not 64 lowercase hex digits.
    #[error("binary `{binary}`: sha256 for `{arch}` is not 64 lowercase hex digits")]
    InvalidSha256 {
        /// The binary.
        binary: String,
        /// The architecture it is pinned for.
        arch: String,
    },
    /// A binary pins sha256 though its version is not known in advance.
    #[error("binary `{binary}` takes its version from {version_from} and cannot pin sha256")]
    PinnedWithoutComponent {
        /// The binary.
        binary: String,
        /// Where its version comes from.
        version_from: String,
    },
}

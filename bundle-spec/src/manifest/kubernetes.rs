//! `spec.kubernetes`: the cluster a bundle installs, expanded later by the builder's catalog.

use std::fmt;
use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::choices::{Cni, ContainerRuntime, KubeProxyMode, Storage};
use super::raw::RawKubernetes;
use super::rules::required;

/// The Kubernetes cluster to bundle: the builder's version catalog expands it into the
/// images, binaries and charts that version needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Kubernetes {
    /// The Kubernetes release.
    pub version: KubernetesVersion,
    /// The container runtime the nodes run.
    pub container_runtime: ContainerRuntime,
    /// The network plugin to install.
    pub cni: Cni,
    /// `kubeProxyMode`: `ipvs` adds the IPVS tools to every package set.
    pub kube_proxy_mode: KubeProxyMode,
    /// `storage`: `[nfs]` adds the NFS packages and the provisioner chart.
    pub storage: Vec<Storage>,
    /// `nodePackages` (default true): whether the catalog adds, to every set of
    /// `spec.osPackages`, the packages the cluster's features need.
    pub node_packages: bool,
}

/// A Kubernetes release, `vMAJOR.MINOR.PATCH`. Displays with the leading `v`.
///
/// Pre-releases are not accepted: an airgapped cluster is a production cluster, and the
/// catalog only describes releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub struct KubernetesVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch version.
    pub patch: u32,
}

impl KubernetesVersion {
    /// Parses `vMAJOR.MINOR.PATCH`, rejecting leading zeros as Kubernetes tags never have them.
    pub fn parse(text: &str) -> Option<Self> {
        let mut numbers = text.strip_prefix('v')?.split('.').map(parse_number);
        let version = Self {
            major: numbers.next()??,
            minor: numbers.next()??,
            patch: numbers.next()??,
        };
        numbers.next().is_none().then_some(version)
    }
}

fn parse_number(text: &str) -> Option<u32> {
    let digits_only = !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    let leading_zero = text.len() > 1 && text.starts_with('0');
    if digits_only && !leading_zero {
        text.parse().ok()
    } else {
        None
    }
}

impl fmt::Display for KubernetesVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

pub(super) fn validate(
    file: &Arc<str>,
    raw: &Spanned<RawKubernetes>,
) -> Result<Kubernetes, ManifestError> {
    let version = required(
        raw.value.version.as_ref(),
        "version",
        &SourceLocation::of(file, raw),
    )?;
    let parsed = KubernetesVersion::parse(&version.value).ok_or_else(|| {
        ManifestError::InvalidKubernetesVersion {
            at: SourceLocation::of(file, version),
            version: version.value.clone(),
        }
    })?;
    Ok(Kubernetes {
        version: parsed,
        container_runtime: raw.value.container_runtime,
        cni: raw.value.cni,
        kube_proxy_mode: raw.value.kube_proxy_mode,
        storage: storage(&raw.value.storage),
        node_packages: raw.value.node_packages,
    })
}

/// The storage kinds, each once, sorted: listing one twice asks for nothing more.
fn storage(raw: &[Storage]) -> Vec<Storage> {
    let mut storage = raw.to_vec();
    storage.sort();
    storage.dedup();
    storage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_strictly() {
        let parsed = KubernetesVersion::parse("v1.31.4").expect("valid");
        assert_eq!((parsed.major, parsed.minor, parsed.patch), (1, 31, 4));
        assert_eq!(parsed.to_string(), "v1.31.4");
        for bad in [
            "1.31.4",
            "v1.31",
            "v1.31.4.1",
            "v1.031.4",
            "v1.31.x",
            "v1..4",
            "v1.31.4-rc.0",
        ] {
            assert_eq!(KubernetesVersion::parse(bad), None, "{bad}");
        }
    }
}

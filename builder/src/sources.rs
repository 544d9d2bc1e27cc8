//! Everything a build fetches: the manifest's own entries plus what the catalog expands
//! `spec.kubernetes` into.
//!
//! The catalog's expansion is turned into a manifest of its own and parsed by the same parser as
//! the user's file, so catalog entries pass exactly the same validation (URL templates, image
//! references, checksum sources). Where the user's manifest names the same binary, chart or image
//! as the catalog, the user's entry wins: that is how a catalog version is overridden.

use std::collections::BTreeSet;

use bundle_spec::manifest::{Binary, BinaryChecksum, Chart, ChartSource, Manifest, Referrers};
use serde_json::json;

use crate::catalog::Expansion;
use crate::resolve::ResolveError;
use crate::resolve::image::ImageSource;

/// The sources of a build.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Container images.
    pub images: Vec<ImageSource>,
    /// Helm charts stored in registries (`oci://`), fetched like images.
    pub oci_charts: Vec<ImageSource>,
    /// Binaries.
    pub binaries: Vec<Binary>,
    /// Helm charts from HTTP repositories.
    pub http_charts: Vec<Chart>,
}

impl Sources {
    /// The manifest's entries, then the catalog's that the manifest does not override.
    pub fn collect(
        manifest: &Manifest,
        expansion: Option<&Expansion>,
    ) -> Result<Self, SourcesError> {
        let mut sources = Self::default();
        sources.add(manifest)?;
        if let Some(expansion) = expansion {
            // The catalog's binaries are appended after the manifest's, and only those the
            // manifest does not override: an operator's own `docker` keeps its checksum.
            let own = sources.binaries.len();
            sources.add(&catalog_manifest(manifest, expansion)?)?;
            pin_by_lock(&mut sources.binaries[own..], expansion);
        }
        Ok(sources)
    }

    fn add(&mut self, manifest: &Manifest) -> Result<(), SourcesError> {
        let spec = manifest.spec();
        let mut names: BTreeSet<String> = self.images.iter().map(ImageSource::name).collect();
        for image in &spec.images {
            let mut source = ImageSource::parse(&image.normalized)?;
            source.bundle_referrers = image.referrers == Referrers::All;
            source.verify = image.verify(spec).map(|verify| verify.key.clone());
            if names.insert(source.name()) {
                self.images.push(source);
            }
        }
        for binary in &spec.binaries {
            if !self.binaries.iter().any(|b| b.name == binary.name) {
                self.binaries.push(binary.clone());
            }
        }
        for chart in &spec.charts {
            let known = self.http_charts.iter().any(|c| c.name == chart.name)
                || self.oci_charts.iter().any(|c| {
                    c.reference.repository().rsplit('/').next() == Some(chart.name.as_str())
                });
            if known {
                continue;
            }
            match &chart.source {
                ChartSource::Repository(_) => self.http_charts.push(chart.clone()),
                ChartSource::Oci(url) => {
                    self.oci_charts.push(oci_chart_source(url, &chart.version)?);
                }
                other => {
                    return Err(SourcesError::Internal(format!(
                        "chart source `{other:?}` is not supported by this kk-bundle"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// `oci://host/path/name` at `version` as an image reference; Helm tags replace `+` by `_`.
fn oci_chart_source(url: &str, version: &str) -> Result<ImageSource, SourcesError> {
    let location = url.trim_start_matches("oci://").trim_end_matches('/');
    Ok(ImageSource::parse(&format!(
        "{location}:{}",
        version.replace('+', "_")
    ))?)
}

/// The catalog's expansion as a manifest, for the manifest parser to validate.
fn catalog_manifest(user: &Manifest, expansion: &Expansion) -> Result<Manifest, SourcesError> {
    let platforms: Vec<String> = user
        .spec()
        .platforms
        .iter()
        .map(ToString::to_string)
        .collect();
    let binaries: Vec<serde_json::Value> = expansion
        .binaries
        .iter()
        .map(|b| {
            let mut entry = json!({ "name": b.name, "version": b.version, "url": b.url });
            if !b.arch_names.is_empty() {
                entry["archNames"] = json!(b.arch_names);
            }
            match &b.checksum_url {
                Some(url) => entry["checksumUrl"] = url.clone().into(),
                // A manifest cannot spell "pinned by the lock", so the parser validates the
                // entry with its own URL as the checksum source, and `pin_by_lock` replaces
                // that before anything is fetched.
                None if b.trust_on_first_use => entry["checksumUrl"] = b.url.clone().into(),
                None => entry["sha256"] = json!(b.sha256),
            }
            entry
        })
        .collect();
    let charts: Vec<serde_json::Value> = expansion
        .charts
        .iter()
        .map(|c| json!({ "name": c.name, "version": c.version, c.source.key(): c.source.location() }))
        .collect();
    let document = json!({
        "apiVersion": bundle_spec::manifest::API_VERSION,
        "kind": bundle_spec::manifest::KIND,
        "metadata": { "name": "catalog" },
        "spec": { "platforms": platforms, "images": expansion.images, "binaries": binaries, "charts": charts },
    });
    // JSON is YAML, so the manifest parser reads it as it is.
    let text = serde_json::to_string_pretty(&document)
        .map_err(|e| SourcesError::Internal(format!("cannot render the catalog: {e}")))?;
    Ok(Manifest::from_str_named(
        &text,
        &format!("catalog {}", expansion.kubernetes),
    )?)
}

/// Marks the catalog's `binaries` without a published checksum as pinned by the lock.
fn pin_by_lock(binaries: &mut [Binary], expansion: &Expansion) {
    for binary in binaries {
        let unpublished = expansion
            .binaries
            .iter()
            .any(|b| b.name == binary.name && b.trust_on_first_use);
        if unpublished {
            binary.checksum = BinaryChecksum::PinnedByLock;
        }
    }
}

/// The manifest's and the catalog's entries cannot be collected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourcesError {
    /// The catalog's entries, read back as a manifest, are invalid.
    #[error(transparent)]
    Manifest(#[from] bundle_spec::ManifestError),
    /// An image reference does not parse.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A bug: an internal invariant broke.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn manifest(spec: &str) -> Manifest {
        let text = format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: t}}\nspec:\n{spec}"
        );
        Manifest::from_str_named(&text, "t.yaml").unwrap()
    }

    #[test]
    fn catalog_entries_are_added_unless_the_manifest_names_them() {
        let user = manifest(
            "  kubernetes: {version: v1.31.4}\n  binaries:\n    - {name: etcd, version: v3.5.16, url: \"https://example.org/etcd-{version}-{os}-{arch}.tgz\", checksumUrl: \"https://example.org/SUMS\"}\n",
        );
        let expansion = Catalog::builtin()
            .expand(user.spec().kubernetes.as_ref().unwrap())
            .unwrap();
        let sources = Sources::collect(&user, Some(&expansion)).unwrap();
        let etcd: Vec<_> = sources
            .binaries
            .iter()
            .filter(|b| b.name == "etcd")
            .collect();
        assert_eq!(etcd.len(), 1);
        assert_eq!(
            etcd[0].version, "v3.5.16",
            "the manifest's etcd replaces the catalog's"
        );
        assert!(sources.binaries.iter().any(|b| b.name == "kubeadm"));
        assert!(
            sources
                .images
                .iter()
                .any(|i| i.name() == "registry.k8s.io/pause:3.10")
        );
        assert_eq!(sources.http_charts.len(), 1);
    }

    #[test]
    fn the_catalogs_oci_charts_are_sourced_as_a_manifests_oci_chart() {
        let by_catalog =
            manifest("  kubernetes: {version: v1.31.4, cni: none, addons: [spegel]}\n");
        let expansion = Catalog::builtin()
            .expand(by_catalog.spec().kubernetes.as_ref().unwrap())
            .unwrap();
        let from_catalog = Sources::collect(&by_catalog, Some(&expansion)).unwrap();
        // The same chart as a user writes it by hand.
        let by_hand = manifest(
            "  charts:\n    - {name: spegel, version: 0.7.4, oci: \"oci://ghcr.io/spegel-org/helm-charts/spegel\"}\n",
        );
        let from_hand = Sources::collect(&by_hand, None).unwrap();
        assert!(from_catalog.http_charts.is_empty());
        let names = |sources: &Sources| -> Vec<String> {
            sources
                .oci_charts
                .iter()
                .map(|c| c.name().clone())
                .collect()
        };
        assert_eq!(
            names(&from_catalog),
            ["ghcr.io/spegel-org/helm-charts/spegel:0.7.4"]
        );
        assert_eq!(names(&from_catalog), names(&from_hand));
        assert!(
            from_catalog
                .images
                .iter()
                .any(|i| i.name() == "ghcr.io/spegel-org/spegel:v0.7.4")
        );
    }

    #[test]
    fn docker_downloads_use_dockers_architecture_names() {
        let user = manifest(
            "  platforms: [linux/amd64, linux/arm64]\n  kubernetes: {version: v1.31.4, containerRuntime: docker}\n",
        );
        let expansion = Catalog::builtin()
            .expand(user.spec().kubernetes.as_ref().unwrap())
            .unwrap();
        let sources = Sources::collect(&user, Some(&expansion)).unwrap();
        let docker = sources
            .binaries
            .iter()
            .find(|b| b.name == "docker")
            .unwrap();
        let amd64: bundle_spec::platform::Platform = "linux/amd64".parse().unwrap();
        let arm64: bundle_spec::platform::Platform = "linux/arm64".parse().unwrap();
        assert!(
            docker.url_for(&amd64).contains("/x86_64/"),
            "{}",
            docker.url_for(&amd64)
        );
        assert!(
            docker.url_for(&arm64).contains("/aarch64/"),
            "{}",
            docker.url_for(&arm64)
        );
    }

    #[test]
    fn only_the_catalogs_docker_is_pinned_by_the_lock() {
        let collect = |spec: &str| {
            let user = manifest(spec);
            let expansion = Catalog::builtin()
                .expand(user.spec().kubernetes.as_ref().unwrap())
                .unwrap();
            Sources::collect(&user, Some(&expansion)).unwrap()
        };
        let checksum = |sources: &Sources, name: &str| {
            sources
                .binaries
                .iter()
                .find(|b| b.name == name)
                .unwrap()
                .checksum
                .clone()
        };
        let catalog = collect("  kubernetes: {version: v1.31.4, containerRuntime: docker}\n");
        assert_eq!(checksum(&catalog, "docker"), BinaryChecksum::PinnedByLock);
        assert!(matches!(
            checksum(&catalog, "cri-dockerd"),
            BinaryChecksum::Sha256PerArchitecture(_)
        ));
        assert!(matches!(
            checksum(&catalog, "kubeadm"),
            BinaryChecksum::ChecksumUrl(_)
        ));
        // An operator's own docker keeps the checksum its entry gives.
        let hex = "a".repeat(64);
        let own = collect(&format!(
            "  kubernetes: {{version: v1.31.4, containerRuntime: docker}}\n  binaries:\n    - {{name: docker, version: 28.5.2, url: \"https://example.org/docker-{{version}}.tgz\", sha256: {hex}}}\n"
        ));
        assert_eq!(checksum(&own, "docker"), BinaryChecksum::Sha256(hex));
    }
}

//! The version catalog: what `spec.kubernetes` expands to.
//!
//! A manifest that says `kubernetes: {version: v1.31.4, containerRuntime: containerd, cni:
//! calico}` gets, without listing them, everything a kubeadm cluster of that release needs:
//! kubeadm, kubelet and kubectl; the container runtime (containerd and runc, or Docker's static
//! binaries and cri-dockerd); crictl, the CNI plugins, etcd and helm; the images `kubeadm init`
//! pulls (with the `pause`, `coredns` and `etcd` tags kubeadm itself uses for that patch release); the
//! chosen network plugin's Helm chart and images; and kube-vip for a highly available control
//! plane.
//!
//! # Organisation
//!
//! The catalog is data, not code: one YAML file, `catalog.yaml` beside this module, embedded
//! with `include_str!` and parsed (with unknown fields refused) and checked the first time it
//! is used. Its facts — which tag kubeadm uses for pause in v1.30.4, which containerd a minor
//! gets — change with every upstream release and each comes from a source, recorded in
//! `FACTS.md` beside it. Keeping them in one reviewable file, apart from the logic, means an
//! update is a data diff that can be checked against its source line by line, and the code that
//! expands it stays the same.
//!
//! The file has four parts: the control-plane images and their registry; how each binary is
//! downloaded and verified (URL templates over `{version}`, `{os}` and `{arch}`, the same
//! templates a manifest's `spec.binaries` use); the network plugins (chart and images); and one
//! entry per supported minor with the patches it knows, kubeadm's image tags by patch range, and
//! the version of every other component.
//!
//! A patch release newer than the catalog knows is refused rather than guessed: kubeadm's etcd
//! and `coredns` tags have changed within minors, and a bundle without the tag kubeadm asks for
//! fails only once it is in the disconnected datacenter.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

use bundle_spec::manifest::{
    Addon, Cni, ContainerRuntime, KubeProxyMode, Kubernetes, KubernetesVersion, MultiCni, Storage,
};
use bundle_spec::packages::{PackageScope, RootPackage};
use bundle_spec::platform::Platform;
use serde::Deserialize;
use serde_json::{Map, Value, json};

pub use chart::CatalogChartSource;
pub use check::CatalogError;
pub use error::ExpandError;

use chart::ChartData;

mod chart;
mod check;
mod error;
#[cfg(test)]
mod tests;

/// The catalog's data, as written in the embedded file.
const CATALOG_YAML: &str = include_str!("catalog.yaml");

/// The version catalog: for each supported Kubernetes minor, the binaries, images and charts a
/// kubeadm cluster needs.
#[derive(Debug)]
pub struct Catalog {
    data: Data,
}

/// Everything one `spec.kubernetes` expands to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The Kubernetes release, e.g. `v1.31.4`.
    pub kubernetes: String,
    /// The binaries to download, in installation order.
    pub binaries: Vec<CatalogBinary>,
    /// The images, fully qualified (`registry.k8s.io/kube-apiserver:v1.31.4`).
    pub images: Vec<String>,
    /// The Helm charts (the network plugin's, if any, the storage's and the addons').
    pub charts: Vec<CatalogChart>,
    /// The OS packages the cluster's features need on the nodes, for every set of
    /// `spec.osPackages` (empty with `nodePackages: false`).
    pub packages: Vec<RootPackage>,
}

/// A binary of an [`Expansion`], in the form of a manifest's `spec.binaries` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogBinary {
    /// The name, e.g. `kubeadm`.
    pub name: String,
    /// The version substituted for `{version}`, e.g. `v1.31.4` (or `1.7.30` for containerd,
    /// whose URLs carry the `v` literally).
    pub version: String,
    /// The download URL template over `{version}`, `{os}` and `{arch}`.
    pub url: String,
    /// A checksum file to download, a template like `url`; `None` when `sha256` is pinned.
    pub checksum_url: Option<String>,
    /// The pinned SHA-256 (lowercase hex) per Go architecture, when upstream publishes no
    /// checksum file; empty when `checksum_url` is set or the binary is `trust_on_first_use`.
    pub sha256: BTreeMap<String, String>,
    /// Upstream publishes no checksum and no pin was found: the first build records the
    /// file's sha256 in the lock (downloaded over TLS, with a warning), which pins it from then
    /// on. Neither `checksum_url` nor `sha256` is set.
    pub trust_on_first_use: bool,
    /// How upstream spells an architecture in this binary's URLs, where it is not Go's name
    /// (Docker: `amd64` → `x86_64`, `arm64` → `aarch64`); `{arch}` in `url` and `checksum_url`
    /// takes the mapped name. Empty for every other binary. [`CatalogBinary::url_for`] applies
    /// it; the `sha256` keys stay Go names.
    pub arch_names: BTreeMap<String, String>,
}

/// A Helm chart of an [`Expansion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogChart {
    /// The chart name, e.g. `tigera-operator`.
    pub name: String,
    /// The chart version as the repository's index lists it (or the OCI tag), e.g. `v3.30.5`.
    pub version: String,
    /// Where the chart is downloaded from: an HTTP chart repository or an OCI repository.
    pub source: CatalogChartSource,
    /// The images the chart deploys when installed as the catalog says, fully qualified (the
    /// network plugin's `images`); all of them are also in [`Expansion::images`].
    pub images: Vec<String>,
}

impl Catalog {
    /// The built-in catalog, parsed and checked on first use.
    ///
    /// # Panics
    ///
    /// If the embedded `catalog.yaml` is invalid — a bug in kk-bundle that its tests catch, so
    /// never in a released build.
    pub fn builtin() -> &'static Catalog {
        static BUILTIN: OnceLock<Catalog> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            // The file is compiled in and parsed by a unit test, so a failure here cannot
            // depend on input; there is nothing a caller could do with an error.
            #[allow(clippy::expect_used)]
            Catalog::parse(CATALOG_YAML).expect("the embedded version catalog is valid")
        })
    }

    /// The supported minors, oldest first, e.g. `["v1.29", "v1.30", …]`.
    pub fn minors(&self) -> Vec<String> {
        self.data
            .kubernetes
            .iter()
            .map(|minor| minor.minor.clone())
            .collect()
    }

    /// Everything `kubernetes` expands to.
    ///
    /// Fails for a minor the catalog does not describe (naming the supported ones), and for a
    /// patch release newer than the newest it knows.
    pub fn expand(&self, kubernetes: &Kubernetes) -> Result<Expansion, ExpandError> {
        let version = kubernetes.version;
        let minor = self.minor(version)?;
        let tags = minor.kubeadm_for(version.patch).ok_or_else(|| {
            internal(&format!("no kubeadm image tags for kubernetes `{version}`"))
        })?;
        let runtime = kubernetes.container_runtime;

        let mut binaries = Vec::new();
        for binary in &self.data.binaries {
            if binary.runtime.is_some_and(|only| only.runtime() != runtime)
                || binary
                    .multi_cni
                    .is_some_and(|only| only != kubernetes.multi_cni)
            {
                continue;
            }
            let chosen = kubernetes.components.get(&binary.name);
            binaries.push(Self::binary(binary, minor, version, tags, chosen)?);
        }
        if let Some(name) = kubernetes
            .components
            .keys()
            .find(|name| !binaries.iter().any(|binary| &binary.name == *name))
        {
            return Err(ExpandError::ComponentNotInCluster {
                name: name.clone(),
                runtime: runtime.to_string(),
            });
        }

        let plane = &self.data.control_plane;
        let registry = &plane.registry;
        let mut images: Vec<String> = plane
            .kubernetes_images
            .iter()
            .map(|name| format!("{registry}/{name}:{version}"))
            .collect();
        images.push(format!("{registry}/{}:{}", plane.pause, tags.pause));
        images.push(format!("{registry}/{}:{}", plane.coredns, tags.coredns));
        images.push(format!("{registry}/{}:{}", plane.etcd, tags.etcd));

        let mut charts = Vec::new();
        if let Some(kind) = CniKind::of(kubernetes.cni) {
            let cni = self.cni(minor, kind)?;
            images.extend(cni.images.iter().cloned());
            charts.push(CatalogChart {
                name: cni.chart.name.clone(),
                version: cni.chart.version.clone(),
                source: cni.chart.source.clone(),
                images: cni.images.clone(),
            });
        }
        if kubernetes.multi_cni == MultiCni::Multus {
            images.extend(self.data.multus.images.iter().cloned());
        }
        images.extend(minor.ha.iter().cloned());
        let storage = kubernetes.storage.iter().map(|kind| self.storage(*kind));
        let addons = kubernetes.addons.iter().map(|addon| self.addon(*addon));
        for data in storage.chain(addons) {
            let data = data?;
            images.extend(data.images.iter().cloned());
            charts.push(data.chart());
        }

        Ok(Expansion {
            kubernetes: version.to_string(),
            binaries,
            images,
            charts,
            packages: self.packages(kubernetes),
        })
    }

    /// The packages `kubernetes`'s features need, in catalog order.
    fn packages(&self, kubernetes: &Kubernetes) -> Vec<RootPackage> {
        if !kubernetes.node_packages {
            return Vec::new();
        }
        let wanted = |feature: Feature| match feature {
            Feature::Kubeadm => true,
            Feature::Ipvs => kubernetes.kube_proxy_mode == KubeProxyMode::Ipvs,
            Feature::Nfs => kubernetes.storage.contains(&Storage::Nfs),
        };
        self.data
            .packages
            .iter()
            .filter(|package| wanted(package.feature))
            .map(|package| RootPackage {
                name: package.name.clone(),
                scope: package.scope,
                commands: package.commands.clone(),
                reason: package.feature.name().to_owned(),
            })
            .collect()
    }

    fn storage(&self, storage: Storage) -> Result<&ChartImages, ExpandError> {
        let key = match storage {
            Storage::Nfs => StorageKind::Nfs,
        };
        self.data
            .storage
            .get(&key)
            .ok_or_else(|| internal(&format!("no `storage.{}` entry", key.name())))
    }

    fn addon(&self, addon: Addon) -> Result<&ChartImages, ExpandError> {
        let key = match addon {
            Addon::Spegel => AddonKind::Spegel,
        };
        self.data
            .addons
            .get(&key)
            .ok_or_else(|| internal(&format!("no `addons.{}` entry", key.name())))
    }

    /// The entry for `version`'s minor, checking that the catalog knows the patch.
    fn minor(&self, version: KubernetesVersion) -> Result<&MinorData, ExpandError> {
        let name = format!("v{}.{}", version.major, version.minor);
        let minor = self
            .data
            .kubernetes
            .iter()
            .find(|minor| minor.minor == name)
            .ok_or_else(|| ExpandError::KubernetesNotInCatalog {
                version: version.to_string(),
                supported: self
                    .minors()
                    .iter()
                    .map(|minor| format!("`{minor}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        if version.patch > minor.latest_patch {
            return Err(ExpandError::KubernetesPatchUnknown {
                version: version.to_string(),
                latest: format!("{name}.{}", minor.latest_patch),
                minor: name,
            });
        }
        Ok(minor)
    }

    /// The binary's entry for `kubernetes`, at the version the manifest `chosen` for it
    /// (`spec.kubernetes.components`) or else the catalog's for the minor.
    fn binary(
        binary: &BinaryData,
        minor: &MinorData,
        kubernetes: KubernetesVersion,
        images: &KubeadmImages,
        chosen: Option<&String>,
    ) -> Result<CatalogBinary, ExpandError> {
        let catalogs = match binary.version_from {
            VersionFrom::Kubernetes => kubernetes.to_string(),
            VersionFrom::Etcd => etcd_release(&images.etcd),
            VersionFrom::Component => {
                minor.components.get(&binary.name).cloned().ok_or_else(|| {
                    internal(&format!(
                        "{} has no version of `{}`",
                        minor.minor, binary.name
                    ))
                })?
            }
        };
        let version = chosen.map_or(catalogs.clone(), |chosen| spelled_like(chosen, &catalogs));
        let sha256 = match &binary.sha256 {
            Some(pinned) => match pinned.get(&version) {
                Some(digests) => digests.clone(),
                None if chosen.is_some() => {
                    return Err(ExpandError::ComponentNotPinned {
                        name: binary.name.clone(),
                        version,
                        pinned: pinned.keys().cloned().collect::<Vec<_>>().join(", "),
                    });
                }
                None => {
                    return Err(internal(&format!(
                        "`{}` {version} has no pinned sha256",
                        binary.name
                    )));
                }
            },
            None => BTreeMap::new(),
        };
        Ok(CatalogBinary {
            name: binary.name.clone(),
            version,
            url: binary.url.clone(),
            checksum_url: binary.checksum_url.clone(),
            sha256,
            trust_on_first_use: binary.trust_on_first_use,
            arch_names: binary.arch_names.clone(),
        })
    }

    fn cni(&self, minor: &MinorData, kind: CniKind) -> Result<&CniData, ExpandError> {
        minor
            .cnis
            .get(&kind)
            .and_then(|id| self.data.cnis.get(id))
            .ok_or_else(|| internal(&format!("{} has no {} entry", minor.minor, kind.name())))
    }

    /// Parses and checks catalog data.
    fn parse(text: &str) -> Result<Catalog, CatalogError> {
        let data: Data = serde_saphyr::from_str(text)?;
        data.check()?;
        Ok(Catalog { data })
    }
}

/// `chosen` with or without a leading `v` as the catalog spells the component's versions
/// (`{version}` in its URLs): containerd's are `1.7.30` (its URLs add the `v`), runc's `v1.3.3`.
fn spelled_like(chosen: &str, catalogs: &str) -> String {
    let bare = chosen.strip_prefix('v').unwrap_or(chosen);
    if catalogs.starts_with('v') {
        format!("v{bare}")
    } else {
        bare.to_owned()
    }
}

impl CatalogBinary {
    /// How upstream spells `architecture` (a Go name) in this binary's URLs.
    pub fn arch_name<'a>(&'a self, architecture: &'a str) -> &'a str {
        self.arch_names
            .get(architecture)
            .map_or(architecture, String::as_str)
    }

    /// The download URL for `platform`, with the architecture spelled as upstream does.
    pub fn url_for(&self, platform: &Platform) -> String {
        self.expand(&self.url, platform)
    }

    /// The checksum file's URL for `platform`, if the binary has one.
    pub fn checksum_url_for(&self, platform: &Platform) -> Option<String> {
        self.checksum_url
            .as_ref()
            .map(|template| self.expand(template, platform))
    }

    fn expand(&self, template: &str, platform: &Platform) -> String {
        template
            .replace("{version}", &self.version)
            .replace("{os}", platform.os())
            .replace("{arch}", self.arch_name(platform.architecture()))
    }
}

impl Expansion {
    /// The expansion as JSON, in the manifest's spelling:
    ///
    /// ```json
    /// {"kubernetes": "v1.31.4",
    ///  "binaries": [{"name": "kubeadm", "version": "v1.31.4", "url": "…", "checksumUrl": "…"}],
    ///  "images": ["registry.k8s.io/kube-apiserver:v1.31.4"],
    ///  "charts": [{"name": "tigera-operator", "version": "v3.30.5", "repo": "…",
    ///              "images": ["quay.io/tigera/operator:v1.38.7", "…"]}]}
    /// ```
    ///
    /// A chart has `repo`, or `oci` for an OCI chart (as a manifest's chart entry does); its
    /// `images` are the ones it deploys (also listed in `images`). A binary has `checksumUrl` or, when pinned, `sha256` (an object of architecture to hex),
    /// or `trustOnFirstUse: true` when upstream publishes no checksum (the lock pins it);
    /// one whose URLs spell architectures differently from Go also has `archNames`.
    pub fn to_json(&self) -> Value {
        let binaries: Vec<Value> = self.binaries.iter().map(CatalogBinary::to_json).collect();
        let charts: Vec<Value> = self
            .charts
            .iter()
            .map(|chart| {
                json!({
                    "name": chart.name,
                    "version": chart.version,
                    chart.source.key(): chart.source.location(),
                    "images": chart.images,
                })
            })
            .collect();
        json!({
            "kubernetes": self.kubernetes,
            "binaries": binaries,
            "images": self.images,
            "charts": charts,
            "packages": self.packages,
        })
    }

    /// A human-readable table of the expansion, for `kk-bundle catalog`.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "Kubernetes {}: {}, {}, {}\n\nBINARIES\n",
            self.kubernetes,
            count(self.binaries.len(), "binary", "binaries"),
            count(self.images.len(), "image", "images"),
            count(self.charts.len(), "chart", "charts"),
        );
        let rows: Vec<[String; 4]> = self
            .binaries
            .iter()
            .map(|binary| {
                let verified_by = if binary.checksum_url.is_some() {
                    "checksum file".to_owned()
                } else if binary.trust_on_first_use {
                    "pinned by the lock (no published checksum)".to_owned()
                } else {
                    format!("pinned sha256 ({})", join_keys(&binary.sha256))
                };
                let url = binary.url.replace("{version}", &binary.version);
                let url = if binary.arch_names.is_empty() {
                    url
                } else {
                    let names: Vec<String> = binary
                        .arch_names
                        .iter()
                        .map(|(go, upstream)| format!("{go}={upstream}"))
                        .collect();
                    format!("{url}  [{{arch}}: {}]", names.join(", "))
                };
                [
                    binary.name.clone(),
                    binary.version.clone(),
                    verified_by,
                    url,
                ]
            })
            .collect();
        push_table(&mut out, ["NAME", "VERSION", "VERIFIED BY", "URL"], &rows);

        out.push_str("\nIMAGES\n");
        for image in &self.images {
            let _ = writeln!(out, "  {image}");
        }

        out.push_str("\nCHARTS\n");
        if self.charts.is_empty() {
            out.push_str("  (none)\n");
        } else {
            let rows: Vec<[String; 3]> = self
                .charts
                .iter()
                .map(|chart| {
                    [
                        chart.name.clone(),
                        chart.version.clone(),
                        chart.source.location().to_owned(),
                    ]
                })
                .collect();
            push_table(&mut out, ["NAME", "VERSION", "REPOSITORY"], &rows);
        }
        self.push_packages(&mut out);
        out
    }

    /// The `PACKAGES` section: what every set of `spec.osPackages` gets.
    fn push_packages(&self, out: &mut String) {
        out.push_str("\nPACKAGES (added to every set of spec.osPackages)\n");
        if self.packages.is_empty() {
            out.push_str("  (none)\n");
            return;
        }
        let rows: Vec<[String; 4]> = self
            .packages
            .iter()
            .map(|package| {
                [
                    package.name.clone(),
                    scope_name(package.scope).to_owned(),
                    package.reason.clone(),
                    package.commands.join(", "),
                ]
            })
            .collect();
        push_table(out, ["NAME", "SCOPE", "REASON", "COMMANDS"], &rows);
    }
}

impl CatalogBinary {
    fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".to_owned(), json!(self.name));
        object.insert("version".to_owned(), json!(self.version));
        object.insert("url".to_owned(), json!(self.url));
        match &self.checksum_url {
            Some(checksum_url) => {
                object.insert("checksumUrl".to_owned(), json!(checksum_url));
            }
            None if self.trust_on_first_use => {
                object.insert("trustOnFirstUse".to_owned(), json!(true));
            }
            None => {
                object.insert("sha256".to_owned(), json!(self.sha256));
            }
        }
        if !self.arch_names.is_empty() {
            object.insert("archNames".to_owned(), json!(self.arch_names));
        }
        Value::Object(object)
    }
}

/// Appends `rows` under `header` as left-aligned columns, two spaces apart, indented by two.
fn push_table<const N: usize>(out: &mut String, header: [&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut line = |cells: [&str; N]| {
        let mut text = String::from(" ");
        for (index, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if index + 1 == N {
                let _ = write!(text, " {cell}");
            } else {
                let _ = write!(text, " {cell:width$} ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
}

/// A scope as the catalog and the description spell it.
fn scope_name(scope: PackageScope) -> &'static str {
    match scope {
        PackageScope::All => "all",
        PackageScope::Kubernetes => "kubernetes",
        PackageScope::NfsServer => "nfs_server",
    }
}

/// `1 chart`, `2 charts`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn join_keys(map: &BTreeMap<String, String>) -> String {
    map.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// The etcd release an etcd image tag names: `3.5.15-0` (release 3.5.15, image revision 0) is
/// `v3.5.15`.
fn etcd_release(image_tag: &str) -> String {
    let release = image_tag
        .rsplit_once('-')
        .map_or(image_tag, |(release, _revision)| release);
    format!("v{release}")
}

fn internal(problem: &str) -> ExpandError {
    ExpandError::Internal(format!("version catalog: {problem}"))
}

// ---- the file's schema ----

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Data {
    control_plane: ControlPlane,
    binaries: Vec<BinaryData>,
    cnis: BTreeMap<String, CniData>,
    multus: MultusData,
    kubernetes: Vec<MinorData>,
    packages: Vec<PackageData>,
    storage: BTreeMap<StorageKind, ChartImages>,
    addons: BTreeMap<AddonKind, ChartImages>,
}

/// An OS package a cluster feature needs.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PackageData {
    name: String,
    feature: Feature,
    scope: PackageScope,
    commands: Vec<String>,
}

/// A cluster feature that brings OS packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Feature {
    Kubeadm,
    Ipvs,
    Nfs,
}

impl Feature {
    /// The name, which is also a root package's `reason`.
    fn name(self) -> &'static str {
        match self {
            Self::Kubeadm => "kubeadm",
            Self::Ipvs => "ipvs",
            Self::Nfs => "nfs",
        }
    }
}

/// A storage kind of `spec.kubernetes.storage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
enum StorageKind {
    Nfs,
}

impl StorageKind {
    const ALL: [StorageKind; 1] = [Self::Nfs];

    fn name(self) -> &'static str {
        match self {
            Self::Nfs => "nfs",
        }
    }
}

/// An optional addon of `spec.kubernetes.addons`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AddonKind {
    Spegel,
}

impl AddonKind {
    const ALL: [AddonKind; 1] = [Self::Spegel];

    fn name(self) -> &'static str {
        match self {
            Self::Spegel => "spegel",
        }
    }
}

/// What `multiCni: multus` adds for every minor besides its manifest (the `multus` binary):
/// the image the installer writes into that manifest.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MultusData {
    images: Vec<String>,
}

/// What a storage kind or an addon adds for every minor: its chart and the images it deploys.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ChartImages {
    chart: ChartData,
    images: Vec<String>,
}

impl ChartImages {
    /// The chart as an [`Expansion`] lists it.
    fn chart(&self) -> CatalogChart {
        CatalogChart {
            name: self.chart.name.clone(),
            version: self.chart.version.clone(),
            source: self.chart.source.clone(),
            images: self.images.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ControlPlane {
    registry: String,
    kubernetes_images: Vec<String>,
    pause: String,
    coredns: String,
    etcd: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BinaryData {
    name: String,
    #[serde(default)]
    version_from: VersionFrom,
    #[serde(default)]
    runtime: Option<RuntimeData>,
    /// Added only with this `multiCni` (multus's manifest).
    #[serde(default)]
    multi_cni: Option<MultiCni>,
    url: String,
    #[serde(default)]
    checksum_url: Option<String>,
    /// Version → Go architecture → hex.
    #[serde(default)]
    sha256: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// Upstream publishes no checksum: the first build's lock pins the file. FACTS.md must
    /// say why for every binary marked so.
    #[serde(default)]
    trust_on_first_use: bool,
    #[serde(default)]
    arch_names: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
enum VersionFrom {
    Kubernetes,
    Etcd,
    #[default]
    Component,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RuntimeData {
    Containerd,
    Docker,
}

impl RuntimeData {
    fn runtime(self) -> ContainerRuntime {
        match self {
            Self::Containerd => ContainerRuntime::Containerd,
            Self::Docker => ContainerRuntime::Docker,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CniData {
    cni: CniKind,
    chart: ChartData,
    images: Vec<String>,
}

/// A network plugin the catalog can install (`none` installs nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CniKind {
    Calico,
    Cilium,
    Flannel,
    Hybridnet,
    #[serde(rename = "kube-ovn")]
    KubeOvn,
}

impl CniKind {
    const ALL: [CniKind; 5] = [
        Self::Calico,
        Self::Cilium,
        Self::Flannel,
        Self::Hybridnet,
        Self::KubeOvn,
    ];

    fn of(cni: Cni) -> Option<Self> {
        match cni {
            Cni::Calico => Some(Self::Calico),
            Cni::Cilium => Some(Self::Cilium),
            Cni::Flannel => Some(Self::Flannel),
            Cni::Hybridnet => Some(Self::Hybridnet),
            Cni::KubeOvn => Some(Self::KubeOvn),
            Cni::None => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Calico => "calico",
            Self::Cilium => "cilium",
            Self::Flannel => "flannel",
            Self::Hybridnet => "hybridnet",
            Self::KubeOvn => "kube-ovn",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MinorData {
    minor: String,
    latest_patch: u32,
    kubeadm: Vec<KubeadmImages>,
    components: BTreeMap<String, String>,
    cnis: BTreeMap<CniKind, String>,
    ha: Vec<String>,
}

impl MinorData {
    fn kubeadm_for(&self, patch: u32) -> Option<&KubeadmImages> {
        self.kubeadm
            .iter()
            .find(|set| (set.patches[0]..=set.patches[1]).contains(&patch))
    }
}

/// The tags `kubeadm config images list` prints for an inclusive range of patch releases.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KubeadmImages {
    patches: [u32; 2],
    pause: String,
    coredns: String,
    etcd: String,
}

/// `v1.31` → `(1, 31)`.
fn parse_minor(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.strip_prefix('v')?.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

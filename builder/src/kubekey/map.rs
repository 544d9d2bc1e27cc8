//! The mapping of each part of a KubeKey v3 `Manifest` onto kk's bundle manifest.
//!
//! Every field of KubeKey's schema (`cmd/kk/apis/kubekey/v1alpha2/manifest_types.go`) is
//! either carried into [`Converted`] or named in a warning; `map`'s tests hold that for the
//! whole schema.

use serde_saphyr::Spanned;

use bundle_spec::manifest::SourceLocation;

use super::auths::{self, RegistryPart};
use super::node::Node;
use super::read::Reader;
use super::systems::{self, OsPackagesPart};
use super::{KubeKeyError, Options};

/// What a KubeKey manifest asks for, in kk's terms, ready to render.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Converted {
    /// `metadata.name`.
    pub(super) name: String,
    /// `spec.platforms`, as `linux/<arch>`.
    pub(super) platforms: Vec<String>,
    /// `spec.kubernetes`, when a Kubernetes distribution is asked for.
    pub(super) kubernetes: Option<KubernetesPart>,
    /// `spec.images`, distinct, in KubeKey's order.
    pub(super) images: Vec<String>,
    /// `spec.registries`, in KubeKey's order.
    pub(super) registries: Vec<RegistryPart>,
    /// `spec.osPackages` entries that need a repository URL only the user can give.
    pub(super) os_packages: Vec<OsPackagesPart>,
}

/// `spec.kubernetes`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct KubernetesPart {
    pub(super) version: String,
    /// Where KubeKey names the version.
    pub(super) version_at: SourceLocation,
    pub(super) container_runtime: &'static str,
    pub(super) cni: &'static str,
    /// `components`: kk component name and version, in KubeKey's order.
    pub(super) components: Vec<(&'static str, String)>,
}

/// The fields of KubeKey's `ManifestSpec`.
const SPEC_FIELDS: [&str; 6] = [
    "arches",
    "operatingSystems",
    "kubernetesDistributions",
    "components",
    "images",
    "registry",
];

/// The components KubeKey's manifest names that kk carries: KubeKey's name and kk's
/// (`spec.kubernetes.components`).
const CARRIED: [(&str, &str); 4] = [
    ("helm", "helm"),
    ("cni", "cni-plugins"),
    ("etcd", "etcd"),
    ("crictl", "crictl"),
];

/// The components kk does not carry, and why.
const NOT_CARRIED: [(&str, &str); 4] = [
    (
        "docker-registry",
        "kk serves the bundle's images from its own registry (`kk-install registry serve`)",
    ),
    (
        "harbor",
        "kk has no Harbor; it serves the bundle's images from its own registry (`kk-install registry serve`)",
    ),
    (
        "docker-compose",
        "kk needs no docker-compose: it runs no Harbor",
    ),
    (
        "calicoctl",
        "kk installs Calico through its operator and bundles no calicoctl",
    ),
];

/// The network plugins kk can install, recognised by an image repository path in
/// `spec.images`: KubeKey's manifest has no network field, but lists the plugin's images.
const CNI_IMAGES: [(&str, &str); 5] = [
    ("calico/node", "calico"),
    ("cilium/cilium", "cilium"),
    ("flannel", "flannel"),
    ("kubeovn/kube-ovn", "kube-ovn"),
    ("hybridnet", "hybridnet"),
];

/// Maps the root of a KubeKey manifest (header already checked).
pub(super) fn manifest(
    reader: &mut Reader,
    root: &Spanned<Node>,
    options: &Options,
) -> Result<Converted, KubeKeyError> {
    let top = reader.fields(root, "", &["apiVersion", "kind", "metadata", "spec"])?;
    let mut converted = Converted {
        name: "kubekey".to_owned(),
        ..Converted::default()
    };
    if let Some(metadata) = top.get("metadata") {
        let fields = reader.fields(metadata, "metadata", &["name"])?;
        reader
            .text(fields.get("name"), "metadata.name")?
            .unwrap_or("kubekey")
            .clone_into(&mut converted.name);
    }
    let Some(spec) = top.get("spec") else {
        return Ok(converted);
    };
    let spec = reader.fields(spec, "spec", &SPEC_FIELDS)?;
    converted.platforms = arches(reader, spec.get("arches"))?;
    converted.images = images(reader, spec.get("images"))?;
    converted.os_packages = systems::operating_systems(
        reader,
        spec.get("operatingSystems"),
        &converted.platforms,
        options,
    )?;
    converted.registries = auths::registry(reader, spec.get("registry"))?;
    let components = match spec.get("components") {
        Some(node) => components(reader, node)?,
        None => Components::default(),
    };
    converted.kubernetes = kubernetes(
        reader,
        spec.get("kubernetesDistributions"),
        components,
        &converted.images,
        spec.get("images").unwrap_or(root),
    )?;
    Ok(converted)
}

fn arches(reader: &mut Reader, node: Option<&Spanned<Node>>) -> Result<Vec<String>, KubeKeyError> {
    let mut platforms: Vec<String> = Vec::new();
    for arch in reader.list(node, "spec.arches")? {
        if let Some(arch) = reader.text(Some(arch), "spec.arches[]")? {
            let platform = format!("linux/{arch}");
            if !platforms.contains(&platform) {
                platforms.push(platform);
            }
        }
    }
    Ok(platforms)
}

fn images(reader: &mut Reader, node: Option<&Spanned<Node>>) -> Result<Vec<String>, KubeKeyError> {
    let mut images: Vec<String> = Vec::new();
    for image in reader.list(node, "spec.images")? {
        let Some(reference) = reader.text(Some(image), "spec.images[]")? else {
            continue;
        };
        if images.iter().any(|known| known == reference) {
            reader.warn(
                image,
                format!("image `{reference}` is listed twice; bundled once"),
            );
        } else {
            images.push(reference.to_owned());
        }
    }
    Ok(images)
}

/// The components kk takes from `spec.components`, before the runtime is known.
#[derive(Default)]
struct Components {
    /// kk component name, version, and where KubeKey names it.
    versions: Vec<(&'static str, String, SourceLocation)>,
    /// `containerRuntimes[]`: type, version (if any), and where the entry is.
    runtimes: Vec<(String, Option<String>, SourceLocation)>,
}

fn components(reader: &mut Reader, node: &Spanned<Node>) -> Result<Components, KubeKeyError> {
    let known: Vec<&str> = CARRIED
        .iter()
        .chain(NOT_CARRIED.iter())
        .map(|(name, _)| *name)
        .chain(["containerRuntimes"])
        .collect();
    let fields = reader.fields(node, "spec.components", &known)?;
    let mut components = Components::default();
    for (kubekey, kk) in CARRIED {
        let Some(node) = fields.get(kubekey) else {
            continue;
        };
        let path = format!("spec.components.{kubekey}");
        if let Some(version) = version_of(reader, node, &path)? {
            if release_version(version) {
                components
                    .versions
                    .push((kk, version.to_owned(), reader.at(node)));
            } else {
                reader.warn(
                    node,
                    format!(
                        "`{path}.version` `{version}` is not a release version (MAJOR.MINOR.PATCH); kk uses its catalog's {kk}"
                    ),
                );
            }
        }
    }
    for (kubekey, why) in NOT_CARRIED {
        let Some(node) = fields.get(kubekey) else {
            continue;
        };
        let path = format!("spec.components.{kubekey}");
        if let Some(version) = version_of(reader, node, &path)? {
            reader.warn(node, format!("`{path}` {version} is not bundled: {why}"));
        }
    }
    for runtime in reader.list(
        fields.get("containerRuntimes"),
        "spec.components.containerRuntimes",
    )? {
        let path = "spec.components.containerRuntimes[]";
        let entry = reader.fields(runtime, path, &["type", "version"])?;
        let kind = reader.text(entry.get("type"), &format!("{path}.type"))?;
        let version = reader.text(entry.get("version"), &format!("{path}.version"))?;
        if let Some(kind) = kind {
            components.runtimes.push((
                kind.to_owned(),
                version.map(str::to_owned),
                reader.at(runtime),
            ));
        }
    }
    Ok(components)
}

/// The `version` of a component's mapping (`helm: {version: v3.9.0}`).
fn version_of<'n>(
    reader: &mut Reader,
    node: &'n Spanned<Node>,
    path: &str,
) -> Result<Option<&'n str>, KubeKeyError> {
    let fields = reader.fields(node, path, &["version"])?;
    reader.text(fields.get("version"), &format!("{path}.version"))
}

/// Whether `version` is `MAJOR.MINOR.PATCH`, with or without a leading `v`, as
/// `spec.kubernetes.components` takes it.
fn release_version(version: &str) -> bool {
    let numbers: Vec<&str> = version
        .strip_prefix('v')
        .unwrap_or(version)
        .split('.')
        .collect();
    numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn kubernetes(
    reader: &mut Reader,
    node: Option<&Spanned<Node>>,
    components: Components,
    images: &[String],
    images_node: &Spanned<Node>,
) -> Result<Option<KubernetesPart>, KubeKeyError> {
    let mut chosen: Option<(String, SourceLocation)> = None;
    for distribution in reader.list(node, "spec.kubernetesDistributions")? {
        let path = "spec.kubernetesDistributions[]";
        let fields = reader.fields(distribution, path, &["type", "version"])?;
        let kind = reader.text(fields.get("type"), &format!("{path}.type"))?;
        let version = reader.text(fields.get("version"), &format!("{path}.version"))?;
        let (Some(kind), Some(version)) = (kind, version) else {
            reader.warn(
                distribution,
                "a Kubernetes distribution without `type` and `version`; ignored".to_owned(),
            );
            continue;
        };
        if kind != "kubernetes" {
            reader.warn(
                distribution,
                format!("distribution `{kind}` {version} is not bundled: kk installs kubeadm clusters (`type: kubernetes`)"),
            );
        } else if let Some((first, _)) = &chosen {
            reader.warn(
                distribution,
                format!("kubernetes {version} is not bundled: a kk bundle carries one Kubernetes version and this one has {first}; convert a copy for {version}"),
            );
        } else {
            chosen = Some((version.to_owned(), reader.at(distribution)));
        }
    }
    let Some((version, version_at)) = chosen else {
        warn_unused_components(reader, components);
        return Ok(None);
    };
    let (container_runtime, mut versions) = runtime(reader, &components.runtimes);
    versions.extend(
        components
            .versions
            .into_iter()
            .map(|(name, version, _)| (name, version)),
    );
    Ok(Some(KubernetesPart {
        version,
        version_at,
        container_runtime,
        cni: cni(reader, images, images_node),
        components: versions,
    }))
}

/// Components need a cluster: without one, every version given is named.
fn warn_unused_components(reader: &mut Reader, components: Components) {
    for (kind, version, at) in components.runtimes {
        let version = version.unwrap_or_default();
        reader.warn_at(
            at,
            format!("container runtime `{kind}` {version} is not bundled: kk bundles a runtime only with a Kubernetes distribution"),
        );
    }
    for (name, version, at) in components.versions {
        reader.warn_at(
            at,
            format!("component `{name}` {version} is not bundled: kk bundles it only with a Kubernetes distribution"),
        );
    }
}

/// kk's container runtime from `containerRuntimes`, and its version as a component.
///
/// KubeKey lists docker beside containerd even for a containerd cluster (it installs
/// docker's containerd); kk installs containerd alone, so containerd wins.
fn runtime(
    reader: &mut Reader,
    runtimes: &[(String, Option<String>, SourceLocation)],
) -> (&'static str, Vec<(&'static str, String)>) {
    let has = |kind: &str| runtimes.iter().any(|(k, _, _)| k == kind);
    let chosen = if has("containerd") || !has("docker") {
        "containerd"
    } else {
        "docker"
    };
    let mut versions = Vec::new();
    for (kind, version, at) in runtimes {
        let version_text = version.as_deref().unwrap_or("");
        if kind == chosen {
            match version {
                Some(version) if release_version(version) => {
                    versions.push((chosen, version.clone()));
                }
                Some(version) => reader.warn_at(
                    at.clone(),
                    format!("{kind} `{version}` is not a release version (MAJOR.MINOR.PATCH); kk uses its catalog's {kind}"),
                ),
                None => {}
            }
        } else if kind == "docker" {
            reader.warn_at(
                at.clone(),
                format!("docker {version_text} is not bundled: kk runs containerd on its own, without docker"),
            );
        } else {
            reader.warn_at(
                at.clone(),
                format!("container runtime `{kind}` {version_text} is not bundled: kk installs containerd or docker; it uses {chosen}"),
            );
        }
    }
    (chosen, versions)
}

/// The network plugin whose images `spec.images` lists; calico (kk's default) when none.
fn cni(reader: &mut Reader, images: &[String], node: &Spanned<Node>) -> &'static str {
    let found = CNI_IMAGES.iter().find(|(path, _)| {
        images.iter().any(|image| {
            image.contains(&format!("/{path}:")) || image.contains(&format!("/{path}@"))
        })
    });
    if let Some((_, cni)) = found {
        cni
    } else {
        reader.warn(
                node,
                "no network plugin's image in `spec.images`; kk installs calico, its default (set `spec.kubernetes.cni` to change it)".to_owned(),
            );
        "calico"
    }
}

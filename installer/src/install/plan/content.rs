//! What the plan reads from the bundle's description: the binaries, images and charts it
//! carries, by name, and the Kubernetes version its kubeadm has. The steps fetch from the
//! registry exactly what is found here, and a missing piece is a plan error, not a failure on
//! a node.

use std::collections::{BTreeMap, BTreeSet};

use bundle_spec::{ArtifactKind, Description, Sha256Digest};

use super::BinaryFetch;
use crate::install::error::PlanError;

/// Where a node keeps the charts it fetched.
pub const CHARTS_DIR: &str = "/var/lib/kk/charts";

/// An image reference without its tag or digest.
fn repository(reference: &str) -> &str {
    bundle_spec::oci::ReferenceParts::split(reference).repository
}

/// What the plan reads from the bundle's description.
#[derive(Debug, Default)]
pub(super) struct Content {
    /// The version of the bundle's kubeadm, if it carries one.
    pub(super) kubernetes_version: Option<String>,
    /// By name: reference and the manifest digests of every platform.
    binaries: BTreeMap<String, (String, Vec<Sha256Digest>)>,
    /// By name: the version of every binary.
    pub(super) versions: BTreeMap<String, String>,
    /// Every image by its original reference.
    pub(super) images: Vec<String>,
    /// The registry hosts the images are named by, sorted.
    pub(super) image_hosts: Vec<String>,
    /// By chart name: version, reference and manifest digest.
    charts: BTreeMap<String, (String, String, Sha256Digest)>,
    /// By reference: the manifest digest of each operating-system package.
    pub(super) packages: BTreeMap<String, Sha256Digest>,
    /// The first path component of every repository (a Harbor project each).
    projects: BTreeSet<String>,
    /// The platforms of the images, in the order the bundle lists them first.
    pub(super) platforms: Vec<String>,
}

impl Content {
    /// What `description` lists, each binary with the digests of all its platforms.
    pub(super) fn of(description: &Description) -> Self {
        let mut content = Self::default();
        for artifact in &description.artifacts {
            // Images are stored under their rule-1 name, everything else under its reference.
            let stored = match artifact.kind {
                ArtifactKind::Image => artifact.name.as_str(),
                _ => repository(&artifact.reference),
            };
            if let Some((project, _)) = stored.split_once('/') {
                content.projects.insert(project.to_owned());
            }
            match artifact.kind {
                ArtifactKind::Binary => {
                    let entry = content
                        .binaries
                        .entry(artifact.name.clone())
                        .or_insert_with(|| (artifact.reference.clone(), Vec::new()));
                    if !entry.1.contains(&artifact.digest) {
                        entry.1.push(artifact.digest);
                    }
                    content
                        .versions
                        .insert(artifact.name.clone(), artifact.version.clone());
                    if artifact.name == "kubeadm" {
                        content.kubernetes_version = Some(artifact.version.clone());
                    }
                }
                ArtifactKind::Image => {
                    if let Some(platform) = &artifact.platform
                        && !content.platforms.contains(platform)
                    {
                        content.platforms.push(platform.clone());
                    }
                    if !content.images.contains(&artifact.reference) {
                        content.images.push(artifact.reference.clone());
                    }
                    if let Some((host, _)) = artifact.name.split_once('/')
                        && !content.image_hosts.iter().any(|h| h == host)
                    {
                        content.image_hosts.push(host.to_owned());
                    }
                }
                ArtifactKind::Chart => {
                    content.charts.insert(
                        artifact.name.clone(),
                        (
                            artifact.version.clone(),
                            artifact.reference.clone(),
                            artifact.digest,
                        ),
                    );
                }
                ArtifactKind::Package => {
                    content
                        .packages
                        .insert(artifact.reference.clone(), artifact.digest);
                }
                ArtifactKind::File => {}
            }
        }
        content.image_hosts.sort();
        content
    }

    /// The Harbor projects the bundle's repositories need, sorted.
    pub(super) fn projects(&self) -> Vec<String> {
        self.projects.iter().cloned().collect()
    }

    /// The binary called `name`, fetched into `into` on the node (only `files` of it, or all
    /// of an archive's files when empty).
    pub(super) fn binary(
        &self,
        name: &str,
        into: &str,
        files: &[&str],
    ) -> Result<BinaryFetch, PlanError> {
        let (reference, digests) =
            self.binaries
                .get(name)
                .ok_or_else(|| PlanError::MissingBinary {
                    name: name.to_owned(),
                })?;
        Ok(BinaryFetch {
            name: name.to_owned(),
            reference: reference.clone(),
            digests: digests.clone(),
            into: into.to_owned(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
        })
    }

    /// The chart called `name`, as a node fetches it: the `.tgz` itself, under
    /// `/var/lib/kk/charts/<name>-<version>.tgz`.
    pub(super) fn chart(&self, name: &str) -> Result<BinaryFetch, PlanError> {
        let (version, reference, digest) =
            self.charts
                .get(name)
                .ok_or_else(|| PlanError::MissingChart {
                    name: name.to_owned(),
                })?;
        Ok(BinaryFetch {
            name: name.to_owned(),
            reference: reference.clone(),
            digests: vec![*digest],
            into: CHARTS_DIR.to_owned(),
            files: vec![format!("{name}-{version}.tgz")],
        })
    }

    /// The image whose repository path ends with `path` (`kube-vip/kube-vip`).
    pub(super) fn image_named(&self, path: &str) -> Result<String, PlanError> {
        self.images
            .iter()
            .find(|reference| repository(reference).ends_with(&format!("/{path}")))
            .cloned()
            .ok_or_else(|| PlanError::MissingImage {
                name: path.to_owned(),
            })
    }

    /// The registry host of the image whose repository path ends with `path`.
    pub(super) fn image_host_of(&self, path: &str) -> Option<String> {
        let image = self.image_named(path).ok()?;
        image.split_once('/').map(|(host, _)| host.to_owned())
    }

    /// containerd (its daemon, shim and `ctr`), runc, the CNI plugins and crictl.
    pub(super) fn runtime_binaries(&self) -> Result<Vec<BinaryFetch>, PlanError> {
        Ok(vec![
            self.binary(
                "containerd",
                "/usr/local/bin",
                &["containerd", "containerd-shim-runc-v2", "ctr"],
            )?,
            self.binary("runc", "/usr/local/sbin", &["runc"])?,
            self.binary("cni-plugins", "/opt/cni/bin", &[])?,
            self.binary("crictl", "/usr/local/bin", &["crictl"])?,
        ])
    }

    /// docker's static tarball (dockerd, the CLI and the containerd and runc it runs on, all
    /// into `/usr/local/bin`, where dockerd finds runc on its `PATH`), cri-dockerd, the CNI
    /// plugins and crictl (kubeadm's preflight runs it against cri-dockerd).
    pub(super) fn docker_binaries(&self) -> Result<Vec<BinaryFetch>, PlanError> {
        Ok(vec![
            self.binary(
                "docker",
                "/usr/local/bin",
                &[
                    "containerd",
                    "containerd-shim-runc-v2",
                    "ctr",
                    "docker",
                    "dockerd",
                    "docker-init",
                    "docker-proxy",
                    "runc",
                ],
            )?,
            self.binary("cri-dockerd", "/usr/local/bin", &["cri-dockerd"])?,
            self.binary("cni-plugins", "/opt/cni/bin", &[])?,
            self.binary("crictl", "/usr/local/bin", &["crictl"])?,
        ])
    }

    /// The pause image: the image whose repository is `pause` (kubeadm's sandbox image).
    pub(super) fn pause_image(&self) -> Option<String> {
        self.images
            .iter()
            .find(|reference| repository(reference).rsplit('/').next() == Some("pause"))
            .cloned()
    }
}

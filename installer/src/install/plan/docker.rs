//! The docker runtime's plan (`cri.container_manager: docker`): which docker the bundle
//! carries, refused when older than 28, cri-dockerd's flags, and the credentials dockerd sends
//! to an external registry.

use bundle_spec::manifest::ContainerRuntime;
use serde::Serialize;

use super::{Action, BinaryFetch, Content, RegistryAuth};
use crate::install::error::PlanError;
use crate::install::render::docker::{CRI_SOCKET, CRI_UNIT};
use crate::install::render::{CONTAINERD_UNIT, kubernetes::paths::CRI_SOCKET as CONTAINERD_SOCKET};

/// The oldest docker kk installs: from 28.0, dockerd with the containerd image store resolves
/// every registry host through `/etc/docker/certs.d/<host>/hosts.toml` (moby `daemon/hosts.go`),
/// which is how images keep their original names; older dockerd mirrors Docker Hub only.
pub const MIN_DOCKER_MAJOR: u32 = 28;

/// How docker is set up on the Kubernetes nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DockerPlan {
    /// The version of the bundle's docker static tarball.
    pub version: String,
    /// cri-dockerd's socket: kubeadm's `criSocket`, the kubelet's
    /// `--container-runtime-endpoint`.
    pub cri_socket: String,
    /// cri-dockerd's flags besides its listening socket.
    pub cri_dockerd_flags: Vec<String>,
    /// The external registry's credentials, which dockerd sends to it as the mirror of every
    /// image host (a header in each `hosts.toml`, see `render::docker::hosts_toml` for why no
    /// `config.json` would do); `None` when the registry needs none.
    pub mirror_auth: Option<RegistryAuth>,
}

impl DockerPlan {
    /// The plan for the bundle's docker `version`, with `pause_image` (by its original name) as
    /// cri-dockerd's sandbox image and `mirror_auth` the mirror's credentials.
    pub(super) fn new(
        version: &str,
        pause_image: &str,
        mirror_auth: Option<RegistryAuth>,
    ) -> Result<Self, PlanError> {
        let major = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|major| major.parse::<u32>().ok());
        match major {
            Some(major) if major >= MIN_DOCKER_MAJOR => {}
            _ => {
                return Err(PlanError::DockerTooOld {
                    version: version.to_owned(),
                });
            }
        }
        Ok(Self {
            version: version.to_owned(),
            cri_socket: CRI_SOCKET.to_owned(),
            cri_dockerd_flags: vec![
                // Pods are attached by the cluster's CNI, as with containerd.
                "--network-plugin=cni".to_owned(),
                "--cni-bin-dir=/opt/cni/bin".to_owned(),
                "--cni-conf-dir=/etc/cni/net.d".to_owned(),
                // The sandbox image by its original name: dockerd pulls it through certs.d.
                format!("--pod-infra-container-image={pause_image}"),
            ],
            mirror_auth,
        })
    }
}

/// The container runtime the plan chose: what the runtime nodes fetch and the step that sets it
/// up.
pub(super) struct RuntimeChoice {
    /// The runtime's binaries, its own release first.
    pub(super) binaries: Vec<BinaryFetch>,
    /// The bundle's containerd version; empty with docker, whose tarball carries its own.
    pub(super) containerd_version: String,
    /// docker's plan, with docker.
    pub(super) docker: Option<DockerPlan>,
    /// `runtime.containerd` or `runtime.docker`.
    pub(super) action: Action,
}

impl RuntimeChoice {
    /// `runtime` from the bundle's `content`, `pause_image` being the sandbox image and
    /// `mirror_auth` the credentials of the registry the nodes pull from.
    pub(super) fn new(
        runtime: ContainerRuntime,
        content: &Content,
        pause_image: &str,
        mirror_auth: Option<&RegistryAuth>,
    ) -> Result<Self, PlanError> {
        let docker = runtime == ContainerRuntime::Docker;
        let binaries = if docker {
            content.docker_binaries()?
        } else {
            content.runtime_binaries()?
        };
        // The first binary is containerd's or docker's release, tagged with its version.
        let version = bundle_spec::oci::ReferenceParts::split(&binaries[0].reference)
            .tag
            .unwrap_or_default()
            .to_owned();
        Ok(if docker {
            Self {
                binaries,
                containerd_version: String::new(),
                docker: Some(DockerPlan::new(
                    &version,
                    pause_image,
                    mirror_auth.cloned(),
                )?),
                action: Action::Docker,
            }
        } else {
            Self {
                binaries,
                containerd_version: version,
                docker: None,
                action: Action::Containerd,
            }
        })
    }

    /// The kubelet's CRI endpoint: cri-dockerd's with docker, else containerd's.
    pub(super) fn cri_socket(&self) -> &str {
        self.docker
            .as_ref()
            .map_or(CONTAINERD_SOCKET, |d| d.cri_socket.as_str())
    }

    /// The systemd unit serving [`Self::cri_socket`], which the kubelet wants and follows.
    pub(super) fn cri_unit(&self) -> &'static str {
        if self.docker.is_some() {
            CRI_UNIT
        } else {
            CONTAINERD_UNIT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_28_and_newer_is_planned_older_is_refused_with_the_reason() {
        for (version, planned) in [
            ("28.5.2", true),
            ("v28.0.0", true),
            ("29.1.0", true),
            ("27.5.1", false),
            ("24.0.9", false),
            ("latest", false),
        ] {
            let plan = DockerPlan::new(version, "registry.k8s.io/pause:3.10", None);
            assert_eq!(plan.is_ok(), planned, "{version}");
            if let Err(err) = plan {
                let message = err.to_string();
                assert!(message.contains(&format!("`{version}`")), "{message}");
                assert!(message.contains("hosts.toml"), "{message}");
                assert!(message.contains("hint:"), "{message}");
            }
        }
    }

    #[test]
    fn cri_dockerd_gets_the_pause_image_by_its_original_name() {
        let plan = DockerPlan::new("28.5.2", "registry.k8s.io/pause:3.10", None).expect("plan");
        assert!(
            plan.cri_dockerd_flags
                .contains(&"--pod-infra-container-image=registry.k8s.io/pause:3.10".to_owned())
        );
        assert_eq!(plan.cri_socket, "unix:///run/cri-dockerd.sock");
    }
}

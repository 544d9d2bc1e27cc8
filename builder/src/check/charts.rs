//! Every bundled chart, rendered as the install will render it, names only images the bundle
//! carries.
//!
//! The commonest airgap failure is an image a chart needs that the bundle lacks, found only
//! inside the datacenter. So after fetching, each chart's `.tgz` is rendered offline with
//! `helm template` — with the values the install uses: the catalog's CNI values
//! ([`bundle_spec::charts::cni_values`], for the default pod range) for the network plugin's
//! chart, the chart's defaults for the others — and the images it names are compared with the
//! bundle's as containerd resolves them ([`bundle_spec::charts::missing_images`], the very
//! comparison `kk-install` makes before applying a chart). A missing image fails the build
//! unless `--allow-missing-chart-images` makes it a warning.
//!
//! Where no helm can render (none bundled for this machine, none on `PATH`) the check says so in
//! a warning: the charts are never silently unchecked. An addon chart that does not render with
//! its defaults (a `required` value) is reported unchecked in a warning too, since the install
//! renders it with the operator's own values; the CNI chart, rendered with exactly the install's
//! values, must render.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bundle_spec::Sha256Digest;
use std::net::{IpAddr, Ipv4Addr};

use bundle_spec::charts::{ClusterRanges, CniChart, cni_values, missing_images};
use bundle_spec::manifest::{Cni, Kubernetes};

use super::helm::{self, Helm};
use super::{ChartMiss, CheckError, RenderProblem};
use crate::cache::CachedBlob;
use crate::catalog::Expansion;
use crate::progress::Progress;
use crate::resolve::binary::ResolvedFile;
use crate::resolve::chart::ResolvedChart;
use crate::resolve::image::ResolvedImage;

/// What the chart check reads from a build: what was fetched and how the bundle will be
/// installed.
#[derive(Debug)]
pub struct ChartCheck<'a> {
    /// The container images fetched.
    pub images: &'a [ResolvedImage],
    /// The charts fetched from registries (`oci://`).
    pub oci_charts: &'a [ResolvedImage],
    /// The images' and OCI charts' blobs, by digest.
    pub blobs: &'a BTreeMap<Sha256Digest, CachedBlob>,
    /// The binaries fetched, per binary one file per platform (helm among them, perhaps).
    pub binaries: &'a [Vec<ResolvedFile>],
    /// The charts fetched from HTTP repositories.
    pub charts: &'a [ResolvedChart],
    /// The manifest's `spec.kubernetes`: the version charts are rendered for, and the CNI.
    pub kubernetes: Option<&'a Kubernetes>,
    /// The catalog's expansion, whose charts are the network plugin's.
    pub expansion: Option<&'a Expansion>,
    /// `--allow-missing-chart-images`: warn instead of failing.
    pub allow_missing: bool,
    /// Where to keep the extracted helm and the values files for the check's duration (the
    /// cache directory: `/tmp` may be mounted `noexec`).
    pub work_dir: &'a Path,
}

/// Renders every bundled chart and fails (or warns, with `allow_missing`) if one names an
/// image the bundle lacks.
pub async fn check_chart_images(
    check: &ChartCheck<'_>,
    progress: &Progress,
) -> Result<(), CheckError> {
    let charts = bundled_charts(check);
    if charts.is_empty() {
        return Ok(());
    }
    let Some(helm) = choose_helm(check) else {
        tracing::warn!(
            "charts were not checked for missing images: no helm for this machine in the bundle and none on PATH; hint: put helm on PATH to have them checked"
        );
        return Ok(());
    };
    progress.phase("checking chart images");
    let work = tempfile::Builder::new()
        .prefix(".chart-check-")
        .tempdir_in(check.work_dir)
        .map_err(|source| CheckError::File {
            path: check.work_dir.to_path_buf(),
            source,
        })?;
    let renderer = Renderer {
        helm: helm.executable(work.path()).await?,
        work: work.path(),
        kube_version: check.kubernetes.map(|k| k.version.to_string()),
    };
    let (cni, images) = (cni_chart(check)?, bundled_images(check));
    let mut misses = Vec::new();
    for chart in &charts {
        let values = install_values(cni.as_ref(), chart);
        misses.extend(renderer.check(chart, values.as_deref(), &images).await?);
    }
    verdict(misses, check.allow_missing)
}

/// The bundle's helm for this machine, else the one on `PATH`.
fn choose_helm<'a>(check: &ChartCheck<'a>) -> Option<Helm<'a>> {
    let bundled: Vec<&ResolvedFile> = check
        .binaries
        .iter()
        .flatten()
        .filter(|file| file.name == "helm")
        .collect();
    let on_path = helm::on_path(std::env::var_os("PATH").as_deref());
    helm::choose(&bundled, helm::machine().as_ref(), on_path)
}

/// The values the install gives `chart`: the CNI's for the network plugin's chart (with the
/// install's default pod and service ranges and node masks), none (its defaults) for any other.
fn install_values(cni: Option<&(&str, CniChart)>, chart: &BundledChart) -> Option<String> {
    let (_, cni) = cni.filter(|(name, _)| *name == chart.name)?;
    Some(cni_values(cni, &ClusterRanges::DEFAULT))
}

/// The build's outcome for `misses`: an error listing them, or with `allow_missing` a warning
/// per chart.
fn verdict(misses: Vec<ChartMiss>, allow_missing: bool) -> Result<(), CheckError> {
    if misses.is_empty() {
        return Ok(());
    }
    if !allow_missing {
        return Err(CheckError::ChartImagesMissing { misses });
    }
    for miss in &misses {
        tracing::warn!(
            "{miss}; building anyway (`--allow-missing-chart-images`): the install will refuse the chart until they are in the bundle"
        );
    }
    Ok(())
}

/// A bundled chart: its name, version and package.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BundledChart {
    name: String,
    version: String,
    tgz: PathBuf,
}

/// The charts of the bundle, HTTP ones and OCI ones; an OCI artifact without a chart layer is
/// reported unchecked.
fn bundled_charts(check: &ChartCheck<'_>) -> Vec<BundledChart> {
    let mut charts: Vec<BundledChart> = check
        .charts
        .iter()
        .map(|chart| BundledChart {
            name: chart.name.clone(),
            version: chart.version.clone(),
            tgz: chart.tgz.path.clone(),
        })
        .collect();
    for image in check.oci_charts {
        let reference = &image.source.reference;
        let name = reference
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or_default();
        let version = reference.tag().unwrap_or_default();
        let layer = image
            .blobs
            .iter()
            .find(|blob| blob.media_type == bundle_spec::oci::HELM_CHART_MEDIA_TYPE)
            .and_then(|blob| check.blobs.get(&blob.digest));
        let Some(layer) = layer else {
            tracing::warn!(
                "chart `{}` was not checked for missing images: its artifact has no helm chart layer",
                image.source.written
            );
            continue;
        };
        charts.push(BundledChart {
            name: name.to_owned(),
            version: version.to_owned(),
            tgz: layer.path.clone(),
        });
    }
    charts
}

/// Every image reference the bundle carries.
fn bundled_images(check: &ChartCheck<'_>) -> Vec<String> {
    check
        .images
        .iter()
        .chain(check.oci_charts)
        .map(|image| image.source.name())
        .collect()
}

/// The network plugin's chart (by name) and its values, as `kk-install` derives them: Calico's
/// registry is that of the bundle's `calico/node` image.
fn cni_chart<'a>(check: &ChartCheck<'a>) -> Result<Option<(&'a str, CniChart)>, CheckError> {
    let (Some(kubernetes), Some(expansion)) = (check.kubernetes, check.expansion) else {
        return Ok(None);
    };
    let Some(chart) = expansion.charts.first() else {
        return Ok(None);
    };
    let cni = match kubernetes.cni {
        Cni::Calico => CniChart::Calico {
            registry: calico_registry(check.images).ok_or_else(|| {
                CheckError::Internal("the catalog's calico images have no `calico/node`".into())
            })?,
        },
        Cni::Cilium => CniChart::Cilium,
        Cni::Flannel => CniChart::Flannel,
        // The cluster's nodes are not known at build time; their number and addresses change
        // no image the charts name, so one control plane at a documentation address stands in.
        Cni::Hybridnet => CniChart::Hybridnet {
            control_planes: 1,
            nodes: 1,
        },
        Cni::KubeOvn => CniChart::KubeOvn {
            master_nodes: vec![IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))],
        },
        Cni::None => return Ok(None),
    };
    Ok(Some((chart.name.as_str(), cni)))
}

/// The registry of the first `calico/node` image among `images`.
fn calico_registry(images: &[ResolvedImage]) -> Option<String> {
    images.iter().find_map(|image| {
        let reference = &image.source.reference;
        let repository = reference.repository();
        (repository == "calico/node" || repository.ends_with("/calico/node"))
            .then(|| reference.registry().to_owned())
    })
}

/// Runs `helm template` for the check.
#[derive(Debug)]
struct Renderer<'a> {
    helm: PathBuf,
    work: &'a Path,
    kube_version: Option<String>,
}

impl Renderer<'_> {
    /// Renders `chart` with `values` (its defaults when `None`) and compares its images with
    /// `bundled`. A chart rendered with its defaults that does not render is reported
    /// unchecked; one rendered with the install's values must render.
    async fn check(
        &self,
        chart: &BundledChart,
        values: Option<&str>,
        bundled: &[String],
    ) -> Result<Option<ChartMiss>, CheckError> {
        let problem = match self.render(chart, values).await? {
            Ok(rendered) => match missing_images(&rendered, bundled) {
                Ok(images) if images.is_empty() => return Ok(None),
                Ok(images) => {
                    return Ok(Some(ChartMiss {
                        chart: chart.name.clone(),
                        version: chart.version.clone(),
                        images,
                    }));
                }
                Err(error) => RenderProblem::NotYaml(Box::new(error)),
            },
            Err(problem) => problem,
        };
        if values.is_some() {
            return Err(CheckError::ChartRender {
                chart: chart.name.clone(),
                version: chart.version.clone(),
                problem,
            });
        }
        tracing::warn!(
            "chart `{}` `{}` was not checked for missing images: `helm template` with its default values failed: {problem}",
            chart.name,
            chart.version
        );
        Ok(None)
    }

    /// `helm template` of `chart`: the manifest, or what went wrong.
    async fn render(
        &self,
        chart: &BundledChart,
        values: Option<&str>,
    ) -> Result<Result<String, RenderProblem>, CheckError> {
        let mut command = tokio::process::Command::new(&self.helm);
        command
            .arg("template")
            .arg(&chart.name)
            .arg(&chart.tgz)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        // Helm's own homes inside the work directory: the user's repositories, plugins and
        // registry logins play no part, and nothing is written to $HOME.
        for (variable, dir) in [
            ("HELM_CACHE_HOME", "cache"),
            ("HELM_CONFIG_HOME", "config"),
            ("HELM_DATA_HOME", "data"),
        ] {
            command.env(variable, self.work.join("helm-home").join(dir));
        }
        if let Some(version) = &self.kube_version {
            command.args(["--kube-version", version]);
        }
        if let Some(values) = values {
            let path = self.work.join(format!("{}.values.yaml", chart.name));
            tokio::fs::write(&path, values)
                .await
                .map_err(|source| CheckError::File {
                    path: path.clone(),
                    source,
                })?;
            command.arg("--values").arg(path);
        }
        let output = command
            .output()
            .await
            .map_err(|source| CheckError::HelmRun {
                helm: self.helm.clone(),
                source,
            })?;
        if !output.status.success() {
            return Ok(Err(RenderProblem::Failed {
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
                status: output.status,
            }));
        }
        Ok(String::from_utf8(output.stdout).map_err(RenderProblem::NotUtf8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn miss(chart: &str, images: &[&str]) -> ChartMiss {
        ChartMiss {
            chart: chart.into(),
            version: "1.0.0".into(),
            images: images.iter().map(|i| (*i).to_owned()).collect(),
        }
    }

    #[test]
    fn misses_fail_the_build_unless_allowed() {
        // (misses, allowed, fails)
        let one = vec![miss("web", &["docker.io/library/nginx:1.27"])];
        for (misses, allow, fails) in [
            (vec![], false, false),
            (vec![], true, false),
            (one.clone(), false, true),
            (one, true, false),
        ] {
            assert_eq!(
                verdict(misses.clone(), allow).is_err(),
                fails,
                "{misses:?} {allow}"
            );
        }
    }

    #[test]
    fn the_error_names_every_chart_its_images_and_the_way_out() {
        let misses = vec![
            miss("web", &["docker.io/library/nginx:1.27", "busybox"]),
            miss("db", &["quay.io/x/y:1"]),
        ];
        let message = verdict(misses, false).unwrap_err().to_string();
        for part in [
            "chart `web` `1.0.0` names images the bundle lacks: `docker.io/library/nginx:1.27`, `busybox`",
            "chart `db` `1.0.0` names images the bundle lacks: `quay.io/x/y:1`",
            "`images:`",
            "`--allow-missing-chart-images`",
        ] {
            assert!(message.contains(part), "{part} not in: {message}");
        }
    }

    #[test]
    fn only_the_network_plugins_chart_gets_the_cni_values() {
        let chart = |name: &str| BundledChart {
            name: name.into(),
            version: "1.0.0".into(),
            tgz: PathBuf::from("/cache/blob"),
        };
        let calico = (
            "tigera-operator",
            CniChart::Calico {
                registry: "quay.io".into(),
            },
        );
        let values = install_values(Some(&calico), &chart("tigera-operator")).unwrap();
        assert!(
            values.contains("registry: quay.io/") && values.contains("10.233.64.0/18"),
            "{values}"
        );
        assert_eq!(install_values(Some(&calico), &chart("kk-web")), None);
        assert_eq!(install_values(None, &chart("tigera-operator")), None);
    }

    /// A helm stand-in that prints, for `template NAME TGZ …`, the file TGZ (a rendered
    /// manifest), or fails for a chart named `broken`; it records its arguments.
    #[cfg(unix)]
    fn fake_helm(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let helm = dir.join("helm");
        std::fs::write(
            &helm,
            "#!/bin/sh\necho \"$@\" >> \"$0.args\"\n[ \"$2\" = broken ] && { echo 'Error: required value' >&2; exit 1; }\ncat \"$3\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&helm, std::fs::Permissions::from_mode(0o755)).unwrap();
        helm
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn rendered_charts_are_compared_with_the_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let renderer = Renderer {
            helm: fake_helm(dir.path()),
            work: dir.path(),
            kube_version: Some("v1.31.4".into()),
        };
        let chart = |name: &str, manifest: &str| {
            let tgz = dir.path().join(format!("{name}.tgz"));
            std::fs::write(&tgz, manifest).unwrap();
            BundledChart {
                name: name.into(),
                version: "1.0.0".into(),
                tgz,
            }
        };
        let pods =
            "kind: Pod\nspec:\n  containers:\n  - image: nginx:1.27\n  - image: lab.local/app:1\n";
        let bundled = vec!["docker.io/library/nginx:1.27".to_owned()];
        // (chart, values, expected)
        let web = chart("web", pods);
        let found = renderer.check(&web, None, &bundled).await.unwrap();
        assert_eq!(
            found,
            Some(ChartMiss {
                images: vec!["lab.local/app:1".into()],
                ..miss("web", &[])
            })
        );
        let all = vec![
            "docker.io/library/nginx:1.27".to_owned(),
            "lab.local/app:1".to_owned(),
        ];
        assert_eq!(
            renderer.check(&web, Some("a: 1\n"), &all).await.unwrap(),
            None
        );

        // A chart that does not render with its defaults is left unchecked; with the
        // install's values it is an error naming it.
        let broken = chart("broken", pods);
        assert_eq!(renderer.check(&broken, None, &all).await.unwrap(), None);
        let error = renderer
            .check(&broken, Some("a: 1\n"), &all)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("chart `broken` `1.0.0`")
                && error.to_string().contains("required value"),
            "{error}"
        );

        let args = std::fs::read_to_string(dir.path().join("helm.args")).unwrap();
        let first = args.lines().next().unwrap();
        assert!(
            first.starts_with("template web ") && first.ends_with("--kube-version v1.31.4"),
            "{first}"
        );
        assert!(args.lines().nth(1).unwrap().contains("--values"), "{args}");
    }
}

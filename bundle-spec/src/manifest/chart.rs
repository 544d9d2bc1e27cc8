//! `spec.charts`: Helm charts from an HTTP repository or an OCI registry.

use std::sync::Arc;

use serde_saphyr::Spanned;

use super::ManifestError;
use super::SourceLocation;
use super::image::has_tag_or_digest;
use super::raw::RawChart;
use super::rules::{Seen, dns_name, plain_version, required};
use super::url::{check_http_url, is_host_port};

/// A Helm chart from `spec.charts`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Chart {
    /// The chart's name, unique among charts (a DNS-1123 name).
    pub name: String,
    /// The chart version to fetch.
    pub version: String,
    /// Where to fetch it from.
    pub source: ChartSource,
    /// Where the manifest lists it.
    pub location: SourceLocation,
}

/// Where a chart comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChartSource {
    /// A Helm HTTP repository URL: its `index.yaml` lists the chart's download URL.
    Repository(String),
    /// An OCI repository, `oci://registry/path/name`, without tag: the version is the tag.
    Oci(String),
}

pub(super) fn validate_all(
    file: &Arc<str>,
    raw: &[Spanned<RawChart>],
) -> Result<Vec<Chart>, ManifestError> {
    let mut seen = Seen::default();
    raw.iter()
        .map(|entry| {
            let chart = validate(file, entry)?;
            seen.insert(chart.name.clone(), &chart.location)
                .map_err(|first| ManifestError::DuplicateChart {
                    at: chart.location.clone(),
                    name: chart.name.clone(),
                    first,
                })?;
            Ok(chart)
        })
        .collect()
}

fn validate(file: &Arc<str>, raw: &Spanned<RawChart>) -> Result<Chart, ManifestError> {
    let location = SourceLocation::of(file, raw);
    let name = dns_name(
        file,
        required(raw.value.name.as_ref(), "name", &location)?,
        "chart name",
    )?;
    let version = required(raw.value.version.as_ref(), "version", &location)?;
    let version = plain_version(file, version, "chart")?;
    let source = match (&raw.value.repo, &raw.value.oci) {
        (Some(_), Some(_)) => Err(ManifestError::ConflictingChartSources {
            at: location.clone(),
            chart: name.clone(),
        }),
        (None, None) => Err(ManifestError::MissingChartSource {
            at: location.clone(),
            chart: name.clone(),
        }),
        (Some(repo), None) => repository(file, repo),
        (None, Some(oci)) => oci_repository(file, oci),
    }?;
    Ok(Chart {
        name,
        version,
        source,
        location,
    })
}

fn repository(file: &Arc<str>, raw: &Spanned<String>) -> Result<ChartSource, ManifestError> {
    check_http_url(&raw.value).map_err(|problem| ManifestError::InvalidUrl {
        at: SourceLocation::of(file, raw),
        url: raw.value.clone(),
        problem,
    })?;
    Ok(ChartSource::Repository(raw.value.clone()))
}

fn oci_repository(file: &Arc<str>, raw: &Spanned<String>) -> Result<ChartSource, ManifestError> {
    oci_problem(&raw.value).map_or_else(
        || Ok(ChartSource::Oci(raw.value.clone())),
        |problem| {
            Err(ManifestError::InvalidOciChart {
                at: SourceLocation::of(file, raw),
                value: raw.value.clone(),
                problem,
            })
        },
    )
}

fn oci_problem(value: &str) -> Option<&'static str> {
    let Some(reference) = value.strip_prefix("oci://") else {
        return Some("it does not start with `oci://`");
    };
    // Helm has no default registry: unlike an image, the host must be spelled out.
    let Some((host, _)) = reference.split_once('/') else {
        return Some("it names no repository after the registry host");
    };
    if !is_host_port(host) {
        return Some("its registry is not `host[:port]`");
    }
    if crate::oci::parse_reference(reference).is_err() {
        return Some("it is not a valid repository reference");
    }
    if has_tag_or_digest(reference) {
        return Some("it has a tag or digest (the chart version goes in `version`)");
    }
    None
}

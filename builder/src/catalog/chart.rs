//! A catalog chart and where it is downloaded from: an HTTP chart repository or an OCI
//! repository, exactly one of them.

use serde::Deserialize;

/// Where a catalog chart is downloaded from, in the manifest's spelling of a chart source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogChartSource {
    /// An HTTP chart repository (the directory holding `index.yaml`): a manifest's `repo`.
    Repo(String),
    /// An OCI repository, `oci://registry/path/name`, without tag (the chart version is the
    /// tag): a manifest's `oci`.
    Oci(String),
}

impl CatalogChartSource {
    /// The manifest key this source is written under: `repo` or `oci`.
    pub fn key(&self) -> &'static str {
        match self {
            Self::Repo(_) => "repo",
            Self::Oci(_) => "oci",
        }
    }

    /// The repository URL or the `oci://` reference.
    pub fn location(&self) -> &str {
        match self {
            Self::Repo(location) | Self::Oci(location) => location,
        }
    }
}

/// A chart as the catalog data writes it: a name, a version and exactly one of `repo` and
/// `oci` (checked while parsing, so expansion never meets a chart without a source).
#[derive(Debug)]
pub(super) struct ChartData {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) source: CatalogChartSource,
}

impl<'de> Deserialize<'de> for ChartData {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawChart::deserialize(deserializer)?;
        raw.try_into().map_err(serde::de::Error::custom)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawChart {
    name: String,
    version: String,
    repo: Option<String>,
    oci: Option<String>,
}

impl TryFrom<RawChart> for ChartData {
    type Error = ChartSourceError;

    fn try_from(raw: RawChart) -> Result<Self, Self::Error> {
        let source = match (raw.repo, raw.oci) {
            (Some(repo), None) => CatalogChartSource::Repo(repo),
            (None, Some(oci)) => CatalogChartSource::Oci(oci),
            (Some(_), Some(_)) => return Err(ChartSourceError::Both { chart: raw.name }),
            (None, None) => return Err(ChartSourceError::Neither { chart: raw.name }),
        };
        Ok(Self {
            name: raw.name,
            version: raw.version,
            source,
        })
    }
}

/// A catalog chart without exactly one source: a defect of the catalog data.
#[derive(Debug, thiserror::Error)]
pub(super) enum ChartSourceError {
    /// The chart sets both `repo` and `oci`.
    #[error("catalog chart `{chart}` sets both `repo` and `oci`; hint: keep exactly one")]
    Both {
        /// The chart's name.
        chart: String,
    },
    /// The chart sets neither `repo` nor `oci`.
    #[error(
        "catalog chart `{chart}` sets neither `repo` nor `oci`; hint: set `repo` (an HTTP chart \
         repository) or `oci` (an `oci://` reference)"
    )]
    Neither {
        /// The chart's name.
        chart: String,
    },
}

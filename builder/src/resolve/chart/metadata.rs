//! A chart's `Chart.yaml`, read out of its package and written as Helm's OCI config.
//!
//! [`ChartMetadata`] mirrors Helm's `chart.Metadata`, because Helm decodes the config blob into
//! that type: every string field takes any YAML scalar as written (`appVersion: 1.10` stays
//! `"1.10"`; a generic YAML-to-JSON conversion would produce the number `1.1`, which Helm
//! refuses), fields keep Helm's order, empty ones are left out as Go's `omitempty` does, and
//! fields Helm does not know are dropped. Reading is bounded: `Chart.yaml` must be small, and
//! at most [`UNPACK_LIMIT`] bytes are unpacked looking for it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Component, Path};

use flate2::read::GzDecoder;
use serde::{Deserialize, Deserializer, Serialize};

use crate::resolve::ResolveError;

/// The size limit of a chart's `Chart.yaml`.
const CHART_YAML_LIMIT: u64 = 1024 * 1024;
/// How many bytes of a chart archive are unpacked at most while looking for `Chart.yaml`.
const UNPACK_LIMIT: u64 = 512 * 1024 * 1024;

pub(super) fn config_json(path: &Path, metadata: &ChartMetadata) -> Result<Vec<u8>, ResolveError> {
    serde_json::to_vec(metadata).map_err(|error| ResolveError::ChartArchive {
        path: path.to_owned(),
        problem: "its metadata cannot be written as json".to_owned(),
        source: Some(Box::new(error)),
    })
}

/// Reads `<chart>/Chart.yaml` out of the packaged chart at `path`.
pub(super) fn read_metadata(path: &Path) -> Result<ChartMetadata, ResolveError> {
    let text = read_chart_yaml(path)?;
    serde_saphyr::from_str(&text).map_err(|error| ResolveError::ChartArchive {
        path: path.to_owned(),
        problem: "its `Chart.yaml` is not valid".to_owned(),
        source: Some(Box::new(error)),
    })
}

fn read_chart_yaml(path: &Path) -> Result<String, ResolveError> {
    let file = File::open(path).map_err(|source| ResolveError::File {
        path: path.to_owned(),
        source,
    })?;
    let not_tgz = |error: std::io::Error| ResolveError::ChartArchive {
        path: path.to_owned(),
        problem: "it is not a gzip-compressed tar archive".to_owned(),
        source: Some(Box::new(error)),
    };
    let unpacked = GzDecoder::new(BufReader::new(file)).take(UNPACK_LIMIT);
    let mut archive = tar::Archive::new(unpacked);
    for entry in archive.entries().map_err(not_tgz)? {
        let entry = entry.map_err(not_tgz)?;
        if !entry.header().entry_type().is_file() || !is_chart_yaml(&entry.path().map_err(not_tgz)?)
        {
            continue;
        }
        if entry.size() > CHART_YAML_LIMIT {
            return Err(archive_error(
                path,
                format!("its `Chart.yaml` is larger than {CHART_YAML_LIMIT} bytes"),
            ));
        }
        let mut text = String::new();
        entry
            .take(CHART_YAML_LIMIT)
            .read_to_string(&mut text)
            .map_err(not_tgz)?;
        return Ok(text);
    }
    Err(archive_error(
        path,
        "it has no `<chart>/Chart.yaml`".to_owned(),
    ))
}

/// Whether a member path is `<dir>/Chart.yaml` (ignoring `./`), as `helm package` writes it.
fn is_chart_yaml(path: &Path) -> bool {
    let parts: Vec<Component<'_>> = path
        .components()
        .filter(|component| *component != Component::CurDir)
        .collect();
    matches!(
        parts.as_slice(),
        [Component::Normal(_), Component::Normal(file)] if *file == "Chart.yaml"
    )
}

pub(super) fn archive_error(path: &Path, problem: String) -> ResolveError {
    ResolveError::ChartArchive {
        path: path.to_owned(),
        problem,
        source: None,
    }
}

/// Helm's `chart.Metadata` (Helm 3): the fields of `Chart.yaml` Helm knows, in its order and
/// with its `omitempty`s. Unknown fields are dropped, as Helm drops them.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ChartMetadata {
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    pub(super) name: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    home: String,
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    sources: Vec<String>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    pub(super) version: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    description: String,
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    maintainers: Vec<Maintainer>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    icon: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    api_version: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    condition: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    tags: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    app_version: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    deprecated: bool,
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    annotations: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    kube_version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    dependencies: Vec<Dependency>,
    #[serde(
        default,
        rename = "type",
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    chart_type: String,
}

/// Helm's `chart.Maintainer`.
#[derive(Debug, Deserialize, Serialize)]
struct Maintainer {
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    name: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    email: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    url: String,
}

/// Helm's `chart.Dependency`.
#[derive(Debug, Deserialize, Serialize)]
struct Dependency {
    #[serde(default, deserialize_with = "text")]
    name: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    version: String,
    #[serde(default, deserialize_with = "text")]
    repository: String,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    condition: String,
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    enabled: bool,
    #[serde(
        default,
        rename = "import-values",
        skip_serializing_if = "Vec::is_empty"
    )]
    import_values: Vec<serde_json::Value>,
    #[serde(
        default,
        deserialize_with = "text",
        skip_serializing_if = "String::is_empty"
    )]
    alias: String,
}

/// A string field: any scalar as written (`1.10` stays `"1.10"`), `null` as empty, as Helm
/// reads it.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

/// A map of strings, `null` (for the map or a value) as empty.
fn text_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let map = Option::<BTreeMap<String, Option<String>>>::deserialize(deserializer)?;
    Ok(map
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| (key, value.unwrap_or_default()))
        .collect())
}

/// A list of strings, `null` as empty.
fn texts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::Write as _;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use crate::resolve::chart::chart_config_from_tgz;

    pub(in crate::resolve::chart) const APP: &str =
        "apiVersion: v2\nname: app\nversion: 1.0.0\nappVersion: 1.10\n";

    /// A packaged chart: `<dir>/Chart.yaml` and `<dir>/values.yaml`, as `helm package` makes.
    pub(in crate::resolve::chart) fn package(dir: &str, chart_yaml: &str) -> Vec<u8> {
        let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
        for (name, content) in [("Chart.yaml", chart_yaml), ("values.yaml", "replicas: 1\n")] {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, format!("{dir}/{name}"), content.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    pub(in crate::resolve::chart) fn written(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn the_config_is_helm_metadata_as_json() {
        let chart_yaml = "apiVersion: v2\nname: app\nversion: 1.0.0\nappVersion: 1.10\ndescription: An app\ntype: application\nkeywords: [a, 2.0]\nannotations: {x: 1.0, y: null}\nmaintainers: [{name: me}]\ndependencies:\n  - {name: db, version: ~1.2, repository: \"https://charts.example.org\", import-values: [data, {child: a, parent: b}]}\nunknownField: dropped\n";
        let file = written(&package("app", chart_yaml));
        let json = String::from_utf8(chart_config_from_tgz(file.path()).unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"name":"app","version":"1.0.0","description":"An app","keywords":["a","2.0"],"maintainers":[{"name":"me"}],"apiVersion":"v2","appVersion":"1.10","annotations":{"x":"1.0","y":""},"dependencies":[{"name":"db","version":"~1.2","repository":"https://charts.example.org","import-values":["data",{"child":"a","parent":"b"}]}],"type":"application"}"#
        );
    }

    #[test]
    fn archives_without_a_chart_yaml_are_refused() {
        let cases = [
            (
                package("app", APP).len(),
                b"not gzip".to_vec(),
                "not a gzip-compressed tar",
            ),
            (0, package("app/sub", APP), "has no `<chart>/Chart.yaml`"),
            (
                0,
                package("app", "name: [unclosed\n"),
                "`Chart.yaml` is not valid",
            ),
        ];
        for (_, bytes, fragment) in cases {
            let file = written(&bytes);
            let message = chart_config_from_tgz(file.path()).unwrap_err().to_string();
            assert!(message.contains(fragment), "{message}");
            assert!(
                message.contains(&file.path().display().to_string()),
                "{message}"
            );
        }
    }
}

//! The descriptor and the manifest-or-index document, read leniently: every field a reader
//! may lack is optional, so one type serves the store, the push, the fetch and the builder,
//! each taking the fields it needs and refusing, with its own error, what it cannot do without.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An OCI content descriptor (also a Docker manifest list's entry).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The media type of what it points at; optional in an OCI layout's `index.json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The digest, as written (`sha256:<hex>`; not validated here).
    pub digest: String,
    /// The size in bytes.
    pub size: u64,
    /// The artifact type of the manifest it points at, if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// For an index entry: the platform of the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<oci_spec::image::Platform>,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl Descriptor {
    /// The value of annotation `key`, if it has it.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

/// An image index or an image manifest (OCI or Docker), as far as kk reads one: an index has
/// `manifests`, a manifest `config` and `layers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    /// `2` for every format kk reads.
    #[serde(default)]
    pub schema_version: Option<u32>,
    /// The document's own media type; optional in OCI.
    #[serde(default)]
    pub media_type: Option<String>,
    /// For an index: its entries (present, even empty, only in an index).
    #[serde(default)]
    pub manifests: Option<Vec<Descriptor>>,
    /// For a manifest: its config.
    #[serde(default)]
    pub config: Option<Descriptor>,
    /// For a manifest: its layers, in order.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// Blobs of the withdrawn OCI artifact manifest, still written by old ORAS versions.
    #[serde(default)]
    pub blobs: Vec<Descriptor>,
    /// The manifest this one refers to (a signature, an SBOM).
    #[serde(default)]
    pub subject: Option<Descriptor>,
    /// Its artifact type, if it names one.
    #[serde(default)]
    pub artifact_type: Option<String>,
    /// Its annotations.
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
}

#[cfg(test)]
mod tests {
    use super::Document;

    #[test]
    fn documents_parse_leniently_and_keep_what_kk_reads() {
        let index: Document = serde_json::from_str(
            r#"{"schemaVersion":2,"manifests":[{"digest":"sha256:a","size":1,
            "platform":{"os":"linux","architecture":"arm64","variant":"v8"},
            "annotations":{"org.opencontainers.image.ref.name":"x"}}]}"#,
        )
        .expect("an index");
        let entries = index.manifests.as_deref().expect("entries");
        assert_eq!(entries[0].media_type, None);
        assert_eq!(
            entries[0].annotation(super::super::REF_NAME_ANNOTATION),
            Some("x")
        );
        let platform = entries[0].platform.as_ref().expect("platform");
        assert_eq!(platform.architecture().to_string(), "arm64");
        assert_eq!(platform.variant().as_deref(), Some("v8"));

        let manifest: Document = serde_json::from_str(
            r#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
            "config":{"mediaType":"c","digest":"sha256:c","size":2},
            "layers":[{"mediaType":"l","digest":"sha256:l","size":3}],"unknown":true}"#,
        )
        .expect("a manifest");
        assert_eq!(manifest.manifests, None);
        assert_eq!(manifest.layers[0].size, 3);
        assert_eq!(
            manifest.config.and_then(|c| c.media_type).as_deref(),
            Some("c")
        );

        let empty_index: Document =
            serde_json::from_str(r#"{"manifests":[]}"#).expect("an empty index");
        assert_eq!(empty_index.manifests, Some(vec![]));
        assert!(serde_json::from_str::<Document>(r#"{"layers":[{"digest":"sha256:l"}]}"#).is_err());
    }
}

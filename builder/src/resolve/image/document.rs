//! Reading just enough of a manifest or index to know what it references.

use bundle_spec::Sha256Digest;
use bundle_spec::oci::{self, Descriptor};
use bundle_spec::platform::Platform;
use serde::Deserialize;

/// A blob a document references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRef {
    /// Its media type.
    pub media_type: String,
    /// Its digest.
    pub digest: Sha256Digest,
    /// Its size.
    pub size: u64,
}

/// A manifest or an index, with its digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The digest of the document's bytes.
    pub digest: Sha256Digest,
    /// Its size.
    pub size: u64,
    /// Its media type (from the document itself).
    pub media_type: String,
    /// For an index: its entries and their platforms.
    pub entries: Vec<(Option<Platform>, BlobRef)>,
    /// For a manifest: its config.
    pub config: Option<BlobRef>,
    /// For a manifest: config and layers, in order.
    pub blobs: Vec<BlobRef>,
}

/// The blob `descriptor` points at; a descriptor without a media type or with a digest other
/// than sha256 is refused.
fn blob(descriptor: &Descriptor) -> Result<BlobRef, DocumentError> {
    let digest = descriptor
        .digest
        .parse()
        .map_err(|_| DocumentError::Digest {
            digest: descriptor.digest.clone(),
        })?;
    let media_type = descriptor
        .media_type
        .clone()
        .ok_or_else(|| DocumentError::NoMediaType {
            digest: descriptor.digest.clone(),
        })?;
    Ok(BlobRef {
        media_type,
        digest,
        size: descriptor.size,
    })
}

impl Document {
    /// Parses `bytes`, whose digest is `digest`.
    pub fn parse(bytes: &[u8], digest: Sha256Digest) -> Result<Self, DocumentError> {
        let raw: oci::Document = serde_json::from_slice(bytes).map_err(DocumentError::Json)?;
        if raw.schema_version != Some(2) {
            return Err(DocumentError::SchemaVersion);
        }
        let is_index = raw.manifests.is_some();
        let media_type = raw.media_type.clone().unwrap_or_else(|| {
            // OCI allows omitting mediaType; the shape says which it is.
            if is_index {
                oci::INDEX_MEDIA_TYPE
            } else {
                oci::MANIFEST_MEDIA_TYPE
            }
            .to_owned()
        });
        let entries = raw
            .manifests
            .iter()
            .flatten()
            .map(|d| Ok((d.platform.as_ref().map(Platform::from_oci), blob(d)?)))
            .collect::<Result<Vec<_>, DocumentError>>()?;
        let config = raw.config.as_ref().map(blob).transpose()?;
        let mut blobs: Vec<BlobRef> = config.iter().cloned().collect();
        for layer in &raw.layers {
            blobs.push(blob(layer)?);
        }
        Ok(Self {
            digest,
            size: bytes.len() as u64,
            media_type,
            entries,
            config,
            blobs,
        })
    }

    /// Whether this is an index (OCI index or Docker manifest list).
    pub fn is_index(&self) -> bool {
        self.media_type.ends_with("index.v1+json")
            || self.media_type.ends_with("manifest.list.v2+json")
    }

    /// The platforms an index offers, as `os/arch[/variant]`; attestation entries
    /// (`unknown/unknown`) are not platforms.
    pub fn platforms(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter_map(|(p, _)| p.as_ref())
            .map(ToString::to_string)
            .filter(|p| !p.starts_with("unknown"))
            .collect()
    }
}

/// The platform an image config (its bytes) declares (`os`, `architecture`, `variant`), if it
/// declares one.
pub(super) fn config_platform(bytes: &[u8]) -> Option<Platform> {
    #[derive(Deserialize)]
    struct Config {
        os: Option<String>,
        architecture: Option<String>,
        variant: Option<String>,
    }
    // Helm configs and artifact configs are not image configs: no platform to check.
    let config = serde_json::from_slice::<Config>(bytes).ok()?;
    let (Some(os), Some(arch)) = (config.os, config.architecture) else {
        return None;
    };
    let text = match config.variant {
        Some(variant) => format!("{os}/{arch}/{variant}"),
        None => format!("{os}/{arch}"),
    };
    text.parse().ok()
}

/// Why a registry's manifest or index cannot be understood (the reason of
/// [`ResolveError::InvalidManifest`](crate::resolve::ResolveError::InvalidManifest)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// The bytes are not JSON of a manifest's or an index's shape.
    #[error("not a manifest or index: {0}")]
    Json(serde_json::Error),
    /// A Docker schema 1 manifest, or another version.
    #[error("only schemaVersion 2 manifests are supported (Docker schema 1 is not)")]
    SchemaVersion,
    /// A descriptor's digest is not a sha256 digest.
    #[error("`{digest}` is not a sha256 digest")]
    Digest {
        /// The digest as written.
        digest: String,
    },
    /// A descriptor without a media type.
    #[error("the descriptor of `{digest}` has no mediaType")]
    NoMediaType {
        /// The descriptor's digest.
        digest: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_indexes_and_manifests() {
        let d = Sha256Digest::of(b"x");
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{d}","size":5,"platform":{{"os":"linux","architecture":"arm64","variant":"v8"}}}},{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{d}","size":5,"platform":{{"os":"unknown","architecture":"unknown"}}}}]}}"#
        );
        let doc = Document::parse(index.as_bytes(), d).unwrap();
        assert!(doc.is_index());
        assert_eq!(doc.platforms(), vec!["linux/arm64".to_owned()]);
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{{"mediaType":"c","digest":"{d}","size":1}},"layers":[{{"mediaType":"l","digest":"{d}","size":2}}]}}"#
        );
        let doc = Document::parse(manifest.as_bytes(), d).unwrap();
        assert!(!doc.is_index());
        assert_eq!(doc.blobs.len(), 2);
        assert!(
            Document::parse(br#"{"schemaVersion":1}"#, d)
                .unwrap_err()
                .to_string()
                .contains("schema 1")
        );
        assert!(Document::parse(b"<html>", d).is_err());
    }
}

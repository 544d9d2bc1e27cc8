//! The OCI vocabulary kk reads and writes, each word declared once: the image layout's file
//! names and version, media types, annotation keys, image references and the descriptor and
//! document types.
//!
//! The document types are for what kk itself reads or writes. Upstream manifests are kept and
//! served as the bytes they came as (their digests name those bytes), never re-serialised
//! through these types.

mod document;
mod reference;

pub use document::{Descriptor, Document};
pub use reference::{ReferenceParts, parse_reference};

/// Path of the layout marker file, at the root of a layout.
pub const OCI_LAYOUT_PATH: &str = "oci-layout";
/// Path of the image index, at the root of a layout.
pub const INDEX_PATH: &str = "index.json";
/// The directory of the blobs below a layout's root (sha256 is the only algorithm kk uses).
pub const BLOBS_DIR: &str = "blobs/sha256";
/// The content of `oci-layout`.
pub const OCI_LAYOUT: &[u8] = br#"{"imageLayoutVersion":"1.0.0"}"#;

/// Media type of an OCI image index.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// Media type of an OCI image manifest, and the type of a document that names none.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Media type of a Docker image manifest (schema 2).
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// Media type of a Docker manifest list.
pub const DOCKER_MANIFEST_LIST_MEDIA_TYPE: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";
/// The media types of manifests and indexes kk pulls: what it sends as `Accept`.
pub const MANIFEST_MEDIA_TYPES: &[&str] = &[
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    DOCKER_MANIFEST_LIST_MEDIA_TYPE,
    DOCKER_MANIFEST_MEDIA_TYPE,
];
/// Media type of the empty config of an artifact (OCI 1.1).
pub const EMPTY_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// Content of the empty config: `{}`.
pub const EMPTY_CONFIG: &[u8] = b"{}";
/// Media type of a Helm chart's config (its `Chart.yaml` as JSON).
pub const HELM_CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";
/// Media type of a Helm chart's packaged `.tgz`.
pub const HELM_CHART_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Media type of a Helm chart's provenance file.
pub const HELM_PROVENANCE_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";

/// The annotation that names an artifact in `index.json`.
pub const REF_NAME_ANNOTATION: &str = "org.opencontainers.image.ref.name";
/// The annotation that gives a file layer its file name (as ORAS does).
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

//! OCI image layouts built by hand, blob by blob: for tests of what reads a store (the
//! registry, the push) with shapes a bundle never has (manifests without `mediaType`,
//! referrers, Docker manifests).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::digest::Sha256Digest;
use crate::oci::{
    BLOBS_DIR, INDEX_MEDIA_TYPE, INDEX_PATH, OCI_LAYOUT, OCI_LAYOUT_PATH, REF_NAME_ANNOTATION,
};

/// A layout being written at `root`.
#[derive(Debug)]
pub struct HandLayout {
    root: PathBuf,
}

impl HandLayout {
    /// Starts a layout at `root`: its blob directory and `oci-layout`.
    pub fn new(root: &Path) -> Self {
        std::fs::create_dir_all(root.join(BLOBS_DIR)).expect("creates the blob directory");
        std::fs::write(root.join(OCI_LAYOUT_PATH), OCI_LAYOUT).expect("writes oci-layout");
        Self {
            root: root.to_owned(),
        }
    }

    /// Stores `bytes` as a blob; its digest.
    pub fn put_blob(&self, bytes: &[u8]) -> Sha256Digest {
        let digest = Sha256Digest::of(bytes);
        std::fs::write(self.root.join(BLOBS_DIR).join(digest.hex()), bytes).expect("writes a blob");
        digest
    }

    /// Stores `bytes` as a blob; its descriptor.
    pub fn blob_descriptor(&self, media_type: &str, bytes: &[u8]) -> Value {
        descriptor(media_type, self.put_blob(bytes), bytes.len())
    }

    /// Writes `index.json` listing `manifests`.
    pub fn write_index(&self, manifests: &[Value]) {
        let index =
            json!({ "schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": manifests });
        std::fs::write(
            self.root.join(INDEX_PATH),
            serde_json::to_vec(&index).expect("serialisable"),
        )
        .expect("writes index.json");
    }
}

/// A descriptor of `size` bytes at `digest`.
pub fn descriptor(media_type: &str, digest: Sha256Digest, size: usize) -> Value {
    json!({ "mediaType": media_type, "digest": digest.to_string(), "size": size })
}

/// `descriptor` named `ref_name`, as `index.json` names an artifact.
pub fn named(mut descriptor: Value, ref_name: &str) -> Value {
    descriptor["annotations"] = json!({ REF_NAME_ANNOTATION: ref_name });
    descriptor
}

/// A manifest's bytes, pretty-printed as upstream registries often store them (so a
/// re-serialising reader would change its digest).
pub fn manifest_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(value).expect("serialisable")
}

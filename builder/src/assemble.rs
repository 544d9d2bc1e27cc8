//! Laying fetched content out as one OCI image layout: `index.json` entries, artifact manifests
//! for binaries and charts, and the description's artifact list.
//!
//! Images go in as upstream served them. Binaries, files and charts from HTTP repositories have
//! no manifest upstream, so one is made here, deterministically (sorted JSON keys, no
//! timestamps), which keeps a rebuild from the same lock byte-identical: an ORAS-style artifact
//! manifest per platform under an index whose entries carry the platform, or Helm's own chart
//! manifest. Every blob is recorded once however many artifacts share it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bundle_spec::layout::{
    self, ArtifactNamespace, BINARY_ARTIFACT_TYPE, DEB_LAYER_MEDIA_TYPE, FILE_ARTIFACT_TYPE,
    FILE_LAYER_MEDIA_TYPE, PACKAGE_ARTIFACT_TYPE,
};
use bundle_spec::oci::{
    EMPTY_CONFIG, EMPTY_CONFIG_MEDIA_TYPE, HELM_CHART_MEDIA_TYPE, HELM_CONFIG_MEDIA_TYPE,
    INDEX_MEDIA_TYPE as OCI_INDEX, MANIFEST_MEDIA_TYPE as OCI_MANIFEST, REF_NAME_ANNOTATION,
    TITLE_ANNOTATION,
};
use bundle_spec::packages::PackageRecord;
use bundle_spec::platform::Platform;
use bundle_spec::{Artifact, ArtifactKind, BlobFile, Sha256Digest};
use oci_spec::image::{Descriptor, ImageIndex, ImageIndexBuilder, MediaType};
use serde_json::json;

use crate::cache::{Cache, CacheError, CachedBlob};
use crate::resolve::image::{Referrer, ResolvedImage, digest_tag};

/// A file of a binary or file artifact, for one platform (or for all).
#[derive(Debug, Clone)]
pub struct PlatformFile {
    /// The platform, for platform-specific files.
    pub platform: Option<Platform>,
    /// The file's name, as the layer's title.
    pub file_name: String,
    /// The file.
    pub blob: CachedBlob,
}

/// The layout being assembled.
#[derive(Debug)]
pub struct Assembly {
    cache: Cache,
    blobs: BTreeMap<Sha256Digest, BlobFile>,
    descriptors: Vec<Descriptor>,
    /// The reference names of `descriptors`.
    names: BTreeSet<String>,
    artifacts: Vec<Artifact>,
}

impl Assembly {
    /// An empty layout whose generated manifests are stored in `cache`.
    pub fn new(cache: &Cache) -> Self {
        Self {
            cache: cache.clone(),
            blobs: BTreeMap::new(),
            descriptors: Vec::new(),
            names: BTreeSet::new(),
            artifacts: Vec::new(),
        }
    }

    fn blob(&mut self, blob: &CachedBlob) {
        self.blobs.entry(blob.digest).or_insert_with(|| BlobFile {
            digest: blob.digest,
            size: blob.size,
            path: blob.path.clone(),
        });
    }

    fn generated(&mut self, value: &serde_json::Value) -> Result<CachedBlob, AssembleError> {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| AssembleError::Internal(format!("cannot serialise a manifest: {e}")))?;
        let blob = self.cache.put_bytes(&bytes, None)?;
        self.blob(&blob);
        Ok(blob)
    }

    fn index_entry(
        &mut self,
        media_type: &str,
        blob: &CachedBlob,
        reference: &str,
    ) -> Result<(), AssembleError> {
        let digest: oci_spec::image::Digest = blob.digest.to_string().parse().map_err(|_| {
            AssembleError::Internal(format!("`{}` is not an OCI digest", blob.digest))
        })?;
        // A referrer shared by two references of one image (`app:1` and `app:stable`) is named
        // the same from both: listed once.
        if !self.names.insert(reference.to_owned()) {
            return Ok(());
        }
        let mut descriptor = Descriptor::new(MediaType::from(media_type), blob.size, digest);
        descriptor.set_annotations(Some(HashMap::from([(
            REF_NAME_ANNOTATION.to_owned(),
            reference.to_owned(),
        )])));
        self.descriptors.push(descriptor);
        Ok(())
    }

    /// Adds an image (or a chart pulled from `oci://`) with the blobs fetched for it.
    pub fn add_image(
        &mut self,
        kind: ArtifactKind,
        image: &ResolvedImage,
        fetched: &BTreeMap<Sha256Digest, CachedBlob>,
    ) -> Result<(), AssembleError> {
        let reference = image.source.name();
        self.blob(&image.top_blob);
        let top_blob = image.top_blob.clone();
        self.index_entry(&image.top.media_type, &top_blob, &reference)?;
        let r = &image.source.reference;
        let name = format!("{}/{}", r.registry(), r.repository());
        let version = r.tag().or(r.digest()).unwrap_or_default().to_owned();
        for (platform, manifest, manifest_blob) in &image.manifests {
            self.blob(manifest_blob);
            let mut size = manifest_blob.size;
            for needed in &manifest.blobs {
                let blob = fetched.get(&needed.digest).ok_or_else(|| {
                    AssembleError::Internal(format!(
                        "blob `{}` of `{reference}` was not fetched",
                        needed.digest
                    ))
                })?;
                self.blob(blob);
                size += blob.size;
            }
            if manifest.digest != image.top.digest {
                size += image.top_blob.size;
            }
            self.artifacts.push(Artifact {
                kind,
                name: name.clone(),
                version: version.clone(),
                platform: platform.as_ref().map(ToString::to_string),
                reference: reference.clone(),
                digest: manifest.digest,
                size,
                omitted_platforms: image.omitted_platforms.clone(),
            });
        }
        self.add_referrers(image, fetched)
    }

    /// Adds an image's referrers beside it, in its repository: one found under a cosign tag
    /// keeps that tag (`<repository>:sha256-<hex>.sig`); those found through the referrers API
    /// are listed, per subject, by a referrers tag-schema index (`<repository>:sha256-<hex>`), so
    /// a registry without the referrers API still leads a client to them.
    fn add_referrers(
        &mut self,
        image: &ResolvedImage,
        fetched: &BTreeMap<Sha256Digest, CachedBlob>,
    ) -> Result<(), AssembleError> {
        let r = &image.source.reference;
        let repository = format!("{}/{}", r.registry(), r.repository());
        let mut by_subject: BTreeMap<Sha256Digest, Vec<&Referrer>> = BTreeMap::new();
        for referrer in &image.referrers {
            self.blob(&referrer.blob);
            for needed in &referrer.document.blobs {
                let blob = fetched.get(&needed.digest).ok_or_else(|| {
                    AssembleError::Internal(format!(
                        "blob `{}` of a referrer of `{}` was not fetched",
                        needed.digest,
                        image.source.name()
                    ))
                })?;
                self.blob(blob);
            }
            match &referrer.tag {
                Some(tag) => self.index_entry(
                    &referrer.document.media_type,
                    &referrer.blob,
                    &format!("{repository}:{tag}"),
                )?,
                None => by_subject
                    .entry(referrer.subject)
                    .or_default()
                    .push(referrer),
            }
        }
        for (subject, mut referrers) in by_subject {
            referrers.sort_by_key(|referrer| referrer.document.digest);
            let manifests: Vec<serde_json::Value> =
                referrers.iter().map(|r| referrer_descriptor(r)).collect();
            let index =
                json!({ "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests });
            let blob = self.generated(&index)?;
            let name = format!("{repository}:{}", digest_tag(&subject));
            self.index_entry(OCI_INDEX, &blob, &name)?;
        }
        Ok(())
    }

    /// Adds a binary or file: one ORAS-style artifact manifest per platform, under an index.
    pub fn add_files(
        &mut self,
        kind: ArtifactKind,
        name: &str,
        version: &str,
        files: &[PlatformFile],
    ) -> Result<(), AssembleError> {
        let (namespace, artifact_type) = match kind {
            ArtifactKind::Binary => (ArtifactNamespace::Binaries, BINARY_ARTIFACT_TYPE),
            _ => (ArtifactNamespace::Files, FILE_ARTIFACT_TYPE),
        };
        let reference = layout::artifact_reference(namespace, name, version)?;
        let empty = self.cache.put_bytes(EMPTY_CONFIG, None)?;
        self.blob(&empty);
        let mut entries = Vec::new();
        for file in files {
            self.blob(&file.blob);
            let manifest = json!({
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "artifactType": artifact_type,
                "config": descriptor_json(EMPTY_CONFIG_MEDIA_TYPE, &empty),
                "layers": [{
                    "mediaType": FILE_LAYER_MEDIA_TYPE,
                    "digest": file.blob.digest.to_string(),
                    "size": file.blob.size,
                    "annotations": { TITLE_ANNOTATION: file.file_name },
                }],
            });
            let blob = self.generated(&manifest)?;
            let mut entry = descriptor_json(OCI_MANIFEST, &blob);
            entry["artifactType"] = artifact_type.into();
            if let Some(platform) = &file.platform {
                entry["platform"] = platform_json(platform);
            }
            self.artifacts.push(Artifact {
                kind,
                name: name.to_owned(),
                version: version.to_owned(),
                platform: file.platform.as_ref().map(ToString::to_string),
                reference: reference.clone(),
                digest: blob.digest,
                size: blob.size + file.blob.size + empty.size,
                omitted_platforms: Vec::new(),
            });
            entries.push(entry);
        }
        let index = json!({ "schemaVersion": 2, "mediaType": OCI_INDEX, "artifactType": artifact_type, "manifests": entries });
        let index_blob = self.generated(&index)?;
        self.index_entry(OCI_INDEX, &index_blob, &reference)
    }

    /// Adds a chart from an HTTP repository with Helm's OCI media types.
    pub fn add_chart(
        &mut self,
        name: &str,
        version: &str,
        config_json: &[u8],
        tgz: &CachedBlob,
    ) -> Result<(), AssembleError> {
        let reference = layout::artifact_reference(ArtifactNamespace::Charts, name, version)?;
        let config = self.cache.put_bytes(config_json, None)?;
        self.blob(&config);
        self.blob(tgz);
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": descriptor_json(HELM_CONFIG_MEDIA_TYPE, &config),
            "layers": [descriptor_json(HELM_CHART_MEDIA_TYPE, tgz)],
        });
        let blob = self.generated(&manifest)?;
        self.index_entry(OCI_MANIFEST, &blob, &reference)?;
        self.artifacts.push(Artifact {
            kind: ArtifactKind::Chart,
            name: name.to_owned(),
            version: version.to_owned(),
            platform: None,
            reference,
            digest: blob.digest,
            size: blob.size + config.size + tgz.size,
            omitted_platforms: Vec::new(),
        });
        Ok(())
    }

    /// Adds an OS package: one ORAS-style artifact manifest whose one layer is the `.deb`,
    /// named by the record's reference (which carries distribution and architecture), for
    /// `platform`.
    pub fn add_package(
        &mut self,
        record: &PackageRecord,
        deb: &CachedBlob,
        platform: &Platform,
    ) -> Result<(), AssembleError> {
        let empty = self.cache.put_bytes(EMPTY_CONFIG, None)?;
        self.blob(&empty);
        self.blob(deb);
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": PACKAGE_ARTIFACT_TYPE,
            "config": descriptor_json(EMPTY_CONFIG_MEDIA_TYPE, &empty),
            "layers": [{
                "mediaType": DEB_LAYER_MEDIA_TYPE,
                "digest": deb.digest.to_string(),
                "size": deb.size,
                "annotations": { TITLE_ANNOTATION: record.filename },
            }],
        });
        let blob = self.generated(&manifest)?;
        self.index_entry(OCI_MANIFEST, &blob, &record.reference)?;
        if let Some(descriptor) = self.descriptors.last_mut() {
            descriptor.set_artifact_type(Some(MediaType::from(PACKAGE_ARTIFACT_TYPE)));
            descriptor.set_platform(Some(oci_platform(platform)?));
        }
        self.artifacts.push(Artifact {
            kind: ArtifactKind::Package,
            name: record.name.clone(),
            version: record.version.clone(),
            platform: Some(platform.to_string()),
            reference: record.reference.clone(),
            digest: blob.digest,
            size: blob.size + deb.size + empty.size,
            omitted_platforms: Vec::new(),
        });
        Ok(())
    }

    /// The index, the blobs and the artifact list.
    pub fn finish(mut self) -> Result<(ImageIndex, Vec<BlobFile>, Vec<Artifact>), AssembleError> {
        // Sorted by reference name, so the order of the manifest does not change the bytes.
        self.descriptors
            .sort_by(|a, b| layout::ref_name(a).cmp(&layout::ref_name(b)));
        let index = ImageIndexBuilder::default()
            .schema_version(2u32)
            .media_type(MediaType::ImageIndex)
            .manifests(self.descriptors)
            .build()
            .map_err(|e| AssembleError::Internal(format!("cannot build index.json: {e}")))?;
        self.artifacts
            .sort_by(|a, b| (&a.reference, &a.platform).cmp(&(&b.reference, &b.platform)));
        Ok((index, self.blobs.into_values().collect(), self.artifacts))
    }

    /// The size of all distinct blobs so far.
    pub fn unique_size(&self) -> u64 {
        self.blobs.values().map(|b| b.size).sum()
    }
}

fn descriptor_json(media_type: &str, blob: &CachedBlob) -> serde_json::Value {
    json!({ "mediaType": media_type, "digest": blob.digest.to_string(), "size": blob.size })
}

/// A referrer's descriptor in a referrers index: its `artifactType` (or else its config's media
/// type) and annotations, as the OCI distribution spec lists them.
fn referrer_descriptor(referrer: &Referrer) -> serde_json::Value {
    let mut descriptor = descriptor_json(&referrer.document.media_type, &referrer.blob);
    let artifact_type = referrer.raw.artifact_type.clone().or_else(|| {
        referrer
            .raw
            .config
            .as_ref()
            .and_then(|config| config.media_type.clone())
    });
    if let Some(artifact_type) = artifact_type {
        descriptor["artifactType"] = artifact_type.into();
    }
    if let Some(annotations) = &referrer.raw.annotations {
        descriptor["annotations"] = json!(annotations);
    }
    descriptor
}

fn platform_json(platform: &Platform) -> serde_json::Value {
    let mut value = json!({ "os": platform.os(), "architecture": platform.architecture() });
    if let Some(variant) = platform.variant() {
        value["variant"] = variant.into();
    }
    value
}

fn oci_platform(platform: &Platform) -> Result<oci_spec::image::Platform, AssembleError> {
    serde_json::from_value(platform_json(platform))
        .map_err(|e| AssembleError::Internal(format!("platform `{platform}`: {e}")))
}

/// The fetched blobs cannot be laid out as one OCI layout.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AssembleError {
    /// An artifact's name or version cannot name it in the layout.
    #[error(transparent)]
    Bundle(#[from] bundle_spec::BundleError),
    /// A generated document could not be stored in the cache.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A bug: an internal invariant broke.
    #[error("internal error: {0}; this is a bug in kk-bundle, please report it")]
    Internal(String),
}

#[cfg(test)]
mod tests {
    use bundle_spec::layout;
    use serde_json::Value;

    use super::*;
    use crate::resolve::image::{Document, ImageSource};

    const CONFIG: &[u8] = br#"{"os":"linux","architecture":"amd64"}"#;

    fn stored(cache: &Cache, value: &Value) -> (Document, CachedBlob, bundle_spec::oci::Document) {
        let bytes = serde_json::to_vec(value).unwrap();
        let blob = cache.put_bytes(&bytes, None).unwrap();
        let document = Document::parse(&bytes, blob.digest).unwrap();
        (document, blob, serde_json::from_slice(&bytes).unwrap())
    }

    fn manifest(config: &CachedBlob, extra: &Value) -> Value {
        let mut value = json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": descriptor_json("application/vnd.oci.image.config.v1+json", config),
            "layers": [],
        });
        for (key, field) in extra.as_object().unwrap() {
            value[key] = field.clone();
        }
        value
    }

    #[test]
    fn referrers_are_named_by_their_tags_and_listed_per_subject_in_digest_order() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let config = cache.put_bytes(CONFIG, None).unwrap();
        let fetched = BTreeMap::from([(config.digest, config.clone())]);
        let (top, top_blob, _) = stored(&cache, &manifest(&config, &json!({})));
        let subject = descriptor_json(OCI_MANIFEST, &top_blob);
        let referrer = |kind: &str, tag: Option<String>| {
            let extra = json!({ "artifactType": kind, "subject": subject });
            let (document, blob, raw) = stored(&cache, &manifest(&config, &extra));
            Referrer {
                subject: top.digest,
                tag,
                document,
                raw,
                blob,
            }
        };
        let sig_tag = format!("{}.sig", digest_tag(&top.digest));
        let referrers = vec![
            referrer("application/spdx+json", None),
            referrer("application/vnd.in-toto+json", None),
            referrer("application/vnd.example.sig", Some(sig_tag.clone())),
        ];
        let image = |reference: &str| ResolvedImage {
            source: ImageSource::parse(reference).unwrap(),
            top: top.clone(),
            top_blob: top_blob.clone(),
            manifests: vec![(None, top.clone(), top_blob.clone())],
            blobs: Vec::new(),
            omitted_platforms: Vec::new(),
            referrers: referrers.clone(),
        };
        let mut assembly = Assembly::new(&cache);
        // Two tags of one image share its referrers: each is named once.
        for reference in ["example.org/app:1", "example.org/app:stable"] {
            assembly
                .add_image(ArtifactKind::Image, &image(reference), &fetched)
                .unwrap();
        }
        let (index, blobs, _) = assembly.finish().unwrap();
        let names: Vec<&str> = index
            .manifests()
            .iter()
            .filter_map(layout::ref_name)
            .collect();
        let stem = format!("example.org/app:{}", digest_tag(&top.digest));
        let sig_name = format!("example.org/app:{sig_tag}");
        assert_eq!(
            names,
            [
                "example.org/app:1",
                stem.as_str(),
                sig_name.as_str(),
                "example.org/app:stable"
            ]
        );
        let listing = &index.manifests()[1];
        let bytes =
            std::fs::read(cache.blob_path(&listing.digest().to_string().parse().unwrap())).unwrap();
        let listed: Value = serde_json::from_slice(&bytes).unwrap();
        let mut expected: Vec<&Referrer> = referrers[..2].iter().collect();
        expected.sort_by_key(|r| r.document.digest);
        let entries: Vec<(String, String)> = listed["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["digest"].as_str().unwrap().to_owned(),
                    d["artifactType"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let wanted: Vec<(String, String)> = expected
            .iter()
            .map(|r| {
                (
                    r.document.digest.to_string(),
                    r.raw.artifact_type.clone().unwrap(),
                )
            })
            .collect();
        assert_eq!(entries, wanted);
        // Every referrer and the generated index are blobs of the layout.
        for referrer in &referrers {
            assert!(blobs.iter().any(|b| b.digest == referrer.document.digest));
        }
    }
}

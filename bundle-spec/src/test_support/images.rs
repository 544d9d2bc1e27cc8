//! Bundles of small test images, written by the bundle writer as a build would: what tests of
//! unpacking, serving and installing start from.

use std::fs;
use std::path::{Path, PathBuf};

use crate::description::{Artifact, ArtifactKind, BaseBlob, DELTA_FORMAT_VERSION, DeltaBase};
use crate::digest::Sha256Digest;
use crate::oci::{INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, REF_NAME_ANNOTATION, ReferenceParts};
use crate::write::{BlobFile, BundleContents, WriteOptions};

/// An image of a test bundle: its reference and one single-layer manifest per platform.
#[derive(Debug)]
pub struct TestImage<'a> {
    /// The full reference, `host/path:tag`.
    pub reference: &'a str,
    /// One layer per platform: one makes a linux/amd64 manifest; more make an OCI image index
    /// over manifests for [`PLATFORMS`], in that order.
    pub layers: &'a [&'a [u8]],
}

/// The architectures of the platform manifests of a multi-layer [`TestImage`].
const PLATFORMS: [&str; 4] = ["amd64", "arm64", "ppc64le", "s390x"];

/// A bundle written by [`write_images`].
#[derive(Debug)]
pub struct WrittenImages {
    /// The first file written: the bundle, or the parts index of a split bundle.
    pub path: PathBuf,
    /// The digest of every blob, in the order the images' layers, configs and manifests were
    /// added.
    pub blobs: Vec<Sha256Digest>,
}

/// A bundle `<dir>/<name>.tar.zst` holding `images` (see [`TestImage`]), written by the bundle
/// writer and split into parts of `split` bytes when given.
pub fn write_images(
    dir: &Path,
    name: &str,
    images: &[TestImage<'_>],
    split: Option<u64>,
) -> WrittenImages {
    write(dir, name, images, split, None)
}

/// A delta bundle `<dir>/<name>.tar.zst` holding `images` onto the bundle `base` (its identity)
/// whose store has the blobs `in_base`: those of the images' blobs are taken from the base,
/// the rest carried. [`WrittenImages::blobs`] lists them all, carried or taken.
pub fn write_delta_images(
    dir: &Path,
    name: &str,
    images: &[TestImage<'_>],
    base: Sha256Digest,
    in_base: &[Sha256Digest],
) -> WrittenImages {
    write(dir, name, images, None, Some((base, in_base)))
}

fn write(
    dir: &Path,
    name: &str,
    images: &[TestImage<'_>],
    split: Option<u64>,
    base: Option<(Sha256Digest, &[Sha256Digest])>,
) -> WrittenImages {
    let blobs = dir.join(format!("{name}-blobs"));
    fs::create_dir_all(&blobs).expect("dir");
    let mut files = Vec::new();
    let mut add = |bytes: &[u8]| {
        let digest = Sha256Digest::of(bytes);
        let path = blobs.join(digest.hex());
        fs::write(&path, bytes).expect("blob");
        files.push(BlobFile {
            digest,
            size: bytes.len() as u64,
            path,
        });
        (digest, bytes.len())
    };
    let (descriptors, artifacts): (Vec<_>, Vec<_>) = images
        .iter()
        .map(|image| add_image(&mut add, image))
        .unzip();
    let index: oci_spec::image::ImageIndex = serde_json::from_value(serde_json::json!({
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": descriptors,
    }))
    .expect("index");
    let created = "2026-11-22T00:00:00Z".parse().expect("time");
    let mut description = super::description(created, artifacts);
    let all: Vec<Sha256Digest> = files.iter().map(|b| b.digest).collect();
    if let Some((identity, in_base)) = base {
        let (taken, carried): (Vec<BlobFile>, Vec<BlobFile>) =
            files.into_iter().partition(|b| in_base.contains(&b.digest));
        files = carried;
        let mut blobs: Vec<BaseBlob> = taken
            .iter()
            .map(|b| BaseBlob {
                digest: b.digest,
                size: b.size,
            })
            .collect();
        blobs.sort_by_key(|b| b.digest);
        // Images share blobs (their config): the base lists each once.
        blobs.dedup_by_key(|b| b.digest);
        description.format_version = DELTA_FORMAT_VERSION;
        description.base = Some(DeltaBase { identity, blobs });
    }
    let target = dir.join(format!("{name}.tar.zst"));
    let options = WriteOptions {
        split_size: split,
        ..WriteOptions::default()
    };
    let contents = BundleContents {
        description,
        index,
        blobs: files,
    };
    let written = crate::write_bundle(&contents, &target, &options).expect("write");
    WrittenImages {
        path: written.output.paths[0].clone(),
        blobs: all,
    }
}

/// Adds the blobs of `image` through `add` (which stores a blob and returns its digest and
/// size); returns its descriptor for `index.json` and its artifact for the description.
fn add_image(
    add: &mut impl FnMut(&[u8]) -> (Sha256Digest, usize),
    image: &TestImage<'_>,
) -> (serde_json::Value, Artifact) {
    assert!(
        (1..=PLATFORMS.len()).contains(&image.layers.len()),
        "{}: 1 to {} layers",
        image.reference,
        PLATFORMS.len()
    );
    let mut platform_manifests = Vec::new();
    let mut last = None;
    for (layer, arch) in image.layers.iter().zip(PLATFORMS) {
        let (layer_digest, layer_size) = add(layer);
        let config = format!(
            r#"{{"architecture":"{arch}","os":"linux","rootfs":{{"type":"layers","diff_ids":[]}},"config":{{}}}}"#
        );
        let (config_digest, config_size) = add(config.as_bytes());
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{config_digest}","size":{config_size}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"{layer_digest}","size":{layer_size}}}]}}"#
        );
        let (digest, size) = add(manifest.as_bytes());
        last = Some((digest, size));
        platform_manifests.push(serde_json::json!({
            "mediaType": MANIFEST_MEDIA_TYPE,
            "digest": digest.to_string(),
            "size": size,
            "platform": {"architecture": arch, "os": "linux"},
        }));
    }
    let (media_type, (digest, size), platform) = if platform_manifests.len() == 1 {
        (
            MANIFEST_MEDIA_TYPE,
            last.expect("one manifest"),
            Some("linux/amd64".to_owned()),
        )
    } else {
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": INDEX_MEDIA_TYPE,
            "manifests": platform_manifests,
        })
        .to_string();
        (INDEX_MEDIA_TYPE, add(index.as_bytes()), None)
    };
    let descriptor = serde_json::json!({
        "mediaType": media_type,
        "digest": digest.to_string(),
        "size": size,
        "annotations": {REF_NAME_ANNOTATION: image.reference},
    });
    let parts = ReferenceParts::split(image.reference);
    let (repository, tag) = (parts.repository, parts.tag.expect("a tag"));
    let artifact = Artifact {
        kind: ArtifactKind::Image,
        name: repository.into(),
        version: tag.into(),
        platform,
        reference: image.reference.into(),
        digest,
        size: 0,
        omitted_platforms: vec![],
    };
    (descriptor, artifact)
}

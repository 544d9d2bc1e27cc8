//! The writing half of a build, overlapping the fetching: the writer runs on a blocking thread
//! from the moment the bundle's contents are known, and waits for each image layer only when it
//! reaches that layer, while the downloads go on beside it.

use std::collections::BTreeSet;
use std::sync::mpsc;

use bundle_spec::write::{FrameCache, WriteOptions};
use bundle_spec::{BlobFile, BundleContents, BundleError, Sha256Digest, WrittenBundle};

use super::BuildError;
use super::BuildOptions;
use super::fetch::Layers;
use crate::cache::Cache;

/// The frame cache's directory below the blob cache: the compressed frames of large blobs, by
/// level and digest, which a rebuild copies instead of compressing again.
const FRAMES_DIR: &str = "frames";

/// The frame cache of a build's blob cache.
pub(super) fn frame_cache(options: &BuildOptions) -> FrameCache {
    FrameCache::new(options.cache_dir.join(FRAMES_DIR))
}

/// Writes `contents` while `layers` are still arriving; a failed download fails the build with
/// its own error, and nothing is left at the output.
///
/// A frame-cache entry that proves damaged is gone then, and the bundle is written again with
/// every blob re-hashed. When it was the blob under the entry that was damaged (the stored
/// frames of data that does not compress are rebuilt from it), the cache removes that blob too
/// and every other damaged one, and the build fails with [`BuildError::CachedBlobDamaged`],
/// for the caller to fetch them anew.
pub(super) async fn write_while_fetching(
    contents: BundleContents,
    options: &BuildOptions,
    cache: Cache,
    mut layers: Layers,
) -> Result<WrittenBundle, BuildError> {
    let write_options = WriteOptions {
        level: options.level,
        split_size: options.split_size,
        // Every blob was verified as it entered the cache: this run re-hashed it on the hit or
        // on download, or copies its frames without reading it; hashing it here again would
        // double the slowest step of the build.
        verify_blobs: false,
        frame_cache: Some(frame_cache(options)),
        signing_key: options.signing_key.clone(),
        ..WriteOptions::default()
    };
    let output = options.output.clone();
    let (pending, arrived) = (layers.pending, layers.arrived);
    let writer = tokio::task::spawn_blocking(move || {
        let mut arrivals = Arrivals {
            pending,
            arrived,
            seen: BTreeSet::new(),
        };
        let mut ready = |blob: &BlobFile| arrivals.wait_for(blob.digest);
        match bundle_spec::write_bundle_as_ready(&contents, &output, &write_options, &mut ready) {
            // The damaged entry is gone now, so a second write compresses that blob anew; it
            // re-hashes every blob it reads, since blobs whose frames were cached were not
            // re-read from the cache in this run.
            Err(BundleError::FrameCacheDamaged { digest, path }) => {
                tracing::warn!(%digest, path = %path.display(), "a frame cache entry was damaged and is rebuilt");
                if cache.get(&digest)?.is_none() {
                    // A damaged blob is seldom alone (a power cut shortens every file it
                    // caught): each one is re-hashed now, and removed if damaged too, so that
                    // one more build fetches them all.
                    for blob in &contents.blobs {
                        cache.get(&blob.digest)?;
                    }
                    return Err(BuildError::CachedBlobDamaged { digest });
                }
                let verifying = WriteOptions {
                    verify_blobs: true,
                    ..write_options
                };
                Ok(bundle_spec::write_bundle_as_ready(
                    &contents, &output, &verifying, &mut ready,
                )?)
            }
            result => Ok(result?),
        }
    });
    let task = layers.task.0.take();
    let fetched = match task {
        Some(task) => task
            .await
            .map_err(|e| BuildError::Internal(format!("the download task failed: {e}")))?,
        None => Ok(()),
    };
    let written = writer
        .await
        .map_err(|e| BuildError::Internal(format!("the writer thread failed: {e}")))?;
    // A download's error explains a writer that stopped waiting for it.
    fetched?;
    written
}

/// The layers the writer has seen arrive.
struct Arrivals {
    pending: BTreeSet<Sha256Digest>,
    arrived: mpsc::Receiver<Sha256Digest>,
    seen: BTreeSet<Sha256Digest>,
}

impl Arrivals {
    /// Blocks until the blob `digest` is in the cache (at once for a blob that is not a layer
    /// being fetched).
    fn wait_for(&mut self, digest: Sha256Digest) -> Result<(), BundleError> {
        if !self.pending.contains(&digest) || self.seen.contains(&digest) {
            return Ok(());
        }
        let waiting = std::time::Instant::now();
        while !self.seen.contains(&digest) {
            let next = self.arrived.recv().map_err(|_| BundleError::BlobNotReady {
                digest,
                reason: "its download failed or was cancelled".into(),
            })?;
            self.seen.insert(next);
        }
        let waited = waiting.elapsed();
        if waited >= std::time::Duration::from_millis(1) {
            tracing::debug!(%digest, ?waited, "the writer waited for a layer to arrive");
        }
        Ok(())
    }
}

//! The fetching half of a build: images resolved, then binaries, charts and OCI charts fetched
//! whole, while the image layers stream into the cache in digest order (see [`Layers`]), which
//! is the order the writer wants them in.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::mpsc;

use bundle_spec::lock::LockedFile;
use bundle_spec::manifest::{ChartSource, Spec};
use bundle_spec::packages::{PackageSet, RootPackage, deb_arch};
use bundle_spec::platform::Platform;
use bundle_spec::sign::keys::read_public_key;
use bundle_spec::write::{CACHED_BLOB_SIZE, FrameCache};
use bundle_spec::{ArtifactKind, Lock, Sha256Digest};
use futures_util::{StreamExt as _, TryStreamExt as _, stream};

use super::BuildError;
use super::{BuildOptions, resolution_time};
use crate::assemble::{Assembly, PlatformFile};
use crate::cache::{Cache, CachedBlob};
use crate::catalog::Expansion;
use crate::check::charts::ChartCheck;
use crate::delta::Base;
use crate::fetch::HttpFetcher;
use crate::progress::Progress;
use crate::resolve::ResolveError;
use crate::resolve::binary::{ResolvedFile, resolve_binary};
use crate::resolve::chart::{ResolvedChart, resolve_chart};
use crate::resolve::image::{
    self, BlobRef, ImageSource, KeyCheck, RegistryAccess, ResolveOptions, ResolvedImage,
};
use crate::resolve::packages::{PackageRequest, ResolvedPackages, resolve_packages, roots};
use crate::sources::Sources;

/// Everything a build step needs.
#[derive(Debug)]
pub(super) struct Context {
    pub(super) access: RegistryAccess,
    pub(super) fetcher: HttpFetcher,
    pub(super) cache: Cache,
    pub(super) platforms: Vec<Platform>,
    pub(super) locked: Option<Lock>,
    pub(super) allow_missing_platforms: bool,
    pub(super) progress: Progress,
    pub(super) jobs: usize,
    /// The bundle a delta builds on: its blobs are neither fetched nor written.
    pub(super) base: Option<Base>,
    /// The frame cache the writer uses, and its level: a large blob whose frames are there is
    /// not re-read from the blob cache (see `LayerFeed::add`).
    pub(super) frames: FrameCache,
    pub(super) level: i32,
    /// The manifest's directory: `osPackages` keyrings are relative to it.
    pub(super) manifest_dir: std::path::PathBuf,
}

/// Everything fetched for a build (image layers: planned, see [`Layers`]).
pub(super) struct Fetched {
    images: Vec<ResolvedImage>,
    oci_charts: Vec<ResolvedImage>,
    /// Every blob of the images and OCI charts: fetched, planned (being fetched), or the base's.
    blobs: BTreeMap<Sha256Digest, CachedBlob>,
    binaries: Vec<Vec<ResolvedFile>>,
    charts: Vec<ResolvedChart>,
    packages: Vec<ResolvedPackages>,
}

/// Resolves the images, starts streaming their layers into the cache, and fetches the rest.
pub(super) async fn fetch_everything(
    ctx: &Arc<Context>,
    sources: &Sources,
    spec: &Spec,
    expansion: Option<&Expansion>,
) -> Result<(Fetched, Layers), BuildError> {
    // First: a repository whose signature or closure fails stops the build before any image.
    let packages = fetch_packages(ctx, spec, expansion).await?;
    ctx.progress.phase("resolving images");
    // The binaries and charts need nothing from the images: they download while the images
    // resolve, which is mostly waiting on the registry's answers, and the writer, which waits
    // for every binary's size, starts sooner.
    let files =
        async { futures_util::try_join!(fetch_binaries(ctx, sources), fetch_charts(ctx, sources)) };
    let images = async {
        // OCI charts first: their blobs are fetched whole before anything is written (the chart
        // image check renders them), so a layer that is also a chart's blob is theirs to fetch.
        let oci_charts = resolve_images(ctx, &sources.oci_charts, None).await?;
        let feed = LayerFeed::start(ctx, &oci_charts);
        let (images, mut blobs) = futures_util::try_join!(
            resolve_images(ctx, &sources.images, Some(&feed)),
            fetch_image_blobs(ctx, oci_charts.iter()),
        )?;
        ctx.progress.phase("fetching");
        let layers = feed.finish(&mut blobs);
        Ok((images, oci_charts, blobs, layers))
    };
    let ((images, oci_charts, blobs, layers), (binaries, charts)) =
        futures_util::try_join!(images, files)?;
    let fetched = Fetched {
        images,
        oci_charts,
        blobs,
        binaries,
        charts,
        packages,
    };
    Ok((fetched, layers))
}

/// Resolves every set of `spec.osPackages` for the build's platforms and fetches its `.deb`s.
async fn fetch_packages(
    ctx: &Arc<Context>,
    spec: &Spec,
    expansion: Option<&Expansion>,
) -> Result<Vec<ResolvedPackages>, BuildError> {
    if spec.os_packages.is_empty() {
        return Ok(Vec::new());
    }
    ctx.progress.phase("resolving os packages");
    let catalog: &[RootPackage] = expansion.map_or(&[], |e| e.packages.as_slice());
    let locked = ctx.locked.as_ref().map(|lock| lock.packages.as_slice());
    let mut resolved = Vec::new();
    for entry in &spec.os_packages {
        // A set whose architecture the build leaves out (`--platform`) is not bundled.
        for arch in entry
            .arches
            .iter()
            .filter(|arch| ctx.platform_of(arch).is_some())
        {
            let request = PackageRequest {
                entry,
                arch,
                roots: roots(entry, catalog),
                manifest_dir: &ctx.manifest_dir,
                jobs: ctx.jobs,
            };
            let set = resolve_packages(&request, &ctx.fetcher, &ctx.cache, locked).await?;
            for (record, blob) in set.set.packages.iter().zip(&set.blobs) {
                ctx.progress.done(
                    &format!("{} {} {}", record.name, record.version, arch),
                    blob.size,
                );
            }
            resolved.push(set);
        }
    }
    Ok(resolved)
}

impl Fetched {
    /// A fresh lock for what was fetched.
    pub(super) fn lock(&self) -> Result<Lock, BuildError> {
        let mut lock = Lock::new(resolution_time()?);
        lock.images = self
            .images
            .iter()
            .chain(&self.oci_charts)
            .map(ResolvedImage::locked)
            .collect();
        lock.binaries = self
            .binaries
            .iter()
            .flatten()
            .map(ResolvedFile::locked)
            .collect();
        lock.charts = self.charts.iter().map(ResolvedChart::locked).collect();
        lock.packages = self
            .packages
            .iter()
            .flat_map(|set| set.locked.iter().cloned())
            .collect();
        lock.referrers = self
            .images
            .iter()
            .chain(&self.oci_charts)
            .flat_map(|image| {
                let name = image.source.name();
                image.referrers.iter().map(move |r| r.locked(&name))
            })
            .collect();
        Ok(lock)
    }

    /// The package sets, as the description carries them.
    pub(super) fn package_sets(&self) -> Vec<PackageSet> {
        self.packages.iter().map(|set| set.set.clone()).collect()
    }

    /// What the chart image check reads from this build (`check::charts`).
    pub(super) fn chart_check<'a>(
        &'a self,
        spec: &'a Spec,
        expansion: Option<&'a Expansion>,
        options: &'a BuildOptions,
    ) -> ChartCheck<'a> {
        ChartCheck {
            images: &self.images,
            oci_charts: &self.oci_charts,
            blobs: &self.blobs,
            binaries: &self.binaries,
            charts: &self.charts,
            kubernetes: spec.kubernetes.as_ref(),
            expansion,
            allow_missing: options.allow_missing_chart_images,
            work_dir: &options.cache_dir,
        }
    }

    pub(super) fn assemble(
        &self,
        ctx: &Context,
        assembly: &mut Assembly,
    ) -> Result<(), BuildError> {
        for set in &self.packages {
            let platform = ctx.platform_of(&set.set.arch).ok_or_else(|| {
                BuildError::Internal(format!("no platform for Debian `{}`", set.set.arch))
            })?;
            for (record, blob) in set.set.packages.iter().zip(&set.blobs) {
                assembly.add_package(record, blob, platform)?;
            }
        }
        for image in &self.images {
            assembly.add_image(ArtifactKind::Image, image, &self.blobs)?;
        }
        for chart in &self.oci_charts {
            assembly.add_image(ArtifactKind::Chart, chart, &self.blobs)?;
        }
        for files in &self.binaries {
            let Some(first) = files.first() else { continue };
            let platform_files: Vec<PlatformFile> = files
                .iter()
                .map(|f| PlatformFile {
                    platform: Some(f.platform.clone()),
                    file_name: f.file_name.clone(),
                    blob: f.blob.clone(),
                })
                .collect();
            assembly.add_files(
                ArtifactKind::Binary,
                &first.name,
                &first.version,
                &platform_files,
            )?;
        }
        for chart in &self.charts {
            assembly.add_chart(&chart.name, &chart.version, &chart.config_json, &chart.tgz)?;
        }
        Ok(())
    }
}

/// The image layers on their way into the cache: downloads run `jobs` at a time, and each
/// digest is sent to the writer once its blob is complete and verified.
pub(super) struct Layers {
    /// The blobs being fetched; the writer waits for these.
    pub(super) pending: BTreeSet<Sha256Digest>,
    /// The digests of blobs that arrived, in the order they did.
    pub(super) arrived: mpsc::Receiver<Sha256Digest>,
    /// The downloads; aborted if the build fails before it awaits them.
    pub(super) task: AbortOnDrop,
}

/// A task aborted when dropped, so a build that fails early stops its downloads.
pub(super) struct AbortOnDrop(pub(super) Option<tokio::task::JoinHandle<Result<(), BuildError>>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// The layers of the images resolved so far, planned and downloading: each image's layers start
/// as soon as that image is resolved, in digest order, while the other images still resolve
/// (which is mostly waiting on the registry's answers), instead of after the last one.
pub(super) struct LayerFeed {
    ctx: Arc<Context>,
    /// Blobs fetched elsewhere (the OCI charts'): not the feed's.
    others: BTreeSet<Sha256Digest>,
    planned: std::sync::Mutex<Planned>,
    jobs: tokio::sync::mpsc::UnboundedSender<(ImageSource, BlobRef)>,
    arrived: mpsc::Receiver<Sha256Digest>,
    task: AbortOnDrop,
}

/// Where each planned layer will be in the cache, and which of them are being fetched.
#[derive(Default)]
struct Planned {
    blobs: BTreeMap<Sha256Digest, CachedBlob>,
    pending: BTreeSet<Sha256Digest>,
}

impl LayerFeed {
    /// Starts the download task; the blobs of `oci_charts` are left to the charts' own fetch.
    fn start(ctx: &Arc<Context>, oci_charts: &[ResolvedImage]) -> Self {
        let others = oci_charts
            .iter()
            .flat_map(|chart| chart.blobs.iter().map(|blob| blob.digest))
            .collect();
        let (jobs, queue) = tokio::sync::mpsc::unbounded_channel::<(ImageSource, BlobRef)>();
        let (sender, arrived) = mpsc::channel();
        let downloads = Arc::clone(ctx);
        let task = tokio::spawn(async move {
            let queued = stream::unfold(queue, |mut queue| async move {
                queue.recv().await.map(|job| (job, queue))
            });
            let mut done = std::pin::pin!(
                queued
                    .map(|(source, blob)| fetch_layer(Arc::clone(&downloads), source, blob))
                    .buffer_unordered(downloads.jobs)
            );
            while let Some(cached) = done.try_next().await? {
                if sender.send(cached.digest).is_err() {
                    // The writer gave up; its error is the build's.
                    break;
                }
            }
            Ok(())
        });
        Self {
            ctx: Arc::clone(ctx),
            others,
            planned: std::sync::Mutex::default(),
            jobs,
            arrived,
            task: AbortOnDrop(Some(task)),
        }
    }

    /// Plans the blobs of `image` not planned yet (those of its referrers, when its manifests'
    /// came early through [`Self::add_blobs`]).
    fn add(&self, image: &ResolvedImage) {
        self.add_blobs(&image.source, &image.blobs);
    }

    /// Plans the blobs of `source` not planned yet and starts fetching those neither in the
    /// base of a delta nor covered by the frame cache.
    fn add_blobs(&self, source: &ImageSource, blobs: &[BlobRef]) {
        let mut planned = self
            .planned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut new: Vec<&BlobRef> = blobs
            .iter()
            .filter(|blob| {
                !self.others.contains(&blob.digest) && !planned.blobs.contains_key(&blob.digest)
            })
            .collect();
        // The bundle holds blobs in digest order: fetched in that order, the writer waits
        // least for the next one it needs.
        new.sort_by_key(|blob| blob.digest);
        for blob in new {
            // A blob the base of a delta has is not fetched: where it would be cached is
            // recorded, and never read.
            let path = self.ctx.cache.blob_path(&blob.digest);
            let (digest, size) = (blob.digest, blob.size);
            planned
                .blobs
                .insert(digest, CachedBlob { digest, size, path });
            let in_base = self.ctx.base.as_ref().is_some_and(|b| b.has(&digest));
            if in_base || self.ctx.frames_cover(blob) {
                continue;
            }
            planned.pending.insert(digest);
            tracing::debug!(image = %source.name(), %digest, size, "fetching a layer");
            self.ctx.progress.expect_bytes(size);
            // The task ends only once this feed is finished or dropped: the job is taken.
            let _ = self.jobs.send((source.clone(), blob.clone()));
        }
    }

    /// Every image is resolved: adds the planned layers to `blobs` and hands the downloads to
    /// the writer.
    fn finish(self, blobs: &mut BTreeMap<Sha256Digest, CachedBlob>) -> Layers {
        let planned = self
            .planned
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (digest, blob) in planned.blobs {
            blobs.entry(digest).or_insert(blob);
        }
        Layers {
            pending: planned.pending,
            arrived: self.arrived,
            task: self.task,
        }
    }
}

/// Fetches one blob of an image into the cache (or finds it there, verified).
impl Context {
    /// The build's platform whose Debian architecture is `deb`.
    fn platform_of(&self, deb: &str) -> Option<&Platform> {
        self.platforms
            .iter()
            .find(|platform| deb_arch(platform.architecture(), platform.variant()) == Some(deb))
    }

    /// Whether the writer will copy `blob`'s frames from the frame cache, with the blob itself
    /// in the blob cache for the rare damaged entry: then neither is read (re-hashed) now.
    fn frames_cover(&self, blob: &BlobRef) -> bool {
        self.unread_blob(&blob.digest)
            .is_some_and(|cached| cached.size == blob.size)
    }

    /// The blob `digest` as the cache holds it, not re-hashed, when the frame cache has a
    /// whole entry for it at the build's level and the blob file is there (the writer rebuilds
    /// the stored frames of data that does not compress from it, and compresses the rare entry
    /// whose frames prove damaged anew). Its size is the entry's. The blob was verified when it
    /// arrived; the writer copies the entry's compressed frames (each decoded and checked) and
    /// checks a stored frame's bytes against the checksum in the entry, so the blob is not
    /// re-hashed; a write that finds the entry or a stored frame damaged writes again,
    /// re-hashing every blob it reads. Smaller blobs have no entries: they are re-hashed on
    /// every use.
    fn unread_blob(&self, digest: &Sha256Digest) -> Option<CachedBlob> {
        let size = self.frames.blob_size(digest, self.level)?;
        let path = self.cache.blob_path(digest);
        (size >= CACHED_BLOB_SIZE && path.is_file()).then_some(CachedBlob {
            digest: *digest,
            size,
            path,
        })
    }
}

async fn fetch_layer(
    ctx: Arc<Context>,
    source: ImageSource,
    blob: BlobRef,
) -> Result<CachedBlob, BuildError> {
    let fetch = ctx.access.fetch_reference(&source.reference);
    let tracker = ctx.progress.tracker();
    Ok(image::fetch_blob(&ctx.access, &ctx.cache, &source, &fetch, &blob, &tracker).await?)
}

/// Resolves `sources`, in that order; each image is handed to `feed` as soon as it is resolved.
pub(super) async fn resolve_images(
    ctx: &Arc<Context>,
    sources: &[ImageSource],
    feed: Option<&LayerFeed>,
) -> Result<Vec<ResolvedImage>, BuildError> {
    let mut resolved: Vec<(usize, Result<ResolvedImage, BuildError>)> =
        stream::iter(sources.iter().enumerate())
            .map(|(n, source)| async move { (n, resolve_one(ctx, source, feed).await) })
            .buffer_unordered(ctx.jobs)
            .inspect(|(_, result)| {
                if let (Some(feed), Ok(image)) = (feed, result) {
                    feed.add(image);
                }
            })
            .collect()
            .await;
    // Every image is waited for, so the error told is the first in the manifest's order, not
    // the first to come back.
    resolved.sort_by_key(|(n, _)| *n);
    resolved.into_iter().map(|(_, result)| result).collect()
}

/// Resolves one image: against the lock when there is one, checking its signature when the
/// manifest names a key. Its layers go to `feed` as soon as its manifests are known.
async fn resolve_one(
    ctx: &Context,
    source: &ImageSource,
    feed: Option<&LayerFeed>,
) -> Result<ResolvedImage, BuildError> {
    let locked = match &ctx.locked {
        Some(lock) => Some(
            lock.images
                .iter()
                .find(|l| l.reference == source.name())
                .ok_or_else(|| ResolveError::NotLocked {
                    what: format!("image `{}`", source.name()),
                })?,
        ),
        None => None,
    };
    let check = match &source.verify {
        Some(key) => Some(read_key(&ctx.manifest_dir.join(key)).await?),
        None => None,
    };
    let options = ResolveOptions {
        platforms: &ctx.platforms,
        allow_missing_platforms: ctx.allow_missing_platforms,
        locked_referrers: ctx.locked.as_ref().map(|lock| lock.referrers.as_slice()),
        verify: check.as_ref(),
    };
    let manifests_known = |blobs: &[BlobRef]| {
        if let Some(feed) = feed {
            feed.add_blobs(source, blobs);
        }
    };
    Ok(image::resolve_image(
        &ctx.access,
        &ctx.cache,
        source,
        locked,
        options,
        &manifests_known,
    )
    .await?)
}

/// Reads a `verify.key` file: a cosign public key.
async fn read_key(path: &std::path::Path) -> Result<KeyCheck, ResolveError> {
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|source| ResolveError::File {
            path: path.to_owned(),
            source,
        })?;
    let key = read_public_key(&text).map_err(|source| ResolveError::VerifyKey {
        path: path.to_owned(),
        source,
    })?;
    Ok(KeyCheck {
        path: path.to_owned(),
        key,
    })
}

/// Fetches the blobs of `images` (OCI charts) into the cache, all of them before returning.
async fn fetch_image_blobs<'a>(
    ctx: &Arc<Context>,
    images: impl Iterator<Item = &'a ResolvedImage>,
) -> Result<BTreeMap<Sha256Digest, CachedBlob>, BuildError> {
    let mut jobs = BTreeMap::new();
    for image in images {
        for blob in &image.blobs {
            jobs.entry(blob.digest)
                .or_insert_with(|| (image.source.clone(), blob.clone()));
        }
    }
    stream::iter(jobs.into_values())
        .map(|(source, blob)| fetch_layer(Arc::clone(ctx), source, blob))
        .buffer_unordered(ctx.jobs)
        .map_ok(|cached| (cached.digest, cached))
        .try_collect()
        .await
}

async fn fetch_binaries(
    ctx: &Arc<Context>,
    sources: &Sources,
) -> Result<Vec<Vec<ResolvedFile>>, BuildError> {
    stream::iter(sources.binaries.iter().cloned())
        .map(|binary| {
            let ctx = Arc::clone(ctx);
            async move {
                let locked: Option<Vec<LockedFile>> =
                    ctx.locked.as_ref().map(|l| l.binaries.clone());
                let unread = |digest: &Sha256Digest| ctx.unread_blob(digest);
                let files = resolve_binary(
                    &binary,
                    &ctx.platforms,
                    &ctx.fetcher,
                    &ctx.cache,
                    locked.as_deref(),
                    &unread,
                )
                .await?;
                for file in &files {
                    ctx.progress.done(
                        &format!("{} {} {}", file.name, file.version, file.platform),
                        file.blob.size,
                    );
                }
                Ok::<_, BuildError>(files)
            }
        })
        .buffered(ctx.jobs)
        .try_collect()
        .await
}

async fn fetch_charts(
    ctx: &Arc<Context>,
    sources: &Sources,
) -> Result<Vec<ResolvedChart>, BuildError> {
    stream::iter(sources.http_charts.iter().cloned())
        .map(|chart| {
            let ctx = Arc::clone(ctx);
            async move {
                let ChartSource::Repository(repo) = &chart.source else {
                    return Err(BuildError::Internal(format!(
                        "chart `{}` is not from an HTTP repository",
                        chart.name
                    )));
                };
                let locked: Option<Vec<LockedFile>> = ctx.locked.as_ref().map(|l| l.charts.clone());
                let resolved = resolve_chart(
                    &chart.name,
                    &chart.version,
                    repo,
                    &ctx.fetcher,
                    &ctx.cache,
                    locked.as_deref(),
                )
                .await?;
                ctx.progress.done(
                    &format!("chart {} {}", resolved.name, resolved.version),
                    resolved.tgz.size,
                );
                Ok(resolved)
            }
        })
        .buffered(ctx.jobs)
        .try_collect()
        .await
}

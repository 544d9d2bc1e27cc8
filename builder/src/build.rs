//! `kk-bundle build`: manifest → lock → fetched blobs → bundle.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bundle_spec::description::{BuilderInfo, SourceManifest, creation_time};
use bundle_spec::lock::LockedFile;
use bundle_spec::manifest::{ChartSource, Manifest};
use bundle_spec::platform::Platform;
use bundle_spec::write::WriteOptions;
use bundle_spec::{
    Artifact, ArtifactKind, BundleContents, Description, FORMAT_VERSION, Lock, Sha256Digest,
    WrittenBundle,
};
use futures_util::{StreamExt as _, TryStreamExt as _, stream};

use crate::assemble::{Assembly, PlatformFile};
use crate::cache::{Cache, CachedBlob};
use crate::catalog::Catalog;
use crate::error::BuildError;
use crate::fetch::{FetchOptions, HttpFetcher};
use crate::lockfile::{default_lock_path, read_lock, write_lock};
use crate::progress::Progress;
use crate::resolve::binary::{ResolvedFile, resolve_binary};
use crate::resolve::chart::{ResolvedChart, resolve_chart};
use crate::resolve::image::{self, ImageSource, RegistryAccess, ResolveOptions, ResolvedImage};
use crate::sources::Sources;

/// What to build and how.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The manifest.
    pub manifest: PathBuf,
    /// The bundle to write.
    pub output: PathBuf,
    /// The blob cache.
    pub cache_dir: PathBuf,
    /// How many downloads run at once.
    pub jobs: usize,
    /// Rebuild exactly from the lock; fail if upstream drifted.
    pub locked: bool,
    /// The lock file; default beside the manifest.
    pub lock_path: Option<PathBuf>,
    /// Split the bundle into parts of at most this many bytes.
    pub split_size: Option<u64>,
    /// Platforms to bundle instead of the manifest's.
    pub platforms: Vec<Platform>,
    /// Warn instead of failing when an image lacks a wanted platform.
    pub allow_missing_platforms: bool,
    /// zstd level for compressible data.
    pub level: i32,
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// The bundle written.
    pub written: WrittenBundle,
    /// Its artifacts.
    pub artifacts: Vec<Artifact>,
    /// The platforms it carries.
    pub platforms: Vec<Platform>,
    /// The artifacts' sizes added up, shared blobs counted each time.
    pub size_before_dedup: u64,
    /// The size of the distinct blobs.
    pub size_after_dedup: u64,
    /// The lock written or used.
    pub lock_path: PathBuf,
    /// How long the build took.
    pub elapsed: Duration,
}

/// Builds the bundle `options` describe.
pub async fn build(options: &BuildOptions, progress: &Progress) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let manifest = Manifest::from_path(&options.manifest)?;
    let spec = manifest.spec();
    let platforms = if options.platforms.is_empty() {
        spec.platforms.clone()
    } else {
        options.platforms.clone()
    };
    let lock_path = options
        .lock_path
        .clone()
        .unwrap_or_else(|| default_lock_path(&options.manifest));
    let locked = options.locked.then(|| read_lock(&lock_path)).transpose()?;
    let expansion = spec
        .kubernetes
        .as_ref()
        .map(|k| Catalog::builtin().expand(k))
        .transpose()?;
    let sources = Sources::collect(&manifest, expansion.as_ref())?;
    let cache = Cache::open(&options.cache_dir)?;
    let fetch_options = FetchOptions {
        retries: 5,
        file_mirrors: spec.file_mirrors.clone(),
        ..FetchOptions::default()
    };
    let ctx = Arc::new(Context {
        access: RegistryAccess::new(&spec.registries)?,
        fetcher: HttpFetcher::new(fetch_options)?,
        cache: cache.clone(),
        platforms: platforms.clone(),
        locked: locked.clone(),
        allow_missing_platforms: options.allow_missing_platforms,
        progress: progress.clone(),
        jobs: options.jobs.max(1),
    });

    let fetched = fetch_everything(&ctx, &sources).await?;
    let lock = if let Some(lock) = locked {
        lock
    } else {
        let lock = fetched.lock()?;
        write_lock(&lock_path, &lock)?;
        lock
    };
    let mut assembly = Assembly::new(&cache);
    fetched.assemble(&mut assembly)?;
    let size_after_dedup = assembly.unique_size();
    let (index, blobs, artifacts) = assembly.finish()?;
    let size_before_dedup = artifacts.iter().map(|a| a.size).sum();

    progress.phase("writing bundle");
    let description = Description {
        format_version: FORMAT_VERSION,
        builder: BuilderInfo {
            name: "kk-bundle".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        created: creation_time(&lock)?,
        manifest: SourceManifest {
            name: options
                .manifest
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            text: manifest.source().to_owned(),
        },
        lock,
        artifacts: artifacts.clone(),
    };
    let written = write(
        BundleContents {
            description,
            index,
            blobs,
        },
        options,
    )
    .await?;
    progress.finish();
    Ok(BuildReport {
        written,
        artifacts,
        platforms,
        size_before_dedup,
        size_after_dedup,
        lock_path,
        elapsed: started.elapsed(),
    })
}

/// Everything fetched for a build.
struct Fetched {
    images: Vec<ResolvedImage>,
    oci_charts: Vec<ResolvedImage>,
    blobs: BTreeMap<Sha256Digest, CachedBlob>,
    binaries: Vec<Vec<ResolvedFile>>,
    charts: Vec<ResolvedChart>,
}

async fn fetch_everything(ctx: &Arc<Context>, sources: &Sources) -> Result<Fetched, BuildError> {
    ctx.progress.phase("resolving images");
    let images = resolve_images(ctx, &sources.images).await?;
    let oci_charts = resolve_images(ctx, &sources.oci_charts).await?;
    ctx.progress.phase("fetching");
    let blobs = fetch_image_blobs(ctx, images.iter().chain(&oci_charts)).await?;
    let binaries = fetch_binaries(ctx, sources).await?;
    let charts = fetch_charts(ctx, sources).await?;
    Ok(Fetched {
        images,
        oci_charts,
        blobs,
        binaries,
        charts,
    })
}

impl Fetched {
    /// A fresh lock for what was fetched.
    fn lock(&self) -> Result<Lock, BuildError> {
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
        Ok(lock)
    }

    fn assemble(&self, assembly: &mut Assembly) -> Result<(), BuildError> {
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

/// Writes the bundle on a blocking thread: compression and hashing are CPU work.
async fn write(
    contents: BundleContents,
    options: &BuildOptions,
) -> Result<WrittenBundle, BuildError> {
    let write_options = WriteOptions {
        level: options.level,
        split_size: options.split_size,
        // Every blob came out of the cache in this run, which re-hashed it on the hit or on
        // download; hashing it a second time would double the slowest step of the build.
        verify_blobs: false,
        ..WriteOptions::default()
    };
    let output = options.output.clone();
    tokio::task::spawn_blocking(move || {
        bundle_spec::write_bundle(&contents, &output, &write_options)
    })
    .await
    .map_err(|e| BuildError::Internal(format!("the writer thread failed: {e}")))?
    .map_err(BuildError::from)
}

/// The time a fresh resolution is dated with: `SOURCE_DATE_EPOCH` if set, else now (whole seconds).
fn resolution_time() -> Result<jiff::Timestamp, BuildError> {
    let now = jiff::Timestamp::now();
    let probe = Lock::new(jiff::Timestamp::from_second(now.as_second()).unwrap_or(now));
    Ok(creation_time(&probe)?)
}

/// Everything a build step needs.
#[derive(Debug)]
struct Context {
    access: RegistryAccess,
    fetcher: HttpFetcher,
    cache: Cache,
    platforms: Vec<Platform>,
    locked: Option<Lock>,
    allow_missing_platforms: bool,
    progress: Progress,
    jobs: usize,
}

async fn resolve_images(
    ctx: &Arc<Context>,
    sources: &[ImageSource],
) -> Result<Vec<ResolvedImage>, BuildError> {
    stream::iter(sources.iter().cloned())
        .map(|source| {
            let ctx = Arc::clone(ctx);
            async move {
                let locked = match &ctx.locked {
                    Some(lock) => Some(
                        lock.images
                            .iter()
                            .find(|l| l.reference == source.name())
                            .ok_or_else(|| BuildError::NotLocked {
                                what: format!("image `{}`", source.name()),
                            })?,
                    ),
                    None => None,
                };
                let options = ResolveOptions {
                    platforms: &ctx.platforms,
                    allow_missing_platforms: ctx.allow_missing_platforms,
                };
                image::resolve_image(&ctx.access, &ctx.cache, &source, locked, options).await
            }
        })
        .buffered(ctx.jobs)
        .try_collect()
        .await
}

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
    ctx.progress
        .expect_bytes(jobs.values().map(|(_, b)| b.size).sum());
    stream::iter(jobs.into_values())
        .map(|(source, blob)| {
            let ctx = Arc::clone(ctx);
            async move {
                let fetch = ctx.access.fetch_reference(&source.reference);
                let tracker = ctx.progress.tracker();
                let cached =
                    image::fetch_blob(&ctx.access, &ctx.cache, &source, &fetch, &blob, &tracker)
                        .await?;
                Ok::<_, BuildError>((cached.digest, cached))
            }
        })
        .buffer_unordered(ctx.jobs)
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
                let files = resolve_binary(
                    &binary,
                    &ctx.platforms,
                    &ctx.fetcher,
                    &ctx.cache,
                    locked.as_deref(),
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

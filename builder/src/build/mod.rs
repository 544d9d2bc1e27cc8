//! `kk-bundle build`: manifest → lock → fetched blobs → bundle.
//!
//! Fetching and writing overlap: once the images are resolved and the binaries and charts are
//! in the cache, every digest, size and the whole description are known, so the writer starts
//! while the image layers still download (`fetch::Layers`), taking each as it arrives in the
//! digest order the format puts blobs in. A rebuild copies the compressed frames of large
//! unchanged blobs from the frame cache instead of compressing them again (`write`).

mod error;
mod fetch;
mod write;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bundle_spec::description::{BuilderInfo, SourceManifest, creation_time};
use bundle_spec::manifest::{Manifest, Spec};
use bundle_spec::platform::Platform;
use bundle_spec::{
    Artifact, BundleContents, DELTA_FORMAT_VERSION, DeltaBase, Description, FORMAT_VERSION, Lock,
    WrittenBundle,
};

pub use error::BuildError;

use crate::assemble::Assembly;
use crate::cache::Cache;
use crate::catalog::Catalog;
use crate::check::charts::check_chart_images;
use crate::delta::Base;
use crate::fetch::{FetchOptions, HttpFetcher};
use crate::kubekey;
use crate::lockfile::{default_lock_path, read_lock, write_lock};
use crate::progress::Progress;
use crate::resolve::image::RegistryAccess;
use crate::sources::Sources;
use fetch::{Context, fetch_everything};

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
    /// Warn instead of failing when a bundled chart names an image the bundle lacks.
    pub allow_missing_chart_images: bool,
    /// zstd level for compressible data.
    pub level: i32,
    /// Write a delta bundle on this previous bundle: only the blobs it lacks.
    pub since: Option<PathBuf>,
    /// How to convert the manifest if it is a KubeKey v3 `Manifest`.
    pub kubekey: kubekey::Options,
    /// Sign the bundle with this key: embedded, and as `<bundle>.sigstore.json` beside it.
    pub signing_key: Option<p256::ecdsa::SigningKey>,
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

/// Reads the manifest at `path`: a kk manifest, or a KubeKey v3 `Manifest` converted into one
/// (its warnings logged as such, as `kk-bundle convert` prints them).
fn read_manifest(
    path: &std::path::Path,
    kubekey_options: &kubekey::Options,
) -> Result<Manifest, BuildError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| bundle_spec::ManifestError::Read {
            path: path.to_owned(),
            source,
        })?;
    let name = path.display().to_string();
    if !kubekey::is_kubekey(&text) {
        return Ok(Manifest::from_str_named(&text, &name)?);
    }
    let conversion = kubekey::convert(&text, &name, kubekey_options)?;
    for warning in &conversion.warnings {
        tracing::warn!("{warning}");
    }
    Ok(conversion.manifest)
}

/// Builds the bundle `options` describe.
///
/// A blob the cache held damaged is found only while the bundle is written from it (see
/// `write`): the cache has removed it then, and the build runs once more, which fetches it. A
/// second such failure is the error.
pub async fn build(options: &BuildOptions, progress: &Progress) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let report = match build_once(options, progress).await {
        Err(BuildError::CachedBlobDamaged { digest }) => {
            tracing::warn!(%digest, "a cached blob was damaged and removed; building again to fetch it");
            build_once(options, progress).await?
        }
        result => result?,
    };
    Ok(BuildReport {
        elapsed: started.elapsed(),
        ..report
    })
}

/// One attempt of [`build`].
async fn build_once(
    options: &BuildOptions,
    progress: &Progress,
) -> Result<BuildReport, BuildError> {
    let started = Instant::now();
    let manifest = read_manifest(&options.manifest, &options.kubekey)?;
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
    let base = open_base(options).await?;
    let ctx = context(
        options,
        progress,
        spec,
        &sources,
        &platforms,
        locked.clone(),
        base.clone(),
    )?;

    let (fetched, layers) = fetch_everything(&ctx, &sources, spec, expansion.as_ref()).await?;
    check_chart_images(
        &fetched.chart_check(spec, expansion.as_ref(), options),
        progress,
    )
    .await?;
    let lock = if let Some(lock) = locked {
        lock
    } else {
        let lock = fetched.lock()?;
        write_lock(&lock_path, &lock)?;
        lock
    };
    let mut assembly = Assembly::new(&ctx.cache);
    fetched.assemble(&ctx, &mut assembly)?;
    let size_after_dedup = assembly.unique_size();
    let (index, blobs, artifacts) = assembly.finish()?;
    let size_before_dedup = artifacts.iter().map(|a| a.size).sum();
    let (blobs, delta) = match &base {
        Some(base) => {
            let (carried, delta) = base.split(blobs);
            (carried, Some(delta))
        }
        None => (blobs, None),
    };

    progress.phase("writing bundle");
    let mut description = describe(options, &manifest, lock, artifacts.clone(), delta)?;
    description.packages = fetched.package_sets();
    let contents = BundleContents {
        description,
        index,
        blobs,
    };
    let written = write::write_while_fetching(contents, options, ctx.cache.clone(), layers).await?;
    tracing::debug!(bytes = written.output.size, "bundle written and synced");
    crate::sign::write_sidecar(&options.output, written.signature.as_deref())?;
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

/// The bundle `--since` names, read on a blocking thread.
async fn open_base(options: &BuildOptions) -> Result<Option<Base>, BuildError> {
    let Some(path) = options.since.clone() else {
        return Ok(None);
    };
    tokio::task::spawn_blocking(move || Base::open(&path))
        .await
        .map_err(|e| BuildError::Internal(format!("the reader thread failed: {e}")))?
        .map(Some)
        .map_err(BuildError::from)
}

/// What every fetch step shares.
fn context(
    options: &BuildOptions,
    progress: &Progress,
    spec: &Spec,
    sources: &Sources,
    platforms: &[Platform],
    locked: Option<Lock>,
    base: Option<Base>,
) -> Result<Arc<Context>, BuildError> {
    let fetch_options = FetchOptions {
        retries: 5,
        file_mirrors: spec.file_mirrors.clone(),
        ..FetchOptions::default()
    };
    let access = RegistryAccess::new(&spec.registries)?;
    // The registry clients are set up on the blocking pool while this thread sets up the file
    // client: both parse the system's root certificates.
    access.prepare(
        sources
            .images
            .iter()
            .chain(&sources.oci_charts)
            .map(|source| &source.reference),
    );
    Ok(Arc::new(Context {
        access,
        fetcher: HttpFetcher::new(fetch_options)?,
        cache: Cache::open(&options.cache_dir)?,
        platforms: platforms.to_vec(),
        locked,
        allow_missing_platforms: options.allow_missing_platforms,
        progress: progress.clone(),
        jobs: options.jobs.max(1),
        base,
        frames: write::frame_cache(options),
        level: options.level,
        manifest_dir: options
            .manifest
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default(),
    }))
}

/// The bundle's description: format 1, or format 2 for a delta.
fn describe(
    options: &BuildOptions,
    manifest: &Manifest,
    lock: Lock,
    artifacts: Vec<Artifact>,
    delta: Option<DeltaBase>,
) -> Result<Description, BuildError> {
    Ok(Description {
        format_version: if delta.is_some() {
            DELTA_FORMAT_VERSION
        } else {
            FORMAT_VERSION
        },
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
        artifacts,
        base: delta,
        packages: Vec::new(),
    })
}

/// The time a fresh resolution is dated with: `SOURCE_DATE_EPOCH` if set, else now (whole seconds).
fn resolution_time() -> Result<jiff::Timestamp, BuildError> {
    let now = jiff::Timestamp::now();
    let probe = Lock::new(jiff::Timestamp::from_second(now.as_second()).unwrap_or(now));
    Ok(creation_time(&probe)?)
}

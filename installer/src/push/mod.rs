//! Push mode: copying every artifact of a bundle store into an existing registry.
//!
//! Every repository of the store — images with all the platforms the store carries, Helm
//! charts, binaries and files — is copied to the target registry under its rule-1 repository
//! name (see [`crate::registry`]): `docker.io/library/busybox:1.36` becomes
//! `TARGET/docker.io/library/busybox:1.36`, `kk.internal/binaries/etcd:v3.5.16` becomes
//! `TARGET/kk.internal/binaries/etcd:v3.5.16`. Tags are kept; a manifest that only a digest
//! reference names is pushed by digest. Paths and digests are preserved, so the references a
//! node pulls resolve to the very bytes the bundle was built from.
//!
//! # Order
//!
//! Repositories are pushed one after the other, sorted by name. Within a repository:
//!
//! 1. **Blobs** (configs and layers) first, `jobs` at a time: a registry refuses a manifest
//!    whose blobs it does not have. A blob the repository already has (`HEAD`) is skipped; a
//!    blob an earlier repository of this push holds is mounted from there (no upload); any
//!    other is uploaded, streamed from the store, with its size and digest (the registry
//!    checks the digest before it accepts the blob).
//! 2. **Manifests**, one at a time, each after every manifest it references: platform
//!    manifests before the index listing them, a referrer after its subject. Each is sent byte
//!    for byte with the media type it is stored under — never re-serialised, or its digest
//!    would change — by tag when the store tags it, else by digest. The digest the registry
//!    then answers for that reference must be the stored one.
//!
//! An index whose omitted platforms (bundle format §5) are absent is pushed as it is: its
//! digest must stay upstream's. A registry accepting it is noted in
//! [`PushReport::incomplete_indexes`]. A registry refusing it (distribution, Harbor) gets the
//! index's tags pointed at the manifest of the preferred platform instead
//! ([`PushReport::retargeted`]), and the index digest is listed as unresolvable there
//! ([`PushReport::unresolvable`]); see [`partial`], and [`preview`] for saying so before the
//! push. Only an index with no platform of its own in the store fails the push
//! ([`PushError::IncompleteIndex`]).
//!
//! # Errors worth a hint
//!
//! A registry refusing the credentials fails with [`PushError::Unauthorized`] (naming the
//! registry and the user, never the password). Credentials over plain HTTP are refused before
//! anything is sent ([`PushError::PasswordOverPlainHttp`]) unless
//! [`PushTarget::allow_plain_http_password`] says so: basic auth in clear text gives the
//! password to anyone on the path, and a typo'd `--plain-http` must not do that silently. Harbor answers a blob upload into a project that
//! does not exist with `404`: that is [`PushError::ProjectMissing`], naming the project (the
//! first component of the repository, `docker.io` for `docker.io/library/busybox`) to create;
//! [`Registry::ensure_projects`] creates them first, and [`Registry::login`] checks the
//! credentials before anything is sent.

mod api;
mod error;
mod partial;
mod plan;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use axum::http::HeaderValue;
use bundle_spec::Sha256Digest;
use futures_util::{StreamExt as _, TryStreamExt as _};
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use tokio_util::io::ReaderStream;

use crate::registry::Store;
pub use api::{HarborProjects, Registry};
pub use error::PushError;
pub use partial::{PartialIndex, outcome, preview, summary};
use plan::{Blob, Manifest, RepositoryPlan};

/// The buffer size a blob is streamed with.
const STREAM_BUFFER: usize = 256 * 1024;

/// The registry to push to.
#[derive(Debug, Clone)]
pub struct PushTarget {
    /// `host[:port]` of the registry.
    pub host: String,
    /// Speak plain HTTP instead of HTTPS.
    pub plain_http: bool,
    /// Send [`Self::credentials`] even over plain HTTP, in clear text (refused otherwise).
    pub allow_plain_http_password: bool,
    /// A PEM file of CA certificates to trust besides the system's.
    pub ca_file: Option<PathBuf>,
    /// Basic credentials (also used to get a token from registries that want one).
    pub credentials: Option<Credentials>,
    /// Platforms (`linux/amd64`) in order of preference for a tag whose incomplete index the
    /// registry refuses; empty: the first platform the store has of that index.
    pub platforms: Vec<String>,
}

/// A user name and password. Their `Debug` form hides the password.
#[derive(Clone)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PushReport {
    /// Repositories pushed.
    pub repositories: usize,
    /// Manifests and indexes pushed (a manifest with two tags counts twice).
    pub manifests: usize,
    /// Blobs uploaded.
    pub blobs_uploaded: usize,
    /// Bytes of the blobs uploaded.
    pub bytes_uploaded: u64,
    /// Blobs mounted from another repository of the registry instead of uploaded.
    pub blobs_mounted: usize,
    /// Blobs the repository already had.
    pub blobs_present: usize,
    /// Indexes pushed although the store lacks some of their platforms.
    pub incomplete_indexes: Vec<IncompleteIndex>,
    /// Tags of refused incomplete indexes, pointed at one platform's manifest instead.
    pub retargeted: Vec<Retargeted>,
    /// `HOST/repository@digest` of the refused incomplete indexes: a digest pin on them does
    /// not resolve in this registry.
    pub unresolvable: Vec<String>,
}

/// A tag the registry got for one platform's manifest, its index refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retargeted {
    /// The target reference (`HOST/registry.k8s.io/pause:3.10`).
    pub reference: String,
    /// The platform of the manifest it names (`linux/amd64`).
    pub platform: String,
    /// That manifest's digest.
    pub manifest: Sha256Digest,
}

/// An index the registry accepted without all its platforms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncompleteIndex {
    /// The target reference (`HOST/docker.io/library/busybox:1.36`).
    pub reference: String,
    /// The platforms missing (`linux/arm64/v8`), or digests of entries without a platform.
    pub missing: Vec<String>,
}

/// How one blob got into the target repository.
enum BlobOutcome {
    Present,
    Mounted,
    Uploaded(u64),
}

/// Pushes every repository of `store` to `target` (see the module documentation for what is
/// pushed, in which order), at most `jobs` blobs at a time (0 counts as 1).
pub async fn push(
    store: &Store,
    target: &PushTarget,
    jobs: usize,
) -> Result<PushReport, PushError> {
    target.check()?;
    let plans = plan::plan(store)?;
    let pusher = Pusher::new(store, target)?;
    let jobs = jobs.max(1);
    let mut report = PushReport::default();
    // Blob digest → a repository of the target that has it.
    let mut located: BTreeMap<Sha256Digest, String> = BTreeMap::new();
    for plan in &plans {
        tracing::info!(
            repository = %plan.name,
            blobs = plan.blobs.len(),
            manifests = plan.manifests.len(),
            "pushing"
        );
        pusher.push_blobs(plan, jobs, &located, &mut report).await?;
        for blob in &plan.blobs {
            located
                .entry(blob.digest)
                .or_insert_with(|| plan.name.clone());
        }
        for manifest in &plan.manifests {
            pusher.push_manifest(plan, manifest, &mut report).await?;
        }
        report.repositories += 1;
    }
    Ok(report)
}

impl PushTarget {
    /// What [`push`] refuses before it sends anything: credentials over plain HTTP unless
    /// [`Self::allow_plain_http_password`] is set. A caller may check it before a long
    /// preparation (unpacking a bundle).
    pub fn check(&self) -> Result<(), PushError> {
        match &self.credentials {
            Some(credentials) if self.plain_http && !self.allow_plain_http_password => {
                Err(PushError::PasswordOverPlainHttp {
                    registry: self.host.clone(),
                    username: credentials.username.clone(),
                })
            }
            _ => Ok(()),
        }
    }
}

/// A client for the target, with what it needs to push a store.
struct Pusher<'a> {
    store: &'a Store,
    target: &'a PushTarget,
    client: Client,
    auth: RegistryAuth,
}

impl<'a> Pusher<'a> {
    fn new(store: &'a Store, target: &'a PushTarget) -> Result<Self, PushError> {
        let mut config = ClientConfig {
            protocol: if target.plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            use_monolithic_push: true,
            ..ClientConfig::default()
        };
        if let Some(path) = &target.ca_file {
            let data = std::fs::read(path).map_err(|source| PushError::CaFile {
                path: path.clone(),
                source: Box::new(source),
            })?;
            config.extra_root_certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            });
        }
        let client = Client::try_from(config).map_err(|source| match &target.ca_file {
            Some(path) => PushError::CaFile {
                path: path.clone(),
                source: Box::new(source),
            },
            None => PushError::Client {
                registry: target.host.clone(),
                source: Box::new(source),
            },
        })?;
        let auth = target
            .credentials
            .as_ref()
            .map_or(RegistryAuth::Anonymous, |c| {
                RegistryAuth::Basic(c.username.clone(), c.password.clone())
            });
        Ok(Self {
            store,
            target,
            client,
            auth,
        })
    }

    /// The target reference `HOST/repository:tag`.
    fn tagged(&self, repository: &str, tag: &str) -> Reference {
        Reference::with_tag(
            self.target.host.clone(),
            repository.to_owned(),
            tag.to_owned(),
        )
    }

    /// The target reference `HOST/repository@digest`.
    fn by_digest(&self, repository: &str, digest: Sha256Digest) -> Reference {
        Reference::with_digest(
            self.target.host.clone(),
            repository.to_owned(),
            digest.to_string(),
        )
    }

    /// Makes sure the client sends the credentials to the target.
    async fn authorize(&self, reference: &Reference) {
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
    }

    /// Pushes the blobs of `plan`, `jobs` at a time.
    async fn push_blobs(
        &self,
        plan: &RepositoryPlan,
        jobs: usize,
        located: &BTreeMap<Sha256Digest, String>,
        report: &mut PushReport,
    ) -> Result<(), PushError> {
        let outcomes: Vec<BlobOutcome> = futures_util::stream::iter(&plan.blobs)
            .map(|blob| self.push_blob(&plan.name, *blob, located.get(&blob.digest)))
            .buffer_unordered(jobs)
            .try_collect()
            .await?;
        for outcome in outcomes {
            match outcome {
                BlobOutcome::Present => report.blobs_present += 1,
                BlobOutcome::Mounted => report.blobs_mounted += 1,
                BlobOutcome::Uploaded(size) => {
                    report.blobs_uploaded += 1;
                    report.bytes_uploaded += size;
                }
            }
        }
        Ok(())
    }

    /// Pushes one blob to `repository`, unless it is there; mounts it from `from` if given.
    async fn push_blob(
        &self,
        repository: &str,
        blob: Blob,
        from: Option<&String>,
    ) -> Result<BlobOutcome, PushError> {
        let reference = self.by_digest(repository, blob.digest);
        let digest = blob.digest.to_string();
        let fail = |source| {
            self.classify(repository, source, |source| PushError::Blob {
                registry: self.target.host.clone(),
                repository: repository.to_owned(),
                digest: digest.clone(),
                source,
            })
        };
        self.authorize(&reference).await;
        if self
            .client
            .blob_exists(&reference, &digest)
            .await
            .map_err(fail)?
        {
            tracing::debug!(repository, %digest, "blob present");
            return Ok(BlobOutcome::Present);
        }
        if let Some(from) = from {
            let source = self.by_digest(from, blob.digest);
            match self.client.mount_blob(&reference, &source, &digest).await {
                Ok(()) => {
                    tracing::debug!(repository, %digest, from, "blob mounted");
                    return Ok(BlobOutcome::Mounted);
                }
                Err(error) => {
                    tracing::debug!(repository, %digest, from, %error, "mount refused, uploading");
                }
            }
        }
        let path = self.store.blob_path(blob.digest);
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|source| PushError::Read {
                path: path.clone(),
                source,
            })?;
        let stream = ReaderStream::with_capacity(file, STREAM_BUFFER)
            .map(|chunk| chunk.map_err(OciDistributionError::from));
        self.client
            .push_blob_stream(&reference, stream, &digest, Some(blob.size))
            .await
            .map_err(fail)?;
        tracing::debug!(repository, %digest, size = blob.size, "blob uploaded");
        Ok(BlobOutcome::Uploaded(blob.size))
    }

    /// Pushes `manifest` by each of its tags (or by digest), then checks the digest the
    /// registry answers for it.
    async fn push_manifest(
        &self,
        plan: &RepositoryPlan,
        manifest: &Manifest,
        report: &mut PushReport,
    ) -> Result<(), PushError> {
        let references: Vec<Reference> = if manifest.tags.is_empty() {
            vec![self.by_digest(&plan.name, manifest.digest)]
        } else {
            manifest
                .tags
                .iter()
                .map(|tag| self.tagged(&plan.name, tag))
                .collect()
        };
        let expected = manifest.digest.to_string();
        for reference in references {
            let shown = reference.whole();
            let fail = |source| {
                self.classify(&plan.name, source, |source| PushError::Manifest {
                    reference: shown.clone(),
                    digest: expected.clone(),
                    source,
                })
            };
            self.authorize(&reference).await;
            let content_type = HeaderValue::from_str(&manifest.media_type).map_err(|_| {
                fail(OciDistributionError::UnsupportedMediaTypeError(
                    manifest.media_type.clone(),
                ))
            })?;
            if let Err(source) = self
                .client
                .push_manifest_raw(&reference, manifest.bytes.clone(), content_type)
                .await
            {
                if manifest.missing.is_empty() || !refuses_missing_children(&source) {
                    return Err(fail(source));
                }
                // The registry wants every platform of an index: the tags go to the manifest
                // of the preferred platform instead (see `partial`), the index's digest stays
                // unresolvable there.
                return self.retarget(plan, manifest, source, report).await;
            }
            let actual = self
                .client
                .fetch_manifest_digest(&reference, &self.auth)
                .await
                .map_err(fail)?;
            if actual != expected {
                return Err(PushError::DigestMismatch {
                    reference: shown,
                    expected: expected.clone(),
                    actual,
                });
            }
            tracing::debug!(reference = %shown, digest = %expected, "manifest pushed");
            report.manifests += 1;
            if !manifest.missing.is_empty() {
                report.incomplete_indexes.push(IncompleteIndex {
                    reference: shown,
                    missing: manifest.missing.clone(),
                });
            }
        }
        Ok(())
    }

    /// Points every tag of the refused incomplete index `manifest` at the manifest of the
    /// preferred platform the store has (already pushed by digest), and notes the index's
    /// digest as unresolvable in this registry. Without a platform to fall back to, the
    /// refusal is the error.
    async fn retarget(
        &self,
        plan: &RepositoryPlan,
        manifest: &Manifest,
        source: OciDistributionError,
        report: &mut PushReport,
    ) -> Result<(), PushError> {
        let index = format!("{}/{}@{}", self.target.host, plan.name, manifest.digest);
        let choice = partial::choose(&manifest.present, &self.target.platforms);
        let Some((platform, digest)) = choice else {
            return Err(PushError::IncompleteIndex {
                registry: self.target.host.clone(),
                reference: index,
                missing: partial::quoted(&manifest.missing),
                source: Box::new(source),
            });
        };
        let Some(child) = plan.manifests.iter().find(|m| m.digest == digest) else {
            return Err(PushError::MissingBlob {
                repository: plan.name.clone(),
                manifest: manifest.digest.to_string(),
                digest: digest.to_string(),
            });
        };
        let retagged = Manifest {
            digest,
            media_type: child.media_type.clone(),
            bytes: child.bytes.clone(),
            tags: manifest.tags.clone(),
            missing: Vec::new(),
            present: Vec::new(),
        };
        if !retagged.tags.is_empty() {
            Box::pin(self.push_manifest(plan, &retagged, report)).await?;
        }
        for tag in &manifest.tags {
            report.retargeted.push(Retargeted {
                reference: self.tagged(&plan.name, tag).whole(),
                platform: platform.clone(),
                manifest: digest,
            });
        }
        tracing::debug!(%index, %platform, "index refused, tags point at one platform");
        report.unresolvable.push(index);
        Ok(())
    }

    /// Turns a registry error into a refused login or a missing Harbor project when it is
    /// one, else into `other`.
    fn classify(
        &self,
        repository: &str,
        source: OciDistributionError,
        other: impl FnOnce(Box<OciDistributionError>) -> PushError,
    ) -> PushError {
        match status_of(&source) {
            Some(401 | 403) => PushError::Unauthorized {
                registry: self.target.host.clone(),
                username: self.target.credentials.as_ref().map(|c| c.username.clone()),
            },
            Some(404) if names_missing_project(&source) => PushError::ProjectMissing {
                registry: self.target.host.clone(),
                project: repository
                    .split('/')
                    .next()
                    .unwrap_or(repository)
                    .to_owned(),
                repository: repository.to_owned(),
            },
            _ => other(Box::new(source)),
        }
    }
}

/// The HTTP status behind a client error, as far as it is known.
fn status_of(error: &OciDistributionError) -> Option<u16> {
    match error {
        OciDistributionError::ServerError { code, .. } => Some(*code),
        OciDistributionError::RequestError(e) => e.status().map(|s| s.as_u16()),
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => Some(401),
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().find_map(|e| match e.code {
                OciErrorCode::Unauthorized => Some(401),
                OciErrorCode::Denied => Some(403),
                OciErrorCode::NameUnknown | OciErrorCode::NotFound => Some(404),
                _ => None,
            })
        }
        _ => None,
    }
}

/// Whether a registry refused an index because entries it lists are unknown to it
/// (distribution: `400 MANIFEST_BLOB_UNKNOWN` naming the missing manifest).
fn refuses_missing_children(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::ServerError { code, message, .. } => {
            *code == 400
                && (message.contains("MANIFEST_BLOB_UNKNOWN")
                    || message.contains("MANIFEST_UNKNOWN"))
        }
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestBlobUnknown | OciErrorCode::ManifestUnknown
            )
        }),
        _ => false,
    }
}

/// Whether a `404` says the repository's namespace is unknown: `NAME_UNKNOWN`, or Harbor's
/// `project … not found`.
fn names_missing_project(error: &OciDistributionError) -> bool {
    let text = match error {
        OciDistributionError::ServerError { message, .. } => message.to_ascii_lowercase(),
        OciDistributionError::RegistryError { envelope, .. } => {
            if envelope
                .errors
                .iter()
                .any(|e| e.code == OciErrorCode::NameUnknown)
            {
                return true;
            }
            envelope.to_string().to_ascii_lowercase()
        }
        _ => return false,
    };
    text.contains("name_unknown") || (text.contains("project") && text.contains("not found"))
}

#[cfg(test)]
mod tests {
    use super::PushError;
    use super::{Credentials, PushTarget, names_missing_project, status_of};
    use oci_client::errors::OciDistributionError;

    #[test]
    fn a_password_crosses_plain_http_only_when_allowed() {
        let credentials = Some(Credentials {
            username: "admin".into(),
            password: "s3cret-pw".into(),
        });
        // (plain HTTP, allowed, credentials, refused)
        for (plain_http, allowed, credentials, refused) in [
            (true, false, credentials.clone(), true),
            (true, true, credentials.clone(), false),
            (false, false, credentials.clone(), false),
            (true, false, None, false),
            (false, true, None, false),
        ] {
            let target = PushTarget {
                host: "registry.local:5000".into(),
                plain_http,
                allow_plain_http_password: allowed,
                ca_file: None,
                credentials,
                platforms: Vec::new(),
            };
            match target.check() {
                Err(error @ PushError::PasswordOverPlainHttp { .. }) => {
                    assert!(refused, "{target:?}");
                    let text = error.to_string();
                    for words in [
                        "`admin`",
                        "`registry.local:5000`",
                        "--allow-plain-http-password",
                    ] {
                        assert!(text.contains(words), "{text} lacks {words}");
                    }
                    assert!(!text.contains("s3cret-pw"), "{text}");
                }
                Ok(()) => assert!(!refused, "{target:?}"),
                Err(other) => panic!("{other}"),
            }
        }
    }

    #[test]
    fn credentials_debug_hides_the_password() {
        let credentials = Credentials {
            username: "admin".into(),
            password: "s3cret-pw".into(),
        };
        let shown = format!("{credentials:?}");
        assert!(shown.contains("admin"));
        assert!(!shown.contains("s3cret-pw"));
    }

    #[test]
    fn harbor_missing_project_is_recognised() {
        let harbor = OciDistributionError::ServerError {
            code: 404,
            url: "https://harbor.local/v2/docker.io/library/busybox/blobs/uploads/".into(),
            message: r#"{"errors":[{"code":"NOT_FOUND","message":"project docker.io not found"}]}"#
                .into(),
        };
        assert_eq!(status_of(&harbor), Some(404));
        assert!(names_missing_project(&harbor));
        let other = OciDistributionError::ServerError {
            code: 404,
            url: "x".into(),
            message: r#"{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}"#.into(),
        };
        assert!(!names_missing_project(&other));
    }
}

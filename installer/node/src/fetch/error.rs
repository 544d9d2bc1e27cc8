//! The error of a node fetching a binary from kk's registry.

use std::path::PathBuf;

/// A node could not fetch or install a binary from the registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// A local file could not be read or written.
    #[error("cannot write or read `{}`", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The credentials file cannot be read or is not one `username:password` line (its
    /// content is never shown).
    #[error("`{}` is not a readable `username:password` line; hint: the install writes it in the registry phase", path.display())]
    AuthFile {
        /// The file.
        path: PathBuf,
    },
    /// The CA file holds no usable certificate.
    #[error("`{}` is not a PEM CA certificate; hint: pass the installation's `ca.crt`", path.display())]
    Ca {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The reference is not `repository:tag`.
    #[error("`{0}` is not a reference `repository:tag`")]
    Reference(String),
    /// The registry could not be reached.
    #[error(
        "cannot reach `{url}`; hint: check that kk-registry.service runs and that the node resolves and trusts the registry"
    )]
    Http {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// The registry answered with an error status.
    #[error("`{url}` answered HTTP {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// A manifest is not what a binary artifact is.
    #[error("the manifest of `{reference}` cannot be used: {reason}")]
    Manifest {
        /// The reference.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The index has no entry for this node's platform.
    #[error(
        "`{reference}` has no `{platform}` entry; hint: build the bundle with `--platform {platform}`"
    )]
    NoPlatform {
        /// The reference.
        reference: String,
        /// The node's platform.
        platform: String,
    },
    /// The registry served a manifest the bundle does not list.
    #[error(
        "the registry served `{reference}` as `{digest}`, which the bundle does not list; the node refuses it"
    )]
    UnexpectedManifest {
        /// The reference.
        reference: String,
        /// The digest served.
        digest: String,
    },
    /// The blob's size or digest is wrong.
    #[error("blob `{digest}` is not what the manifest says: {reason}")]
    Blob {
        /// The blob's digest.
        digest: String,
        /// What was received.
        reason: String,
    },
    /// The release archive cannot be read.
    #[error("cannot read the archive `{name}`")]
    Archive {
        /// The archive's file name.
        name: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No registry host answered: each of several could not be reached, timed out or answered
    /// 5xx (with one host, its own error is returned instead).
    #[error(
        "no registry of `{registries}` is available; hint: check that kk-registry.service runs on the `image_registry` hosts"
    )]
    Unavailable {
        /// The hosts tried, in order, comma-separated (`none` when the request named none).
        registries: String,
        /// The last host's error.
        #[source]
        last: Option<Box<FetchError>>,
    },
    /// Programs asked for are not in the archive.
    #[error("the archive `{name}` holds no `{missing}`")]
    NotInArchive {
        /// The archive's file name.
        name: String,
        /// The programs missing.
        missing: String,
    },
}

impl FetchError {
    /// A closure turning an I/O error on `path` into [`FetchError::Io`].
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_owned();
        move |source| Self::Io { path, source }
    }

    /// Whether the host that gave this error is unavailable (unreachable, timed out, cut off
    /// mid-answer, or answering 5xx), so the next registry host may be tried; any other
    /// answer is the same on every host, or one a node must not look past.
    pub(crate) fn is_unavailable(&self) -> bool {
        match self {
            Self::Http { .. } => true,
            Self::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The error after every host of `registries` was `unavailable`: the one host's own error,
    /// or [`FetchError::Unavailable`] naming them all with the last one's.
    pub(crate) fn exhausted(registries: &[String], mut unavailable: Vec<Self>) -> Self {
        if registries.len() == 1
            && let Some(only) = unavailable.pop()
        {
            return only;
        }
        Self::Unavailable {
            registries: if registries.is_empty() {
                "none".to_owned()
            } else {
                registries.join(", ")
            },
            last: unavailable.pop().map(Box::new),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FetchError;

    #[test]
    fn only_unreachable_hosts_and_server_errors_move_on_to_the_next_host() {
        let status = |status| FetchError::Status {
            url: "https://r/v2/".to_owned(),
            status,
        };
        for (error, moves_on) in [
            (status(500), true),
            (status(503), true),
            (status(404), false),
            (status(401), false),
            (FetchError::Reference("x".to_owned()), false),
            (
                FetchError::Blob {
                    digest: "sha256:00".to_owned(),
                    reason: "short".to_owned(),
                },
                false,
            ),
        ] {
            assert_eq!(error.is_unavailable(), moves_on, "{error}");
        }
    }
}

//! The error of resolving and fetching the packages of one `spec.osPackages` set.

use std::path::PathBuf;

use bundle_spec::Sha256Digest;
use bundle_spec::packages::control::ControlError;

use super::release::ReleaseError;
use super::signed::SignatureError;
use crate::cache::CacheError;
use crate::fetch::FetchError;

/// A package set cannot be resolved or fetched. Every message names the repository as
/// `URL SUITE`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackagesError {
    /// The repository's `InRelease` cannot be fetched.
    #[error("cannot fetch the `InRelease` of repository `{repository}`")]
    InRelease {
        /// The repository.
        repository: String,
        /// The cause.
        #[source]
        source: FetchError,
    },
    /// The keyring file cannot be read.
    #[error(
        "cannot read keyring `{}` of repository `{repository}`; hint: `keyring` is relative to the manifest's directory",
        keyring.display()
    )]
    Keyring {
        /// The repository.
        repository: String,
        /// The file, as resolved.
        keyring: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `InRelease` is not signed by a key of the keyring.
    #[error(
        "the `InRelease` of repository `{repository}` does not verify with keyring `{}`",
        keyring.display()
    )]
    Signature {
        /// The repository.
        repository: String,
        /// The keyring file.
        keyring: PathBuf,
        /// Why (names the issuer's key id when no key matches).
        #[source]
        source: SignatureError,
    },
    /// The signed Release text, or an index it lists, is not what it should be.
    #[error("repository `{repository}`: the release or an index is invalid")]
    Release {
        /// The repository.
        repository: String,
        /// The cause.
        #[source]
        source: ReleaseError,
    },
    /// The Release lists no `Packages` index for a component and architecture.
    #[error(
        "repository `{repository}` has no `Packages` index for component `{component}` on `{arch}`; hint: check `components` and `arch`"
    )]
    NoIndex {
        /// The repository.
        repository: String,
        /// The component.
        component: String,
        /// The Debian architecture.
        arch: String,
    },
    /// A `Packages` index cannot be fetched.
    #[error("cannot fetch an index of repository `{repository}`")]
    IndexFetch {
        /// The repository.
        repository: String,
        /// The cause.
        #[source]
        source: FetchError,
    },
    /// A downloaded index cannot be read back from the cache.
    #[error("cannot read an index of repository `{repository}` from the cache")]
    IndexRead {
        /// The repository.
        repository: String,
        /// The cause.
        #[source]
        source: CacheError,
    },
    /// A `Packages` index or a relation field does not parse.
    #[error("repository `{repository}`: an index does not parse")]
    Control {
        /// The repository.
        repository: String,
        /// The cause.
        #[source]
        source: ControlError,
    },
    /// A package asked for is not in the repository.
    #[error(
        "repository `{repository}` has no package `{name}` for `{arch}`; hint: check the name (`apt-cache policy {name}` on a node of that distribution), the `components` and the `suite`"
    )]
    UnknownPackage {
        /// The repository.
        repository: String,
        /// The name asked for.
        name: String,
        /// The Debian architecture.
        arch: String,
    },
    /// No package of the repository satisfies a dependency.
    #[error(
        "`{package}` depends on `{dependency}`, which no package of repository `{repository}` for `{arch}` satisfies; hint: add the component that has it to `components`, or drop `{package}`"
    )]
    Unsatisfiable {
        /// The repository.
        repository: String,
        /// The Debian architecture.
        arch: String,
        /// The package whose dependency fails.
        package: String,
        /// The dependency as written.
        dependency: String,
    },
    /// A package's name or version cannot name an artifact.
    #[error("repository `{repository}`: a package cannot be named in the bundle")]
    Reference {
        /// The repository.
        repository: String,
        /// The cause (boxed: it is large).
        #[source]
        source: Box<bundle_spec::BundleError>,
    },
    /// `--locked`, but the resolved packages differ from the lock's.
    #[error(
        "`{set}` from repository `{repository}` resolves to {resolved}, but the lock has {locked}; hint: the repository changed since the lock was written: build without `--locked` to update the lock"
    )]
    LockDrift {
        /// The repository.
        repository: String,
        /// The set: distribution and Debian architecture (`debian-12 amd64`).
        set: String,
        /// The first resolved package that differs (`name version sha256`), or `nothing more`.
        resolved: String,
        /// The lock's entry at that place, or `nothing more`.
        locked: String,
    },
    /// A `.deb` cannot be fetched, or its bytes differ from the index's sha256.
    #[error("cannot fetch a package of repository `{repository}` (its index names the sha256)")]
    Deb {
        /// The repository.
        repository: String,
        /// The cause (names the URL, and both digests on a mismatch).
        #[source]
        source: FetchError,
    },
}

/// `name version sha256` of a package, for [`PackagesError::LockDrift`].
pub(super) fn describe(name: &str, version: &str, sha256: &Sha256Digest) -> String {
    format!("`{name} {version}` (`{sha256}`)")
}

//! The error of opening a bundle store to serve it.

use std::path::PathBuf;

/// A bundle store cannot be served by the registry.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A file of the store could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The directory is not an OCI image layout.
    #[error("`{}` is not an OCI image layout: it has no `oci-layout` file", dir.display())]
    NotALayout {
        /// The directory.
        dir: PathBuf,
    },
    /// `index.json` or a manifest is not the JSON document it should be.
    #[error("`{}` is not a valid OCI index or manifest", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A descriptor's digest is not `sha256:` and 64 lowercase hex digits.
    #[error("`{}` lists a descriptor with digest `{digest}`, which this registry cannot serve", path.display())]
    Digest {
        /// The file holding the descriptor.
        path: PathBuf,
        /// The digest as written.
        digest: String,
        /// Why.
        #[source]
        source: bundle_spec::digest::InvalidDigest,
    },
    /// A ref name in `index.json` is not a fully qualified reference with a valid name.
    #[error(
        "`index.json` names an artifact `{ref_name}`, which is not a fully qualified reference `host/path:tag` or `host/path@digest`"
    )]
    RefName {
        /// The ref name.
        ref_name: String,
    },
    /// Two artifacts would be served under the same repository and tag.
    #[error("`{first}` and `{second}` would both be served as `{repository}:{tag}`")]
    TagConflict {
        /// The repository name.
        repository: String,
        /// The tag.
        tag: String,
        /// The first ref name.
        first: String,
        /// The second ref name.
        second: String,
    },
    /// A manifest that `index.json` lists is not in the store.
    #[error("`index.json` lists manifest `{digest}`, but `{}` does not exist", path.display())]
    MissingManifest {
        /// The manifest digest.
        digest: String,
        /// Where its blob should be.
        path: PathBuf,
    },
    /// A manifest blob is larger than a manifest may be.
    #[error("manifest `{digest}` is {size} bytes, more than the {limit} bytes a manifest may have")]
    ManifestTooLarge {
        /// The manifest digest.
        digest: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

/// A store's revisions cannot be read, recorded or pruned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RevisionError {
    /// A file or directory of the store could not be read.
    #[error("cannot read `{}`", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of the store could not be written or removed.
    #[error("cannot write `{}`", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A record, index or header file is not the JSON it should be.
    #[error("`{}` is not a valid revision record, index or bundle description", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A derived revision's checksum list does not parse.
    #[error("`{}` is not a bundle checksum list", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<bundle_spec::BundleError>,
    },
    /// A record names another bundle than its directory.
    #[error("`{}` records another bundle than its directory names; remove the directory and unpack that bundle again", path.display())]
    Mismatch {
        /// The record.
        path: PathBuf,
    },
    /// The store has no revision to keep.
    #[error("`{}` has no revisions (no `kk-bundle/<identity>/` records): nothing to prune; unpack a bundle into it with `kk-install unpack`", dir.display())]
    NoRevisions {
        /// The store.
        dir: PathBuf,
    },
}

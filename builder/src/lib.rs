//! `kk-bundle`: builds offline kk bundles from a manifest.
//!
//! The data flows resolve → lock → fetch → write:
//!
//! - [`kubekey`] reads a KubeKey v3 `Manifest` as the kk manifest it maps onto;
//! - [`catalog`] expands `spec.kubernetes` into the binaries, images and charts a kubeadm
//!   cluster of that version needs;
//! - [`resolve`] turns every manifest entry into exact, verifiable sources (image digests, file
//!   URLs with sha256s) — the content of the lock;
//! - [`fetch`] downloads them through the content-addressed [`cache`], in parallel, with
//!   retries and resumption;
//! - [`check`] renders the fetched charts and fails the build if they name images the bundle
//!   lacks;
//! - [`assemble`] lays the fetched blobs out as one OCI layout and hands it to
//!   `bundle_spec::write_bundle`.
//!
//! Beside the build, [`keygen`] writes a cosign key pair, its passphrase read by [`passphrase`].

pub mod assemble;
pub mod build;
pub mod cache;
pub mod catalog;
pub mod check;
pub mod delta;
pub mod error;
pub mod fetch;
pub mod keygen;
pub mod kubekey;
pub mod lockfile;
pub mod passphrase;
pub mod progress;
pub mod resolve;
pub mod sign;
pub mod sources;

pub use build::BuildError;

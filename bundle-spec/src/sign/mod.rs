//! Who made a bundle: cosign-compatible keys and the signature over a bundle's identity.
//!
//! A bundle's checksum list is its root of trust ([`crate::Bundle::identity`] is its sha256), so
//! signing those bytes vouches for every member. The keys are cosign's own files, so operators
//! keep the keys and the `cosign verify-blob` check they already have.

pub mod image;
pub mod keys;

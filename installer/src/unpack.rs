//! `kk-install unpack`: a bundle into a content store, the OCI layout the registry serves.
//!
//! The store's format, and how it is written safely, belong to the library
//! ([`kk_install::registry::unpack`]); this drives it with a progress bar.

use std::path::Path;

use bundle_spec::{Bundle, BundleError};
use indicatif::ProgressBar;
use kk_install::registry::Unpacked;

/// Unpacks `bundle` into the store `dir` (created if needed), advancing `progress` by the bytes
/// read.
pub(crate) fn unpack(
    bundle: &mut Bundle,
    dir: &Path,
    progress: &ProgressBar,
) -> Result<Unpacked, BundleError> {
    kk_install::registry::unpack(bundle, dir, &mut |bytes| progress.inc(bytes))
}

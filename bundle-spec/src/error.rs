//! Every error `bundle-spec` returns, re-exported from the module that owns it.
//!
//! Each module declares its errors beside its code (the manifest's, the platform's, the
//! format version's, the bundle format's);
//! this module lists them in one place and keeps `crate::error::X` resolving. Modules of this crate
//! import an error from its owner, never from here: this module imports them all.

pub use crate::bundle_error::{BundleError, ChecksumListProblem, FrameProblem};
pub use crate::format_version::FormatVersionError;
pub use crate::manifest::ManifestError;
pub use crate::platform::PlatformError;

//! Every error `kk-bundle`'s library returns.
//!
//! Messages are lowercase, name the artifact, URL, reference or file at fault in backticks, and
//! end with a hint where one helps; causes are chained through `#[source]`.
//!
//! Errors live beside the module that owns them and are re-exported here, so `crate::error::X`
//! names every error. Modules import an error from its owner, never from here: this module
//! imports them all.

pub use crate::assemble::AssembleError;
pub use crate::build::BuildError;
pub use crate::cache::CacheError;
pub use crate::catalog::{CatalogError, ExpandError};
pub use crate::check::{ChartMiss, CheckError, RenderProblem};
pub use crate::delta::SinceError;
pub use crate::fetch::{FetchError, FetchUrl};
pub use crate::keygen::KeygenError;
pub use crate::lockfile::LockFileError;
pub use crate::passphrase::PassphraseError;
pub use crate::resolve::ResolveError;
pub use crate::resolve::image::DocumentError;
pub use crate::sources::SourcesError;

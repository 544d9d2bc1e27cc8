//! Errors of the installer library, each re-exported from the module that owns it, so
//! `crate::error::X` names every error.
//!
//! Modules import an error from its owner, never from here: this module imports them all.

pub use crate::fetch::FetchError;
pub use crate::hooks::HookError;
pub use crate::install::error::{InstallError, PlanError, StepError};
pub use crate::inventory::{CidrError, InventoryError};
pub use crate::pki::PkiError;
pub use crate::push::PushError;
pub use crate::registry::{RegistryError, RevisionError};
pub use crate::ssh::{FactsError, SshError};

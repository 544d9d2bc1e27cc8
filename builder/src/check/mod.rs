//! Checks of what was fetched, made before anything is written (resolve → fetch → check →
//! write): a bundle that would fail in the disconnected datacenter should fail here instead.
//!
//! - [`charts`]: every bundled chart, rendered as the install renders it, names only images
//!   the bundle carries.

pub use error::{ChartMiss, CheckError, RenderProblem};

pub mod charts;
mod error;
mod helm;

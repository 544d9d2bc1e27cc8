//! Resolution: every manifest entry becomes exact, verifiable sources.

pub use error::ResolveError;

pub mod binary;
pub mod chart;
mod error;
pub mod image;
mod packages;

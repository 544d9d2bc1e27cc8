//! Resolution: every manifest entry becomes exact, verifiable sources.

pub mod binary;
pub mod chart;
pub mod image;

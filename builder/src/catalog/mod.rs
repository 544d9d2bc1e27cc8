//! The version catalog (filled in by its owner).

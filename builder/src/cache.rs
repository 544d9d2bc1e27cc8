//! The content-addressed blob cache (filled in by its owner).

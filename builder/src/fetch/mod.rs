//! Fetching over HTTP (filled in by its owner).

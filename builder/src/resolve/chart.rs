//! Helm charts from HTTP repositories (filled in by its owner).

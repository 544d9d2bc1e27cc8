//! Binaries: URL templates and checksum files (filled in by its owner).

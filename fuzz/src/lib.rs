//! What each fuzz target does with its input, as plain functions: the targets in
//! `fuzz_targets/` call them under libFuzzer, and `tests/regressions.rs` calls them on every kept
//! input without a fuzzer, so an input that once crashed stays a test.
//!
//! Each function feeds untrusted bytes to one parser and lets it refuse them; the only failures
//! are a panic, a hang or an allocation the sanitizer's memory limit catches.

mod registry;

pub use registry::registry_request;

use std::fs;
use std::path::{Path, PathBuf};

use bundle_spec::Bundle;
use bundle_spec::lock::Lock;
use bundle_spec::manifest::Manifest;
use bundle_spec::parts::PartsIndex;

/// What a target does with one input.
pub type Target = fn(&[u8]);

/// The targets, by name, as `scripts/fuzz.sh` and the regression test know them.
pub const TARGETS: &[(&str, Target)] = &[
    ("bundle_raw", bundle_raw),
    ("bundle_frames", bundle_frames),
    ("parts_index", parts_index),
    ("manifest", manifest),
    ("facts", facts),
    ("inventory", inventory),
    ("registry_request", registry_request),
];

/// One input as a file named `name`, for readers that take a path, in a directory of its own
/// that is removed when this is dropped: a fuzzer runs millions of inputs and the regression
/// test runs on every `scripts/test.sh`, and neither may leave them behind in the temp dir.
struct Scratch {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Scratch {
    fn new(name: &str, data: &[u8]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("kk-fuzz-")
            .tempdir()
            .expect("the temp dir is writable");
        let path = dir.path().join(name);
        fs::write(&path, data).expect("the scratch directory is writable");
        Self { _dir: dir, path }
    }
}

/// Opens `path` as a bundle and does everything a reader does with it.
fn read_bundle(path: &Path) {
    let Ok(mut bundle) = Bundle::open(path) else {
        return;
    };
    let _ = bundle.members();
    let _ = bundle.sbom();
    let _ = bundle.verify();
    let _ = bundle_spec::inspect::inspect_text(path);
}

/// Raw bytes as a bundle file: seek table, frames, tar, everything lies.
pub fn bundle_raw(data: &[u8]) {
    read_bundle(&Scratch::new("raw.tar.zst", data).path);
}

/// Bytes as the tar stream inside valid frames, seek table and integrity frame, so mutations
/// reach the tar headers, the checksum list, the description and the blobs.
pub fn bundle_frames(data: &[u8]) {
    let framed = bundle_spec::test_support::frame_tar(data);
    read_bundle(&Scratch::new("framed.tar.zst", &framed).path);
}

/// Bytes as a `.split.json` parts index.
pub fn parts_index(data: &[u8]) {
    let _ = PartsIndex::read(&Scratch::new("b.tar.zst.split.json", data).path);
}

/// Bytes as a bundle manifest and as a lock file.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Manifest::from_str_named(text, "fuzz.yaml");
    let _ = serde_saphyr::from_str::<Lock>(text);
}

/// Bytes as what a node's fact-gathering script printed (node output is untrusted: it is read as
/// text with invalid UTF-8 replaced, as the SSH layer hands it over).
pub fn facts(data: &[u8]) {
    let _ = kk_install::facts::Facts::parse(&String::from_utf8_lossy(data));
}

/// Bytes as an inventory and as a cluster config.
pub fn inventory(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = kk_install::inventory::Inventory::from_str_named(text, "inventory.yaml");
    let _ = kk_install::inventory::Config::from_str_named(text, "config.yaml");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_input_leaves_nothing_behind() {
        let scratch = Scratch::new("raw.tar.zst", b"input");
        let dir = scratch.path.parent().expect("a directory").to_owned();
        assert_eq!(fs::read(&scratch.path).expect("written"), b"input");
        drop(scratch);
        assert!(!dir.exists(), "`{}` is left behind", dir.display());
    }
}

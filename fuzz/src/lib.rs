//! What each fuzz target does with its input, as plain functions: the targets in
//! `fuzz_targets/` call them under libFuzzer, and `tests/regressions.rs` calls them on every kept
//! input without a fuzzer, so an input that once crashed stays a test.
//!
//! Each function feeds untrusted bytes to one parser and lets it refuse them; the only failures
//! are a panic, a hang or an allocation the sanitizer's memory limit catches.

mod registry;

pub use registry::registry_request;

use std::fs;
use std::path::PathBuf;

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

/// A scratch file of this process for inputs that the reader takes from a path.
fn scratch(name: &str, data: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kk-fuzz-{}", std::process::id()));
    let _ = fs::create_dir_all(&dir);
    let path = dir.join(name);
    fs::write(&path, data).expect("the scratch directory is writable");
    path
}

/// Opens `path` as a bundle and does everything a reader does with it.
fn read_bundle(path: &std::path::Path) {
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
    read_bundle(&scratch("raw.tar.zst", data));
}

/// Bytes as the tar stream inside valid frames, seek table and integrity frame, so mutations
/// reach the tar headers, the checksum list, the description and the blobs.
pub fn bundle_frames(data: &[u8]) {
    let framed = bundle_spec::test_support::frame_tar(data);
    read_bundle(&scratch("framed.tar.zst", &framed));
}

/// Bytes as a `.split.json` parts index.
pub fn parts_index(data: &[u8]) {
    let _ = PartsIndex::read(&scratch("b.tar.zst.split.json", data));
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

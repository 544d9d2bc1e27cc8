//! Every kept input — the seed corpora and each input that ever crashed a target — through its
//! target's function, without a fuzzer. `regressions/<target>/` holds the crashes (named after
//! what they found); `corpus/<target>/` the seeds.

use std::fs;
use std::path::Path;

#[test]
fn every_kept_input_is_refused_or_read_without_a_crash() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut replayed = 0;
    for (name, target) in kk_fuzz::TARGETS {
        for kind in ["corpus", "regressions"] {
            let Ok(entries) = fs::read_dir(root.join(kind).join(name)) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("entry").path();
                target(&fs::read(&path).expect("input"));
                replayed += 1;
            }
        }
    }
    assert!(
        replayed > 0,
        "no input was replayed: the corpora are missing"
    );
}

/// Writes the seed corpora from bundles the format's own writer makes: run with
/// `cargo test --manifest-path fuzz/Cargo.toml -- --ignored` after a format change.
#[test]
#[ignore = "writes the seed corpora into the source tree"]
fn write_seed_corpora() {
    use bundle_spec::write::WriteOptions;
    use bundle_spec::{BlobFile, BundleContents, Sha256Digest, write_bundle};

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let dir = tempfile::tempdir().expect("dir");
    let layer = b"layer bytes".repeat(100);
    let blob = dir.path().join("layer");
    fs::write(&blob, &layer).expect("blob");
    let created = jiff_epoch();
    let contents = BundleContents {
        description: bundle_spec::test_support::description(created, vec![]),
        index: serde_json::from_str(r#"{"schemaVersion":2,"manifests":[]}"#).expect("index"),
        blobs: vec![BlobFile {
            digest: Sha256Digest::of(&layer),
            size: layer.len() as u64,
            path: blob,
        }],
    };
    let write = |name: &str, split: Option<u64>| {
        let target = dir.path().join(name);
        let options = WriteOptions {
            level: 1,
            split_size: split,
            ..WriteOptions::default()
        };
        write_bundle(&contents, &target, &options).expect("write");
        target
    };
    let single = write("b.tar.zst", None);
    let bytes = fs::read(&single).expect("bundle");
    let save = |target: &str, name: &str, data: &[u8]| {
        let dir = root.join(target);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join(name), data).expect("seed");
    };
    save("bundle_raw", "small-bundle", &bytes);
    let tar = zstd::stream::decode_all(&bytes[..]).expect("tar");
    save("bundle_frames", "small-bundle-tar", &tar);
    write("s.tar.zst", Some(4096));
    save(
        "parts_index",
        "split-json",
        &fs::read(dir.path().join("s.tar.zst.split.json")).expect("index"),
    );
    write_regressions(&tar);
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests");
    for entry in fs::read_dir(manifests).expect("manifests") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            save("manifest", &name, &fs::read(&path).expect("manifest"));
        }
    }
}

fn jiff_epoch() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_795_000_000).expect("time")
}

/// The inputs of the findings that started the fuzzing work (issue 14), rebuilt from a valid
/// bundle's tar stream `tar`.
fn write_regressions(tar: &[u8]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let save = |target: &str, name: &str, data: &[u8]| {
        let dir = root.join(target);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join(name), data).expect("regression");
    };
    // A canonical header whose size nears 2^64, before the end marker: listing the members
    // overflowed the next member's offset.
    let mtime = jiff_epoch().as_second().unsigned_abs();
    let mut header = tar::Header::new_ustar();
    let name = format!("blobs/sha256/{}", "a".repeat(64));
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o644);
    header.set_uid(0);
    header.set_gid(0);
    header.set_size(u64::MAX - 1000);
    header.set_mtime(mtime);
    header.set_cksum();
    let mut crafted = tar[..tar.len() - 1024].to_vec();
    crafted.extend_from_slice(header.as_bytes());
    crafted.extend_from_slice(&[0; 1024 + 512]);
    save("bundle_frames", "member-size-near-2-pow-64", &crafted);
    // Part sizes whose sum overflows.
    let part = |n: u32, size: u64| {
        format!(
            r#"{{"name":"b.tar.zst.part00{n}","size":{size},"sha256":"sha256:{}"}}"#,
            "a".repeat(64)
        )
    };
    let index = format!(
        r#"{{"format":"kk-bundle-parts","version":1,"bundle":"b.tar.zst","size":1,"sha256":"sha256:{}","parts":[{},{}]}}"#,
        "a".repeat(64),
        part(1, u64::MAX),
        part(2, 2)
    );
    save("parts_index", "part-sizes-overflow", index.as_bytes());
}

#[test]
fn every_target_file_is_in_the_list() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz_targets");
    let mut files: Vec<String> = fs::read_dir(dir)
        .expect("fuzz_targets")
        .map(|e| {
            let path = e.expect("entry").path();
            path.file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    let mut listed: Vec<&str> = kk_fuzz::TARGETS.iter().map(|(name, _)| *name).collect();
    listed.sort_unstable();
    assert_eq!(files, listed);
}

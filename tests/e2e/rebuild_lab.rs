//! Rebuilds against the upstream lab: the frame cache gives the same bytes and survives a damaged
//! entry; a delta bundle (`kk-bundle build --since`) carries only what its base lacks, is refused
//! by a store without the base, and a store holding both serves every image of the newer
//! manifest to skopeo. (Runs with the other lab tests.)

use std::fs;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::bundle_lab::Bench;
use crate::support::{KillOnDrop, binary, kk_install_command, retry, run_failing, run_ok};

/// The images a bundle's description lists, by reference.
fn images_of(b: &Bench, bundle: &str) -> Vec<String> {
    let (out, _) = run_ok(&mut kk_install_command(&[
        "inspect",
        "--bundle",
        b.path(bundle).to_str().expect("utf-8"),
        "--output",
        "json",
    ]));
    let json: Value = serde_json::from_str(&out).expect("inspect json");
    let mut images: Vec<String> = json["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter(|a| a["kind"] == "image")
        .map(|a| a["reference"].as_str().expect("reference").to_owned())
        .collect();
    images.dedup();
    images
}

/// The path under which kk's registry serves `reference`: its host's `:` becomes `_`.
fn repository_path(reference: &str) -> String {
    let (host, rest) = reference.split_once('/').expect("a host");
    format!("{}/{rest}", host.replace(':', "_"))
}

#[test]
fn a_delta_carries_what_its_base_lacks_and_a_store_with_both_serves_everything() {
    let b = Bench::new();
    // A lacks app-b; B is the whole lab manifest: one image more, sharing busybox's layers.
    let full = fs::read_to_string(&b.manifest).expect("manifest");
    let without_b: Vec<&str> = full
        .lines()
        .filter(|l| !l.contains("lab/app-b:1.0"))
        .collect();
    let without_b = without_b.join("\n");
    let manifest_a = b.path("a.yaml");
    fs::write(&manifest_a, without_b).expect("manifest a");
    let platform = ["--platform", "linux/amd64", "--allow-missing-platforms"];
    run_ok(&mut b.build(&manifest_a, "a.tar.zst", "cache", &platform));
    let since = b.path("a.tar.zst");
    let mut args = platform.to_vec();
    args.extend(["--since", since.to_str().expect("utf-8")]);
    run_ok(&mut b.build(&b.manifest, "b.tar.zst", "cache", &args));
    let (a_size, b_size) = (
        fs::metadata(b.path("a.tar.zst")).expect("a").len(),
        fs::metadata(b.path("b.tar.zst")).expect("b").len(),
    );
    assert!(b_size * 20 < a_size, "delta {b_size} bytes, base {a_size}");

    // verify names the base; with a store lacking it, verify refuses like unpack.
    let b_path = b.path("b.tar.zst");
    let b_arg = b_path.to_str().expect("utf-8");
    let (out, _) = run_ok(&mut kk_install_command(&["verify", "--bundle", b_arg]));
    let (a_out, _) = run_ok(&mut kk_install_command(&[
        "verify",
        "--bundle",
        since.to_str().unwrap(),
    ]));
    let a_identity = a_out.split("identity ").nth(1).expect("identity").trim();
    assert!(
        out.contains(&format!("builds on bundle {a_identity}")),
        "{out}"
    );
    let (inspect, _) = run_ok(&mut kk_install_command(&["inspect", "--bundle", b_arg]));
    assert!(
        inspect.contains(&format!("format    {}", bundle_spec::DELTA_FORMAT_VERSION))
            && inspect.contains(&format!("builds on bundle {a_identity}")),
        "{inspect}"
    );

    // Onto an empty store: refused before anything is written, naming a digest and the base.
    let empty = b.path("empty-store");
    let err = run_failing(&mut kk_install_command(&[
        "unpack",
        "--bundle",
        b_arg,
        "--store",
        empty.to_str().expect("utf-8"),
    ]));
    assert!(
        err.contains("blob `sha256:") && err.contains(a_identity),
        "{err}"
    );
    assert!(!empty.join("index.json").exists());

    // A, then B, into one store.
    let store = b.path("store");
    let store_arg = store.to_str().expect("utf-8");
    run_ok(&mut kk_install_command(&[
        "unpack",
        "--bundle",
        since.to_str().unwrap(),
        "--store",
        store_arg,
    ]));
    let (out, _) = run_ok(&mut kk_install_command(&[
        "verify", "--bundle", b_arg, "--store", store_arg,
    ]));
    assert!(out.contains("all of them are in the store"), "{out}");
    run_ok(&mut kk_install_command(&[
        "unpack", "--bundle", b_arg, "--store", store_arg,
    ]));

    let port = crate::labkit::free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Command::new(binary("kk-install"))
        .args(["registry", "serve", "--store", store_arg, "--listen", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("registry serve");
    let _server = KillOnDrop(server);
    let images = images_of(&b, "b.tar.zst");
    assert!(
        images.iter().any(|i| i.ends_with("lab/app-b:1.0")),
        "{images:?}"
    );
    for (n, image) in images.iter().enumerate() {
        let mut copy = Command::new("skopeo");
        copy.args(["copy", "--src-tls-verify=false"])
            // The registry names a source host with a port `host_port` (a `:` cannot be in a path).
            .arg(format!("docker://{addr}/{}", repository_path(image)))
            .arg(format!(
                "oci:{}:pulled",
                b.path(&format!("pulled-{n}")).display()
            ));
        retry(&mut copy);
    }
}

#[test]
fn a_rebuild_copies_cached_frames_to_the_same_bytes_and_mends_a_damaged_entry() {
    let b = Bench::new();
    let build = |out: &str| {
        let mut cmd = b.build(&b.manifest, out, "cache", &["--allow-missing-platforms"]);
        run_ok(cmd.env("SOURCE_DATE_EPOCH", "1795000000"));
        fs::read(b.path(out)).expect("bundle")
    };
    let first = build("1.tar.zst");
    let frames = b.path("cache/frames/zstd-3");
    let mut entries: Vec<_> = fs::read_dir(&frames)
        .expect("the build keeps the frames of its large blobs")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    assert!(!entries.is_empty());
    assert_eq!(
        build("2.tar.zst"),
        first,
        "copied frames changed the bundle"
    );

    // The large blobs whose compressed frames are cached (the lab's `runc` executable) are not
    // read again: with each cached file damaged, a rebuild gives the same bytes from the frames
    // and leaves those files as they are (an earlier build re-hashed, removed and fetched them).
    // The stored frames of the blobs that do not compress (the `.tar.gz` release files) are
    // rebuilt from the blob files: the build finds them damaged, fetches them anew and still
    // gives the same bundle.
    let blobs: Vec<_> = entries
        .iter()
        .map(|entry| {
            let hex = entry.file_name().expect("name").to_owned();
            b.path("cache/blobs/sha256").join(hex)
        })
        .collect();
    let originals: Vec<Vec<u8>> = blobs
        .iter()
        .map(|blob| fs::read(blob).expect("cached blob"))
        .collect();
    assert!(
        originals.iter().any(|bytes| bytes.starts_with(b"\x7fELF")),
        "the `runc` executable has no cached frames"
    );
    let damage = |bytes: &[u8]| {
        let mut bytes = bytes.to_vec();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        bytes
    };
    let gzip = |bytes: &[u8]| bytes.starts_with(&[0x1f, 0x8b]);
    assert!(
        originals.iter().any(|bytes| gzip(bytes)),
        "no `.tar.gz` has cached frames"
    );
    for stored in [false, true] {
        let damaged: Vec<_> = blobs
            .iter()
            .zip(&originals)
            .filter(|(_, bytes)| gzip(bytes) == stored)
            .collect();
        for (blob, bytes) in &damaged {
            fs::write(blob, damage(bytes)).expect("damage");
        }
        assert_eq!(
            build("2b.tar.zst"),
            first,
            "damaged blobs changed the bundle"
        );
        for (blob, bytes) in damaged {
            let left = fs::read(blob).expect("left");
            if stored {
                assert!(left == *bytes, "`{}` was not fetched anew", blob.display());
            } else {
                assert!(
                    left == damage(bytes),
                    "`{}` was read again (and fetched anew)",
                    blob.display()
                );
            }
            fs::write(blob, bytes).expect("restore");
        }
    }

    // A flipped bit in the middle of an entry: the build notices, writes the entry anew and
    // still gives the same bundle.
    let entry = &entries[0];
    let mut bytes = fs::read(entry).expect("entry");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    fs::write(entry, &bytes).expect("damage");
    assert_eq!(
        build("3.tar.zst"),
        first,
        "a damaged entry changed the bundle"
    );
    assert_ne!(
        fs::read(entry).expect("rewritten"),
        bytes,
        "the entry was not rewritten"
    );
}

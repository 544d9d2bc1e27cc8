use std::fs;
use std::path::{Path, PathBuf};

use bundle_spec::test_support::{TestImage, write_images};
use bundle_spec::{Bundle, BundleError, Sha256Digest};

use super::unpack;
use crate::durable::journal;
use crate::registry::Store;

/// A bundle in `dir` holding the single-layer linux/amd64 image `reference`, whose layer is
/// `layer`; the digests of its blobs.
fn bundle(dir: &Path, reference: &str, layer: &[u8]) -> (PathBuf, Vec<Sha256Digest>) {
    let image = TestImage {
        reference,
        layers: &[layer],
    };
    let name = Sha256Digest::of(reference.as_bytes()).hex();
    let written = write_images(dir, &name, &[image], None);
    (written.path, written.blobs)
}

fn unpack_into(bundle: &Path, store: &Path) -> Result<super::Unpacked, BundleError> {
    let mut opened = Bundle::open(bundle).expect("opens");
    let mut bytes = 0;
    let unpacked = unpack(&mut opened, store, &mut |n| bytes += n);
    if unpacked.is_ok() {
        assert!(bytes > 0, "progress is reported");
    }
    unpacked
}

fn blob(store: &Path, digest: Sha256Digest) -> PathBuf {
    store.join("blobs/sha256").join(digest.hex())
}

#[test]
fn unpacks_a_store_the_reader_serves_and_adds_to_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (first, digests) = bundle(tmp.path(), "docker.io/library/app:1", b"layer one");
    let unpacked = unpack_into(&first, &store).expect("unpacks");
    assert_eq!((unpacked.written, unpacked.skipped), (3, 0));
    for digest in &digests {
        assert_eq!(
            Sha256Digest::of(&fs::read(blob(&store, *digest)).expect("blob")),
            *digest
        );
    }
    let served = Store::open(&store).expect("the reader opens it");
    assert_eq!(
        served.repositories().collect::<Vec<_>>(),
        ["docker.io/library/app"]
    );

    // Again: everything present and verified, nothing rewritten.
    let unpacked = unpack_into(&first, &store).expect("unpacks");
    assert_eq!((unpacked.written, unpacked.skipped), (0, 3));

    // A second bundle adds its image; the first stays; one header directory per bundle.
    let (second, _) = bundle(tmp.path(), "quay.io/x/other:2", b"layer two");
    unpack_into(&second, &store).expect("unpacks");
    let served = Store::open(&store).expect("opens");
    assert_eq!(
        served.repositories().collect::<Vec<_>>(),
        ["docker.io/library/app", "quay.io/x/other"]
    );
    assert_eq!(
        fs::read_dir(store.join("kk-bundle")).expect("dir").count(),
        2
    );
}

/// Every blob is renamed into place and the file system synced before the index that names
/// them is published; every other file of the store is synced before its rename, and its
/// directory after: the index never names a blob a power cut could take back.
#[test]
fn blobs_are_synced_with_their_file_system_before_the_index_and_files_one_by_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (path, digests) = bundle(tmp.path(), "docker.io/library/app:1", b"layer");
    let identity = Bundle::open(&path).expect("opens").identity();
    journal::take();
    unpack_into(&path, &store).expect("unpacks");
    let steps = journal::take();
    let synced = steps
        .iter()
        .position(|s| *s == journal::Step::SyncFs(store.join("blobs/sha256")))
        .expect("blobs' file system synced");
    for digest in &digests {
        let target = blob(&store, *digest);
        let renamed = steps
            .iter()
            .position(|s| matches!(s, journal::Step::Rename { to, .. } if *to == target))
            .expect("blob renamed into place");
        assert!(renamed < synced, "{steps:#?}");
    }
    let headers = store.join("kk-bundle").join(identity.hex());
    for file in [
        store.join("index.json"),
        store.join("oci-layout"),
        headers.join("SHA256SUMS"),
    ] {
        journal::assert_durable(&steps, &file);
    }
    let index = store.join("index.json");
    let published = steps
        .iter()
        .position(|s| matches!(s, journal::Step::Rename { to, .. } if *to == index))
        .expect("index renamed");
    assert!(synced < published, "{steps:#?}");
}

/// A blob a crash left short (renamed, never synced) is found by its hash and written again.
#[test]
fn a_short_blob_left_by_a_crash_is_written_again() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (path, digests) = bundle(tmp.path(), "docker.io/library/app:1", b"layer");
    unpack_into(&path, &store).expect("unpacks");
    let damaged = blob(&store, digests[0]);
    let whole = fs::read(&damaged).expect("blob");
    fs::write(&damaged, &whole[..whole.len() / 2]).expect("truncate");
    unpack_into(&path, &store).expect("unpacks again");
    assert_eq!(fs::read(&damaged).expect("blob"), whole);
}

#[test]
fn links_planted_in_the_store_are_never_followed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (path, digests) = bundle(tmp.path(), "docker.io/library/app:1", b"layer");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).expect("dir");

    // `blobs` is a link out of the store.
    let store = tmp.path().join("a");
    fs::create_dir_all(&store).expect("dir");
    std::os::unix::fs::symlink(&outside, store.join("blobs")).expect("link");
    let error = unpack_into(&path, &store).expect_err("refused");
    assert!(
        matches!(&error, BundleError::UnsafeDestination { path } if path.ends_with("blobs")),
        "{error}"
    );
    assert_eq!(fs::read_dir(&outside).expect("dir").count(), 0);

    // `blobs/sha256` is.
    let store = tmp.path().join("b");
    fs::create_dir_all(store.join("blobs")).expect("dir");
    std::os::unix::fs::symlink(&outside, store.join("blobs/sha256")).expect("link");
    assert!(matches!(
        unpack_into(&path, &store),
        Err(BundleError::UnsafeDestination { .. })
    ));
    assert_eq!(fs::read_dir(&outside).expect("dir").count(), 0);

    // `kk-bundle` is: refused before the index is published.
    let store = tmp.path().join("c");
    fs::create_dir_all(&store).expect("dir");
    std::os::unix::fs::symlink(&outside, store.join("kk-bundle")).expect("link");
    assert!(matches!(
        unpack_into(&path, &store),
        Err(BundleError::UnsafeDestination { .. })
    ));
    assert_eq!(fs::read_dir(&outside).expect("dir").count(), 0);
    assert!(!store.join("index.json").exists());

    // A blob's name is a link to a file with the right bytes: not "present" (the registry
    // would not serve it); replaced by a real file, the link's target untouched.
    let store = tmp.path().join("d");
    fs::create_dir_all(store.join("blobs/sha256")).expect("dir");
    let target = outside.join("layer");
    fs::write(&target, b"layer").expect("write");
    std::os::unix::fs::symlink(&target, blob(&store, digests[1])).expect("link");
    let unpacked = unpack_into(&path, &store).expect("unpacks");
    assert_eq!(unpacked.written, 3);
    assert!(
        fs::symlink_metadata(blob(&store, digests[1]))
            .expect("meta")
            .is_file()
    );
    assert_eq!(fs::read(&target).expect("read"), b"layer");
}

/// A crafted bundle whose blob ends inside a frame (its header claims less than its frames
/// hold, its listed digest is that of what it claims) is refused before the store is created,
/// not after its first half was written.
#[test]
fn a_bundle_whose_headers_lie_is_refused_before_the_store_is_touched() {
    use bundle_spec::test_support::{RawMember, blob_path, checksum_list, craft_bundle};

    const MTIME: u64 = 1_795_000_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = vec![7u8; 4096];
    let mut members = bundle_spec::test_support::minimal_members(MTIME);
    members.push(RawMember::claiming(
        &blob_path(&data[..1024]),
        data,
        1024,
        MTIME,
    ));
    let path = dir.path().join("crafted.tar.zst");
    fs::write(
        &path,
        craft_bundle(&checksum_list(&members), &members, true),
    )
    .expect("write");
    let store = dir.path().join("store");
    let err = unpack_into(&path, &store).unwrap_err();
    assert!(matches!(&err, BundleError::EndsInsideFrame { .. }), "{err}");
    assert!(!store.exists(), "the store was created");
}

/// A bundle whose blobs are `hello` (valid) and, after it in the bundle, one changed after the
/// checksum list was made: the unpack writes the first and fails on the second.
fn tampered_bundle(dir: &Path) -> (PathBuf, Sha256Digest) {
    use bundle_spec::test_support::{RawMember, blob_path, checksum_list, craft_bundle};

    const MTIME: u64 = 1_795_000_000;
    let mut members = bundle_spec::test_support::minimal_members(MTIME);
    // Members are in path order: the tampered blob must sort after `hello`'s.
    let data = (0..=u8::MAX)
        .map(|byte| vec![byte; 64])
        .find(|data| blob_path(data) > blob_path(b"hello"))
        .expect("a later blob");
    members.push(RawMember::new(&blob_path(&data), data, MTIME));
    let list = checksum_list(&members);
    members.last_mut().expect("a blob").data[0] ^= 1;
    let path = dir.join("tampered.tar.zst");
    fs::write(&path, craft_bundle(&list, &members, true)).expect("write");
    (path, Sha256Digest::of(b"hello"))
}

#[test]
fn a_failed_unpack_removes_the_store_it_created() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (tampered, _) = tampered_bundle(tmp.path());
    let store = tmp.path().join("new/store");
    let err = unpack_into(&tampered, &store).unwrap_err();
    assert!(matches!(&err, BundleError::DigestMismatch { .. }), "{err}");
    assert!(
        !tmp.path().join("new").exists(),
        "the directories the failed unpack created are left"
    );
    assert!(tampered.is_file(), "nothing outside the store is removed");
}

#[test]
fn a_failed_unpack_keeps_an_existing_stores_blobs_for_resume() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (good, earlier) = bundle(tmp.path(), "docker.io/library/app:1", b"layer one");
    unpack_into(&good, &store).expect("unpacks");
    let (tampered, verified) = tampered_bundle(tmp.path());
    let err = unpack_into(&tampered, &store).unwrap_err();
    assert!(matches!(&err, BundleError::DigestMismatch { .. }), "{err}");
    for digest in earlier.iter().chain([&verified]) {
        assert!(blob(&store, *digest).is_file(), "blob {digest} was removed");
    }
    let served = Store::open(&store).expect("the store still opens");
    assert_eq!(
        served.repositories().collect::<Vec<_>>(),
        ["docker.io/library/app"]
    );
}

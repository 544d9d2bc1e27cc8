use std::fs;
use std::path::{Path, PathBuf};

use bundle_spec::test_support::{TestImage, write_images};
use bundle_spec::{Bundle, Sha256Digest};

use super::{StoreLock, list};
use crate::registry::Store;
use crate::registry::store::unpack;

/// A bundle in `dir` named `name` holding one single-layer image per (reference, layer).
fn bundle(dir: &Path, name: &str, images: &[(&str, &[u8])]) -> (PathBuf, Vec<Sha256Digest>) {
    let layers: Vec<[&[u8]; 1]> = images.iter().map(|(_, layer)| [*layer]).collect();
    let images: Vec<TestImage<'_>> = images
        .iter()
        .zip(&layers)
        .map(|((reference, _), layers)| TestImage { reference, layers })
        .collect();
    let written = write_images(dir, name, &images, None);
    (written.path, written.blobs)
}

fn unpack_into(bundle: &Path, store: &Path) -> Sha256Digest {
    let mut opened = Bundle::open(bundle).expect("opens");
    unpack(&mut opened, store, &mut |_| {}).expect("unpacks");
    opened.identity()
}

#[test]
fn every_unpack_records_a_revision_newest_last_and_a_repeat_becomes_the_newest() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (a, a_blobs) = bundle(tmp.path(), "a", &[("docker.io/x/app:1", b"one")]);
    let (b, b_blobs) = bundle(tmp.path(), "b", &[("docker.io/x/app:2", b"two")]);
    let a_id = unpack_into(&a, &store);
    let b_id = unpack_into(&b, &store);

    let revisions = list(&store).expect("lists");
    let order: Vec<_> = revisions.iter().map(|r| (r.identity, r.sequence)).collect();
    assert_eq!(order, [(a_id, Some(1)), (b_id, Some(2))]);
    let first = &revisions[0];
    assert_eq!(first.blobs, a_blobs.iter().copied().collect());
    assert_eq!(first.base, None);
    assert!(!first.derived());
    // The bundle's own index, not the store's merged one.
    let index = first.index.as_ref().expect("recorded index");
    assert_eq!(index.len(), 1);
    assert_eq!(
        index[0]["annotations"]["org.opencontainers.image.ref.name"],
        "docker.io/x/app:1"
    );
    assert_eq!(revisions[1].blobs, b_blobs.iter().copied().collect());

    // Carried in again, A is the installed revision.
    unpack_into(&a, &store);
    let order: Vec<_> = list(&store)
        .expect("lists")
        .iter()
        .map(|r| (r.identity, r.sequence))
        .collect();
    assert_eq!(order, [(b_id, Some(2)), (a_id, Some(3))]);
}

/// A store unpacked before revisions has only the header files: its revision is derived from
/// them and from the store's index.
#[test]
fn a_store_unpacked_before_revisions_is_read_with_what_can_be_derived() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (a, a_blobs) = bundle(tmp.path(), "a", &[("docker.io/x/app:1", b"one")]);
    let (b, _) = bundle(tmp.path(), "b", &[("docker.io/x/app:2", b"two")]);
    let a_id = unpack_into(&a, &store);
    let b_id = unpack_into(&b, &store);
    let recorded = list(&store).expect("lists");
    for id in [a_id, b_id] {
        let headers = super::header_dir(&store, id);
        fs::remove_file(headers.join("revision.json")).expect("old store");
        fs::remove_file(headers.join("revision-index.json")).expect("old store");
    }

    let derived = list(&store).expect("lists");
    assert_eq!(derived.len(), 2);
    for (derived, recorded) in derived.iter().zip(&recorded) {
        assert!(derived.derived());
        assert_eq!(derived.sequence, None);
        assert_eq!(derived.blobs, recorded.blobs);
        assert_eq!(derived.version, recorded.version);
    }
    let a_rev = derived.iter().find(|r| r.identity == a_id).expect("a");
    assert_eq!(a_rev.blobs, a_blobs.iter().copied().collect());
    let store_index = super::read_index(&super::store_index(&store)).expect("index");
    let entries = super::entries_of(a_rev, &store_index);
    assert_eq!(entries, recorded[0].index.clone().expect("recorded"));

    // The next unpack is recorded after both.
    let (c, _) = bundle(tmp.path(), "c", &[("docker.io/x/app:3", b"three")]);
    let c_id = unpack_into(&c, &store);
    let newest = list(&store).expect("lists").pop().expect("three");
    assert_eq!((newest.identity, newest.sequence), (c_id, Some(1)));
}

/// A header directory an unpack was killed in before its checksum list is no revision, and a
/// store that is not a bundle store has none.
#[test]
fn incomplete_header_directories_and_plain_layouts_have_no_revisions() {
    let tmp = tempfile::tempdir().expect("tmp");
    assert!(list(tmp.path()).expect("lists").is_empty());
    let (a, _) = bundle(tmp.path(), "a", &[("docker.io/x/app:1", b"one")]);
    let store = tmp.path().join("store");
    unpack_into(&a, &store);
    let empty = store.join("kk-bundle").join(Sha256Digest::of(b"x").hex());
    fs::create_dir(&empty).expect("dir");
    assert_eq!(list(&store).expect("lists").len(), 1);
    Store::open(&store).expect("still opens");
}

/// A record that names another bundle than its directory is refused, naming it.
#[test]
fn a_record_under_another_identity_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (a, _) = bundle(tmp.path(), "a", &[("docker.io/x/app:1", b"one")]);
    let id = unpack_into(&a, &store);
    let from = super::header_dir(&store, id);
    let to = super::header_dir(&store, Sha256Digest::of(b"other"));
    fs::rename(&from, &to).expect("moved");
    let error = list(&store).expect_err("refused");
    assert!(
        matches!(&error, crate::registry::RevisionError::Mismatch { path } if path.starts_with(&to)),
        "{error:?}"
    );
}

/// The store lock is the kernel's: held, another open file of it cannot take it.
#[test]
fn the_store_lock_excludes_another_holder_until_released() {
    let tmp = tempfile::tempdir().expect("tmp");
    let held = StoreLock::acquire(tmp.path()).expect("locks");
    let other = fs::File::open(tmp.path().join(super::LOCK_FILE)).expect("lock file");
    assert!(matches!(
        other.try_lock(),
        Err(fs::TryLockError::WouldBlock)
    ));
    drop(held);
    other.try_lock().expect("free again");
}

/// A delta's revision names its base and needs the blobs it takes from it, so that keeping the
/// delta keeps them.
#[test]
fn a_deltas_revision_names_its_base_and_needs_the_blobs_it_takes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let images = [("docker.io/x/shared:1", b"s" as &[u8])];
    let (a, a_blobs) = bundle(tmp.path(), "a", &images);
    let a_id = unpack_into(&a, &store);
    let layers: [&[u8]; 1] = [b"two"];
    let shared: [&[u8]; 1] = [b"s"];
    let delta = bundle_spec::test_support::write_delta_images(
        tmp.path(),
        "b",
        &[
            TestImage {
                reference: "docker.io/x/app:2",
                layers: &layers,
            },
            TestImage {
                reference: "docker.io/x/shared:1",
                layers: &shared,
            },
        ],
        a_id,
        &a_blobs,
    );
    unpack_into(&delta.path, &store);
    let newest = list(&store).expect("lists").pop().expect("two");
    assert_eq!(newest.base, Some(a_id));
    assert_eq!(newest.blobs, delta.blobs.iter().copied().collect());
    assert!(a_blobs.iter().all(|b| newest.blobs.contains(b)));
}

/// A record that cannot be read does not stop the next unpack, which is recorded after the
/// records that can; `list` names the broken one.
#[test]
fn a_broken_record_does_not_stop_an_unpack() {
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (a, _) = bundle(tmp.path(), "a", &[("docker.io/x/app:1", b"one")]);
    let (b, _) = bundle(tmp.path(), "b", &[("docker.io/x/app:2", b"two")]);
    let (c, _) = bundle(tmp.path(), "c", &[("docker.io/x/app:3", b"three")]);
    unpack_into(&a, &store);
    let b_id = unpack_into(&b, &store);
    let broken = super::header_dir(&store, b_id).join("revision.json");
    fs::write(&broken, b"{").expect("broken");
    let c_id = unpack_into(&c, &store);
    let error = list(&store).expect_err("names the broken record");
    assert!(
        error.to_string().contains(&broken.display().to_string()),
        "{error}"
    );
    fs::remove_file(&broken).expect("derived again");
    let newest = list(&store).expect("lists").pop().expect("three");
    assert_eq!((newest.identity, newest.sequence), (c_id, Some(2)));
}

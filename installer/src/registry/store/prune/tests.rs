use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use bundle_spec::test_support::{TestImage, write_images};
use bundle_spec::{Bundle, Sha256Digest};

use super::{Plan, prune, select};
use crate::registry::store::revision::{Revision, list};
use crate::registry::store::unpack;
use crate::registry::{RevisionError, Store};

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

/// A store holding bundle A (`app:1`, `shared:1`), then bundle B (`app:2`, the same
/// `shared:1`): A's blobs, B's blobs.
struct Upgraded {
    _tmp: tempfile::TempDir,
    store: PathBuf,
    a: Sha256Digest,
    b: Sha256Digest,
    a_blobs: BTreeSet<Sha256Digest>,
    b_blobs: BTreeSet<Sha256Digest>,
}

impl Upgraded {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = tmp.path().join("store");
        let (a_path, a_blobs) = bundle(
            tmp.path(),
            "a",
            &[
                ("docker.io/x/app:1", b"one"),
                ("docker.io/x/shared:1", b"s"),
            ],
        );
        let (b_path, b_blobs) = bundle(
            tmp.path(),
            "b",
            &[
                ("docker.io/x/app:2", b"two"),
                ("docker.io/x/shared:1", b"s"),
            ],
        );
        let a = unpack_into(&a_path, &store);
        let b = unpack_into(&b_path, &store);
        Self {
            _tmp: tmp,
            store,
            a,
            b,
            a_blobs: a_blobs.into_iter().collect(),
            b_blobs: b_blobs.into_iter().collect(),
        }
    }

    fn a_only(&self) -> BTreeSet<Sha256Digest> {
        self.a_blobs.difference(&self.b_blobs).copied().collect()
    }

    fn blob(&self, digest: Sha256Digest) -> PathBuf {
        self.store.join("blobs/sha256").join(digest.hex())
    }

    /// The store opens, serves B's tags, and has every blob B needs, intact.
    fn assert_b_verifies(&self) {
        let served = Store::open(&self.store).expect("the store opens");
        let app = served.repository("docker.io/x/app").expect("app");
        assert!(app.tags.contains_key("2"), "{:?}", app.tags);
        for digest in &self.b_blobs {
            let bytes = fs::read(self.blob(*digest)).expect("B's blob is there");
            assert_eq!(Sha256Digest::of(&bytes), *digest);
        }
    }
}

fn revision(n: u8) -> Revision {
    Revision {
        identity: Sha256Digest::of(&[n]),
        sequence: Some(u64::from(n)),
        unpacked: jiff::Timestamp::UNIX_EPOCH,
        version: String::new(),
        base: None,
        blobs: BTreeSet::new(),
        index: None,
    }
}

#[test]
fn keep_selects_the_newest_revisions_and_never_fewer_than_one() {
    let all: Vec<Revision> = (1..=3).map(revision).collect();
    let ids = |list: &[Revision]| list.iter().map(|r| r.identity).collect::<Vec<_>>();
    // (revisions, keep, kept, dropped), revisions numbered oldest first.
    let table: [(usize, usize, &[u8], &[u8]); 7] = [
        (3, 0, &[3], &[1, 2]),
        (3, 1, &[3], &[1, 2]),
        (3, 2, &[2, 3], &[1]),
        (3, 3, &[1, 2, 3], &[]),
        (3, 9, &[1, 2, 3], &[]),
        (1, 1, &[1], &[]),
        (0, 2, &[], &[]),
    ];
    for (count, keep, kept, dropped) in table {
        let (got_kept, got_dropped) = select(&all[..count], keep);
        let expect = |n: &[u8]| {
            n.iter()
                .map(|n| Sha256Digest::of(&[*n]))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(got_kept), expect(kept), "{count} keep {keep}");
        assert_eq!(ids(got_dropped), expect(dropped), "{count} keep {keep}");
    }
}

#[test]
fn keep_one_after_an_upgrade_removes_the_old_revisions_unique_blobs_and_nothing_on_a_rerun() {
    let up = Upgraded::new();
    let stray = Sha256Digest::of(b"no revision needs this");
    fs::write(up.blob(stray), b"no revision needs this").expect("stray");

    let dry = prune(&up.store, 1, true).expect("dry run");
    assert_eq!(
        (dry.blobs, dry.dropped.clone()),
        (up.a_only().len() + 1, vec![up.a])
    );
    assert!(up.blob(stray).exists(), "a dry run removes nothing");

    let pruned = prune(&up.store, 1, false).expect("prunes");
    assert_eq!(
        (pruned.kept.clone(), pruned.dropped.clone()),
        (vec![up.b], vec![up.a])
    );
    assert_eq!(pruned.blobs, up.a_only().len() + 1);
    for digest in up.a_only().iter().chain([&stray]) {
        assert!(!up.blob(*digest).exists(), "{digest} is gone");
    }
    up.assert_b_verifies();
    let served = Store::open(&up.store).expect("opens");
    assert!(
        !served
            .repository("docker.io/x/app")
            .expect("app")
            .tags
            .contains_key("1")
    );
    let ids: Vec<_> = list(&up.store)
        .expect("lists")
        .iter()
        .map(|r| r.identity)
        .collect();
    assert_eq!(ids, [up.b]);
    assert_eq!(
        fs::read_dir(up.store.join("kk-bundle"))
            .expect("dir")
            .count(),
        1,
        "A's header directory is gone, and nothing retired is left"
    );

    // A rerun changes nothing, not even the index file.
    let index = up.store.join("index.json");
    let before = fs::metadata(&index).expect("index").ino();
    let again = prune(&up.store, 1, false).expect("prunes");
    assert_eq!((again.blobs, again.dropped.len()), (0, 0));
    assert_eq!(fs::metadata(&index).expect("index").ino(), before);
}

#[test]
fn keep_two_keeps_the_previous_revision_whole() {
    let up = Upgraded::new();
    let pruned = prune(&up.store, 2, false).expect("prunes");
    assert_eq!((pruned.blobs, pruned.kept.len()), (0, 2));
    for digest in up.a_blobs.union(&up.b_blobs) {
        assert!(up.blob(*digest).exists());
    }
    let served = Store::open(&up.store).expect("opens");
    let tags = &served.repository("docker.io/x/app").expect("app").tags;
    assert!(tags.contains_key("1") && tags.contains_key("2"), "{tags:?}");
}

/// A prune killed after each of its steps leaves a store that opens and whose kept revision
/// verifies; the rerun finishes the job.
#[test]
fn a_prune_killed_after_any_step_leaves_a_store_that_verifies_and_a_rerun_finishes() {
    for steps in 0..3 {
        let up = Upgraded::new();
        let plan = Plan::new(&up.store, 1).expect("plans");
        if steps > 0 {
            plan.write_index().expect("index");
        }
        if steps > 1 {
            plan.retire_revisions().expect("retired");
        }
        up.assert_b_verifies();

        let rerun = prune(&up.store, 1, false).expect("rerun");
        assert_eq!(rerun.kept, [up.b], "after {steps} steps");
        for digest in up.a_only() {
            assert!(!up.blob(digest).exists(), "after {steps} steps: {digest}");
        }
        up.assert_b_verifies();
    }
}

/// Killed half-way through the blobs, or through retiring a revision's directory.
#[test]
fn a_prune_killed_inside_a_step_is_finished_by_a_rerun() {
    let up = Upgraded::new();
    let plan = Plan::new(&up.store, 1).expect("plans");
    plan.write_index().expect("index");
    // Half of the retired directory removed.
    let headers = up.store.join("kk-bundle");
    let retired = headers.join(format!(".pruned-{}", up.a.hex()));
    fs::rename(headers.join(up.a.hex()), &retired).expect("retired");
    fs::remove_file(retired.join("revision.json")).expect("half removed");
    // One blob of A's deleted.
    let first = *up.a_only().iter().next().expect("A has unique blobs");
    fs::remove_file(up.blob(first)).expect("one deleted");
    up.assert_b_verifies();

    prune(&up.store, 1, false).expect("rerun");
    assert!(!retired.exists());
    for digest in up.a_only() {
        assert!(!up.blob(digest).exists());
    }
    up.assert_b_verifies();
}

#[test]
fn a_store_without_revisions_is_not_pruned() {
    let tmp = tempfile::tempdir().expect("tmp");
    let error = prune(tmp.path(), 1, false).expect_err("refused");
    assert!(
        matches!(error, RevisionError::NoRevisions { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("kk-install unpack"), "{error}");
}

/// The durable order: the unpack's record before the index that names the bundle; the prune's
/// index before the retired records, and those before the blobs' directory is synced.
#[test]
fn records_and_the_index_are_durable_in_their_order() {
    use crate::durable::journal::{self, Step};
    let position = |steps: &[Step], wanted: &Step| {
        steps
            .iter()
            .position(|s| s == wanted)
            .unwrap_or_else(|| panic!("{wanted:?} in {steps:#?}"))
    };
    let renamed = |steps: &[Step], path: &Path| {
        steps
            .iter()
            .position(|s| matches!(s, Step::Rename { to, .. } if to == path))
            .unwrap_or_else(|| panic!("{} renamed in {steps:#?}", path.display()))
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let store = tmp.path().join("store");
    let (a, _) = bundle(tmp.path(), "a", &[("docker.io/x/app:1", b"one")]);
    journal::take();
    let id = unpack_into(&a, &store);
    let steps = journal::take();
    let headers = store.join("kk-bundle").join(id.hex());
    let index = store.join("index.json");
    for file in [
        headers.join("revision.json"),
        headers.join("revision-index.json"),
    ] {
        journal::assert_durable(&steps, &file);
    }
    assert!(renamed(&steps, &headers.join("revision.json")) < renamed(&steps, &index));

    let up = Upgraded::new();
    journal::take();
    prune(&up.store, 1, false).expect("prunes");
    let steps = journal::take();
    let index = up.store.join("index.json");
    journal::assert_durable(&steps, &index);
    let retired = position(&steps, &Step::SyncDir(up.store.join("kk-bundle")));
    let blobs = position(&steps, &Step::SyncDir(up.store.join("blobs/sha256")));
    assert!(
        renamed(&steps, &index) < retired && retired < blobs,
        "{steps:#?}"
    );
}

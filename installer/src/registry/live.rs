//! The store a running registry serves, picked up again when its `index.json` changes.
//!
//! An unpack (a new bundle beside the installed one) and a prune (revisions dropped) both end
//! by replacing `index.json` through a rename, so its file identity changes: every request
//! compares the identity with the one the served [`Store`] was read from, and reopens the store
//! first when it differs. No signal and no timer: the first request after the change sees it.
//!
//! During a prune, the new index is in place before any blob goes (see
//! `store::prune`), so a request reaches a dropped revision's blob only when it resolved the
//! manifest before the index changed; it gets a clean 404, or the whole blob when it had opened
//! it already (a deleted file stays readable while open).

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use bundle_spec::oci::INDEX_PATH;

use super::Store;

/// What tells one `index.json` from its replacement: device, inode, change time, size.
pub(crate) type IndexId = (u64, u64, i64, i64, u64);

/// The identity of the `index.json` in `root`, `None` if it cannot be read.
pub(crate) fn index_id(root: &Path) -> Option<IndexId> {
    let meta = std::fs::metadata(root.join(INDEX_PATH)).ok()?;
    Some((
        meta.dev(),
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec(),
        meta.size(),
    ))
}

/// The store behind a running registry; cloning shares it.
#[derive(Debug, Clone)]
pub(crate) struct Live {
    current: Arc<Mutex<(Option<IndexId>, Store)>>,
}

impl Live {
    /// Serves `store`, and what its directory holds later.
    pub(crate) fn new(store: Store) -> Self {
        Self {
            current: Arc::new(Mutex::new((store.index_id(), store))),
        }
    }

    /// The store as its `index.json` is now: reopened when the file changed since it was read.
    /// A store that no longer opens keeps being served as it was, with a warning, until its
    /// index changes again.
    pub(crate) fn current(&self) -> Store {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let id = index_id(current.1.root());
        if id == current.0 {
            return current.1.clone();
        }
        match Store::open(current.1.root()) {
            Ok(store) => {
                tracing::info!(store = %store.root().display(), "the store's index changed: serving it as it is now");
                *current = (store.index_id(), store);
            }
            Err(error) => {
                tracing::warn!(
                    store = %current.1.root().display(),
                    %error,
                    "the store's index changed but the store does not open: serving it as it was"
                );
                current.0 = id;
            }
        }
        current.1.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use bundle_spec::Bundle;
    use bundle_spec::test_support::{TestImage, write_images};

    use super::Live;
    use crate::registry::{Store, unpack};

    fn unpack_image(dir: &Path, store: &Path, reference: &str) {
        let layers: [&[u8]; 1] = [reference.as_bytes()];
        let image = TestImage {
            reference,
            layers: &layers,
        };
        let name = bundle_spec::Sha256Digest::of(reference.as_bytes()).hex();
        let written = write_images(dir, &name, &[image], None);
        let mut bundle = Bundle::open(&written.path).expect("opens");
        unpack(&mut bundle, store, &mut |_| {}).expect("unpacks");
    }

    fn repositories(live: &Live) -> Vec<String> {
        live.current().repositories().map(str::to_owned).collect()
    }

    #[test]
    fn a_replaced_index_is_served_and_one_that_does_not_open_is_not() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = tmp.path().join("store");
        unpack_image(tmp.path(), &store, "docker.io/x/a:1");
        let live = Live::new(Store::open(&store).expect("opens"));
        assert_eq!(repositories(&live), ["docker.io/x/a"]);

        unpack_image(tmp.path(), &store, "docker.io/x/b:1");
        assert_eq!(repositories(&live), ["docker.io/x/a", "docker.io/x/b"]);

        let index = store.join("index.json");
        let good = std::fs::read(&index).expect("index");
        crate::durable::write(&index, b"not json", 0o644, ".test-").expect("broken");
        assert_eq!(repositories(&live), ["docker.io/x/a", "docker.io/x/b"]);

        crate::durable::write(&index, &good, 0o644, ".test-").expect("repaired");
        unpack_image(tmp.path(), &store, "docker.io/x/c:1");
        assert_eq!(
            repositories(&live),
            ["docker.io/x/a", "docker.io/x/b", "docker.io/x/c"]
        );
    }
}

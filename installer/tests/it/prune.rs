//! Store revisions and pruning against a running registry: bundle A served, bundle B (a delta
//! onto A) unpacked into the served store (picked up without a restart), then `kk-install registry prune
//! --keep 1` while a client loop pulls B's images through the registry.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bundle_spec::Sha256Digest;
use bundle_spec::test_support::{TestImage, write_delta_images, write_images};
use kk_install::registry::{Store, router};
use serde_json::Value;

/// A bundle in `dir` named `name` holding one single-layer image per (reference, layer); with
/// `base` (a bundle's path and blobs), a delta onto it. Every blob its index needs.
fn bundle(
    dir: &Path,
    name: &str,
    images: &[(&str, &[u8])],
    base: Option<(&Path, &BTreeSet<Sha256Digest>)>,
) -> (PathBuf, BTreeSet<Sha256Digest>) {
    let layers: Vec<[&[u8]; 1]> = images.iter().map(|(_, layer)| [*layer]).collect();
    let images: Vec<TestImage<'_>> = images
        .iter()
        .zip(&layers)
        .map(|((reference, _), layers)| TestImage { reference, layers })
        .collect();
    let written = match base {
        None => write_images(dir, name, &images, None),
        Some((path, blobs)) => {
            let identity = bundle_spec::Bundle::open(path).unwrap().identity();
            let blobs: Vec<_> = blobs.iter().copied().collect();
            write_delta_images(dir, name, &images, identity, &blobs)
        }
    };
    (written.path, written.blobs.into_iter().collect())
}

/// Runs `kk-install ARGS`, which must succeed; its standard output.
fn kk_install(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_kk-install"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "kk-install {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Pulls `repository:tag` whole through the registry at `base`: the manifest, then every blob
/// it names, each checked against its digest.
async fn pull(
    client: &reqwest::Client,
    base: &str,
    repository: &str,
    tag: &str,
) -> Result<(), String> {
    let get = |path: String| {
        let client = client.clone();
        async move {
            let response = client
                .get(format!("{base}/v2/{repository}/{path}"))
                .send()
                .await
                .map_err(|e| format!("{path}: {e}"))?;
            if !response.status().is_success() {
                return Err(format!("{path}: {}", response.status()));
            }
            response.bytes().await.map_err(|e| format!("{path}: {e}"))
        }
    };
    let manifest = get(format!("manifests/{tag}")).await?;
    let manifest: Value = serde_json::from_slice(&manifest).map_err(|e| e.to_string())?;
    let blobs = manifest["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain([&manifest["config"]]);
    for descriptor in blobs {
        let digest = descriptor["digest"]
            .as_str()
            .ok_or("a descriptor without digest")?;
        let bytes = get(format!("blobs/{digest}")).await?;
        if Sha256Digest::of(&bytes).to_string() != digest {
            return Err(format!("blob {digest} does not match its digest"));
        }
    }
    Ok(())
}

/// A client pulling B's images (`app:2`, `shared:1`) whole, over and over, until stopped.
struct PullLoop {
    stop: Arc<AtomicBool>,
    pulls: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<Vec<String>>,
}

impl PullLoop {
    fn start(client: &reqwest::Client, base: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let pulls = Arc::new(AtomicUsize::new(0));
        let (client, base) = (client.clone(), base.to_owned());
        let (stopped, counted) = (stop.clone(), pulls.clone());
        let task = tokio::spawn(async move {
            let mut errors = Vec::new();
            while !stopped.load(Ordering::SeqCst) {
                for (repository, tag) in [("docker.io/x/app", "2"), ("docker.io/x/shared", "1")] {
                    if let Err(error) = pull(&client, &base, repository, tag).await {
                        errors.push(error);
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
            }
            errors
        });
        Self { stop, pulls, task }
    }

    /// Rounds of pulls completed.
    fn count(&self) -> usize {
        self.pulls.load(Ordering::SeqCst)
    }

    /// Waits until more than `count` rounds completed.
    async fn wait_past(&self, count: usize) {
        while self.count() <= count {
            tokio::task::yield_now().await;
        }
    }

    /// Stops the loop; the errors it saw.
    async fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_keep_one_while_serving_keeps_the_installed_revision_answering() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let store_arg = store.to_str().unwrap().to_owned();
    let store_arg = store_arg.as_str();
    let (a, a_blobs) = bundle(
        tmp.path(),
        "a",
        &[
            ("docker.io/x/app:1", b"one"),
            ("docker.io/x/shared:1", b"s"),
        ],
        None,
    );
    let (b, b_blobs) = bundle(
        tmp.path(),
        "b",
        &[
            ("docker.io/x/app:2", b"two"),
            ("docker.io/x/shared:1", b"s"),
        ],
        Some((&a, &a_blobs)),
    );
    kk_install(&["unpack", a.to_str().unwrap(), "--store", store_arg]);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(Store::open(&store).unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    pull(&client, &base, "docker.io/x/app", "1").await.unwrap();
    assert!(pull(&client, &base, "docker.io/x/app", "2").await.is_err());

    // B goes into the served store; the registry serves it without a restart.
    kk_install(&["unpack", b.to_str().unwrap(), "--store", store_arg]);
    pull(&client, &base, "docker.io/x/app", "2").await.unwrap();

    // A client pulls B's images over and over while the prune runs.
    let pulling = PullLoop::start(&client, &base);
    pulling.wait_past(0).await;
    let owned = store_arg.to_owned();
    let pruned = tokio::task::spawn_blocking(move || {
        kk_install(&["registry", "prune", "--store", &owned, "--keep", "1"])
    })
    .await
    .unwrap();
    // The loop pulls whole at least once more after the prune, from the pruned store.
    pulling.wait_past(pulling.count() + 1).await;
    let errors = pulling.stop().await;
    assert!(errors.is_empty(), "the client loop failed: {errors:?}");

    let a_only: BTreeSet<_> = a_blobs.difference(&b_blobs).collect();
    assert!(!a_only.is_empty());
    assert!(
        pruned.starts_with(&format!("removed {} blobs", a_only.len())),
        "{pruned}"
    );
    for digest in &a_only {
        assert!(
            !store.join("blobs/sha256").join(digest.hex()).exists(),
            "{digest}"
        );
    }
    // B verifies: the blobs it takes from A are still in the store, every blob it needs is
    // intact, and the registry serves it whole.
    let verified = kk_install(&["verify", b.to_str().unwrap(), "--store", store_arg]);
    assert!(verified.contains("delta: builds on bundle"), "{verified}");
    assert!(
        a_blobs.intersection(&b_blobs).count() > 0,
        "B takes blobs from A"
    );
    for digest in &b_blobs {
        let bytes = std::fs::read(store.join("blobs/sha256").join(digest.hex())).unwrap();
        assert_eq!(Sha256Digest::of(&bytes), *digest);
    }
    pull(&client, &base, "docker.io/x/app", "2").await.unwrap();
    // A's tag went with it, from the running registry too.
    assert!(
        pull(&client, &base, "docker.io/x/app", "1")
            .await
            .unwrap_err()
            .contains("404")
    );

    let revisions: Value = serde_json::from_str(&kk_install(&[
        "registry",
        "revisions",
        "--store",
        store_arg,
        "--output",
        "json",
    ]))
    .unwrap();
    let revisions = revisions.as_array().unwrap();
    assert_eq!(revisions.len(), 1, "{revisions:?}");
    assert_eq!(revisions[0]["role"], "installed");

    // A second prune changes nothing.
    let again = kk_install(&["registry", "prune", "--store", store_arg, "--keep", "1"]);
    assert!(
        again.starts_with("removed 0 blobs (0 B) of 0 revisions"),
        "{again}"
    );
    server.abort();
}

//! `kk-install registry serve` under load: the real binary, over a store unpacked from a bundle,
//! answers 64 000 mixed pull requests from 64 concurrent clients with every status, digest
//! header and byte checked, keeps its memory flat, and answers malformed requests sent in the
//! middle of the load with a 4xx, never a 5xx.
//!
//! The test is in a `lab::` module: it needs both cores, so nextest runs it with the other serial
//! tests (`.config/nextest.toml`). It asserts no timing, only correctness and a memory bound.

use std::fmt::Write as _;
use std::fs;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use bundle_spec::test_support::{TestImage, write_images};

use crate::install_bundle::{kk_install, layer};
use crate::labkit::free_port;
use crate::support::{KillOnDrop, binary, run_ok};

/// Concurrent clients, each sending its requests one after the other over its own connection.
const CLIENTS: u64 = 64;
/// Requests per client.
const REQUESTS: u64 = 1000;
/// The first requests of every client warm the server up (connections, buffers, blocking
/// threads, allocator arenas); its memory is sampled after them and again at the end.
const WARM_UP: u64 = 100;
/// How much the server's resident memory may grow between the two samples: a leak of about
/// 600 bytes per request (57 600 requests come after the warm-up) would exceed it, while the
/// allocator's own variation stays far below (under 2 MiB in practice).
const RSS_GROWTH_LIMIT_KIB: u64 = 32 * 1024;
/// What a container runtime sends when pulling by tag.
const ACCEPT_MANIFESTS: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.docker.distribution.manifest.v2+json";
/// Error messages kept for the failure report (the count covers all of them).
const KEPT_ERRORS: usize = 20;

/// One content the registry must serve: where, and exactly what.
#[derive(Debug)]
struct Target {
    /// Request path and query, from `/v2/`.
    path: String,
    /// `sha256:<hex>`: the expected `Docker-Content-Digest`.
    digest: String,
    /// The expected `Content-Type`.
    media_type: String,
    /// The stored bytes.
    body: Arc<[u8]>,
}

/// Everything the load test asks for, built from the unpacked store.
#[derive(Debug, Default)]
struct Fixture {
    /// Manifests and indexes by tag, in the `host/path` form.
    by_tag: Vec<Target>,
    /// Manifests and indexes (platform manifests too) by digest.
    by_digest: Vec<Target>,
    /// Blobs (configs and layers).
    blobs: Vec<Target>,
    /// Manifests by tag and blobs in containerd's mirror form (`path?ns=host`).
    mirror: Vec<Target>,
}

/// An image of the test bundle and the names it is served under.
#[derive(Debug)]
struct Image {
    /// The bundle reference.
    reference: &'static str,
    /// The repository it is served as (`host/path`).
    repository: &'static str,
    /// containerd's mirror form: the path alone, and the `ns` query naming the host.
    mirror: (&'static str, &'static str),
    /// The tag.
    tag: &'static str,
    /// One layer per platform: (size, seed).
    layers: &'static [(usize, u8)],
}

/// A two-platform index with a 1 MiB and a 64 KiB layer, and two single manifests with 64 KiB
/// and 4 KiB layers (one under a registry host with a port).
const IMAGES: [Image; 3] = [
    Image {
        reference: "docker.io/library/app:1",
        repository: "docker.io/library/app",
        mirror: ("library/app", "docker.io"),
        tag: "1",
        layers: &[(1 << 20, 11), (64 << 10, 12)],
    },
    Image {
        reference: "registry.local:5000/team/tool:2.0",
        repository: "registry.local_5000/team/tool",
        mirror: ("team/tool", "registry.local:5000"),
        tag: "2.0",
        layers: &[(64 << 10, 13)],
    },
    Image {
        reference: "quay.io/x/small:v1",
        repository: "quay.io/x/small",
        mirror: ("x/small", "quay.io"),
        tag: "v1",
        layers: &[(4 << 10, 14)],
    },
];

/// Builds the bundle of [`IMAGES`] and unpacks it into `<dir>/store` with the real
/// `kk-install unpack`; returns the store.
fn unpacked_store(dir: &Path) -> PathBuf {
    let layers: Vec<Vec<Vec<u8>>> = IMAGES
        .iter()
        .map(|image| {
            image
                .layers
                .iter()
                .map(|&(len, seed)| layer(len, seed))
                .collect()
        })
        .collect();
    let slices: Vec<Vec<&[u8]>> = layers
        .iter()
        .map(|image| image.iter().map(Vec::as_slice).collect())
        .collect();
    let images: Vec<TestImage<'_>> = IMAGES
        .iter()
        .zip(&slices)
        .map(|(image, layers)| TestImage {
            reference: image.reference,
            layers,
        })
        .collect();
    let bundle = write_images(dir, "load", &images, None).path;
    let store = dir.join("store");
    run_ok(&mut kk_install(
        &["unpack", "--store", store.to_str().expect("utf-8")],
        &bundle,
    ));
    store
}

/// What every request must return, read back from the unpacked `store`.
fn fixture(store: &Path) -> Fixture {
    let blob = |digest: &str| -> Arc<[u8]> {
        let hex = digest.strip_prefix("sha256:").expect("sha256 digest");
        fs::read(store.join("blobs/sha256").join(hex))
            .expect("blob in the store")
            .into()
    };
    let json = |bytes: &[u8]| -> Value { serde_json::from_slice(bytes).expect("json") };
    let str_of = |value: &Value, key: &str| value[key].as_str().expect(key).to_owned();
    let target = |path: String, digest: &str, media_type: &str| Target {
        path,
        digest: digest.to_owned(),
        media_type: media_type.to_owned(),
        body: blob(digest),
    };
    let index = json(&fs::read(store.join("index.json")).expect("index.json"));
    let mut fixture = Fixture::default();
    for image in &IMAGES {
        let (repository, tag, (path, ns)) = (image.repository, image.tag, image.mirror);
        let descriptor = index["manifests"]
            .as_array()
            .expect("manifests")
            .iter()
            .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == image.reference)
            .unwrap_or_else(|| panic!("{} is not in index.json", image.reference));
        let (digest, media_type) = (
            str_of(descriptor, "digest"),
            str_of(descriptor, "mediaType"),
        );
        let top = target(
            format!("/v2/{repository}/manifests/{tag}"),
            &digest,
            &media_type,
        );
        // The manifests of this image: the top one, and the platform manifests of an index.
        let mut manifests = vec![(digest, media_type)];
        if let Some(platforms) = json(&top.body)["manifests"].as_array() {
            for platform in platforms {
                manifests.push((str_of(platform, "digest"), str_of(platform, "mediaType")));
            }
        }
        for (digest, media_type) in &manifests {
            let manifest = target(
                format!("/v2/{repository}/manifests/{digest}"),
                digest,
                media_type,
            );
            let document = json(&manifest.body);
            let children = document["layers"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(Some(&document["config"]).filter(|c| c.is_object()));
            for child in children {
                let digest = str_of(child, "digest");
                let octets = "application/octet-stream";
                let plain = target(format!("/v2/{repository}/blobs/{digest}"), &digest, octets);
                // Mirror-form blobs up to 64 KiB only: the 1 MiB layer already comes whole
                // through `BlobGet`, and more of it would make bytes, not requests, the load.
                if plain.body.len() <= 64 << 10 {
                    let mirror = format!("/v2/{path}/blobs/{digest}?ns={ns}");
                    fixture.mirror.push(target(mirror, &digest, octets));
                }
                fixture.blobs.push(plain);
            }
            fixture.by_digest.push(manifest);
        }
        let mirror = format!("/v2/{path}/manifests/{tag}?ns={ns}");
        fixture
            .mirror
            .push(target(mirror, &top.digest, &top.media_type));
        fixture.by_tag.push(top);
    }
    assert!(
        fixture.blobs.iter().any(|b| b.body.len() == 1 << 20)
            && fixture
                .by_tag
                .iter()
                .any(|m| m.media_type.ends_with("index.v1+json")),
        "the fixture has a 1 MiB layer and an index"
    );
    fixture
}

/// The kinds of request the clients mix.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// GET a manifest or index by tag, with a runtime's `Accept` header.
    TagGet,
    /// GET a manifest or index by digest.
    DigestGet,
    /// HEAD a manifest, by tag or by digest.
    ManifestHead,
    /// HEAD a blob.
    BlobHead,
    /// GET a whole blob.
    BlobGet,
    /// GET a byte range of a blob.
    BlobRange,
    /// GET a manifest by tag or a blob in containerd's mirror form (`?ns=`).
    Mirror,
}

impl Kind {
    /// Every kind, with its share of the requests (in sixteenths). Whole blobs are the fewest
    /// (4 000, an eighth of them the 1 MiB layer) so that 64 000 requests of a debug build stay
    /// well within a minute on two cores.
    const MIX: [(Self, u64); 7] = [
        (Self::TagGet, 4),
        (Self::DigestGet, 2),
        (Self::ManifestHead, 2),
        (Self::BlobHead, 2),
        (Self::BlobGet, 1),
        (Self::BlobRange, 3),
        (Self::Mirror, 2),
    ];

    /// The kind for a random number.
    fn pick(random: u64) -> (usize, Self) {
        let mut slot = random % 16;
        for (position, &(kind, share)) in Self::MIX.iter().enumerate() {
            if slot < share {
                return (position, kind);
            }
            slot -= share;
        }
        unreachable!("the shares of Kind::MIX add up to 16")
    }
}

/// splitmix64: a fixed, well-spread sequence of numbers from a counter (no `rand` needed, and
/// every run sends the same requests).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn pick<T>(items: &[T], random: u64) -> &T {
    &items[(random % items.len() as u64) as usize]
}

/// Tallies of a load phase.
#[derive(Debug, Default)]
struct Tally {
    /// Requests per kind, in the order of [`Kind::MIX`].
    per_kind: [AtomicU64; 7],
    /// Body bytes received.
    bytes: AtomicU64,
    /// Failed checks (or failed requests).
    errors: AtomicU64,
    /// The first failures' messages.
    messages: Mutex<Vec<String>>,
}

impl Tally {
    /// Counts a failure and keeps its message if it is among the first.
    fn fail(&self, message: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut messages = self.messages.lock().unwrap_or_else(PoisonError::into_inner);
        if messages.len() < KEPT_ERRORS {
            messages.push(message);
        }
    }

    /// Requests sent so far.
    fn total(&self) -> u64 {
        self.per_kind
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .sum()
    }

    /// One line with the counts, for the test's output.
    fn summary(&self, run: &Run, elapsed: Duration) -> String {
        let counts: Vec<String> = Kind::MIX
            .iter()
            .zip(&self.per_kind)
            .map(|((kind, _), count)| format!("{kind:?} {}", count.load(Ordering::Relaxed)))
            .collect();
        format!(
            "{} requests from {CLIENTS} clients in {:.1} s, {} MB of bodies, {} errors ({}); \
             {} rounds of {} malformed requests beside the load; \
             server VmRSS {} KiB after the warm-up, {} KiB at the end",
            self.total(),
            elapsed.as_secs_f64(),
            self.bytes.load(Ordering::Relaxed) / 1_000_000,
            self.errors.load(Ordering::Relaxed),
            counts.join(", "),
            run.malformed_rounds.0,
            run.malformed_rounds.1,
            run.rss_kib.0,
            run.rss_kib.1
        )
    }
}

/// Checks a response's status and headers against `target`, then its body against `expected`
/// (empty for HEAD); returns the number of body bytes.
async fn check(
    response: reqwest::Response,
    target: &Target,
    status: u16,
    content_range: Option<String>,
    expected: &[u8],
    head: bool,
) -> Result<u64, String> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut problems = String::new();
    if response.status().as_u16() != status {
        let _ = write!(problems, "status {} (not {status}); ", response.status());
    }
    if header("docker-content-digest").as_deref() != Some(&target.digest) {
        let _ = write!(
            problems,
            "Docker-Content-Digest {:?}; ",
            header("docker-content-digest")
        );
    }
    if header("content-type").as_deref() != Some(&target.media_type) {
        let _ = write!(problems, "Content-Type {:?}; ", header("content-type"));
    }
    if header("content-length") != Some(expected.len().to_string()) {
        let _ = write!(problems, "Content-Length {:?}; ", header("content-length"));
    }
    if header("content-range") != content_range {
        let _ = write!(
            problems,
            "Content-Range {:?} (not {content_range:?}); ",
            header("content-range")
        );
    }
    let body = response.bytes().await.map_err(|e| format!("body: {e}"))?;
    let want: &[u8] = if head { &[] } else { expected };
    if body.as_ref() != want {
        let _ = write!(
            problems,
            "the body ({} bytes) differs from the stored bytes ({}); ",
            body.len(),
            want.len()
        );
    }
    if problems.is_empty() {
        Ok(body.len() as u64)
    } else {
        Err(problems)
    }
}

/// Sends the request that `random` chooses and checks its answer.
async fn one_request(
    client: &reqwest::Client,
    base: &str,
    fixture: &Fixture,
    random: u64,
    tally: &Tally,
) {
    let (position, kind) = Kind::pick(random);
    tally.per_kind[position].fetch_add(1, Ordering::Relaxed);
    // Independent numbers for the choices within a kind.
    let (r1, r2) = (mix(random ^ 1), mix(random ^ 2));
    let (target, head, range) = match kind {
        Kind::TagGet => (pick(&fixture.by_tag, r1), false, None),
        Kind::DigestGet => (pick(&fixture.by_digest, r1), false, None),
        Kind::ManifestHead if r2 % 2 == 0 => (pick(&fixture.by_tag, r1), true, None),
        Kind::ManifestHead => (pick(&fixture.by_digest, r1), true, None),
        Kind::BlobHead => (pick(&fixture.blobs, r1), true, None),
        Kind::BlobGet => (pick(&fixture.blobs, r1), false, None),
        Kind::Mirror => (pick(&fixture.mirror, r1), false, None),
        Kind::BlobRange => {
            let target = pick(&fixture.blobs, r1);
            let size = target.body.len() as u64;
            // Up to 64 KiB: a bounded range (`a-b`, b possibly past the end), a suffix
            // (`-n`) or an open end (`a-`) near the end.
            let most = size.min(64 << 10);
            let (header, first, last) = match r2 % 3 {
                0 => {
                    let first = mix(r2) % size;
                    let last = first + mix(r2 ^ 3) % most;
                    (format!("bytes={first}-{last}"), first, last.min(size - 1))
                }
                1 => {
                    let n = 1 + mix(r2) % most;
                    (format!("bytes=-{n}"), size - n, size - 1)
                }
                _ => {
                    let first = size - 1 - mix(r2) % most;
                    (format!("bytes={first}-"), first, size - 1)
                }
            };
            (target, false, Some((header, first, last)))
        }
    };
    let url = format!("{base}{}", target.path);
    let mut request = if head {
        client.head(&url)
    } else {
        client.get(&url)
    };
    if matches!(kind, Kind::TagGet | Kind::ManifestHead | Kind::Mirror) {
        request = request.header("accept", ACCEPT_MANIFESTS);
    }
    let (status, content_range, expected) = match &range {
        Some((header, first, last)) => {
            request = request.header("range", header);
            let size = target.body.len();
            (
                206,
                Some(format!("bytes {first}-{last}/{size}")),
                &target.body[*first as usize..=*last as usize],
            )
        }
        None => (200, None, &target.body[..]),
    };
    let what = format!(
        "{} {}{}",
        if head { "HEAD" } else { "GET" },
        target.path,
        range
            .as_ref()
            .map(|(h, _, _)| format!(" Range: {h}"))
            .unwrap_or_default()
    );
    let outcome = match request.send().await {
        Ok(response) => check(response, target, status, content_range, expected, head).await,
        Err(err) => Err(format!("request failed: {err}")),
    };
    match outcome {
        Ok(bytes) => {
            tally.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        Err(problem) => tally.fail(format!("{what}: {problem}")),
    }
}

/// Requests `from..to` of every client, the clients running concurrently.
async fn load(base: Arc<str>, fixture: Arc<Fixture>, tally: Arc<Tally>, (from, to): (u64, u64)) {
    let mut clients = Vec::new();
    for client_number in 0..CLIENTS {
        let (base, fixture, tally) = (Arc::clone(&base), Arc::clone(&fixture), Arc::clone(&tally));
        clients.push(tokio::spawn(async move {
            // A client of its own (one connection, kept alive), like one node pulling.
            let client = reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(120))
                .build()
                .expect("client");
            for number in from..to {
                let random = mix((client_number << 32) | number);
                one_request(&client, &base, &fixture, random, &tally).await;
            }
        }));
    }
    for client in clients {
        client.await.expect("a client task panicked");
    }
}

/// The resident memory of process `pid`, in KiB (`VmRSS` of `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status:\n{status}"))
}

/// A raw request that must get a 4xx: what it is, the bytes sent, and the exact status.
type Malformed = (&'static str, Vec<u8>, u16);

/// A malformed request before it is written out: what it is, method, request target, extra
/// header lines, and the exact status expected.
type Case = (&'static str, &'static str, String, &'static str, u16);

/// The malformed requests, as raw bytes (an HTTP client library would normalise `..` or refuse
/// to send some of them).
fn malformed_requests(fixture: &Fixture) -> Vec<Malformed> {
    let layer = fixture
        .blobs
        .iter()
        .max_by_key(|b| b.body.len())
        .expect("a blob");
    let hex = layer.digest.trim_start_matches("sha256:");
    let app = "/v2/docker.io/library/app";
    let mut requests: Vec<Malformed> = grammar_cases(app, hex)
        .into_iter()
        .chain(protocol_cases(app, hex))
        .map(|(what, method, target, headers, status)| {
            let request = format!(
                "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\
                 Connection: close\r\n{headers}\r\n"
            );
            (what, request.into_bytes(), status)
        })
        .collect();
    requests.push(("not HTTP", b"HELLO THERE\r\n\r\n".to_vec(), 400));
    requests
}

/// Names, digests, tags and queries outside their grammars, and paths trying to leave the store.
fn grammar_cases(app: &str, hex: &str) -> Vec<Case> {
    vec![
        (
            "short digest",
            "GET",
            format!("{app}/blobs/sha256:abc"),
            "",
            400,
        ),
        (
            "uppercase digest",
            "GET",
            format!("{app}/manifests/sha256:{}", hex.to_uppercase()),
            "",
            400,
        ),
        (
            "unknown blob",
            "GET",
            format!("{app}/blobs/sha256:{}", "0".repeat(64)),
            "",
            404,
        ),
        (
            "`..` as the name",
            "GET",
            format!("/v2/../blobs/sha256:{hex}"),
            "",
            400,
        ),
        (
            "`..` out of the blobs",
            "GET",
            format!("{app}/blobs/../../../oci-layout"),
            "",
            404,
        ),
        (
            "encoded `..` as a tag",
            "GET",
            format!("{app}/manifests/..%2F..%2Findex.json"),
            "",
            404,
        ),
        (
            "uppercase name",
            "GET",
            "/v2/Docker.io/library/app/manifests/1".into(),
            "",
            400,
        ),
        (
            "`ns` not a host",
            "GET",
            "/v2/library/app/manifests/1?ns=bad_host".into(),
            "",
            400,
        ),
        (
            "query not UTF-8",
            "GET",
            "/v2/library/app/manifests/1?ns=%ff".into(),
            "",
            400,
        ),
    ]
}

/// Ranges that cannot be satisfied, methods a read-only registry refuses, oversized tags.
fn protocol_cases(app: &str, hex: &str) -> Vec<Case> {
    let blob = format!("{app}/blobs/sha256:{hex}");
    let long_tag = |len: usize| format!("{app}/manifests/{}", "a".repeat(len));
    vec![
        (
            "range past the end",
            "GET",
            blob.clone(),
            "Range: bytes=2000000-\r\n",
            416,
        ),
        (
            "empty suffix range",
            "GET",
            blob.clone(),
            "Range: bytes=-0\r\n",
            416,
        ),
        ("DELETE a blob", "DELETE", blob.clone(), "", 405),
        ("PUT a blob", "PUT", blob.clone(), "", 405),
        ("PATCH a blob", "PATCH", blob.clone(), "", 405),
        ("unknown method on a blob", "BREW", blob, "", 405),
        ("tag of 129 characters", "GET", long_tag(129), "", 404),
        // Beyond what a URI may be (64 KiB): refused by the HTTP layer.
        ("tag of 70 000 characters", "GET", long_tag(70_000), "", 414),
    ]
}

/// Sends one raw request and returns the status of the answer.
fn raw_status(port: u16, request: &[u8]) -> Result<u16, String> {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    // The server may answer (and close) before it read a long request: a failed write is
    // not the outcome, the answer is.
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    // A reset after the answer arrived is fine too; what was read is what counts.
    let _ = stream.read_to_end(&mut answer);
    let head = String::from_utf8_lossy(&answer[..answer.len().min(64)]).into_owned();
    head.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no HTTP answer: {head:?}"))
}

/// Sends every malformed request once; returns the failures.
fn malformed_round(port: u16, requests: &[Malformed]) -> Vec<String> {
    let mut failures = Vec::new();
    for (what, request, expected) in requests {
        match raw_status(port, request) {
            Ok(status) if status == *expected && (400..500).contains(&status) => {}
            Ok(status) => failures.push(format!("{what}: status {status}, not {expected}")),
            Err(err) => failures.push(format!("{what}: {err}")),
        }
    }
    failures
}

/// `kk-install registry serve` over `store` on a free loopback port, killed by its PID when
/// dropped.
struct Server {
    process: KillOnDrop,
    port: u16,
    /// Its stderr: the access log (one line per request) goes to a file, since a pipe nobody
    /// reads would block the server once full.
    log: PathBuf,
}

impl Server {
    fn start(store: &Path, log: PathBuf) -> Self {
        let port = free_port();
        let process = Command::new(binary("kk-install"))
            .args(["registry", "serve", "--store"])
            .arg(store)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("kk-install registry serve");
        Self {
            process: KillOnDrop(process),
            port,
            log,
        }
    }

    fn pid(&self) -> u32 {
        self.process.0.id()
    }

    /// Panics, with the server's log, if it is no longer running.
    fn assert_running(&mut self) {
        let status = self.process.0.try_wait().expect("server status");
        assert!(
            status.is_none(),
            "the registry exited ({status:?}); its log:\n{}",
            fs::read_to_string(&self.log).unwrap_or_default()
        );
    }
}

/// Until `GET /v2/` answers 200, for at most ten seconds.
async fn wait_until_listening(base: &str) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    for _ in 0..100 {
        if let Ok(response) = client.get(format!("{base}/v2/")).send().await
            && response.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the registry does not answer on {base}/v2/ after 10 s");
}

/// What a full run measured besides the tally.
#[derive(Debug)]
struct Run {
    /// The server's `VmRSS` after the warm-up and at the end, in KiB.
    rss_kib: (u64, u64),
    /// Rounds of the malformed-request table sent beside the load, and its length.
    malformed_rounds: (u64, usize),
    /// Malformed requests not answered with their 4xx.
    malformed_failures: Vec<String>,
}

/// The warm-up, a memory sample, the rest of the load with the malformed requests beside it,
/// and a second sample.
async fn run(server: &Server, fixture: &Arc<Fixture>, tally: &Arc<Tally>) -> Run {
    let base: Arc<str> = format!("http://127.0.0.1:{}", server.port).into();
    wait_until_listening(&base).await;
    load(
        Arc::clone(&base),
        Arc::clone(fixture),
        Arc::clone(tally),
        (0, WARM_UP),
    )
    .await;
    let before = rss_kib(server.pid());
    let stop = Arc::new(AtomicBool::new(false));
    let requests = malformed_requests(fixture);
    let table = requests.len();
    let malformed = {
        let (stop, port) = (Arc::clone(&stop), server.port);
        std::thread::spawn(move || {
            let (mut rounds, mut failures) = (0_u64, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                failures.extend(malformed_round(port, &requests));
                rounds += 1;
            }
            (rounds, failures)
        })
    };
    load(
        base,
        Arc::clone(fixture),
        Arc::clone(tally),
        (WARM_UP, REQUESTS),
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let (rounds, malformed_failures) = malformed.join().expect("malformed-request thread");
    Run {
        rss_kib: (before, rss_kib(server.pid())),
        malformed_rounds: (rounds, table),
        malformed_failures,
    }
}

mod lab {
    use super::{
        Arc, CLIENTS, Fixture, Ordering, PoisonError, REQUESTS, RSS_GROWTH_LIMIT_KIB, Server,
        Tally, fixture, malformed_requests, malformed_round, run, unpacked_store,
    };

    #[test]
    fn the_registry_answers_64_000_mixed_requests_correctly_with_flat_memory() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = unpacked_store(tmp.path());
        let fixture: Arc<Fixture> = Arc::new(fixture(&store));
        let mut server = Server::start(&store, tmp.path().join("registry.log"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let tally = Arc::new(Tally::default());
        let started = std::time::Instant::now();
        let run = runtime.block_on(run(&server, &fixture, &tally));
        eprintln!("{}", tally.summary(&run, started.elapsed()));

        assert_eq!(tally.total(), CLIENTS * REQUESTS);
        let messages = tally
            .messages
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert!(
            messages.is_empty(),
            "{} failed requests; the first {}:\n{}",
            tally.errors.load(Ordering::Relaxed),
            messages.len(),
            messages.join("\n")
        );
        assert!(
            run.malformed_rounds.0 > 0 && run.malformed_failures.is_empty(),
            "malformed requests under load:\n{}",
            run.malformed_failures.join("\n")
        );
        // Once more with the server idle; and it still runs.
        let failures = malformed_round(server.port, &malformed_requests(&fixture));
        assert!(
            failures.is_empty(),
            "malformed requests:\n{}",
            failures.join("\n")
        );
        server.assert_running();
        let (before, after) = run.rss_kib;
        assert!(
            after.saturating_sub(before) < RSS_GROWTH_LIMIT_KIB,
            "the registry's resident memory grew from {before} KiB to {after} KiB under load"
        );
    }
}

//! Builds against a tiny Debian repository made at test time and served by the test server:
//! real `Packages`, Release and `InRelease` (clearsigned with a key made by `pgp` here), fake
//! `.deb` bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bundle_spec::read::Bundle;
use bundle_spec::{ArtifactKind, Sha256Digest};
use pgp::composed::{
    ArmorOptions, CleartextSignedMessage, EncryptionCaps, KeyType, SecretKeyParamsBuilder,
    SignedPublicKey, SignedSecretKey,
};
use pgp::ser::Serialize as _;
use pgp::types::{KeyDetails as _, Password};
use rand::SeedableRng as _;
use rand::rngs::StdRng;

use crate::build::{BuildError, BuildOptions, BuildReport, build};
use crate::cache::Cache;
use crate::fetch::test_server::{Reply, TestServer};
use crate::progress::Progress;

/// One package of the test repository.
struct Deb {
    name: &'static str,
    version: &'static str,
    depends: &'static str,
    priority: &'static str,
}

const DEBS: &[Deb] = &[
    Deb {
        name: "socat",
        version: "1.7.4.4-2",
        depends: "libc6 (>= 2.34), libwrap0 (>= 7.6)",
        priority: "optional",
    },
    Deb {
        name: "libwrap0",
        version: "7.6.q-32",
        depends: "libc6 (>= 2.33)",
        priority: "optional",
    },
    // Every installation has it (`Priority: required`): never bundled.
    Deb {
        name: "libc6",
        version: "2.36-9",
        depends: "",
        priority: "required",
    },
    Deb {
        name: "broken",
        version: "1.0-1",
        depends: "libmissing (>= 2)",
        priority: "optional",
    },
];

/// The fake bytes of a `.deb`.
fn deb_bytes(deb: &Deb) -> Vec<u8> {
    format!("!<arch>\nfake deb {} {}\n", deb.name, deb.version).into_bytes()
}

fn pool_path(deb: &Deb) -> String {
    format!(
        "pool/main/{}/{}/{}_{}_amd64.deb",
        &deb.name[..1],
        deb.name,
        deb.name,
        deb.version
    )
}

fn packages_index() -> String {
    let mut text = String::new();
    for deb in DEBS {
        let bytes = deb_bytes(deb);
        let _ = write!(
            text,
            "Package: {}\nVersion: {}\nArchitecture: amd64\nPriority: {}\n",
            deb.name, deb.version, deb.priority
        );
        if !deb.depends.is_empty() {
            let _ = writeln!(text, "Depends: {}", deb.depends);
        }
        let _ = write!(
            text,
            "Filename: {}\nSize: {}\nSHA256: {}\nDescription: test package\n continued line\n\n",
            pool_path(deb),
            bytes.len(),
            Sha256Digest::of(&bytes).hex()
        );
    }
    text
}

/// `packages` compressed with gzip, as repositories serve `Packages.gz`.
fn gzip(packages: &str) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(packages.as_bytes()).unwrap();
    encoder.finish().unwrap()
}

/// A Release listing the index plain and gzipped, as Debian's do.
fn release(packages: &str) -> String {
    let gzipped = gzip(packages);
    format!(
        "Origin: kk test\nSuite: stable\nCodename: test\nArchitectures: amd64\nComponents: main\n\
         SHA256:\n {} {} main/binary-amd64/Packages\n {} {} main/binary-amd64/Packages.gz\n",
        Sha256Digest::of(packages.as_bytes()).hex(),
        packages.len(),
        Sha256Digest::of(&gzipped).hex(),
        gzipped.len()
    )
}

fn key(seed: u64) -> SignedSecretKey {
    let mut params = SecretKeyParamsBuilder::default();
    params
        .key_type(KeyType::Ed25519Legacy)
        .can_certify(true)
        .can_sign(true)
        .can_encrypt(EncryptionCaps::None)
        .primary_user_id(format!("kk repo {seed} <repo@kk.invalid>"));
    let mut rng = StdRng::seed_from_u64(seed);
    params.build().unwrap().generate(&mut rng).unwrap()
}

fn clearsign(text: &str, key: &SignedSecretKey) -> String {
    let mut rng = StdRng::seed_from_u64(7);
    CleartextSignedMessage::sign(&mut rng, text, &key.primary_key, &Password::empty())
        .unwrap()
        .to_armored_string(ArmorOptions::default())
        .unwrap()
}

fn public_keyring(key: &SignedSecretKey) -> Vec<u8> {
    SignedPublicKey::from(key.clone()).to_bytes().unwrap()
}

/// The repository's files by path below the server's root, changeable between builds.
type Files = Arc<Mutex<BTreeMap<String, Vec<u8>>>>;

/// A served repository, a manifest beside its keyring, and a cache.
struct Lab {
    server: TestServer,
    files: Files,
    signer: SignedSecretKey,
    dir: tempfile::TempDir,
}

impl Lab {
    async fn start() -> Self {
        let signer = key(1);
        let files: Files = Arc::default();
        let repository = Arc::clone(&files);
        let server = TestServer::start(move |request, _| {
            match repository.lock().unwrap().get(&request.path) {
                Some(body) => Reply::file(body, request),
                None => Reply::status(404),
            }
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("repo.gpg"), public_keyring(&signer)).unwrap();
        let lab = Self {
            server,
            files,
            signer,
            dir,
        };
        lab.publish(&packages_index(), deb_bytes);
        lab
    }

    /// Serves `packages` as the index, signed, and each `.deb` with `bytes`.
    fn publish(&self, packages: &str, bytes: impl Fn(&Deb) -> Vec<u8>) {
        let mut files = self.files.lock().unwrap();
        files.clear();
        let release = release(packages);
        files.insert(
            "/debian/dists/stable/InRelease".into(),
            clearsign(&release, &self.signer).into_bytes(),
        );
        files.insert(
            "/debian/dists/stable/main/binary-amd64/Packages".into(),
            packages.as_bytes().to_vec(),
        );
        files.insert(
            "/debian/dists/stable/main/binary-amd64/Packages.gz".into(),
            gzip(packages),
        );
        for deb in DEBS {
            files.insert(format!("/debian/{}", pool_path(deb)), bytes(deb));
        }
    }

    fn repository(&self) -> String {
        format!("{} stable", self.server.url("/debian"))
    }

    /// Writes a manifest asking for `packages` and returns its path.
    fn manifest(&self, packages: &str) -> PathBuf {
        let text = format!(
            "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: pkgs}}\nspec:\n  \
             osPackages:\n    - distro: debian-12\n      repository: {{url: \"{}\", suite: stable, keyring: repo.gpg}}\n      \
             packages: [{packages}]\n",
            self.server.url("/debian")
        );
        let path = self.dir.path().join("pkgs.yaml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn options(&self, manifest: &Path, locked: bool) -> BuildOptions {
        BuildOptions {
            manifest: manifest.to_path_buf(),
            output: self.output(),
            cache_dir: self.dir.path().join("cache"),
            jobs: 2,
            locked,
            lock_path: None,
            split_size: None,
            signing_key: None,
            platforms: Vec::new(),
            allow_missing_platforms: false,
            allow_missing_chart_images: false,
            level: 3,
            since: None,
            kubekey: crate::kubekey::Options::default(),
        }
    }

    fn output(&self) -> PathBuf {
        self.dir.path().join("bundle.tar.zst")
    }

    async fn build(&self, packages: &str, locked: bool) -> Result<BuildReport, BuildError> {
        let manifest = self.manifest(packages);
        build(&self.options(&manifest, locked), &Progress::hidden()).await
    }
}

/// The error and its `#[source]` chain, as the CLI prints them.
fn chain(error: &BuildError) -> String {
    std::iter::successors(Some(error as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[tokio::test]
async fn a_build_carries_the_closure_without_what_every_installation_has() {
    let lab = Lab::start().await;
    let report = lab.build("socat", false).await.unwrap();

    let packages: Vec<(&str, &str)> = report
        .artifacts
        .iter()
        .filter(|a| a.kind == ArtifactKind::Package)
        .map(|a| (a.name.as_str(), a.platform.as_deref().unwrap_or_default()))
        .collect();
    assert_eq!(
        packages,
        [("libwrap0", "linux/amd64"), ("socat", "linux/amd64")]
    );

    let bundle = Bundle::open_listed(&lab.output()).unwrap();
    let description = bundle.description();
    let [set] = description.packages.as_slice() else {
        panic!("one set: {:?}", description.packages);
    };
    assert_eq!(set.distro.to_string(), "debian-12");
    assert_eq!(set.arch, "amd64");
    assert_eq!(set.repository, lab.repository());
    assert_eq!(set.roots.len(), 1);
    assert_eq!(set.roots[0].name, "socat");
    assert_eq!(set.roots[0].reason, "manifest");
    let order: Vec<&str> = set.packages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(order, ["libwrap0", "socat"], "dependencies first");
    assert_eq!(
        set.packages[1].reference,
        "kk.internal/packages/debian-12/amd64/socat:1.7.4.4-2"
    );
    assert_eq!(set.packages[1].filename, "socat_1.7.4.4-2_amd64.deb");

    let lock = &description.lock.packages;
    assert_eq!(lock.len(), 2);
    assert_eq!(
        lock[1].url,
        lab.server
            .url("/debian/pool/main/s/socat/socat_1.7.4.4-2_amd64.deb")
    );
    assert_eq!(lock[1].digest, Sha256Digest::of(&deb_bytes(&DEBS[0])));
    let lock_file = std::fs::read_to_string(lab.dir.path().join("pkgs.lock.yaml")).unwrap();
    assert!(
        lock_file.contains("socat_1.7.4.4-2_amd64.deb"),
        "{lock_file}"
    );

    // inspect (text and json) and the SBOM show them.
    let text = bundle_spec::inspect::inspect_text(&lab.output()).unwrap();
    let heading = format!(
        "packages  debian-12 amd64 from {}: 2 packages,",
        lab.repository()
    );
    assert!(text.contains(&heading), "{text}");
    assert!(
        text.contains("  roots   socat (manifest)\n  libwrap0 7.6.q-32\n  socat 1.7.4.4-2\n"),
        "{text}"
    );
    let json = bundle_spec::inspect::inspect_json(&lab.output()).unwrap();
    assert_eq!(json["packages"][0]["packages"][1]["name"], "socat");
    let sbom = bundle_spec::inspect::inspect_sbom(&lab.output()).unwrap();
    let sbom = String::from_utf8(sbom).unwrap();
    assert!(
        sbom.contains("pkg:deb/debian/socat@1.7.4.4-2?arch=amd64&distro=debian-12"),
        "{sbom}"
    );

    // The compressed index is preferred; the plain one is never fetched.
    let paths: Vec<String> = lab.server.requests().into_iter().map(|r| r.path).collect();
    let index = "/debian/dists/stable/main/binary-amd64/Packages";
    assert!(paths.contains(&format!("{index}.gz")), "{paths:?}");
    assert!(!paths.contains(&index.to_owned()), "{paths:?}");
}

#[test]
fn roots_are_the_manifests_then_the_catalogs_each_name_once() {
    use bundle_spec::manifest::Manifest;
    use bundle_spec::packages::{PackageScope, RootPackage};

    let manifest = Manifest::from_str_named(
        "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {name: r}\nspec:\n  \
         osPackages:\n    - {distro: debian-12, repository: {url: \"http://a.org\", suite: s, keyring: k}, packages: [vim, socat]}\n",
        "r.yaml",
    )
    .unwrap();
    let catalog = |name: &str| RootPackage {
        name: name.to_owned(),
        scope: PackageScope::Kubernetes,
        commands: vec![name.to_owned()],
        reason: "kubeadm".to_owned(),
    };
    let roots = super::roots(
        &manifest.spec().os_packages[0],
        &[catalog("conntrack"), catalog("socat")],
    );
    let shown: Vec<(&str, PackageScope, &str)> = roots
        .iter()
        .map(|root| (root.name.as_str(), root.scope, root.reason.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            ("vim", PackageScope::All, "manifest"),
            ("socat", PackageScope::All, "manifest"),
            ("conntrack", PackageScope::Kubernetes, "kubeadm"),
        ]
    );
}

#[tokio::test]
async fn a_locked_rebuild_gives_the_same_bundle_and_drift_fails() {
    let lab = Lab::start().await;
    let first = lab.build("socat", false).await.unwrap();
    let again = lab.build("socat", true).await.unwrap();
    assert_eq!(first.written.identity, again.written.identity);

    // The repository moves on: socat has a new version.
    let newer = packages_index().replace("1.7.4.4-2", "1.7.4.4-3");
    lab.publish(&newer, deb_bytes);
    let error = lab.build("socat", true).await.unwrap_err();
    let message = chain(&error);
    assert!(
        message.contains("resolves to `socat 1.7.4.4-3`")
            && message.contains("but the lock has `socat 1.7.4.4-2`"),
        "{message}"
    );
}

#[tokio::test]
async fn a_signature_by_another_key_fails_naming_keyring_and_repository() {
    let lab = Lab::start().await;
    let other = key(2);
    std::fs::write(lab.dir.path().join("repo.gpg"), public_keyring(&other)).unwrap();
    let error = lab.build("socat", false).await.unwrap_err();
    let message = chain(&error);
    let issuer = hex::encode_upper(lab.signer.primary_key.fingerprint().as_bytes());
    for part in [
        lab.repository(),
        "repo.gpg".to_owned(),
        "does not verify".to_owned(),
        issuer,
    ] {
        assert!(message.contains(&part), "`{part}` not in: {message}");
    }
    assert!(!lab.output().exists());
}

#[tokio::test]
async fn a_deb_whose_bytes_differ_from_the_index_fails_and_is_not_kept() {
    let lab = Lab::start().await;
    // The index (signed) promises the real bytes; the pool serves others for socat.
    lab.publish(&packages_index(), |deb| {
        let mut bytes = deb_bytes(deb);
        if deb.name == "socat" {
            bytes[0] ^= 1;
        }
        bytes
    });
    let error = lab.build("socat", false).await.unwrap_err();
    let message = chain(&error);
    let expected = Sha256Digest::of(&deb_bytes(&DEBS[0]));
    let mut served = deb_bytes(&DEBS[0]);
    served[0] ^= 1;
    for part in [
        lab.repository(),
        lab.server
            .url("/debian/pool/main/s/socat/socat_1.7.4.4-2_amd64.deb"),
        expected.to_string(),
        Sha256Digest::of(&served).to_string(),
    ] {
        assert!(message.contains(&part), "`{part}` not in: {message}");
    }
    assert!(!lab.output().exists());
    let cache = Cache::open(&lab.dir.path().join("cache")).unwrap();
    assert!(cache.get(&expected).unwrap().is_none());
    assert!(!cache.blob_path(&expected).exists());
}

#[tokio::test]
async fn an_unsatisfiable_dependency_names_package_dependency_and_repository() {
    let lab = Lab::start().await;
    let error = lab.build("broken", false).await.unwrap_err();
    let message = chain(&error);
    for part in [
        "`broken`".to_owned(),
        "`libmissing (>= 2)`".to_owned(),
        lab.repository(),
    ] {
        assert!(message.contains(&part), "`{part}` not in: {message}");
    }
    assert!(!lab.output().exists());
}

#[tokio::test]
async fn an_unknown_package_names_it_and_the_repository() {
    let lab = Lab::start().await;
    let error = lab.build("sokat", false).await.unwrap_err();
    let message = chain(&error);
    assert!(
        message.contains(&format!(
            "repository `{}` has no package `sokat`",
            lab.repository()
        )),
        "{message}"
    );
}

#[tokio::test]
async fn file_mirrors_serve_the_repository_and_the_lock_keeps_its_url() {
    let lab = Lab::start().await;
    // The manifest names an upstream host; `fileMirrors` sends every request to the lab.
    let text = format!(
        "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {{name: pkgs}}\nspec:\n  \
         fileMirrors: {{repo.kk.invalid: \"{}\"}}\n  \
         osPackages:\n    - distro: debian-12\n      repository: {{url: \"http://repo.kk.invalid/debian\", suite: stable, keyring: repo.gpg}}\n      \
         packages: [socat]\n",
        lab.server.url("")
    );
    let manifest = lab.dir.path().join("pkgs.yaml");
    std::fs::write(&manifest, text).unwrap();
    build(&lab.options(&manifest, false), &Progress::hidden())
        .await
        .unwrap();
    let bundle = Bundle::open_listed(&lab.output()).unwrap();
    let description = bundle.description();
    assert_eq!(
        description.packages[0].repository,
        "http://repo.kk.invalid/debian stable"
    );
    assert_eq!(
        description.lock.packages[1].url,
        "http://repo.kk.invalid/debian/pool/main/s/socat/socat_1.7.4.4-2_amd64.deb"
    );
}

/// `build --sign` embeds the signature and writes the same bytes beside the bundle; an unsigned
/// rebuild to the same name removes the stale one. (Any build would do: this harness builds
/// without network.)
#[tokio::test]
async fn a_signed_build_writes_its_signature_inside_and_beside_the_bundle() {
    let lab = Lab::start().await;
    let manifest = lab.manifest("socat");
    let key = p256::ecdsa::SigningKey::from_slice(&[9; 32]).unwrap();
    let options = BuildOptions {
        signing_key: Some(key.clone()),
        ..lab.options(&manifest, false)
    };
    let report = build(&options, &Progress::hidden()).await.unwrap();
    let sidecar = bundle_spec::sign::verify::sidecar_path(&lab.output());
    let mut bundle = Bundle::open(&lab.output()).unwrap();
    let embedded = bundle.signature().unwrap().unwrap();
    assert_eq!(std::fs::read(&sidecar).unwrap(), embedded);
    assert_eq!(report.written.signature.as_ref(), Some(&embedded));
    let list = bundle.checksums().to_bytes();
    bundle_spec::sign::verify::verify(&embedded, &list, &[*key.verifying_key()]).unwrap();

    build(&lab.options(&manifest, false), &Progress::hidden())
        .await
        .unwrap();
    assert!(
        !sidecar.exists(),
        "the unsigned rebuild left a stale signature"
    );
}

//! Both binaries answer `--version` and `--help` like any operator tool, and say what is wrong when used
//! wrongly.

use std::fs;
use std::process::Command;

use bundle_spec::test_support::{TestImage, write_images};

use crate::install_bundle::{kk_install, layer};
use crate::support::{BINARIES, VERSION, binary, describe, run, run_failing, run_ok};

/// Words each binary's about text must contain, so `--help` says what the tool is.
fn about_words(name: &str) -> &'static [&'static str] {
    match name {
        "kk-bundle" => &["offline bundle", "manifest"],
        "kk-install" => &["bundle", "airgap"],
        "kk-node" => &["node agent", "registry"],
        other => panic!("unknown binary {other}"),
    }
}

#[test]
fn version_is_name_and_workspace_version() {
    for name in BINARIES {
        let (stdout, _) = run_ok(Command::new(binary(name)).arg("--version"));
        assert_eq!(stdout, format!("{name} {VERSION}\n"), "{name} --version");
        // `-V` is the short form.
        let (short, _) = run_ok(Command::new(binary(name)).arg("-V"));
        assert_eq!(short, stdout, "{name} -V must match --version");
    }
}

#[test]
fn help_shows_usage_about_and_options() {
    for name in BINARIES {
        // `--help` is the long form, `-h` the summary; both say what the tool is.
        for flag in ["--help", "-h"] {
            let mut cmd = Command::new(binary(name));
            cmd.arg(flag);
            let (stdout, out) = run_ok(&mut cmd);
            let context = describe(&cmd, &out);
            assert!(
                stdout.contains(&format!("Usage: {name}")),
                "no usage line:\n{context}"
            );
            for word in about_words(name) {
                assert!(
                    stdout.contains(word),
                    "about text lacks {word:?}:\n{context}"
                );
            }
            for option in ["-h, --help", "-V, --version"] {
                assert!(stdout.contains(option), "{option} not listed:\n{context}");
            }
        }
    }
}

#[test]
fn without_arguments_usage_goes_to_stderr_and_the_exit_code_is_2() {
    for name in BINARIES {
        let mut cmd = Command::new(binary(name));
        let out = run(&mut cmd);
        let context = describe(&cmd, &out);
        assert_eq!(out.status.code(), Some(2), "{context}");
        assert!(out.stdout.is_empty(), "stdout must stay empty:\n{context}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("Usage: {name}")), "{context}");
    }
}

#[test]
fn unknown_option_is_rejected_by_name() {
    for name in BINARIES {
        let mut cmd = Command::new(binary(name));
        cmd.arg("--no-such-option");
        let out = run(&mut cmd);
        let context = describe(&cmd, &out);
        assert_eq!(out.status.code(), Some(2), "{context}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("unexpected argument '--no-such-option'"),
            "the error must name the option:\n{context}"
        );
    }
}

/// `inspect --sbom` of both binaries prints the bundle's SBOM as stored, read without unpacking:
/// an SPDX 2.3 document naming the bundle's image, which the SPDX project's validator accepts.
#[test]
fn inspect_sbom_prints_the_bundles_spdx_document() {
    let tmp = tempfile::tempdir().expect("tmp");
    let image = TestImage {
        reference: "docker.io/library/app:1",
        layers: &[&layer(1000, 3)],
    };
    let bundle = write_images(tmp.path(), "a", &[image], None).path;
    let (printed, _) = run_ok(
        Command::new(binary("kk-bundle"))
            .args(["inspect", "--sbom"])
            .arg(&bundle),
    );
    let (installer_printed, _) = run_ok(&mut kk_install(&["inspect", "--sbom"], &bundle));
    assert_eq!(
        installer_printed, printed,
        "both binaries print the same SBOM"
    );
    let sbom = printed.strip_suffix('\n').expect("a final newline");
    let doc: serde_json::Value = serde_json::from_str(sbom).expect("JSON");
    assert_eq!(doc["spdxVersion"], "SPDX-2.3");
    let image = doc["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["sourceInfo"] == "docker.io/library/app:1")
        .unwrap_or_else(|| panic!("the image is not listed:\n{doc:#}"));
    assert_eq!(image["name"], "docker.io/library/app");

    let path = tmp.path().join("sbom.spdx.json");
    fs::write(&path, sbom).expect("write");
    let mut validate = Command::new("pyspdxtools");
    validate.arg("-i").arg(&path);
    let out = validate.output().unwrap_or_else(|e| {
        panic!("cannot run `pyspdxtools` ({e}); scripts/test.sh installs it (`python3 -m pip install spdx-tools`)")
    });
    assert!(out.status.success(), "{}", describe(&validate, &out));
}

/// Output of a command with the test's temporary directory replaced by `[TMP]`, for snapshots.
fn redacted(text: &str, tmp: &std::path::Path) -> String {
    text.replace(&tmp.display().to_string(), "[TMP]")
}

/// A one-image bundle both binaries inspect.
fn small_bundle(dir: &std::path::Path) -> std::path::PathBuf {
    let image = TestImage {
        reference: "docker.io/library/app:1",
        layers: &[&layer(1000, 3)],
    };
    write_images(dir, "a", &[image], None).path
}

/// `inspect`'s text and JSON, the same from both binaries, pinned.
#[test]
fn inspect_text_and_json_snapshots() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = small_bundle(tmp.path());
    for (name, format) in [("text", "text"), ("json", "json")] {
        let (bundler, _) = run_ok(
            Command::new(binary("kk-bundle"))
                .args(["inspect", "--output", format])
                .arg(&bundle),
        );
        let (installer, _) = run_ok(&mut kk_install(&["inspect", "--output", format], &bundle));
        assert_eq!(installer, bundler, "both binaries inspect alike");
        insta::assert_snapshot!(format!("inspect_{name}"), redacted(&bundler, tmp.path()));
    }
}

/// The errors an operator meets first, pinned: a bad manifest, a bad inventory, a tampered bundle.
#[test]
fn error_message_snapshots() {
    let tmp = tempfile::tempdir().expect("tmp");
    let manifest = tmp.path().join("bad.yaml");
    fs::write(
        &manifest,
        "apiVersion: bundle.kk.io/v1alpha1\nkind: BundleManifest\nmetadata: {name: m}\nspec:\n  imagess: [docker.io/library/app:1]\n",
    )
    .expect("manifest");
    let bad_manifest = run_failing(
        Command::new(binary("kk-bundle"))
            .arg("build")
            .arg(&manifest)
            .arg("--cache")
            .arg(tmp.path().join("cache")),
    );
    insta::assert_snapshot!("error_bad_manifest", redacted(&bad_manifest, tmp.path()));

    let bundle = small_bundle(tmp.path());
    let inventory = tmp.path().join("inventory.yaml");
    fs::write(
        &inventory,
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hostz:\n    cp1: {internal_ipv4: 10.0.0.1}\n",
    )
    .expect("inventory");
    let bad_inventory = run_failing(kk_install(&["plan"], &bundle).arg("-i").arg(&inventory));
    insta::assert_snapshot!("error_bad_inventory", redacted(&bad_inventory, tmp.path()));

    let tampered = tmp.path().join("tampered.tar.zst");
    crate::install_bundle::tamper(&bundle, &tampered);
    let verify = run_failing(&mut kk_install(&["verify"], &tampered));
    insta::assert_snapshot!("error_tampered_bundle", redacted(&verify, tmp.path()));
}

/// `verify` and `unpack` print JSON with `--output json`, and take the bundle as their first
/// argument or with `--bundle`, in both binaries where they exist.
#[test]
fn verify_and_unpack_print_json_and_take_the_bundle_either_way() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = small_bundle(tmp.path());
    let json = |cmd: &mut Command| -> serde_json::Value {
        let (out, _) = run_ok(cmd);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
    };
    let verified = json(
        Command::new(binary("kk-install"))
            .args(["verify", "--output", "json"])
            .arg(&bundle),
    );
    assert_eq!(verified["members"], 8, "{verified:#}");
    assert!(
        verified["identity"]
            .as_str()
            .is_some_and(|id| id.starts_with("sha256:")),
        "{verified:#}"
    );
    let store = tmp.path().join("store");
    let unpacked =
        json(kk_install(&["unpack", "--output", "json", "--store"], &bundle).arg(&store));
    assert_eq!(unpacked["identity"], verified["identity"], "{unpacked:#}");
    assert_eq!(unpacked["blobsPresent"], 0, "{unpacked:#}");
    assert!(unpacked["blobsWritten"].as_u64() > Some(0), "{unpacked:#}");
    let (flagged, _) = run_ok(
        Command::new(binary("kk-bundle"))
            .args(["inspect", "--bundle"])
            .arg(&bundle),
    );
    let (positional, _) = run_ok(
        Command::new(binary("kk-bundle"))
            .arg("inspect")
            .arg(&bundle),
    );
    assert_eq!(flagged, positional);
}

/// An inventory of one node reached over SSH with `key` at an address where nothing listens.
fn key_inventory(dir: &std::path::Path, key: &std::path::Path) -> std::path::PathBuf {
    let inventory = dir.join("inventory.yaml");
    fs::write(
        &inventory,
        format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {{name: t}}\nspec:\n  hosts:\n    n1:\n      connector: {{host: 127.0.0.1, port: 1, private_key: {}}}\n      internal_ipv4: 127.0.0.1\n  groups:\n    kube_control_plane: {{hosts: [n1]}}\n    etcd: {{hosts: [n1]}}\n",
            key.display()
        ),
    )
    .expect("inventory");
    inventory
}

/// `plan` refuses a private key file that is missing or open to others (OpenSSH would refuse
/// the latter), naming the file, its mode and the fix; it used to pass both.
#[test]
fn plan_refuses_a_missing_or_open_private_key() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = small_bundle(tmp.path());
    let key = tmp.path().join("id_ed25519");
    let inventory = key_inventory(tmp.path(), &key);
    let plan = || {
        let mut cmd = Command::new(binary("kk-install"));
        cmd.arg("plan").arg(&bundle).arg("-i").arg(&inventory);
        cmd
    };
    let missing = run_failing(&mut plan());
    assert!(
        missing.contains(&format!("cannot read the private key `{}`", key.display())),
        "{missing}"
    );
    fs::write(&key, "not checked before the mode").expect("key");
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).expect("chmod");
    let open = run_failing(&mut plan());
    assert!(
        open.contains("has mode 0644") && open.contains(&format!("chmod 600 {}", key.display())),
        "{open}"
    );
    insta::assert_snapshot!("error_missing_key", redacted(&missing, tmp.path()));
    insta::assert_snapshot!("error_open_key", redacted(&open, tmp.path()));
}

/// `--resume` without a recorded install is refused before anything is created or any node is
/// reached, and does not claim to resume a file that does not exist.
#[test]
fn resume_without_a_recorded_install_is_refused_first() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = small_bundle(tmp.path());
    let key = tmp.path().join("id_ed25519");
    fs::write(&key, "key").expect("key");
    let inventory = key_inventory(tmp.path(), &key);
    let work = tmp.path().join("work");
    let mut cmd = Command::new(binary("kk-install"));
    cmd.arg("--bundle")
        .arg(&bundle)
        .arg("-i")
        .arg(&inventory)
        .arg("--resume")
        .arg("--work-dir")
        .arg(&work);
    let error = run_failing(&mut cmd);
    assert!(error.contains("no install is recorded"), "{error}");
    assert!(!error.contains("resuming"), "claims to resume: {error}");
    assert!(!work.exists(), "the work directory was created: {error}");
    insta::assert_snapshot!("error_resume_without_install", redacted(&error, tmp.path()));
}

/// `registry serve` on a busy port fails naming the address, and never says it serves.
#[test]
fn registry_serve_on_a_busy_port_names_the_address() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bundle = small_bundle(tmp.path());
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = busy.local_addr().expect("address");
    // `--bundle`, which kk-install has always taken here.
    let mut cmd = Command::new(binary("kk-install"));
    cmd.args(["registry", "serve", "--bundle"])
        .arg(&bundle)
        .arg("--store")
        .arg(tmp.path().join("store"))
        .arg("--listen")
        .arg(address.to_string());
    let out = run(&mut cmd);
    let context = describe(&cmd, &out);
    assert_eq!(out.status.code(), Some(1), "{context}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on `{address}`")),
        "the address is not named:\n{context}"
    );
    assert!(!stderr.contains("serving"), "says it serves:\n{context}");
    let port = address.port().to_string();
    insta::assert_snapshot!(
        "error_busy_port",
        stderr.replace(&format!(":{port}`"), ":[PORT]`")
    );
    drop(busy);
}

/// The README's first commands run as written on a fresh Debian machine, where the operator is
/// root and there is no `sudo`: neither they nor the scripts they start may call it.
#[test]
fn the_readmes_first_commands_run_as_root_without_sudo() {
    let root = crate::support::workspace_root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md");
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README begins with a sh block of commands");
    let commands: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(commands.len(), 2, "the two commands: {block}");
    for command in commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(
            words.first(),
            Some(&"bash"),
            "`{command}` must run as written"
        );
        let script = fs::read_to_string(root.join(words[1])).expect(words[1]);
        assert!(
            !script
                .lines()
                .any(|l| !l.trim_start().starts_with('#') && l.contains("sudo ")),
            "{} calls sudo",
            words[1]
        );
    }
}

/// `kk-bundle convert` of a KubeKey v3 manifest: the kk manifest on stdout, each part it does not
/// carry as a `warning: file:line:` on stderr.
#[test]
fn convert_prints_the_kk_manifest_and_warns_on_stderr() {
    let mut convert = Command::new(binary("kk-bundle"));
    convert
        .current_dir(crate::support::workspace_root())
        .args(["convert", "manifests/kubekey-v3/v1.28-docker.yaml"]);
    let (stdout, out) = run_ok(&mut convert);
    let stderr = String::from_utf8_lossy(&out.stderr);
    insta::assert_snapshot!("convert_kubekey", format!("{stdout}\n--- stderr\n{stderr}"));
}

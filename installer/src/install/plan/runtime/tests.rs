//! The judging of `containerd config dump` output. The dumps in `testdata/` were printed by the
//! real programs (Debian trixie's containerd 1.7.24, sid's 2.1.9: `containerd --config FILE
//! config dump`, no daemon) for kk's config with and without drop-ins; the temporary directory
//! they ran in is rewritten to `/etc/containerd`.

use super::*;

fn testdata(name: &str) -> String {
    let path = format!(
        "{}/src/install/plan/runtime/testdata/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn plan(version: &str) -> ContainerdPlan {
    ContainerdPlan::new(version, "registry.k8s.io/pause:3.10").expect("a version")
}

/// The drop-ins of a dump, by the names containerd saw them under.
fn drop_ins(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(path, fixture)| ((*path).to_owned(), testdata(fixture)))
        .collect()
}

#[test]
fn kks_own_config_passes_on_both_versions() {
    for (version, dump) in [
        ("1.7.24", "dump-1.7-kk.toml"),
        ("2.1.9", "dump-2.1-kk.toml"),
    ] {
        let findings = plan(version).judge(&testdata(dump)).expect("toml");
        assert_eq!(findings, Vec::new(), "{dump}");
    }
}

/// containerd's version, the dump, its drop-ins (path, text), the findings expected.
type Case<'a> = (&'a str, &'a str, &'a [(String, String)], &'a [&'a str]);

#[test]
fn each_overridden_setting_is_found_and_its_drop_in_named() {
    let v17 = drop_ins(&[(
        "/etc/containerd/conf.d/10-mirrors.toml",
        "dropin-1.7-10-mirrors.toml",
    )]);
    let v21 = drop_ins(&[
        (
            "/etc/containerd/conf.d/10-registry.toml",
            "dropin-2.1-10-registry.toml",
        ),
        (
            "/etc/containerd/conf.d/20-runtime.toml",
            "dropin-2.1-20-runtime.toml",
        ),
    ]);
    let replaces = "has its own `[plugins.\"io.containerd.grpc.v1.cri\"]` table, which replaces kk's whole table in containerd 1.x";
    let table: [Case<'_>; 2] = [
        (
            // containerd 1.x replaces the CRI plugin's whole table with the drop-in's: every
            // setting kk made is gone, not only the mirror the drop-in adds.
            "1.7.24",
            "dump-1.7-dropin-mirrors.toml",
            &v17,
            &[
                &format!(
                    "`plugins.\"io.containerd.grpc.v1.cri\".registry.config_path` is ``, kk expects `/etc/containerd/certs.d` (`/etc/containerd/conf.d/10-mirrors.toml` {replaces})"
                ),
                &format!(
                    "`plugins.\"io.containerd.grpc.v1.cri\".sandbox_image` is `registry.k8s.io/pause:3.8`, kk expects `registry.k8s.io/pause:3.10` (`/etc/containerd/conf.d/10-mirrors.toml` {replaces})"
                ),
                &format!(
                    "`plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options.SystemdCgroup` is `false`, kk expects `true` (`/etc/containerd/conf.d/10-mirrors.toml` {replaces})"
                ),
                "`plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors` is `docker.io`, kk expects `none` (`/etc/containerd/conf.d/10-mirrors.toml` sets `plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors` = `docker.io`)",
            ],
        ),
        (
            "2.1.9",
            "dump-2.1-dropins.toml",
            &v21,
            &[
                "`plugins.\"io.containerd.cri.v1.images\".registry.config_path` is `/etc/other/certs.d`, kk expects `/etc/containerd/certs.d` (`/etc/containerd/conf.d/10-registry.toml` sets `plugins.\"io.containerd.cri.v1.images\".registry.config_path` = `/etc/other/certs.d`)",
                "`plugins.\"io.containerd.cri.v1.images\".pinned_images.sandbox` is `other.example/pause:3.9`, kk expects `registry.k8s.io/pause:3.10` (`/etc/containerd/conf.d/20-runtime.toml` sets `plugins.\"io.containerd.cri.v1.images\".pinned_images.sandbox` = `other.example/pause:3.9`)",
                "`plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options.SystemdCgroup` is `false`, kk expects `true` (`/etc/containerd/conf.d/20-runtime.toml` sets `plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc.options.SystemdCgroup` = `false`)",
                "`plugins.\"io.containerd.cri.v1.images\".registry.mirrors` is `docker.io`, kk expects `none` (`/etc/containerd/conf.d/10-registry.toml` sets `plugins.\"io.containerd.cri.v1.images\".registry.mirrors` = `docker.io`)",
            ],
        ),
    ];
    for (version, dump, files, expected) in table {
        let expected_plan = plan(version);
        let mut findings = expected_plan.judge(&testdata(dump)).expect("toml");
        for finding in &mut findings {
            finding.attribute(expected_plan.major, files);
        }
        let lines: Vec<String> = findings.iter().map(ToString::to_string).collect();
        assert_eq!(lines, expected, "{dump}");
    }
}

#[test]
fn credentials_the_plan_writes_are_allowed_others_are_not() {
    let dump = "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'registry.k8s.io/pause:3.10'\n\
                [plugins.'io.containerd.cri.v1.images'.registry]\nconfig_path = '/etc/containerd/certs.d'\n\
                [plugins.'io.containerd.cri.v1.images'.registry.configs.'harbor.example'.auth]\nusername = 'u'\n\
                [plugins.'io.containerd.cri.v1.images'.registry.configs.'other.example'.tls]\ninsecure_skip_verify = true\n\
                [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nSystemdCgroup = true\n";
    let mut expected = plan("2.1.9");
    expected.auth_hosts = vec!["harbor.example".to_owned()];
    let findings = expected.judge(dump).expect("toml");
    let lines: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "`plugins.\"io.containerd.cri.v1.images\".registry.configs` is `other.example`, kk expects `only harbor.example`"
        ]
    );
}

#[test]
fn the_default_runtime_named_in_the_dump_is_the_one_judged() {
    let dump = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nsandbox_image = 'registry.k8s.io/pause:3.10'\n\
                [plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path = '/etc/containerd/certs.d'\n\
                [plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = 'crun'\n\
                [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\nSystemdCgroup = true\n";
    let findings = plan("1.7.24").judge(dump).expect("toml");
    assert_eq!(findings.len(), 1);
    assert_eq!(
        findings[0].key,
        "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.crun.options.SystemdCgroup"
    );
    assert_eq!(findings[0].found, "(not set)");
}

#[test]
fn a_dump_that_is_not_toml_is_an_error() {
    assert!(plan("1.7.24").judge("not = [toml").is_err());
}

#[test]
fn a_version_that_is_not_one_is_refused_by_the_plan() {
    let error = ContainerdPlan::new("latest", "registry.k8s.io/pause:3.10").expect_err("refused");
    assert!(error.to_string().contains("`latest`"), "{error}");
}

#[test]
fn imports_are_listed_and_each_drop_in_read_back() {
    let dump = testdata("dump-1.7-dropin-mirrors.toml");
    let listed = imports(&dump);
    assert_eq!(
        listed,
        [
            "/etc/containerd/config.toml",
            "/etc/containerd/conf.d/10-mirrors.toml"
        ]
    );
    let command = imports_command(&listed).expect("a command");
    assert!(
        command.starts_with(
            "for f in /etc/containerd/config.toml /etc/containerd/conf.d/10-mirrors.toml; do [ \"$f\" != /etc/containerd/config.toml ]"
        ),
        "{command}"
    );
    // A pattern a shell would do more with than expand is not run; a relative one is
    // containerd's config directory's.
    assert_eq!(imports_command(&["/etc/$(reboot)".to_owned()]), None);
    assert!(
        imports_command(&["conf.d/a.toml".to_owned()])
            .expect("relative")
            .contains(" /etc/containerd/conf.d/a.toml;")
    );
    let printed = "#### kk-import /etc/containerd/conf.d/a.toml\nversion = 2\n#### kk-import /etc/containerd/conf.d/b.toml\nversion = 3\n";
    assert_eq!(
        split_imports(printed),
        [
            (
                "/etc/containerd/conf.d/a.toml".to_owned(),
                "version = 2\n".to_owned()
            ),
            (
                "/etc/containerd/conf.d/b.toml".to_owned(),
                "version = 3\n".to_owned()
            ),
        ]
    );
}

#[test]
fn credentials_are_redacted_on_the_node_and_still_judged_by_host() {
    let mut dump = testdata("dump-1.7-kk.toml");
    dump.push_str(
        "\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"harbor.lab:8443\".auth]\n  \
         auth = \"a2s6czNjcmV0\"\n  identitytoken = \"t0ken\"\n  password = \"s3cret\"\n  username = \"kk\"\n",
    );
    let mut sed = std::process::Command::new("sh")
        .args(["-c", REDACT_SECRETS])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    std::io::Write::write_all(&mut sed.stdin.take().expect("stdin"), dump.as_bytes())
        .expect("write");
    let printed = String::from_utf8(sed.wait_with_output().expect("sed").stdout).expect("utf-8");
    for secret in ["s3cret", "t0ken", "a2s6czNjcmV0"] {
        assert!(!printed.contains(secret), "{secret} in {printed}");
    }
    assert!(printed.contains("username = \"kk\""), "{printed}");
    let mut allowed = plan("1.7.24");
    allowed.auth_hosts = vec!["harbor.lab:8443".to_owned()];
    assert_eq!(allowed.judge(&printed).expect("toml"), Vec::new());
    let findings = plan("1.7.24").judge(&printed).expect("toml");
    assert_eq!(findings.len(), 1, "{findings:?}");
}

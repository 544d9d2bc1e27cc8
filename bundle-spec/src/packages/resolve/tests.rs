use super::super::control::IndexEntry;
use super::*;
use crate::digest::Sha256Digest;

/// `name version [depends] [pre-depends] [provides]`.
fn record(name: &str, version: &str, depends: &str, pre: &str, provides: &str) -> PackageRecord {
    PackageRecord {
        name: name.to_owned(),
        version: version.to_owned(),
        architecture: "amd64".to_owned(),
        depends: depends.to_owned(),
        pre_depends: pre.to_owned(),
        provides: provides.to_owned(),
        multi_arch: String::new(),
        filename: format!("{name}_{version}_amd64.deb"),
        sha256: Sha256Digest::of(name.as_bytes()),
        size: 1,
        reference: String::new(),
    }
}

fn dep(name: &str, version: &str, depends: &str) -> PackageRecord {
    record(name, version, depends, "", "")
}

fn installed(packages: &[(&str, &str, &str)]) -> Installed {
    Installed {
        packages: packages
            .iter()
            .map(|(name, version, provides)| {
                let package = InstalledPackage {
                    version: (*version).to_owned(),
                    provides: (*provides).to_owned(),
                };
                ((*name).to_owned(), package)
            })
            .collect(),
    }
}

/// The names and versions to install, in order.
fn names(available: &[PackageRecord], resolution: &Resolution) -> Vec<String> {
    resolution
        .install
        .iter()
        .map(|&i| format!("{}={}", available[i].name, available[i].version))
        .collect()
}

struct Case {
    what: &'static str,
    available: Vec<PackageRecord>,
    roots: &'static [&'static str],
    installed: Installed,
    expected: &'static [&'static str],
}

/// Resolves each case twice: the install order as expected, and the same both times.
fn check(cases: Vec<Case>) {
    for case in cases {
        let resolution = resolve(&case.available, case.roots, &case.installed)
            .unwrap_or_else(|e| panic!("{}: {e}", case.what));
        let shown = names(&case.available, &resolution);
        assert_eq!(shown, case.expected, "{}", case.what);
        let again = resolve(&case.available, case.roots, &case.installed).unwrap();
        assert_eq!(again, resolution, "{}: deterministic", case.what);
    }
}

#[test]
fn closures_by_version_and_alternatives() {
    check(vec![
        Case {
            what: "dependencies first, versions chosen by relation",
            available: vec![
                dep("socat", "1.7", "libc6 (>= 2.34), libssl3 (>= 3.0)"),
                dep("libssl3", "2.9", ""),
                dep("libssl3", "3.0.11", "libc6"),
                dep("libssl3", "3.1~rc1", ""),
                dep("libc6", "2.36", ""),
            ],
            roots: &["socat"],
            installed: Installed::default(),
            expected: &["libc6=2.36", "libssl3=3.1~rc1", "socat=1.7"],
        },
        Case {
            what: "a dependency the installation satisfies adds nothing",
            available: vec![
                dep("socat", "1.7", "libc6 (>= 2.34)"),
                dep("libc6", "2.36", ""),
            ],
            roots: &["socat"],
            installed: installed(&[("libc6", "2.35", "")]),
            expected: &["socat=1.7"],
        },
        Case {
            what: "a root installed at any version is not reinstalled",
            available: vec![dep("socat", "1.8", ""), dep("ethtool", "6.1", "")],
            roots: &["socat", "ethtool"],
            installed: installed(&[("socat", "1.7", "")]),
            expected: &["ethtool=6.1"],
        },
        Case {
            what: "the first satisfiable alternative",
            available: vec![
                dep("a", "1", "missing | b (>= 2) | c"),
                dep("b", "1", ""),
                dep("c", "1", ""),
            ],
            roots: &["a"],
            installed: Installed::default(),
            expected: &["c=1", "a=1"],
        },
        Case {
            what: "an alternative already installed is preferred",
            available: vec![dep("a", "1", "b | c"), dep("b", "1", ""), dep("c", "1", "")],
            roots: &["a"],
            installed: installed(&[("c", "1", "")]),
            expected: &["a=1"],
        },
        Case {
            what: "an alternative already chosen is preferred",
            available: vec![
                dep("a", "1", "c"),
                dep("z", "1", "b | c"),
                dep("b", "1", ""),
                dep("c", "1", ""),
            ],
            roots: &["a", "z"],
            installed: Installed::default(),
            expected: &["c=1", "a=1", "z=1"],
        },
    ]);
}

#[test]
fn closures_by_virtual_packages_and_cycles() {
    check(vec![
        Case {
            what: "a virtual package by its provider",
            available: vec![
                dep("nfs-common", "2.6", "awk"),
                record("mawk", "1.3", "", "", "awk"),
                record("gawk", "5.2", "", "", "awk"),
            ],
            roots: &["nfs-common"],
            installed: Installed::default(),
            expected: &["gawk=5.2", "nfs-common=2.6"],
        },
        Case {
            what: "a virtual package an installed package provides",
            available: vec![dep("a", "1", "awk"), record("gawk", "5.2", "", "", "awk")],
            roots: &["a"],
            installed: installed(&[("mawk", "1.3", "awk")]),
            expected: &["a=1"],
        },
        Case {
            what: "a versioned dependency by a versioned provide only",
            available: vec![
                dep("a", "1", "foo (>= 1.2)"),
                record("plain", "9", "", "", "foo"),
                record("versioned", "1", "", "", "foo (= 1.2)"),
            ],
            roots: &["a"],
            installed: installed(&[("old", "1", "foo")]),
            expected: &["versioned=1", "a=1"],
        },
        Case {
            what: ":any and :native match by name",
            available: vec![
                dep("a", "1", "python3:any, perl:native"),
                dep("python3", "3.11", ""),
                dep("perl", "5.36", ""),
            ],
            roots: &["a"],
            installed: Installed::default(),
            expected: &["python3=3.11", "perl=5.36", "a=1"],
        },
        Case {
            what: "a cycle terminates, broken where it closes",
            available: vec![dep("a", "1", "b"), dep("b", "1", "a")],
            roots: &["a"],
            installed: Installed::default(),
            expected: &["b=1", "a=1"],
        },
        Case {
            what: "a cycle keeps Pre-Depends, breaking a Depends",
            available: vec![
                dep("r", "1", "b"),
                dep("b", "1", "a"),
                record("a", "1", "", "b", ""),
            ],
            roots: &["r"],
            installed: Installed::default(),
            expected: &["b=1", "a=1", "r=1"],
        },
        Case {
            what: "Pre-Depends are dependencies too",
            available: vec![record("a", "1", "", "b (>= 2)", ""), dep("b", "2", "")],
            roots: &["a"],
            installed: installed(&[("b", "1", "")]),
            expected: &["b=2", "a=1"],
        },
    ]);
}

#[test]
fn a_package_installed_at_another_version_is_replaced_when_demanded() {
    let available = [
        dep("nfs-common", "2.6", "libtirpc3 (>= 1.3.3)"),
        dep("libtirpc3", "1.3.3", ""),
    ];
    let installed = installed(&[("libtirpc3", "1.3.2", "")]);
    let resolution = resolve(&available, &["nfs-common"], &installed).unwrap();
    assert_eq!(
        names(&available, &resolution),
        ["libtirpc3=1.3.3", "nfs-common=2.6"]
    );
    assert_eq!(
        resolution.replaced,
        [Replaced {
            name: "libtirpc3".to_owned(),
            installed: "1.3.2".to_owned(),
            by: "1.3.3".to_owned(),
            demanded_by: "nfs-common → libtirpc3 (>= 1.3.3)".to_owned(),
        }]
    );
}

#[test]
fn failures_name_the_package_and_the_dependency() {
    let cases = [
        (
            vec![dep("a", "1", "libc6 (>= 2.99)"), dep("libc6", "2.36", "")],
            "a",
            "`a` depends on `libc6 (>= 2.99)`, which no available package satisfies",
        ),
        (
            vec![dep("a", "1", "b"), dep("b", "1", "x | y (>= 2)")],
            "a",
            "`b` depends on `x | y (>= 2)`, which no available package satisfies",
        ),
        (
            vec![dep("a", "1", "")],
            "nope",
            "no package `nope` is available",
        ),
        (
            vec![dep("a", "1", "b ("), dep("b", "1", "")],
            "a",
            "package `a`: `Depends: b (` does not parse",
        ),
    ];
    for (available, root, expected) in cases {
        let error = resolve(&available, &[root], &Installed::default()).unwrap_err();
        assert!(error.to_string().starts_with(expected), "{error}");
    }
}

#[test]
fn dpkg_query_keeps_installed_packages() {
    let text = "socat\t1.7.4.4-2\t\tinstalled\n\
                mawk\t1.3.4-1\tawk\tinstalled\n\
                gone\t1.0\t\tconfig-files\n\
                broken line\n";
    assert_eq!(
        Installed::from_dpkg_query(text),
        installed(&[("socat", "1.7.4.4-2", ""), ("mawk", "1.3.4-1", "awk")])
    );
}

#[test]
fn baseline_is_required_and_essential_packages_and_what_they_need() {
    let entry = |record: PackageRecord, priority: &str, essential: bool| IndexEntry {
        record,
        path: String::new(),
        priority: priority.to_owned(),
        essential,
    };
    let index = [
        entry(record("mawk", "1", "libc6", "", "awk"), "required", false),
        entry(
            record("bash", "1", "", "libtinfo6 | libncurses6", ""),
            "optional",
            true,
        ),
        entry(dep("libc6", "2", "libgcc-s1"), "optional", false),
        entry(dep("libgcc-s1", "3", ""), "optional", false),
        entry(dep("libtinfo6", "4", ""), "optional", false),
        entry(dep("libncurses6", "5", ""), "optional", false),
        entry(dep("socat", "1", "libc6, libwrap0"), "optional", false),
        entry(dep("libwrap0", "1", ""), "optional", false),
        entry(dep("ssh", "1", ""), "important", false),
    ];
    let baseline = Installed::baseline(&index);
    assert_eq!(
        baseline,
        installed(&[
            ("bash", "1", ""),
            ("libc6", "2", ""),
            ("libgcc-s1", "3", ""),
            ("libtinfo6", "4", ""),
            ("mawk", "1", "awk"),
        ])
    );
    let available: Vec<PackageRecord> = index.iter().map(|e| e.record.clone()).collect();
    let mut with_deps = available.clone();
    with_deps.push(dep("tool", "1", "bash, awk, socat"));
    let resolution = resolve(&with_deps, &["tool", "mawk"], &baseline).unwrap();
    assert_eq!(
        names(&with_deps, &resolution),
        ["libwrap0=1", "socat=1", "tool=1"]
    );
}

use std::fmt::Write as _;

use super::*;
use crate::install::plan::tests_support::packages_plan;

/// What [`NODE_STATE`] prints on a Debian 12 node that has `libtirpc3` at an older version and
/// `less` (and a removed package, which does not count).
const PRINTED: &str = "debian-12\namd64\nlibtirpc3\t1.3.3+ds-0\t\tinstalled\nless\t590-2.1~deb12u2\t\tinstalled\nipvsadm\t1:1.31-1+b1\t\tconfig-files\n";

#[test]
fn the_node_state_is_its_distribution_arch_and_installed_packages() {
    let state = NodeState::parse(PRINTED).expect("state");
    assert_eq!(
        (state.distro.as_str(), state.arch.as_str()),
        ("debian-12", "amd64")
    );
    let names: Vec<&str> = state
        .installed
        .packages
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["less", "libtirpc3"], "only installed packages");
    assert_eq!(NodeState::parse("debian-12\n"), None, "no arch");
    assert_eq!(NodeState::parse(""), None);
}

#[test]
fn the_set_is_the_nodes_distribution_and_arch_else_an_error_naming_what_it_lacks() {
    let plan = packages_plan();
    let packages = plan.packages.as_ref().expect("packages");
    let state = NodeState::parse(PRINTED).expect("state");
    let (set, roots) = choose_set(packages, "store", &state).expect("set");
    assert_eq!(set.key, "debian-12-amd64");
    assert_eq!(roots, ["nfs-kernel-server", "less"]);
    let ubuntu = NodeState {
        distro: "ubuntu-24.04".to_owned(),
        ..state.clone()
    };
    let arm = NodeState {
        arch: "arm64".to_owned(),
        ..state
    };
    for other in [ubuntu, arm] {
        let error = choose_set(packages, "w1", &other).expect_err("no set");
        let message = error.to_string();
        assert!(
            message.contains(&format!("`w1` runs {} on {}", other.distro, other.arch))
                && message.contains("it lacks conntrack, ipvsadm, less, nfs-common"),
            "{message}"
        );
    }
}

#[test]
fn the_fetch_and_dpkg_commands_take_what_the_node_lacks_in_install_order() {
    let plan = packages_plan();
    let packages = plan.packages.as_ref().expect("packages");
    let state = NodeState::parse(PRINTED).expect("state");
    let (set, roots) = choose_set(packages, "store", &state).expect("set");
    let wanted = Wanted::resolve("store", set, roots, &state.installed).expect("resolve");
    let names: Vec<&str> = wanted.records.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["libtirpc3", "nfs-common", "nfs-kernel-server"],
        "less is there; libtirpc3 is replaced because nfs-common demands a newer one"
    );
    assert_eq!(
        wanted
            .replaced
            .iter()
            .map(replaced_note)
            .collect::<Vec<_>>(),
        [
            "replaced libtirpc3 1.3.3+ds-0 by 1.3.3+ds-1, demanded by nfs-common → libtirpc3 (>= 1.3.3+ds-1)"
        ]
    );
    let fetch = fetch_command(
        "/usr/local/bin/kk-install fetch --registry dockerhub.kubekey.local:5443 --ca /etc/kk/pki/ca.crt",
        set,
        &wanted,
    )
    .expect("fetch");
    assert_eq!(
        fetch.matches("/usr/local/bin/kk-install fetch").count(),
        3,
        "{fetch}"
    );
    assert!(
        fetch.starts_with("set -e; "),
        "one failed fetch fails the command: {fetch}"
    );
    let nfs_common = &set.set.packages[4];
    assert!(
        fetch.contains(&format!(
            "--into /var/lib/kk/packages/debian-12-amd64 --output json --expect {} --file nfs-common_1:2.6.2-4_amd64.deb {}",
            set.digests[&nfs_common.reference], nfs_common.reference
        )),
        "{fetch}"
    );
    assert_eq!(
        dpkg_command(set, &wanted),
        "DEBIAN_FRONTEND=noninteractive dpkg -i /var/lib/kk/packages/debian-12-amd64/libtirpc3_1.3.3+ds-1_amd64.deb /var/lib/kk/packages/debian-12-amd64/nfs-common_1:2.6.2-4_amd64.deb /var/lib/kk/packages/debian-12-amd64/nfs-kernel-server_1:2.6.2-4_amd64.deb"
    );
    assert!(!fetch.contains("apt") && !dpkg_command(set, &wanted).contains("apt"));
}

#[test]
fn a_node_that_has_everything_installs_nothing() {
    let plan = packages_plan();
    let packages = plan.packages.as_ref().expect("packages");
    let set = packages.set("debian-12", "amd64").expect("set");
    let mut printed = "debian-12\namd64\n".to_owned();
    for record in &set.set.packages {
        let _ = writeln!(printed, "{}\t{}\t\tinstalled", record.name, record.version);
    }
    let state = NodeState::parse(&printed).expect("state");
    let (set, roots) = choose_set(packages, "w1", &state).expect("set");
    let wanted = Wanted::resolve("w1", set, roots, &state.installed).expect("resolve");
    assert!(wanted.records.is_empty(), "{:?}", wanted.records);
}

#[test]
fn the_fetches_json_lines_give_the_files() {
    let printed = "{\"manifest\":\"sha256:aa\",\"files\":{\"/var/lib/kk/packages/debian-12-amd64/a.deb\":\"x\"},\"downloaded\":1,\"unchanged\":false}\n{\"manifest\":\"sha256:bb\",\"files\":{\"/var/lib/kk/packages/debian-12-amd64/b.deb\":\"y\"},\"downloaded\":1,\"unchanged\":false}\n";
    assert_eq!(
        fetched_files(printed).expect("files"),
        [
            "/var/lib/kk/packages/debian-12-amd64/a.deb",
            "/var/lib/kk/packages/debian-12-amd64/b.deb"
        ]
    );
    assert!(matches!(
        fetched_files("oops\n"),
        Err(StepError::FetchOutput { .. })
    ));
}

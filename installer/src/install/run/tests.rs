use super::*;
use crate::install::plan::tests_support::sample_plan;

#[test]
fn a_run_starts_from_the_recorded_state_of_its_own_bundle_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = sample_plan();
    let fresh = RunOptions::default();
    let resume = RunOptions {
        resume: true,
        ..RunOptions::default()
    };
    let error = starting_state(&plan, dir.path(), &resume).expect_err("nothing to resume");
    assert!(
        error.to_string().contains("no install to resume"),
        "{error}"
    );

    let mut state = starting_state(&plan, dir.path(), &fresh).expect("fresh");
    assert_eq!(state.bundle, plan.bundle.to_string());
    // Recorded for a later upgrade: what the bundle installs.
    assert_eq!(
        state.versions.get("kubeadm").map(String::as_str),
        Some("v1.33.0")
    );
    assert_eq!(state.versions, plan.versions);
    let cp1 = Target::node("cp1");
    state.mark_done(&cp1, "os.swap", 0.1);
    state.mark_done(&cp1, "runtime.pull", 0.1);
    state.save(dir.path()).expect("save");
    let resumed = starting_state(&plan, dir.path(), &resume).expect("resume");
    assert!(resumed.is_done(&cp1, "os.swap") && resumed.is_done(&cp1, "runtime.pull"));

    let os_again = RunOptions {
        phase: Some(Phase::Os),
        ..RunOptions::default()
    };
    let again = starting_state(&plan, dir.path(), &os_again).expect("phase");
    assert!(
        !again.is_done(&cp1, "os.swap"),
        "`--phase os` runs os again"
    );
    assert!(
        again.is_done(&cp1, "runtime.pull"),
        "other phases stay done"
    );

    let mut other = plan.clone();
    other.bundle = bundle_spec::Sha256Digest::of(b"another bundle");
    let error = starting_state(&other, dir.path(), &fresh).expect_err("other bundle");
    assert!(error.to_string().contains("not of this bundle"), "{error}");
}

#[test]
fn the_table_has_a_row_per_node_and_a_column_per_phase() {
    let inventory = Inventory::from_str_named(
        "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    w1: {internal_ipv4: 10.0.0.2}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    kube_worker: {hosts: [w1]}\n",
        "inventory.yaml",
    )
    .expect("inventory");
    let mut summary = Summary::default();
    summary.nodes.insert(
        "cp1".to_owned(),
        BTreeMap::from([
            ("os".to_owned(), "changed".to_owned()),
            ("etcd".to_owned(), "done".to_owned()),
        ]),
    );
    summary.sent.insert("cp1".to_owned(), 2048);
    let table = summary.render(&inventory, &[Phase::Os, Phase::Etcd]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["node", "os", "etcd", "sent"]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["cp1", "changed", "done", "2.0", "KiB"]
    );
    assert_eq!(lines[2].split_whitespace().next(), Some("w1"));
    assert!(
        lines[2].contains(" - "),
        "a phase with nothing on w1 is `-`: {table}"
    );
}

#[test]
fn the_record_lists_phases_done_on_the_node_and_its_files_in_order() {
    let plan = sample_plan();
    let mut state = State::new(&plan.bundle.to_string());
    for step in plan.phase(Phase::Os) {
        let target = if step.action.is_cluster_wide() {
            Target::Cluster
        } else {
            Target::node("w1")
        };
        state.mark_done(&target, &step.id, 0.1);
    }
    state.add_files("w1", ["/etc/sysctl.d/99-kk.conf".to_owned()]);
    let record: serde_json::Value =
        serde_json::from_slice(&installed_json(&plan, &state, "w1")).expect("json");
    assert_eq!(record["phases"], serde_json::json!(["os"]));
    assert_eq!(
        record["files"],
        serde_json::json!(["/etc/kubekey/installed.json", "/etc/sysctl.d/99-kk.conf"])
    );
    assert_eq!(
        installed_json(&plan, &state, "w1"),
        installed_json(&plan, &state, "w1"),
        "the same state gives the same bytes"
    );
}

#[test]
fn the_nfs_hosts_record_names_its_share_and_the_exports_it_keeps_a_block_in() {
    let plan = crate::install::plan::tests_support::packages_plan();
    let mut state = State::new(&plan.bundle.to_string());
    state.mark_done(&Target::node("store"), "nfs.server", 0.1);
    state.add_files("store", ["/etc/exports".to_owned()]);
    let record: serde_json::Value =
        serde_json::from_slice(&installed_json(&plan, &state, "store")).expect("json");
    assert_eq!(record["nfs_share"], "/share");
    assert!(
        record["phases"]
            .as_array()
            .expect("phases")
            .contains(&"nfs".into())
    );
    assert_eq!(
        record["files"],
        serde_json::json!(["/etc/exports", "/etc/kubekey/installed.json"])
    );
    let other: serde_json::Value =
        serde_json::from_slice(&installed_json(&plan, &state, "w1")).expect("json");
    assert!(other.get("nfs_share").is_none(), "{other}");
}

#[test]
fn only_consecutive_per_node_steps_of_one_phase_run_as_one_segment() {
    let fetch = || Action::Fetch {
        binaries: Vec::new(),
    };
    let plan: Vec<Step> = [
        (Phase::Precheck, "rules", Action::Precheck),
        (Phase::Os, "installer", Action::Installer),
        (Phase::Os, "hostname", Action::Hostname),
        (Phase::Os, "sysctl", Action::Sysctl { ipv6: false }),
        (Phase::Os, "hosts", Action::Hosts),
        (Phase::Os, "verify", Action::VerifyOs),
        (Phase::Pki, "issue", Action::IssueCertificates),
        (Phase::Pki, "copy", Action::Certificates),
        (Phase::Pki, "spread", Action::SpreadCertificates),
        (Phase::Registry, "unpack", Action::UnpackBundle),
        (Phase::Registry, "service", Action::RegistryService),
        (Phase::Registry, "ready", Action::RegistryReady),
        (Phase::Runtime, "binaries", fetch()),
        (Phase::Runtime, "containerd", Action::Containerd),
        (Phase::Runtime, "pull", Action::PullProbe),
        (Phase::Etcd, "binaries", fetch()),
        (Phase::Etcd, "service", Action::EtcdService),
        (Phase::Etcd, "health", Action::EtcdHealth),
        (Phase::Kubernetes, "binaries", fetch()),
        (Phase::Kubernetes, "kubelet", Action::KubeletService),
        (Phase::Kubernetes, "token", Action::BootstrapToken),
        (Phase::Kubernetes, "init", Action::KubeadmInit),
        (Phase::Kubernetes, "join-worker", Action::JoinWorker),
    ]
    .into_iter()
    .map(|(phase, what, action)| Step {
        phase,
        id: format!("{phase}.{what}"),
        action,
        nodes: vec!["n1".to_owned()],
    })
    .collect();
    let steps: Vec<&Step> = plan.iter().collect();
    let ids: Vec<Vec<&str>> = segments(&steps)
        .iter()
        .map(|segment| segment.iter().map(|s| s.id.as_str()).collect())
        .collect();
    let expected: [&[&str]; 17] = [
        &["precheck.rules"],
        &["os.installer", "os.hostname", "os.sysctl", "os.hosts"],
        &["os.verify"],
        &["pki.issue"],
        &["pki.copy"],
        &["pki.spread"],
        &["registry.unpack"],
        &["registry.service"],
        &["registry.ready"],
        &["runtime.binaries", "runtime.containerd", "runtime.pull"],
        // A phase boundary always splits, even between two per-node steps.
        &["etcd.binaries"],
        &["etcd.service"],
        &["etcd.health"],
        &["kubernetes.binaries", "kubernetes.kubelet"],
        &["kubernetes.token"],
        &["kubernetes.init"],
        &["kubernetes.join-worker"],
    ];
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn finished_node_steps_are_saved_once_after_the_step_not_one_by_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = sample_plan();
    let report = |_: Event<'_>| {};
    let progress = Progress {
        state: Mutex::new(State::new(&plan.bundle.to_string())),
        summary: Mutex::new(Summary::default()),
        work_dir: dir.path(),
        finished: Mutex::new(0),
        total: 0,
        report: &report,
    };
    let step = plan
        .phase(Phase::Os)
        .find(|s| s.id == "os.swap")
        .expect("os.swap");
    let nodes: Vec<Target> = (1..=24).map(|i| Target::node(&format!("n{i}"))).collect();
    for node in &nodes {
        progress.finish(node, step, StepStatus::Changed, 0.1, None);
    }
    assert_eq!(
        State::load(dir.path()).expect("load"),
        None,
        "finishing a node-step writes nothing"
    );
    progress.save().await.expect("save");
    let saved = State::load(dir.path()).expect("load").expect("saved");
    assert!(
        nodes.iter().all(|node| saved.is_done(node, "os.swap")),
        "one save holds every node: {saved:?}"
    );
}

#[tokio::test]
async fn a_node_named_installer_has_its_steps_files_row_and_record_as_any_node() {
    // `installer` is a valid inventory name: nothing may take its steps for the cluster's.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut plan = sample_plan();
    for name in plan.steps.iter_mut().flat_map(|s| s.nodes.iter_mut()) {
        if name == "w1" {
            "installer".clone_into(name);
        }
    }
    let events = Mutex::new(Vec::new());
    let report = |event: Event<'_>| {
        if let Event::Step(step) = event {
            Progress::lock(&events).push(step.target.clone());
        }
    };
    let progress = Progress {
        state: Mutex::new(State::new(&plan.bundle.to_string())),
        summary: Mutex::new(Summary::default()),
        work_dir: dir.path(),
        finished: Mutex::new(0),
        total: 0,
        report: &report,
    };
    let installer = Target::node("installer");
    let outcome = phases::Outcome {
        changed: true,
        files: vec!["/etc/sysctl.d/99-kk.conf".to_owned()],
        sent: 7,
        notes: Vec::new(),
    };
    for step in plan.phase(Phase::Os) {
        let target = if step.action.is_cluster_wide() {
            Target::Cluster
        } else {
            installer.clone()
        };
        progress.finish(&target, step, StepStatus::Changed, 0.1, Some(&outcome));
    }
    progress.save().await.expect("save");
    let state = State::load(dir.path()).expect("load").expect("saved");
    assert!(state.is_done(&installer, "os.swap"), "{state:?}");
    assert!(!state.is_done(&Target::Cluster, "os.swap"), "{state:?}");
    assert!(state.is_done(&Target::Cluster, "os.verify"), "{state:?}");
    let record: serde_json::Value =
        serde_json::from_slice(&installed_json(&plan, &state, "installer")).expect("json");
    assert_eq!(record["phases"], serde_json::json!(["os"]));
    assert_eq!(
        record["files"],
        serde_json::json!(["/etc/kubekey/installed.json", "/etc/sysctl.d/99-kk.conf"])
    );
    let summary = Progress::lock(&progress.summary);
    assert_eq!(summary.nodes["installer"]["os"], "changed");
    assert!(summary.sent["installer"] > 0);
    assert!(Progress::lock(&events).contains(&installer));
}

//! One install or reset at a time per work directory: a second run is refused before it
//! reaches any node, naming the PID of the run that holds the lock.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use kk_install::install::StateLock;

use crate::support::{binary, run_failing};

#[test]
fn a_reset_while_another_run_holds_the_work_dir_is_refused_naming_its_pid_before_any_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("work");
    // A node that would accept a connection: nothing may connect to it.
    let node = TcpListener::bind("127.0.0.1:0").expect("listener");
    node.set_nonblocking(true).expect("nonblocking");
    let port = node.local_addr().expect("address").port();
    let key = dir.path().join("id_ed25519");
    fs::write(&key, "not read before the lock\n").expect("key");
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).expect("mode");
    let inventory = dir.path().join("inventory.yaml");
    fs::write(
        &inventory,
        format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {{name: t}}\nspec:\n  hosts:\n    node1:\n      connector: {{host: 127.0.0.1, port: {port}, private_key: {}}}\n      internal_ipv4: 10.0.0.1\n  groups:\n    kube_control_plane: {{hosts: [node1]}}\n",
            key.display()
        ),
    )
    .expect("inventory");

    let held = StateLock::acquire(&work).expect("the first run's lock");
    let mut reset = Command::new(binary("kk-install"));
    reset
        .args(["reset", "--yes", "-i"])
        .arg(&inventory)
        .arg("--work-dir")
        .arg(&work)
        .arg("--known-hosts")
        .arg(dir.path().join("known_hosts"));
    let error = run_failing(&mut reset);
    assert!(
        error.contains(&format!("PID {}", std::process::id())),
        "{error}"
    );
    assert!(error.contains(&work.display().to_string()), "{error}");
    assert!(
        node.accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the refused run connected to the node"
    );
    drop(held);
}

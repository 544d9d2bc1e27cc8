use super::*;

const INVENTORY: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    cp2: {internal_ipv4: 10.0.0.2}\n    w1: {internal_ipv4: 10.0.0.3}\n    e1: {internal_ipv4: 10.0.0.4}\n    reg: {internal_ipv4: 10.0.0.5}\n  groups:\n    kube_control_plane: {hosts: [cp1, cp2]}\n    kube_worker: {hosts: [w1]}\n    etcd: {hosts: [cp1, cp2, e1]}\n    image_registry: {hosts: [reg]}\n";

const ONE_ETCD: &str = "apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: t}\nspec:\n  hosts:\n    cp1: {internal_ipv4: 10.0.0.1}\n    e1: {internal_ipv4: 10.0.0.4}\n  groups:\n    kube_control_plane: {hosts: [cp1]}\n    etcd: {hosts: [e1]}\n";

fn config(etcd: &str) -> Config {
    Config::from_str_named(
        &format!(
            "apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {{name: t}}\nspec:\n  etcd: {{deployment_type: {etcd}}}\n"
        ),
        "config.yaml",
    )
    .expect("config")
}

fn deletion_of(inventory: &str, etcd: &str, node: &str) -> Result<Deletion, DeleteNodeError> {
    let inventory = Inventory::from_str_named(inventory, "inventory.yaml").expect("inventory");
    deletion(&inventory, &config(etcd), node)
}

#[test]
fn refusals_name_the_node_and_say_what_to_do() {
    let cases = [
        (
            INVENTORY,
            "external",
            "nope",
            "no host `nope`; hint: the hosts are `cp1`, `cp2`",
        ),
        (
            INVENTORY,
            "external",
            "cp1",
            "`cp1` is the first control plane",
        ),
        (INVENTORY, "external", "reg", "`reg` runs kk's registry"),
        (ONE_ETCD, "external", "e1", "`e1` is the last etcd member"),
    ];
    for (inventory, etcd, node, message) in cases {
        let error = deletion_of(inventory, etcd, node).expect_err(node);
        let text = error.to_string();
        assert!(text.contains(message), "{node}: {text}");
        assert!(text.contains("hint:"), "{node}: {text}");
    }
}

#[test]
fn what_a_deletion_involves() {
    let member = deletion_of(INVENTORY, "external", "e1").expect("e1");
    assert_eq!(member.first_control_plane.as_deref(), Some("cp1"));
    assert_eq!(
        member.etcd_peer_url.as_deref(),
        Some("https://10.0.0.4:2380")
    );
    let others: Vec<&str> = member.etcd_others.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(others, ["cp1", "cp2"]);
    assert_eq!(member.others, ["cp1", "cp2", "w1", "reg"]);
    // One of two registry hosts may go; the last one may not.
    let two_registries = INVENTORY.replace(
        "image_registry: {hosts: [reg]}",
        "image_registry: {hosts: [reg, w1]}",
    );
    let registry = deletion_of(&two_registries, "external", "reg").expect("reg");
    assert_eq!(registry.others, ["cp1", "cp2", "w1", "e1"]);
    let worker = deletion_of(INVENTORY, "external", "w1").expect("w1");
    assert_eq!(worker.etcd_peer_url, None);
    assert!(worker.etcd_others.is_empty());
    // With internal (stacked) etcd kubeadm owns the members: the `etcd` group is not kk's external etcd,
    // and a lone `etcd` host is no last member either.
    let stacked = deletion_of(ONE_ETCD, "internal", "e1").expect("internal");
    assert_eq!(stacked.etcd_peer_url, None);
}

#[test]
fn quorum_once_a_member_is_gone() {
    for (members, needed) in [(2, 1), (3, 2), (4, 2), (5, 3), (6, 3)] {
        assert_eq!(quorum_without_one(members), needed, "{members} members");
    }
}

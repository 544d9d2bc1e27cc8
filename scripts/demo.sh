#!/usr/bin/env bash
# The README's main command: starts the upstream lab (a real registry and file server on
# loopback), builds a bundle from manifests/lab.yaml with kk-bundle, shows what is inside, then
# verifies it and unpacks it into a content store with kk-install, and runs the install as far as
# it goes (pre_hook, precheck, post_hook) on three lab nodes (sshd in network namespaces).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "setup"
bash scripts/setup.sh
if ! command -v cargo >/dev/null 2>&1; then PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"; fi

step "building kk-bundle and kk-install (release)"
cargo build --release --locked -p kk-bundle -p kk-install
release="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
kk_bundle=$release/kk-bundle kk_install=$release/kk-install

demo=target/demo
mkdir -p "$demo"
export LAB_DIR="$PWD/target/lab/demo"
step "starting the upstream lab in $LAB_DIR"
bash scripts/lab/upstream.sh up
export NODES_DIR="$PWD/target/lab/demo-nodes"
cleanup() {
  bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true
  bash scripts/lab/nodes.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT
# shellcheck disable=SC1091
source "$LAB_DIR/env"

step "rendering manifests/lab.yaml for this lab"
bash scripts/lab/render.sh manifests/lab.yaml "$demo/lab.yaml"

step "kk-bundle build $demo/lab.yaml"
# The lab's single-platform images have no linux/arm64 variant: say so, and bundle what exists.
"$kk_bundle" build "$demo/lab.yaml" -o "$demo/cluster.tar.zst" --cache "$demo/cache" --allow-missing-platforms

step "kk-bundle inspect $demo/cluster.tar.zst"
"$kk_bundle" inspect "$demo/cluster.tar.zst"

step "kk-install verify --bundle $demo/cluster.tar.zst (the airgap side)"
"$kk_install" verify --bundle "$demo/cluster.tar.zst"

step "kk-install unpack into $demo/store (the registry's data)"
rm -rf "$demo/store"
"$kk_install" unpack --bundle "$demo/cluster.tar.zst" --store "$demo/store"

step "starting three lab nodes in $NODES_DIR"
bash scripts/lab/nodes.sh up 3 >/dev/null
# shellcheck disable=SC1091
source "$NODES_DIR/env"
read -r -a ips <<< "$KK_NODES_IPS"
# What the install's init phase will set; the lab's nodes start with it off.
for ip in "${ips[@]}"; do ssh -F "$KK_NODES_SSH_CONFIG" "$ip" 'echo 1 > /proc/sys/net/ipv4/ip_forward'; done
cat > "$demo/inventory.yaml" <<EOF
apiVersion: kubekey.kubesphere.io/v1
kind: Inventory
metadata: {name: demo}
spec:
  hosts:
    node1: {connector: {host: ${ips[0]}, private_key: $KK_NODES_KEY}, internal_ipv4: ${ips[0]}}
    node2: {connector: {host: ${ips[1]}, private_key: $KK_NODES_KEY}, internal_ipv4: ${ips[1]}}
    node3: {connector: {host: ${ips[2]}, private_key: $KK_NODES_KEY}, internal_ipv4: ${ips[2]}}
  groups:
    kube_control_plane: {hosts: [node1]}
    kube_worker: {hosts: [node2, node3]}
    etcd: {hosts: [node1]}
    image_registry: {hosts: [node1]}
EOF
# The lab bundle carries etcd, containerd and runc but no CNI: none is asked for.
cat > "$demo/config.yaml" <<EOF
apiVersion: kubekey.kubesphere.io/v1
kind: Config
metadata: {name: demo}
spec:
  kubernetes: {kube_version: v1.31.4}
  cni: {type: none}
EOF
mkdir -p "$demo/work"
printf '#!/bin/sh\necho "pre_hook on $(hostname)" > /root/demo-hook.log\n' > "$demo/work/pre_install_node1.sh"
printf '#!/bin/sh\necho "post_hook on $(hostname)" >> /root/demo-hook.log\n' > "$demo/work/post_install_node1.sh"

step "kk-install --bundle $demo/cluster.tar.zst -i $demo/inventory.yaml (pre_hook, precheck, post_hook)"
"$kk_install" --bundle "$demo/cluster.tar.zst" -i "$demo/inventory.yaml" -c "$demo/config.yaml" \
  --known-hosts "$KK_NODES_KNOWN_HOSTS" --work-dir "$demo/work" --fio-size 2m
step "what the hooks left on node1"
ssh -F "$KK_NODES_SSH_CONFIG" node1 cat /root/demo-hook.log

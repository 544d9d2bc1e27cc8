#!/usr/bin/env bash
# The README's main command: starts the upstream lab (a real registry and file server on
# loopback), seeds it with everything `kk-bundle catalog v1.33.0` names, builds a Kubernetes
# bundle for v1.33.0 from it with kk-bundle, shows what is inside and verifies it with
# kk-install, then starts three systemd lab nodes (scripts/lab/nspawn.sh: no route out of their
# /24) and installs Kubernetes on them: `kk-install plan`, then `kk-install --bundle ... -i ... -c ...`
# (pre_hook, precheck, os, pki, registry, runtime, etcd, kubernetes with a kube-vip endpoint,
# network with Calico from the bundle's chart, post_hook) with its progress and the final phase ×
# node table, then shows on the nodes that etcd is healthy over TLS, that images pull by their
# original names through kk's registry, and how kubeadm was run. Both labs are stopped at the end; the bundle, inventory,
# config, work dir (certificates, logs, facts, state) are left in target/demo/. Needs root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=v1.33.0
step() { printf '\n==> %s\n' "$*" >&2; }

step "setup"
bash scripts/setup.sh
find_cargo

step "building kk-bundle, kk-install and its node agent kk-node (release)"
# kk-install finds the agent it sends to the nodes beside itself (target/release/kk-node).
cargo build --release --locked -p kk-bundle -p kk-install -p kk-node
release="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
kk_bundle=$release/kk-bundle kk_install=$release/kk-install

demo=target/demo
mkdir -p "$demo"
export LAB_DIR="$PWD/target/lab/demo"
export NODES_DIR="$PWD/target/lab/demo-nodes" NODES_PREFIX=kkdemo NODES_NET=10.250.2
cleanup() {
  bash scripts/lab/nspawn.sh down >/dev/null 2>&1 || true
  bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT
step "starting the upstream lab in $LAB_DIR"
bash scripts/lab/upstream.sh up
# shellcheck disable=SC1091
source "$LAB_DIR/env"

step "kk-bundle catalog $version: what a Kubernetes $version bundle holds"
"$kk_bundle" catalog "$version"
"$kk_bundle" catalog "$version" --output json > "$demo/catalog.json"

step "seeding the upstream lab with stand-ins for everything the catalog names"
bash scripts/lab/seed-catalog.sh "$demo/catalog.json"

step "the manifest: Kubernetes $version, every download host and registry mapped to the lab"
# As an operator with an internal mirror would write it (spec.fileMirrors, spec.registries).
python3 scripts/lab/catalog-manifest.py "$demo/catalog.json" demo "$KK_LAB_HTTP" "$KK_LAB_REGISTRY" > "$demo/k8s.yaml"
cat "$demo/k8s.yaml"

step "kk-bundle build $demo/k8s.yaml"
"$kk_bundle" build "$demo/k8s.yaml" -o "$demo/cluster.tar.zst" --cache "$demo/cache"

step "kk-bundle inspect $demo/cluster.tar.zst"
"$kk_bundle" inspect "$demo/cluster.tar.zst"

step "kk-install verify $demo/cluster.tar.zst (the airgap side)"
"$kk_install" verify "$demo/cluster.tar.zst"

step "starting three systemd lab nodes in $NODES_DIR (no route out of $NODES_NET.0/24)"
bash scripts/lab/nspawn.sh down >/dev/null 2>&1 || true   # fresh machines
bash scripts/lab/nspawn.sh up 3
# shellcheck disable=SC1091
source "$NODES_DIR/env"
read -r -a ips <<< "$KK_NODES_IPS"
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
    etcd: {hosts: [node1, node2, node3]}
    image_registry: {hosts: [node1]}
EOF
cat > "$demo/config.yaml" <<EOF
apiVersion: kubekey.kubesphere.io/v1
kind: Config
metadata: {name: demo}
spec:
  kubernetes:
    kube_version: $version
    control_plane_endpoint: {type: kube-vip, host: lb.kubesphere.local, kube_vip: {address: $NODES_NET.200}}
  etcd: {deployment_type: external}
  cni: {type: calico}
  image_registry:
    type: kk
    auth: {registry: "dockerhub.kubekey.local:5443"}
EOF
rm -rf "$demo/work"
mkdir -p "$demo/work"
# shellcheck disable=SC2016  # $(hostname) runs on the node
printf '#!/bin/sh\necho "pre_hook on $(hostname)" > /root/demo-hook.log\n' > "$demo/work/pre_install_node1.sh"
# shellcheck disable=SC2016
printf '#!/bin/sh\necho "post_hook on $(hostname)" >> /root/demo-hook.log\n' > "$demo/work/post_install_node1.sh"
cat "$demo/inventory.yaml" "$demo/config.yaml"

install_args=(--bundle "$demo/cluster.tar.zst" -i "$demo/inventory.yaml" -c "$demo/config.yaml"
  --work-dir "$demo/work" --known-hosts "$KK_NODES_KNOWN_HOSTS")
step "kk-install plan (touches no node)"
"$kk_install" plan "${install_args[@]}"

step "kk-install --bundle $demo/cluster.tar.zst -i $demo/inventory.yaml -c $demo/config.yaml"
# Waived for reasons of the lab, not of kk: nspawn nodes share the host's kernel and
# /proc/sys/kernel (kubeadm's system verification), have no time sync, and share a disk with
# other work (etcd's fsync latency).
"$kk_install" "${install_args[@]}"

node() { ssh -F "$KK_NODES_SSH_CONFIG" "$@"; }
step "on node2: etcdctl endpoint health --cluster (TLS, healthcheck-client certificate)"
node node2 "ETCDCTL_API=3 etcdctl --endpoints https://${ips[1]}:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt \
  --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key \
  endpoint health --cluster"
step "on node3: images by their original names, through certs.d to kk's registry on node1"
# pause is what the install's own probe pulled; coredns is pulled here for the first time.
coredns=$(python3 -c 'import json,sys; print(next(i for i in json.load(open(sys.argv[1]))["images"] if "/coredns:" in i))' "$demo/catalog.json")
node node3 sh -s -- registry.k8s.io/pause:3.10 "$coredns" <<'EOF'
cat /etc/containerd/certs.d/registry.k8s.io/hosts.toml
for image in "$@"; do
  out=$(ctr -n k8s.io images pull --hosts-dir /etc/containerd/certs.d "$image") || { echo "$out"; exit 1; }
  echo "pulled $image: $(echo "$out" | sed -n 's/^unpacking \(.*\)\.\.\.$/\1/p')"
done
EOF
echo "node3's routes (no default route: the image can only have come from kk's registry):"
node node3 ip route
step "on node1: the services kk runs, and what the hooks left"
node node1 'systemctl is-active kk-registry containerd etcd kubelet; cat /root/demo-hook.log'
step "kubeadm (a lab stand-in: scripts/lab/standins/README.md) as kk ran it: init once, joins with kk's token and CA hash"
for n in node1 node2 node3; do
  echo "$n: $(node "$n" "grep -E '^kubeadm (init|join)' /tmp/kk-standin.log")"
done
node node2 'grep -A4 bootstrapToken: /etc/kubernetes/kk/kubeadm-join.yaml'
step "on node1: kube-vip and the CNI chart (rendered by the bundle's helm, applied with kubectl)"
node node1 'grep -E "image:|value: \"?[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+" /etc/kubernetes/manifests/kube-vip.yaml; grep "image:" /etc/kubernetes/kk/charts/tigera-operator.yaml | sort -u'

step "the same command again: every step is done, nothing changes; the phase × node table"
"$kk_install" "${install_args[@]}" 2>/dev/null

step "done: bundle, inventory, config and work dir in $demo/; stopping both labs"

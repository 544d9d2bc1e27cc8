#!/usr/bin/env bash
# How the install's wall time grows with the number of nodes, in one run: the full
# `kk-install --bundle B -i INV -c CFG` install on 3, 6, 12 and 24 fresh systemd-nspawn nodes
# (node1 control plane and registry, etcd on node1-3, the rest workers), the same bundle each time.
# Per size: wall time, its ratio to the smallest size (issue 25's target: 24 nodes <= 2x 3 nodes),
# kk-install's own CPU (user + system) per node, the registry node's egress (bytes node1 sent:
# the rx counter of its host-side veth), the nodes' CPU (sum of every node's cpuacct.usage; the
# nodes, their containerd and stand-ins all share this machine's cores) and the floor that CPU
# sets on 2 cores: (node CPU + installer CPU) / 2. When the floor of the largest size exceeds 2x
# the smallest wall, the nodes' work alone cannot fit, and the script names the largest node
# count whose floor (per-node CPU of the largest run, extrapolated linearly) still fits.
#
#   bash scripts/bench/fanout.sh [sizes, default "3 6 12 24"]    # needs root
#
# The bundle is built as scripts/bench/install.sh builds it (`kk-bundle catalog v1.33.0` against
# the upstream lab, LAB_DIR target/lab/bench-fanout). The installer is the static kk-install of
# `scripts/dist.sh`, what operators copy: it carries the node agent the install sends. Nodes:
# scripts/lab/nspawn.sh, NODES_PREFIX kkbfan, NODES_NET 10.250.10, state in
# target/bench/fanout/nodes, taken down and brought up fresh for every size (NSPAWN_BOOT_TIMEOUT
# 180 unless set: 24 nodes boot slowly on 2 cores; ~2.5 GB of RAM at 24); the install's flags as
# install.sh's. Everything started here is stopped on exit by the lab scripts (by recorded PID).
set -euo pipefail
LOG_NAME=bench/fanout
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
version=v1.33.0
read -r -a sizes <<< "${1:-3 6 12 24}"

[ "$(id -u)" = 0 ] || die "needs root (nspawn nodes)"

bash scripts/setup.sh >/dev/null
find_cargo
cargo build --release --locked -p kk-bundle >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bash scripts/dist.sh >&2
kk_bundle=$target/release/kk-bundle kk_install=$target/dist/kk-install

bench=$root/target/bench/fanout
export LAB_DIR=$root/target/lab/bench-fanout
export NODES_DIR=$bench/nodes NODES_PREFIX=kkbfan NODES_NET=10.250.10
export NSPAWN_BOOT_TIMEOUT=${NSPAWN_BOOT_TIMEOUT:-180}
mkdir -p "$bench"
cleanup() {
  bash scripts/lab/nspawn.sh down >/dev/null 2>&1 || true
  bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "upstream lab and bundle ($version)"
bash scripts/lab/upstream.sh up >/dev/null 2>&1
# shellcheck source=/dev/null
source "$LAB_DIR/env"
"$kk_bundle" catalog "$version" --output json > "$bench/catalog.json"
bash scripts/lab/seed-catalog.sh "$bench/catalog.json" >/dev/null 2>&1
python3 scripts/lab/catalog-manifest.py "$bench/catalog.json" k8s "$KK_LAB_HTTP" "$KK_LAB_REGISTRY" > "$bench/k8s.yaml"
bundle=$bench/cluster.tar.zst
"$kk_bundle" build "$bench/k8s.yaml" -o "$bundle" --cache "$bench/cache" >/dev/null 2>&1

printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: bench}\nspec:\n  etcd: {deployment_type: external}\n  image_registry:\n    type: kk\n    auth: {registry: "dockerhub.kubekey.local:5443"}\n' \
  > "$bench/config.yaml"

inventory() {  # inventory N: node1 control plane and registry, etcd on node1-3, the rest workers
  local n=$1 i workers="" etcd=""
  printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: bench}\nspec:\n  hosts:\n'
  for ((i = 1; i <= n; i++)); do
    printf '    node%s:\n      connector: {host: %s, private_key: %s}\n      internal_ipv4: %s\n' \
      "$i" "${ips[$((i - 1))]}" "$KK_NODES_KEY" "${ips[$((i - 1))]}"
    [ "$i" -gt 1 ] && workers="$workers${workers:+, }node$i"
    [ "$i" -le 3 ] && etcd="$etcd${etcd:+, }node$i"
  done
  printf '  groups:\n    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [%s]}\n' "$workers"
  printf '    etcd: {hosts: [%s]}\n    image_registry: {hosts: [node1]}\n' "$etcd"
}

node_cpu_ns() {  # Σ cpuacct.usage of every node's cgroup, in ns
  local f total=0 dir fstype options _
  for f in "$NODES_DIR"/nodes/n*/cgroups; do
    while read -r dir fstype options _; do
      [ "$fstype" = cgroup ] && [[ ",$options," == *,cpuacct,* ]] || continue
      total=$((total + $(cat "$dir/cpuacct.usage")))
    done < "$f"
  done
  echo "$total"
}

: > "$bench/results.tsv"
for n in "${sizes[@]}"; do
  log "$n nspawn nodes"
  bash scripts/lab/nspawn.sh down >/dev/null 2>&1 || true
  bash scripts/lab/nspawn.sh up "$n" >/dev/null
  unset KK_NODES_IPS KK_NODES_VETHS
  # shellcheck source=/dev/null
  source "$NODES_DIR/env"
  read -r -a ips <<< "$KK_NODES_IPS"
  read -r -a veths <<< "$KK_NODES_VETHS"
  inventory "$n" > "$bench/inventory-$n.yaml"
  rm -rf "$bench/work-$n"
  cpu_before=$(node_cpu_ns)
  egress_before=$(cat "/sys/class/net/${veths[0]}/statistics/rx_bytes")
  start=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$bench/time-$n.txt" \
    "$kk_install" --bundle "$bundle" -i "$bench/inventory-$n.yaml" -c "$bench/config.yaml" \
    --work-dir "$bench/work-$n" --known-hosts "$KK_NODES_KNOWN_HOSTS" --fio-size 1m \
    --output json > "$bench/summary-$n.json" 2> "$bench/install-$n.log" \
    || { tail -40 "$bench/install-$n.log" >&2; die "the install on $n nodes failed"; }
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  egress=$(($(cat "/sys/class/net/${veths[0]}/statistics/rx_bytes") - egress_before))
  node_cpu=$(($(node_cpu_ns) - cpu_before))
  read -r user sys < "$bench/time-$n.txt"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$wall" "$user" "$sys" "$egress" "$node_cpu" >> "$bench/results.tsv"
done

python3 - "$bench/results.tsv" <<'PY'
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
rows = [(int(n), float(w), float(u) + float(s), int(e), int(c) / 1e9) for n, w, u, s, e, c in rows]
n0, w0 = rows[0][0], rows[0][1]
print(f"| nodes | wall | ratio to {n0} | kk-install CPU per node | registry egress | node CPU (sum) | 2-core floor |")
print("|---|---|---|---|---|---|---|")
for n, wall, kk_cpu, egress, node_cpu in rows:
    floor = (node_cpu + kk_cpu) / 2
    print(f"| {n} | {wall:.1f} s | {wall / w0:.2f} | {kk_cpu / n:.2f} s | {egress / 2**20:.0f} MiB "
          f"| {node_cpu:.1f} s | {floor:.1f} s |")
n, wall, kk_cpu, _, node_cpu = rows[-1]
floor = (node_cpu + kk_cpu) / 2
print(f"target: {n} nodes <= 2x {n0} nodes: {wall / w0:.2f} ({'met' if wall <= 2 * w0 else 'NOT met'})")
if floor > 2 * w0:
    per_node = (node_cpu + kk_cpu) / n
    print(f"the 2-core floor at {n} nodes ({floor:.1f} s) exceeds 2x {n0} nodes ({2 * w0:.1f} s): "
          f"at {per_node:.2f} s of CPU per node, 2 cores fit at most {int(2 * w0 * 2 / per_node)} nodes")
PY

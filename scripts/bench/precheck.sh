#!/usr/bin/env bash
# `kk-install precheck` wall time on 3 and on 20 lab nodes, in one run: connecting, gathering
# every node's facts in one round trip, the etcd disk check (fio, 2m, on the one etcd node) and
# the rules, fanned out over the nodes (--jobs 20).
#
#   bash scripts/bench/precheck.sh [runs, default 3] [big N, default 20]
#
# Needs root (the node lab). The target the issue sets: 20 nodes take at most 2x the time of 3.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
runs=${1:-3}
big=${2:-20}

bash scripts/setup.sh >/dev/null
find_cargo
cargo build --release --locked -p kk-install -p kk-bundle >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
kk=$target/release/kk-install

bench=$root/target/bench/precheck
mkdir -p "$bench"
export LAB_DIR=$root/target/lab/bench-precheck NODES_DIR=$bench/nodes NODES_PREFIX=kkbench NODES_NET=10.250.7
cleanup() {
  bash scripts/lab/nodes.sh down >/dev/null 2>&1 || true
  bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# A real bundle of the lab's images and binaries.
bash scripts/lab/upstream.sh up >/dev/null
bash scripts/lab/render.sh manifests/lab.yaml "$bench/lab.yaml" >/dev/null
"$target/release/kk-bundle" build "$bench/lab.yaml" -o "$bench/lab.tar.zst" --cache "$bench/cache" \
  --allow-missing-platforms >/dev/null

bash scripts/lab/nodes.sh up "$big" >/dev/null
# shellcheck source=/dev/null
source "$NODES_DIR/env"
read -r -a ips <<< "$KK_NODES_IPS"
# The checks assume what the install's init phase sets; the lab's nodes start with it off.
for ip in "${ips[@]}"; do
  ssh -F "$KK_NODES_SSH_CONFIG" "$ip" 'echo 1 > /proc/sys/net/ipv4/ip_forward'
done

# inventory N: node1 control plane, etcd and registry; the rest workers.
inventory() {
  local n=$1 out=$2 i workers=""
  {
    printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: bench}\nspec:\n  hosts:\n'
    for ((i = 1; i <= n; i++)); do
      printf '    node%s:\n      connector: {host: %s, private_key: %s}\n      internal_ipv4: %s\n' \
        "$i" "${ips[$((i - 1))]}" "$KK_NODES_KEY" "${ips[$((i - 1))]}"
      [ "$i" -gt 1 ] && workers="$workers${workers:+, }node$i"
    done
    printf '  groups:\n    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [%s]}\n' "$workers"
    printf '    etcd: {hosts: [node1]}\n    image_registry: {hosts: [node1]}\n'
  } > "$out"
}
inventory 3 "$bench/inventory-3.yaml"
inventory "$big" "$bench/inventory-$big.yaml"
printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: bench}\nspec:\n  kubernetes: {kube_version: v1.31.4}\n' > "$bench/config.yaml"

run() {
  printf "'%s' precheck --bundle '%s' -i '%s' -c '%s' --known-hosts '%s' --work-dir '%s' --jobs %s --fio-size 2m >/dev/null" \
    "$kk" "$bench/lab.tar.zst" "$bench/inventory-$1.yaml" "$bench/config.yaml" "$KK_NODES_KNOWN_HOSTS" "$bench/work-$1" "$big"
}
# A failed check exits 1 (the lab bundle carries no CNI images, for one); a node that cannot be
# reached would too, so first make sure every node is in the report.
for n in 3 "$big"; do
  eval "$(run "$n" | sed 's/>\/dev\/null$/--output json/')" > "$bench/report-$n.json" || true
  python3 -c 'import json,sys; n=len(json.load(open(sys.argv[1]))["nodes"]); sys.exit(0 if n==int(sys.argv[2]) else f"{n} nodes in the report, not {sys.argv[2]}")' \
    "$bench/report-$n.json" "$n"
done
hyperfine --ignore-failure --runs "$runs" --export-json "$bench/hyperfine.json" \
  -n "3 nodes" "$(run 3)" -n "$big nodes" "$(run "$big")" >&2
python3 - "$bench/hyperfine.json" "$big" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
small, big = r["3 nodes"], r[f"{sys.argv[2]} nodes"]
print(f"precheck median: 3 nodes {small:.2f} s, {sys.argv[2]} nodes {big:.2f} s, ratio {big/small:.2f} (target <= 2)")
PY

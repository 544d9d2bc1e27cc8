#!/usr/bin/env bash
# `kk-install precheck` wall time on 3, 20 and 100 lab nodes, in one run, at the DEFAULT `--jobs`:
# connecting and gathering every node's facts (one future per node), the etcd disk check (fio,
# 2m, on the one etcd node) and the rules. Also: the same 100 nodes at `--jobs 10` (the default
# before issue 25) and fio alone on the etcd node over ssh, so its fixed share shows separately.
# Then one more run per size under a CPU count: every busy second of this machine (the nodes'
# sshd and fact scripts share its cores) and kk-install's own, and the floor those seconds set.
#
#   bash scripts/bench/precheck.sh [runs, default 3] [sizes, default "3 20 100"]
#
# Needs root (the node lab). The target issue 25 sets: the largest size takes at most 2x the
# time of the smallest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
runs=${1:-3}
read -r -a sizes <<< "${2:-3 20 100}"
small=${sizes[0]}
big=${sizes[-1]}

bash scripts/setup.sh >/dev/null
find_cargo
cargo build --release --locked -p kk-bundle >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
# The static kk-install of scripts/dist.sh: what operators copy (and one release build for every bench).
bash scripts/dist.sh >&2
kk=$target/dist/kk-install

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
for n in "${sizes[@]}"; do inventory "$n" "$bench/inventory-$n.yaml"; done
printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: bench}\nspec:\n  kubernetes: {kube_version: v1.31.4}\n' > "$bench/config.yaml"

run() { # N [extra flags]
  printf "'%s' precheck --bundle '%s' -i '%s' -c '%s' --known-hosts '%s' --work-dir '%s' --fio-size 2m %s >/dev/null" \
    "$kk" "$bench/lab.tar.zst" "$bench/inventory-$1.yaml" "$bench/config.yaml" "$KK_NODES_KNOWN_HOSTS" "$bench/work-$1" "${2:-}"
}
# A failed check exits 1 (the lab bundle carries no CNI images, for one); a node that cannot be
# reached would too, so first make sure every node is in the report.
for n in "${sizes[@]}"; do
  eval "$(run "$n" | sed 's/>\/dev\/null$/--output json/')" > "$bench/report-$n.json" || true
  python3 -c 'import json,sys; n=len(json.load(open(sys.argv[1]))["nodes"]); sys.exit(0 if n==int(sys.argv[2]) else f"{n} nodes in the report, not {sys.argv[2]}")' \
    "$bench/report-$n.json" "$n"
done
fio_alone="ssh -F '$KK_NODES_SSH_CONFIG' ${ips[0]} 'd=\$(mktemp -d /var/lib/kk-fio.XXXXXX) && fio --rw=write --ioengine=sync --fdatasync=1 --directory=\$d --size=2m --bs=2300 --name=etcd-fsync --output-format=json >/dev/null; rm -rf \$d'"
commands=()
for n in "${sizes[@]}"; do commands+=(-n "$n nodes" "$(run "$n")"); done
commands+=(-n "$big nodes --jobs 10" "$(run "$big" "--jobs 10")" -n "fio alone" "$fio_alone")
hyperfine --ignore-failure --runs "$runs" --export-json "$bench/hyperfine.json" "${commands[@]}" >&2

# The CPU floor: one more run of each size, counting every CPU second this machine spends
# meanwhile (/proc/stat, all cores: kk-install, every node's sshd and fact script, fio) and
# kk-install's own (/usr/bin/time). Busy seconds / cores is the shortest wall time those cores
# allow, whatever the installer does.
busy_seconds() {  # user + nice + system + irq + softirq + steal of all cores, in seconds
  awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}
: > "$bench/cpu.tsv"
for n in "${sizes[@]}"; do
  before=$(busy_seconds)
  eval "/usr/bin/time -f '%U %S' -o '$bench/time-$n.txt' $(run "$n")" || true
  after=$(busy_seconds)
  # Its last line: a failed check makes /usr/bin/time say so on the line before.
  read -r user sys < <(tail -n 1 "$bench/time-$n.txt")
  printf '%s\t%s\t%s\n' "$n" "$(echo "$after - $before" | bc)" "$(echo "$user + $sys" | bc)" >> "$bench/cpu.tsv"
done
python3 - "$bench/hyperfine.json" "$small" "$big" "$(nproc)" "$bench/cpu.tsv" "${sizes[@]}" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
small, big, cores, cpu_file, sizes = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6:]
cpu = {n: (float(b), float(k)) for n, b, k in (l.split("\t") for l in open(cpu_file).read().split("\n") if l)}
base, fio = r[f"{small} nodes"], r["fio alone"]
print("| nodes | precheck median | ratio to %s | without fio | ratio to %s without fio |" % (small, small))
print("|---|---|---|---|---|")
for n in sizes:
    t = r[f"{n} nodes"]
    print(f"| {n} | {t:.2f} s | {t/base:.2f} | {t-fio:.2f} s | {(t-fio)/(base-fio):.2f} |")
t = r[f"{big} nodes --jobs 10"]
print(f"| {big} at --jobs 10 | {t:.2f} s | {t/base:.2f} | {t-fio:.2f} s | {(t-fio)/(base-fio):.2f} |")
print(f"fio alone on the etcd node (2m): {fio:.2f} s; target: {big} nodes <= 2x {small} nodes "
      f"({'met' if r[f'{big} nodes'] <= 2 * base else 'NOT met'}: {r[f'{big} nodes']/base:.2f})")
print()
print(f"| nodes | machine CPU during one run | of it kk-install | per node, not kk-install | {cores}-core floor |")
print("|---|---|---|---|---|")
for n in sizes:
    busy, kk = cpu[n]
    print(f"| {n} | {busy:.2f} s | {kk:.2f} s | {(busy - kk) / int(n) * 1000:.0f} ms | {busy / cores:.2f} s |")
floor = cpu[big][0] / cores
if floor > 2 * base:
    per_node = cpu[big][0] / int(big)
    print(f"the {cores}-core floor at {big} nodes ({floor:.2f} s) exceeds 2x {small} nodes ({2 * base:.2f} s): "
          f"at {per_node * 1000:.0f} ms of CPU per node (its side and kk-install's) these cores fit at most "
          f"{int(2 * base * cores / per_node)} nodes in 2x the {small}-node time")
PY

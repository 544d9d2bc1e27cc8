#!/usr/bin/env bash
# What the installer machine sends to each node, and how long it takes, side by side in one run:
#   (a) kk: the full `kk-install --bundle B -i INV -c CFG` install (pre_hook, precheck, os, pki,
#       registry, runtime, etcd, kubernetes, network, post_hook) on 3 fresh systemd-nspawn nodes,
#       with the STATIC
#       kk-install of `scripts/dist.sh` (what operators copy): wall time, the bytes its summary
#       (`--output json` -> `sent`) says it sent to each node, and the bytes on the wire;
#   (b) the KubeKey way, on 3 other fresh nspawn nodes: every release file the install needs
#       (containerd, runc, cni-plugins, crictl, etcd, kubeadm, kubelet, kubectl; helm on the
#       first control plane: the bundle's own bytes, taken from the unpacked bundle store) copied
#       to each node with `scp` (SFTP, one connection per node, one
#       transfer per file, the nodes in parallel, as KubeKey's SFTP copy does), plus the same small
#       files kk wrote on the node of the same role (certificates, containerd/etcd/crictl configs,
#       units, sysctl and module files: fetched from the kk node after (a)); copy only, nothing
#       is unpacked or started: wall time, payload bytes, bytes on the wire.
#
#   bash scripts/bench/install.sh          # needs root; prints a table and the ratios
#
# The bundle: `kk-bundle catalog v1.33.0` built against the upstream lab (LAB_DIR
# target/lab/bench-install; scripts/lab/seed-catalog.sh), at the writer's default level, every
# download host and registry mapped to the lab (as tests/e2e/bundle_lab.rs `catalog_manifest`).
# The lab's containerd, runc, CNI plugins and etcd are Debian's real binaries shaped as the
# upstream release files; kubeadm, kubelet, kubectl and crictl are small stand-ins.
# Nodes: scripts/lab/nspawn.sh, NODES_PREFIX kkbkk / kkbkey, NODES_NET 10.250.8 / 10.250.9, state
# in target/bench/install/nodes-{kk,key}. Inventory as the e2e install test: node1 control plane
# and registry, node2-3 workers, etcd on all three; the lab's waivers (etcd.fsync, os.time_sync,
# kubeadm.system_verification).
# Wire bytes: an nftables table of this script (inet kkbench_install, removed on exit) counts the
# IP bytes the host sends to each node's address (output hook only: node-to-node traffic, such
# as kk's workers fetching from node1's registry, is not the installer machine's and is not
# counted). Everything this script starts is stopped on exit: the labs by their scripts (which
# stop by recorded PID), ssh connection masters with `ssh -O exit`.
set -euo pipefail
LOG_NAME=bench/install
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
version=v1.33.0

[ "$(id -u)" = 0 ] || die "needs root (nspawn nodes, nftables)"

bash scripts/setup.sh >/dev/null
find_cargo
cargo build --release --locked -p kk-bundle >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bash scripts/dist.sh >&2
kk_bundle=$target/release/kk-bundle kk_install=$target/dist/kk-install

bench=$root/target/bench/install
export LAB_DIR=$root/target/lab/bench-install
mkdir -p "$bench"
labs=(kk:kkbkk:10.250.8 key:kkbkey:10.250.9)
nft_table=kkbench_install
masters=()
lab() {  # lab NAME ACTION: scripts/lab/nspawn.sh ACTION for lab NAME (kk or key)
  local spec
  for spec in "${labs[@]}"; do
    IFS=: read -r name prefix net <<< "$spec"
    [ "$name" = "$1" ] || continue
    NODES_DIR=$bench/nodes-$name NODES_PREFIX=$prefix NODES_NET=$net bash scripts/lab/nspawn.sh "$2"
  done
}
cleanup() {
  local m
  for m in "${masters[@]}"; do ssh -F "$key_ssh_config" -o ControlPath="$m" -O exit x >/dev/null 2>&1 || true; done
  nft delete table inet "$nft_table" >/dev/null 2>&1 || true
  lab kk down >/dev/null 2>&1 || true
  lab key down >/dev/null 2>&1 || true
  bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The bundle.
log "upstream lab and bundle ($version)"
bash scripts/lab/upstream.sh up >/dev/null 2>&1
# shellcheck source=/dev/null
source "$LAB_DIR/env"
"$kk_bundle" catalog "$version" --output json > "$bench/catalog.json"
bash scripts/lab/seed-catalog.sh "$bench/catalog.json" >/dev/null 2>&1
python3 scripts/lab/catalog-manifest.py "$bench/catalog.json" k8s "$KK_LAB_HTTP" "$KK_LAB_REGISTRY" > "$bench/k8s.yaml"
bundle=$bench/cluster.tar.zst
"$kk_bundle" build "$bench/k8s.yaml" -o "$bundle" --cache "$bench/cache" >/dev/null 2>&1

# The release files the install needs, from the unpacked bundle store (by their upstream file
# names, as the OCI title annotation records them).
rm -rf "$bench/store" "$bench/files"
"$kk_install" unpack --bundle "$bundle" --store "$bench/store" >/dev/null 2>&1
python3 - "$bench/store" "$bench/files" > "$bench/binaries.tsv" <<'PY'
import json, os, shutil, sys
store, out = sys.argv[1:3]
blob = lambda d: os.path.join(store, "blobs", "sha256", d.split(":")[1])
for group in ("runtime", "etcd", "kubernetes", "helm"):
    os.makedirs(os.path.join(out, group), exist_ok=True)
for entry in json.load(open(os.path.join(store, "index.json")))["manifests"]:
    ref = entry.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
    if not ref.startswith("kk.internal/binaries/"):
        continue
    name = ref.split("/")[-1].split(":")[0]
    doc = json.load(open(blob(entry["digest"])))
    for m in doc.get("manifests", [doc]):
        if "platform" in m and m["platform"] != {"architecture": "amd64", "os": "linux"}:
            continue
        manifest = json.load(open(blob(m["digest"]))) if "manifests" in doc else doc
        for layer in manifest["layers"]:
            title = layer["annotations"]["org.opencontainers.image.title"]
            group = {"etcd": "etcd", "containerd": "runtime", "runc": "runtime",
                     "cni-plugins": "runtime", "crictl": "runtime", "kubeadm": "kubernetes",
                     "kubelet": "kubernetes", "kubectl": "kubernetes", "helm": "helm"}.get(name, "")
            if group:
                shutil.copyfile(blob(layer["digest"]), os.path.join(out, group, title))
            print(f"{name}\t{title}\t{layer['size']}\t{group or '-'}")
PY

# Both labs, fresh.
log "6 nspawn nodes (3 for kk, 3 for the KubeKey way)"
lab kk down >/dev/null 2>&1 || true
lab key down >/dev/null 2>&1 || true
lab kk up 3 >/dev/null
lab key up 3 >/dev/null
# shellcheck source=/dev/null
env_of() { (set -a; source "$bench/nodes-$1/env"; set +a; echo "${!2}"); }  # env_of LAB KEY
read -r -a kk_ips <<< "$(env_of kk KK_NODES_IPS)"
read -r -a key_ips <<< "$(env_of key KK_NODES_IPS)"
kk_ssh_config=$(env_of kk KK_NODES_SSH_CONFIG) key_ssh_config=$(env_of key KK_NODES_SSH_CONFIG)

# Wire counters: IP bytes from this machine to each node.
nft delete table inet "$nft_table" >/dev/null 2>&1 || true
nft add table inet "$nft_table"
nft add chain inet "$nft_table" out '{ type filter hook output priority 0; policy accept; }'
for ip in "${kk_ips[@]}" "${key_ips[@]}"; do nft add rule inet "$nft_table" out ip daddr "$ip" counter; done
wire() {  # wire IP: bytes counted so far
  nft list chain inet "$nft_table" out | awk -v ip="$1" '$1 == "ip" && $3 == ip { for (i = 1; i < NF; i++) if ($i == "bytes") print $(i + 1) }'
}

# (a) kk.
{
  printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Inventory\nmetadata: {name: bench}\nspec:\n  hosts:\n'
  for i in 1 2 3; do
    printf '    node%s:\n      connector: {host: %s, private_key: %s}\n      internal_ipv4: %s\n' \
      "$i" "${kk_ips[$((i - 1))]}" "$(env_of kk KK_NODES_KEY)" "${kk_ips[$((i - 1))]}"
  done
  printf '  groups:\n    kube_control_plane: {hosts: [node1]}\n    kube_worker: {hosts: [node2, node3]}\n'
  printf '    etcd: {hosts: [node1, node2, node3]}\n    image_registry: {hosts: [node1]}\n'
} > "$bench/inventory.yaml"
printf 'apiVersion: kubekey.kubesphere.io/v1\nkind: Config\nmetadata: {name: bench}\nspec:\n  etcd: {deployment_type: external}\n  image_registry:\n    type: kk\n    auth: {registry: "dockerhub.kubekey.local:5443"}\n' \
  > "$bench/config.yaml"
rm -rf "$bench/work"
log "(a) kk-install on ${kk_ips[*]}"
start=$(date +%s.%N)
"$kk_install" --bundle "$bundle" -i "$bench/inventory.yaml" -c "$bench/config.yaml" \
  --work-dir "$bench/work" --known-hosts "$(env_of kk KK_NODES_KNOWN_HOSTS)" --fio-size 1m \
  --output json \
  > "$bench/kk-summary.json" 2> "$bench/kk-install.log" || { tail -40 "$bench/kk-install.log" >&2; die "the kk install failed"; }
kk_seconds=$(echo "$(date +%s.%N) - $start" | bc)
for ip in "${kk_ips[@]}"; do wire "$ip"; done > "$bench/kk-wire.txt"

# The small files kk wrote on each node (its record, minus binaries and kk's own files), fetched
# into configs/nodeN/ to be copied by the KubeKey way to the node of the same role.
rm -rf "$bench/configs"
for i in 1 2 3; do
  mkdir -p "$bench/configs/node$i"
  ssh -F "$kk_ssh_config" "node$i" 'cat /etc/kubekey/installed.json' > "$bench/configs/record-$i.json"
  python3 - "$bench/configs/record-$i.json" > "$bench/configs/list-$i.txt" <<'PY'
import json, sys
for path in json.load(open(sys.argv[1]))["files"]:
    if path.startswith(("/usr/local/bin/", "/usr/local/sbin/", "/opt/cni/bin/", "/etc/kubekey/", "/var/lib/kk/")):
        continue
    if "kk-registry" in path or path.startswith("/etc/kk/pki/registry"):
        continue  # kk's own registry
    print(path)
PY
  # shellcheck disable=SC2046
  ssh -F "$kk_ssh_config" "node$i" "tar -C / -cf - $(sed 's|^/||' "$bench/configs/list-$i.txt" | tr '\n' ' ')" \
    | tar -C "$bench/configs/node$i" -xf -
done

# (b) the KubeKey way: per node one SSH connection (a master), then one scp per file, nodes in
# parallel.
copy_node() {  # copy_node I
  local i=$1 ip=${key_ips[$(($1 - 1))]} m=$bench/cm-$1 f dirs
  local ssh_opts=(-F "$key_ssh_config" -o ControlMaster=auto -o "ControlPath=$m" -o ControlPersist=300)
  dirs=$(sed 's|/[^/]*$||' "$bench/configs/list-$i.txt" | sort -u | tr '\n' ' ')
  # shellcheck disable=SC2029  # the node's directories, known here
  ssh "${ssh_opts[@]}" "$ip" "mkdir -p /tmp/kubekey/runtime /tmp/kubekey/etcd /tmp/kubekey/kubernetes /tmp/kubekey/helm $dirs"
  local files=("$bench"/files/runtime/* "$bench"/files/etcd/* "$bench"/files/kubernetes/*)
  if [ "$i" = 1 ]; then files+=("$bench"/files/helm/*); fi
  for f in "${files[@]}"; do
    scp -q "${ssh_opts[@]}" "$f" "$ip:/tmp/kubekey/$(basename "$(dirname "$f")")/"
  done
  while read -r f; do
    scp -q -p "${ssh_opts[@]}" "$bench/configs/node$i$f" "$ip:$f"
  done < "$bench/configs/list-$i.txt"
}
for i in 1 2 3; do masters+=("$bench/cm-$i"); done
log "(b) the KubeKey way on ${key_ips[*]}"
start=$(date +%s.%N)
pids=()
for i in 1 2 3; do copy_node "$i" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid" || die "a KubeKey-way copy failed"; done
key_seconds=$(echo "$(date +%s.%N) - $start" | bc)
for ip in "${key_ips[@]}"; do wire "$ip"; done > "$bench/key-wire.txt"
# The copies arrived whole.
for i in 1 2 3; do
  ssh -F "$key_ssh_config" "node$i" 'cd /tmp/kubekey && sha256sum */*' > "$bench/key-sums-$i.txt"
done
(cd "$bench/files" && sha256sum -- */*) > "$bench/files.sha256"
for i in 1 2 3; do
  expected=$(if [ "$i" = 1 ]; then cat "$bench/files.sha256"; else grep -v ' helm/' "$bench/files.sha256"; fi | sort)
  [ "$expected" = "$(sort "$bench/key-sums-$i.txt")" ] || die "node$i's copies differ"
done

python3 - "$bench" "$kk_seconds" "$key_seconds" "$kk_install" "$bundle" "$target/dist/kk-node" <<'PY'
import json, os, sys
bench, kk_s, key_s, installer, bundle, agent = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
mib = lambda b: f"{b / 2**20:.1f} MiB"
summary = json.load(open(f"{bench}/kk-summary.json"))
kk_wire = [int(x) for x in open(f"{bench}/kk-wire.txt").read().split()]
key_wire = [int(x) for x in open(f"{bench}/key-wire.txt").read().split()]
installer_size, bundle_size = os.path.getsize(installer), os.path.getsize(bundle)
agent_size = os.path.getsize(agent)
rows = [line.rstrip("\n").split("\t") for line in open(f"{bench}/binaries.tsv")]
all_bins = sum(int(r[2]) for r in rows)
runtime = sum(int(r[2]) for r in rows if r[3] == "runtime")
etcd = sum(int(r[2]) for r in rows if r[3] == "etcd")
kube = sum(int(r[2]) for r in rows if r[3] == "kubernetes")
helm = sum(int(r[2]) for r in rows if r[3] == "helm")
configs = []
for i in (1, 2, 3):
    paths = [l.strip() for l in open(f"{bench}/configs/list-{i}.txt") if l.strip()]
    configs.append((len(paths), sum(os.path.getsize(f"{bench}/configs/node{i}{p}") for p in paths)))
print(f"bundle {mib(bundle_size)}; its binaries {mib(all_bins)} ({len(rows)} files), of which runtime "
      f"(containerd, runc, cni-plugins, crictl) {mib(runtime)}, etcd {mib(etcd)}, kubeadm+kubelet+kubectl "
      f"{mib(kube)} (the lab's stand-ins), helm {mib(helm)}; static kk-install {mib(installer_size)} "
      f"(with the agent appended), node agent kk-node {agent_size} B ({mib(agent_size)})")
print()
print(f"{'node':<6} {'kk sent':>10} {'kk wire':>10} {'KubeKey-way files':>18} {'KubeKey-way wire':>17} {'kk/KubeKey (wire)':>18}")
for i in (1, 2, 3):
    sent = summary["sent"].get(f"node{i}", 0)
    payload = runtime + etcd + kube + (helm if i == 1 else 0) + configs[i - 1][1]
    print(f"node{i:<2} {mib(sent):>10} {mib(kk_wire[i-1]):>10} {mib(payload):>18} {mib(key_wire[i-1]):>17} {kk_wire[i-1] / key_wire[i-1]:>18.2f}")
print(f"{'all':<6} {mib(sum(summary['sent'].values())):>10} {mib(sum(kk_wire)):>10} "
      f"{mib(3 * (runtime + etcd + kube) + helm + sum(c[1] for c in configs)):>18} {mib(sum(key_wire)):>17} {sum(kk_wire) / sum(key_wire):>18.2f}")
print()
print("bytes per node: the installer machine's wire bytes to the node / the bundle's binary bytes "
      "(target <= 0.05 for a node that is not the registry host)")
print(f"{'node':<6} {'kk wire':>10} {'kk / binaries':>14} {'target':>8} {'KubeKey way / binaries':>23}")
for i in (1, 2, 3):
    target = "-" if i == 1 else ("met" if kk_wire[i - 1] <= 0.05 * all_bins else "MISSED")
    print(f"node{i:<2} {mib(kk_wire[i-1]):>10} {kk_wire[i-1] / all_bins:>14.3f} {target:>8} {key_wire[i-1] / all_bins:>23.3f}")
print()
print("kk's sent, by what: ")
for i in (1, 2, 3):
    sent = summary["sent"].get(f"node{i}", 0)
    rest = sent - agent_size - (installer_size + bundle_size if i == 1 else 0)
    print(f"  node{i}: kk-node {agent_size} B" + (f" + kk-install {installer_size} B + bundle {bundle_size} B" if i == 1 else "")
          + f" + certificates and configs {rest} B")
print(f"KubeKey-way small files per node: " + ", ".join(f"node{i + 1} {n} files {b} B" for i, (n, b) in enumerate(configs)))
print()
print(f"wall time: kk full install {kk_s:.1f} s (kk's own summary: {summary['seconds']:.1f} s); "
      f"KubeKey-way copy only {key_s:.1f} s")
PY

# What the agent is made of: its largest crates, from an unstripped build of the same profile.
if cargo bloat --version >/dev/null 2>&1; then
  log "the node agent's largest crates (cargo bloat, unstripped node profile)"
  CC_x86_64_unknown_linux_musl=musl-gcc CARGO_PROFILE_NODE_STRIP=false cargo bloat --profile node --target x86_64-unknown-linux-musl \
    -p kk-node --crates -n 15 2>/dev/null
else
  log "cargo-bloat not installed: no breakdown of the agent (cargo install cargo-bloat --locked)"
fi

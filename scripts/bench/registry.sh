#!/usr/bin/env bash
# `kk-install registry serve` against Debian's docker-registry (distribution 2.8), serving the
# same images, measured with the same client (wrk), threads and connections, in one run:
#   (a) manifest GETs by tag and digest (rotating over the lab's images, with a runtime's Accept
#       header): requests/s and p99 latency
#   (b) GETs of one incompressible layer of BLOB_MB MB: MB/s and p99 latency
#
#   bash scripts/bench/registry.sh [seconds per measurement, default 10] [rounds, default 3]
#
# Environment: THREADS (wrk threads, default 2), CONNECTIONS (default 64), BLOB_MB (default 8).
# docker-registry is the upstream lab's (scripts/lab/upstream.sh, LAB_DIR target/lab/bench-registry),
# seeded with one more image, bench/blob:1, holding the big layer. The bundle is manifests/lab.yaml
# plus that image, built with a release kk-bundle, unpacked with a release kk-install and served by
# it on a free loopback port. The two servers are measured alternately, each round both; the table
# gives the medians. Only processes this script started are stopped, by their recorded PIDs.
set -euo pipefail
LOG_NAME=bench/registry
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
seconds=${1:-10}
rounds=${2:-3}
threads=${THREADS:-2}
connections=${CONNECTIONS:-64}
blob_mb=${BLOB_MB:-8}


command -v wrk >/dev/null 2>&1 || bash scripts/setup.sh >/dev/null
command -v wrk >/dev/null 2>&1 || die "wrk is missing (as root, bash scripts/setup.sh installs it)"
find_cargo
cargo build --release --locked -p kk-bundle -p kk-install >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
kk_bundle=$target/release/kk-bundle kk_install=$target/release/kk-install

export LAB_DIR=$root/target/lab/bench-registry
bench=$root/target/bench/registry
mkdir -p "$bench"
server_pid=""
cleanup() {
  # Our registry, if this script started it and it still is that process.
  if [ -n "$server_pid" ] && tr '\0' ' ' < "/proc/$server_pid/cmdline" 2>/dev/null | grep -qF "registry serve --store $bench/store"; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT
bash scripts/lab/upstream.sh up >/dev/null
# shellcheck source=/dev/null
source "$LAB_DIR/env"
registry=$KK_LAB_REGISTRY

# The big image: one incompressible layer (as gzip layers are) of BLOB_MB MB, pushed into the
# lab registry once (redone when the size changes or the registry lost it).
if [ "$(cat "$bench/seeded" 2>/dev/null || true)" != "$blob_mb" ] \
   || ! curl -sfI -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$registry/v2/bench/blob/manifests/1" >/dev/null; then
  layout=$bench/oci-src
  rm -rf "$layout" "$bench/files"
  mkdir -p "$bench/files"
  head -c $((blob_mb * 1000000)) /dev/urandom > "$bench/files/data.bin"
  umoci init --layout "$layout"
  umoci new --image "$layout:base"
  umoci config --image "$layout:base" --tag blob --architecture amd64 --os linux
  umoci insert --image "$layout:blob" "$bench/files" /data
  skopeo copy -q --dest-tls-verify=false --format oci "oci:$layout:blob" "docker://$registry/bench/blob:1"
  rm -rf "$bench/files" "$layout"
  echo "$blob_mb" > "$bench/seeded"
fi

# The bundle: manifests/lab.yaml plus bench/blob:1, rendered for this lab.
bash scripts/lab/render.sh manifests/lab.yaml "$bench/lab.yaml.tmp"
sed "/^  images:/a\\    - $registry/bench/blob:1" "$bench/lab.yaml.tmp" > "$bench/lab.yaml"
rm -f "$bench/lab.yaml.tmp"
grep -qF -- "- $registry/bench/blob:1" "$bench/lab.yaml" || die "could not add bench/blob:1 to the manifest"
"$kk_bundle" build "$bench/lab.yaml" -o "$bench/lab.tar.zst" --cache "$bench/cache" \
  --lock "$bench/lab.lock.yaml" --allow-missing-platforms >/dev/null 2>"$bench/build.log" \
  || { cat "$bench/build.log" >&2; die "kk-bundle build failed"; }
rm -rf "$bench/store"
"$kk_install" unpack --bundle "$bench/lab.tar.zst" --store "$bench/store" >/dev/null

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# As an operator runs it: default log level, one access-log line per request (to a file).
"$kk_install" registry serve --store "$bench/store" --listen "127.0.0.1:$port" >/dev/null 2>"$bench/serve.log" </dev/null &
server_pid=$!
ours=127.0.0.1:$port
for _ in $(seq 1 100); do
  curl -sf -o /dev/null "http://$ours/v2/" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$bench/serve.log" >&2; die "kk-install registry serve exited"; }
  sleep 0.1
done
curl -sf -o /dev/null "http://$ours/v2/" || die "kk-install registry serve does not answer on $ours"

accept='application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json'
# Repository names: the bundle serves `host/path` (the lab address's `:` as `_`); docker-registry
# has the same images under their path alone.
lab_host=${registry/:/_}
pairs=(
  "docker.io/library/busybox library/busybox 1.36"
  "lab.local/lab/app-a lab/app-a 1.0"
  "lab.local/lab/app-b lab/app-b 1.0"
  "lab.local/lab/docker-media lab/docker-media 1.0"
  "$lab_host/lab/oci-media lab/oci-media 1.0"
  "$lab_host/bench/blob bench/blob 1"
)
ours_paths=() theirs_paths=()
# get URL OUT: the body into OUT, prints the Docker-Content-Digest header.
get() { curl -sf -H "Accept: $accept" -D - -o "$2" "$1" | tr -d '\r' | awk 'tolower($1) == "docker-content-digest:" { print $2 }'; }
for pair in "${pairs[@]}"; do
  read -r name upstream tag <<<"$pair"
  d_ours=$(get "http://$ours/v2/$name/manifests/$tag" "$bench/m.ours") || die "ours: no $name:$tag"
  d_theirs=$(get "http://$registry/v2/$upstream/manifests/$tag" "$bench/m.theirs") || die "docker-registry: no $upstream:$tag"
  cmp -s "$bench/m.ours" "$bench/m.theirs" && [ "$d_ours" = "$d_theirs" ] \
    || die "$name:$tag differs between the two registries ($d_ours vs $d_theirs)"
  ours_paths+=("/v2/$name/manifests/$tag" "/v2/$name/manifests/$d_ours")
  theirs_paths+=("/v2/$upstream/manifests/$tag" "/v2/$upstream/manifests/$d_theirs")
done
# The big layer: the only layer of bench/blob:1 (the last manifest fetched above).
layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' "$bench/m.ours")
get "http://$ours/v2/$lab_host/bench/blob/blobs/$layer" "$bench/b.ours" >/dev/null || die "ours: no blob $layer"
get "http://$registry/v2/bench/blob/blobs/$layer" "$bench/b.theirs" >/dev/null || die "docker-registry: no blob $layer"
cmp -s "$bench/b.ours" "$bench/b.theirs" || die "blob $layer differs between the two registries"
blob_bytes=$(stat -c %s "$bench/b.ours")
[ "sha256:$(sha256sum < "$bench/b.ours" | cut -d' ' -f1)" = "$layer" ] || die "blob $layer: wrong digest"
rm -f "$bench/m.ours" "$bench/m.theirs" "$bench/b.ours" "$bench/b.theirs"
log "same ${#ours_paths[@]} manifest paths and one ${blob_bytes}-byte layer on both; ours 127.0.0.1:$port (pid $server_pid), docker-registry $registry"

# lua FILE PATH...: a wrk script rotating over PATHs with the Accept header, printing one RESULT line.
lua() {
  local file=$1; shift
  {
    echo '-- written by scripts/bench/registry.sh'
    printf 'wrk.headers["Accept"] = "%s"\n' "$accept"
    echo 'local paths = {'
    printf '  "%s",\n' "$@"
    echo '}'
    cat <<'LUA'
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d bytes=%d p50_us=%d p99_us=%d non2xx=%d socket_errors=%d timeouts=%d\n",
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write, e.timeout))
end
LUA
  } > "$file"
}
lua "$bench/manifests-ours.lua" "${ours_paths[@]}"
lua "$bench/manifests-theirs.lua" "${theirs_paths[@]}"
lua "$bench/blob-ours.lua" "/v2/$lab_host/bench/blob/blobs/$layer"
lua "$bench/blob-theirs.lua" "/v2/bench/blob/blobs/$layer"

# measure NAME HOST SCRIPT SECONDS: one wrk run, its RESULT line appended to results.txt.
results=$bench/results.txt
: > "$results"
measure() {
  local out line
  # A 30 s timeout: 64 connections sharing a few hundred MB/s each wait seconds for 8 MB.
  out=$(wrk -t"$threads" -c"$connections" -d"$4s" --timeout 30s --latency -s "$3" "http://$2") || die "wrk against $2 failed"
  line=$(grep '^RESULT ' <<<"$out") || { printf '%s\n' "$out" >&2; die "no result from wrk against $2"; }
  [ "$1" = warm-up ] || echo "$1 $line" >> "$results"
  log "$1: ${line#RESULT }"
}
# A short warm-up of each server and path set (page cache, connections, the registries' caches).
for kind in manifests blob; do
  measure warm-up "$ours" "$bench/$kind-ours.lua" 2
  measure warm-up "$registry" "$bench/$kind-theirs.lua" 2
done
for round in $(seq 1 "$rounds"); do
  for kind in manifests blob; do
    measure "$kind ours $round" "$ours" "$bench/$kind-ours.lua" "$seconds"
    measure "$kind theirs $round" "$registry" "$bench/$kind-theirs.lua" "$seconds"
  done
done
kill -0 "$server_pid" 2>/dev/null || die "kk-install registry serve died during the run (log: $bench/serve.log)"

python3 - "$results" "$threads" "$connections" "$seconds" "$rounds" "$blob_bytes" <<'PY'
import statistics, sys
path, threads, connections, seconds, rounds, blob = sys.argv[1], *map(int, sys.argv[2:])
runs = {}
for line in open(path):
    kind, side, _, _, *fields = line.split()
    r = dict(f.split("=") for f in fields)
    r = {k: int(v) for k, v in r.items()}
    if r["non2xx"] or r["socket_errors"] or r["timeouts"]:
        sys.exit(f"{kind} {side}: {r['non2xx']} non-2xx answers, {r['socket_errors']} socket errors, {r['timeouts']} timeouts")
    runs.setdefault((kind, side), []).append(r)
def med(kind, side, f):
    return statistics.median(f(r) for r in runs[(kind, side)])
rps = lambda r: r["requests"] / (r["duration_us"] / 1e6)
mbs = lambda r: r["bytes"] / (r["duration_us"] / 1e6) / 1e6
p99 = lambda r: r["p99_us"] / 1000
print(f"wrk -t{threads} -c{connections} -d{seconds}s --timeout 30s --latency, medians of {rounds} rounds; blob {blob} bytes")
print("| measure | kk-install registry serve | docker-registry | ours / docker-registry |")
print("|---|---|---|---|")
rows = [
    ("manifests: requests/s", "manifests", rps, "{:.0f}", True),
    ("manifests: p99 latency ms", "manifests", p99, "{:.2f}", False),
    ("blob: MB/s", "blob", mbs, "{:.0f}", True),
    ("blob: requests/s", "blob", rps, "{:.1f}", True),
    ("blob: p99 latency ms", "blob", p99, "{:.1f}", False),
]
for label, kind, f, fmt, _ in rows:
    a, b = med(kind, "ours", f), med(kind, "theirs", f)
    print(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {a / b:.2f} |")
r_rps = med("manifests", "ours", rps) / med("manifests", "theirs", rps)
r_mbs = med("blob", "ours", mbs) / med("blob", "theirs", mbs)
print(f"\ntargets: manifest requests/s ratio {r_rps:.2f} (>= 1.5: {'met' if r_rps >= 1.5 else 'missed'}), "
      f"blob MB/s ratio {r_mbs:.2f} (>= 1.0: {'met' if r_mbs >= 1.0 else 'missed'})")
PY

#!/usr/bin/env bash
# What the Debian packages of one distribution add to a Kubernetes bundle: `kk-bundle build` time
# (cold cache: fetching, verifying and resolving included) and bundle size, with and without
# `spec.osPackages` for debian-12 amd64 from the upstream lab's real Debian repository
# (scripts/lab/debrepo.sh). Both manifests are the catalog's for one Kubernetes version with
# ipvs and NFS storage (scripts/lab/catalog-manifest.py), so the packages are the only difference:
# the closure of socat conntrack ebtables ethtool ipset ipvsadm nfs-common nfs-kernel-server.
# It prints the BENCHMARKS.md section's table on stdout; progress goes to stderr.
#
#   bash scripts/bench/packages.sh [runs, default 5] [Kubernetes version, default v1.33.0]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
runs=${1:-5}
version=${2:-v1.33.0}

bash scripts/setup.sh >/dev/null
find_cargo
cargo build --release --locked -p kk-bundle >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
kk=$target/release/kk-bundle

export LAB_DIR=$root/target/lab/bench-packages
bench=$root/target/bench/packages
rm -rf "$bench"; mkdir -p "$bench"
bash scripts/lab/upstream.sh up >/dev/null
trap 'bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true' EXIT
# shellcheck source=/dev/null
source "$LAB_DIR/env"

"$kk" catalog "$version" --kube-proxy-mode ipvs --storage nfs --output json > "$bench/catalog.json"
bash scripts/lab/seed-catalog.sh "$bench/catalog.json" >/dev/null
render() { # FILE OPTIONS...
  local file=$1; shift
  python3 scripts/lab/catalog-manifest.py "$bench/catalog.json" k8s "$KK_LAB_HTTP" "$KK_LAB_REGISTRY" \
    --kube-proxy-mode ipvs --storage nfs "$@" > "$file"
}
render "$bench/without.yaml"
render "$bench/with.yaml" --packages "$KK_LAB_DEBIAN_URL" "$KK_LAB_DEBIAN_SUITE" "$KK_LAB_DEBIAN_KEYRING"

build() { # NAME: a cold-cache build of NAME.yaml into NAME.tar.zst
  printf "'%s' build '%s/%s.yaml' -o '%s/%s.tar.zst' --cache '%s/cache-%s' >/dev/null 2>&1" \
    "$kk" "$bench" "$1" "$bench" "$1" "$bench" "$1"
}
hyperfine --runs "$runs" --export-json "$bench/hyperfine.json" \
  -n without --prepare "rm -rf '$bench/cache-without' '$bench/without.lock.yaml'" "$(build without)" \
  -n with --prepare "rm -rf '$bench/cache-with' '$bench/with.lock.yaml'" "$(build with)" >&2

"$kk" inspect "$bench/with.tar.zst" --output json > "$bench/with.json"
python3 - "$bench" "$runs" "$version" <<'PY'
import datetime, json, os, sys
bench, runs, version = sys.argv[1], sys.argv[2], sys.argv[3]
r = {x["command"]: x for x in json.load(open(f"{bench}/hyperfine.json"))["results"]}
size = lambda name: os.path.getsize(f"{bench}/{name}.tar.zst")
sets = json.load(open(f"{bench}/with.json")).get("packages", [])
debs = sum(len(s["packages"]) for s in sets)
deb_bytes = sum(p["size"] for s in sets for p in s["packages"])
mib = lambda n: f"{n / 2**20:.1f} MiB"
print(f"{datetime.date.today()}, Kubernetes {version} (ipvs, NFS), cold cache, medians of {runs}:\n")
print("| bundle | build s (min–max) | bundle size |")
print("|---|---|---|")
for name in ("without", "with"):
    x = r[name]
    print(f"| {name} Debian 12 packages | {x['median']:.2f} ({x['min']:.2f}–{x['max']:.2f}) | {mib(size(name))} |")
added_t = r["with"]["median"] - r["without"]["median"]
added_b = size("with") - size("without")
print(f"\nThe packages add {added_t:.2f} s ({r['with']['median'] / r['without']['median']:.2f}×) and "
      f"{mib(added_b)}: {debs} `.deb`s of {mib(deb_bytes)} (already compressed, stored at level 1).")
PY

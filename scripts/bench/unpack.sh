#!/usr/bin/env bash
# kk-install unpack (verifying every digest, temp -> rename) against plain `zstd -d | tar -x`
# (no verification at all), on the same bundle, side by side.
#
#   bash scripts/bench/unpack.sh [BUNDLE] [runs, default 5]
#
# Without BUNDLE, uses the bundle scripts/bench/build.sh wrote (target/bench/build/a.tar.zst).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bundle=${1:-target/bench/build/a.tar.zst}
runs=${2:-5}
[ -f "$bundle" ] || { echo "no bundle at $bundle: run scripts/bench/build.sh first or pass one" >&2; exit 1; }
find_cargo
cargo build --release --locked -p kk-install >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
kk=$target/release/kk-install
work=target/bench/unpack
mkdir -p "$work"
hyperfine --runs "$runs" --export-json "$work/hyperfine.json" \
  -n kk-install-unpack --prepare "rm -rf '$work/store'" "'$kk' unpack --bundle '$bundle' --store '$work/store' >/dev/null" \
  -n zstd-d-tar-x --prepare "rm -rf '$work/plain' && mkdir -p '$work/plain'" "zstd -dc '$bundle' | tar -x -C '$work/plain'" >&2
python3 - "$work/hyperfine.json" "$bundle" <<'PY'
import json, os, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
a, b = r["kk-install-unpack"], r["zstd-d-tar-x"]
size = os.path.getsize(sys.argv[2])
print(f"bundle {size/1e6:.0f} MB: kk-install unpack {a:.2f} s, zstd -d | tar -x {b:.2f} s, ratio {a/b:.2f}")
PY

#!/usr/bin/env bash
# Measures zstd levels on executable data (what a bundle's binaries frames hold), with the same
# two worker threads the bundle writer uses, to choose the writer's default level.
# Usage: scripts/bench/zstd-levels.sh [size-in-MB]   (prints one line per level)
set -euo pipefail
size_mb=${1:-200}
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# Real executables from the machine: the same kind of bytes as kubelet, containerd or etcd.
find /usr/bin /usr/sbin /usr/lib -maxdepth 2 -type f -size +1M -print0 2>/dev/null \
  | sort -z | xargs -0 cat 2>/dev/null | head -c $((size_mb * 1000000)) > "$data" || true
bytes=$(stat -c %s "$data")
echo "input: $bytes bytes of executables; zstd $(zstd -V | grep -o 'v[0-9.]*' | head -1), -T2"
printf '%-6s %10s %12s %8s\n' level seconds bytes ratio
for level in 1 3 6 9 12 19; do
  start=$(date +%s.%N)
  out=$(zstd -q -T2 "-$level" -c "$data" | wc -c)
  end=$(date +%s.%N)
  printf '%-6s %10.2f %12d %8.3f\n' "$level" "$(echo "$end - $start" | bc)" "$out" "$(echo "scale=3; $out / $bytes" | bc)"
done

#!/usr/bin/env bash
# The rebuild (c) of scripts/bench/build.sh with several kk-bundle binaries, interleaved in one
# run beside the write floor, for weighing a change whose effect is near this machine's noise: the
# bench's 5 runs cannot tell 0.03 s apart (a rebuild's spread is about 0.025 s), 24 rounds in a
# shuffled order each can.
#
#   bash scripts/bench/rebuild-ab.sh ROUNDS NAME=PATH-TO-KK-BUNDLE [NAME=PATH ...]
#
# Needs what scripts/bench/build.sh leaves in target/bench/build (run it once first); brings the
# upstream lab up and down itself. Each binary first gets a warm cache of its own, a hard-linked
# copy of the bench's in which it builds the bench's manifest once: frame-cache entries of another
# entry format than the binary's would be compressed again in every timed run. Each rebuild starts
# from a fresh hard-linked copy of that cache and runs twice, untimed and then timed, so the bundle
# it replaces is the one that binary writes, as in the bench's back-to-back runs. The floor is
# the bench's: the bundle's bytes written once with fdatasync over the previous copy. Prints each
# binary's median, min and max, and its median's ratio to the floor's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
rounds=${1:?usage: rebuild-ab.sh ROUNDS NAME=KK-BUNDLE...}
shift
[ $# -gt 0 ] || { echo "usage: rebuild-ab.sh ROUNDS NAME=KK-BUNDLE..." >&2; exit 2; }
bench=$root/target/bench/build
[ -d "$bench/cache-c" ] && [ -f "$bench/changed.yaml" ] ||
  { echo "no warm cache in $bench: run scripts/bench/build.sh first" >&2; exit 1; }

export LAB_DIR=$root/target/lab/bench
bash scripts/lab/upstream.sh up >/dev/null
trap 'rm -rf "$bench/cache-run" "$bench"/ab-* "$bench/ab.lock.yaml" "$bench/ab.tar.zst" "$bench/floor.out"; bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true' EXIT

declare -A binary times
for arg in "$@"; do
  name=${arg%%=*}
  binary[$name]=${arg#*=}
  cp -al "$bench/cache-c" "$bench/ab-cache-$name"
  "${binary[$name]}" build "$bench/bench.yaml" -o "$bench/ab-warm.tar.zst" --cache "$bench/ab-cache-$name" \
    --lock "$bench/ab-warm.lock.yaml" >/dev/null 2>&1 || { echo "${binary[$name]} failed" >&2; exit 1; }
  rm -f "$bench/ab-warm.tar.zst" "$bench/ab-warm.lock.yaml"
done

rebuild() {  # rebuild NAME: prints the seconds of the timed run
  local kk=${binary[$1]} run start end
  for run in untimed timed; do
    rm -rf "$bench/cache-run" "$bench/ab.lock.yaml"
    cp -al "$bench/ab-cache-$1" "$bench/cache-run"
    sync
    start=$(date +%s.%N)
    "$kk" build "$bench/changed.yaml" -o "$bench/ab.tar.zst" --cache "$bench/cache-run" \
      --lock "$bench/ab.lock.yaml" >/dev/null 2>&1 || { echo "$kk failed" >&2; exit 1; }
    end=$(date +%s.%N)
  done
  echo "$end - $start" | bc
}

floor() {  # the bundle's bytes written once with fdatasync, from the page cache
  local start end
  cat "$bench/c.tar.zst" >/dev/null
  start=$(date +%s.%N)
  dd if="$bench/c.tar.zst" of="$bench/floor.out" bs=1M conv=fdatasync status=none
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

# The first floor write only creates its file; every timed one truncates the previous copy, as
# a rebuild replaces the previous bundle.
dd if="$bench/c.tar.zst" of="$bench/floor.out" bs=1M conv=fdatasync status=none
for _ in $(seq "$rounds"); do
  for name in $(printf '%s\n' "${!binary[@]}" floor | shuf); do
    if [ "$name" = floor ]; then
      times[floor]+=" $(floor)"
    else
      times[$name]+=" $(rebuild "$name")"
    fi
  done
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)], v[1], v[NR]}'; }
read -r floor_median _ <<<"$(median <<<"${times[floor]}")"
echo "| binary | median s | min s | max s | median / floor |"
echo "|---|---|---|---|---|"
for name in "$@" floor; do
  name=${name%%=*}
  read -r med min max <<<"$(median <<<"${times[$name]}")"
  printf '| %s | %.3f | %.3f | %.3f | %.2f |\n' "$name" "$med" "$min" "$max" "$(echo "$med / $floor_median" | bc -l)"
done
echo
echo "$rounds rounds, each binary and the floor once per round in a shuffled order, $(date -u +%F)"

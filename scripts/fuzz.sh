#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ under libFuzzer (cargo-fuzz; the sanitizer flags it needs work
# on the stable toolchain with RUSTC_BOOTSTRAP=1).
#
#   bash scripts/fuzz.sh TARGET [SECONDS]   # one target, default 60 s
#   bash scripts/fuzz.sh all [SECONDS]      # every target, SECONDS each
#   bash scripts/fuzz.sh list               # the targets
#   bash scripts/fuzz.sh report             # a FUZZING.md table of each target's last run
#
# Each run starts from the committed seeds (fuzz/corpus/TARGET, left as they are) and keeps what
# it finds in target/fuzz-corpus/TARGET. A crash, a hang (-timeout, 10 s) or an input that needs
# more than 1 GiB (-rss_limit_mb) fails the run; libFuzzer leaves the input in
# fuzz/artifacts/TARGET/, and it belongs in fuzz/regressions/TARGET/ (with a name saying what it
# found) once fixed: `cargo test --manifest-path fuzz/Cargo.toml` replays every kept input.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
find_cargo
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  printf '==> cargo install cargo-fuzz\n' >&2
  cargo install --locked cargo-fuzz >&2
fi
export RUSTC_BOOTSTRAP=1
targets=$(cd fuzz && cargo fuzz list)
what=${1:?usage: scripts/fuzz.sh TARGET|all|list|report [SECONDS]}
seconds=${2:-60}
if [ "$what" = list ]; then printf '%s\n' "$targets"; exit 0; fi

# One table row from a run's log: libFuzzer's last status line (coverage: `cov` edges, `ft`
# features, corpus) and its final stats.
row() {
  local log=$1 last stat
  last=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  printf '| `%s` | %s s | %s | %s | %s | %s | %s | %s s | %s MiB |\n' "$(basename "$log" .log)" \
    "$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)" \
    "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" \
    "$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")" "$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")" \
    "$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")" "$(stat slowest_unit_time_sec)" "$(stat peak_rss_mb)"
}
header='| target | time | runs | runs/s | edges (cov) | features (ft) | corpus (inputs/size) | slowest input | peak memory |\n|---|---|---|---|---|---|---|---|---|\n'
if [ "$what" = report ]; then
  printf "$header"
  for target in $targets; do
    log=$root/target/fuzz-corpus/$target.log
    if [ -f "$log" ]; then row "$log"; fi
  done
  exit 0
fi
if [ "$what" = all ]; then run=$targets; else run=$what; fi
# The sanitizer build goes below the workspace's target directory, with everything else built.
# Optimised, with debug assertions and overflow checks (-a): an offset computed from a size in
# the file that overflows must crash the run, not wrap silently as in a plain release build
# (-O alone turns them off).
fuzz_target_dir=$root/target/fuzz
(cd fuzz && cargo fuzz build -O -a --target-dir "$fuzz_target_dir" >&2)
for target in $run; do
  grep -qx "$target" <<<"$targets" || { printf 'error: no fuzz target `%s`; hint: scripts/fuzz.sh list\n' "$target" >&2; exit 2; }
  corpus=$root/target/fuzz-corpus/$target
  mkdir -p "$corpus"
  printf '==> fuzz %s for %s s\n' "$target" "$seconds" >&2
  log=$root/target/fuzz-corpus/$target.log
  # No leak scan after every input that allocated more than it freed: the bundle reader's
  # hashing thread makes that every input, and the scans took about 40 % of the bundle targets'
  # time (3.7 times fewer runs, measured with perf). Memory that grows is caught by the limit.
  if ! (cd fuzz && cargo fuzz run -O -a --target-dir "$fuzz_target_dir" "$target" "$corpus" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -detect_leaks=0 -print_final_stats=1) >"$log" 2>&1; then
    tail -40 "$log" >&2
    printf 'error: fuzz target `%s` failed; the input is in fuzz/artifacts/%s/\n' "$target" "$target" >&2
    exit 1
  fi
  printf "$header" >&2
  row "$log" >&2
done

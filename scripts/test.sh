#!/usr/bin/env bash
# The README's test command: installs what the tests need, then format check, clippy, and every test of
# the workspace (nextest, profile `ci` from .config/nextest.toml) plus the doctests, then a short run of
# every fuzz target (scripts/fuzz.sh) after replaying every input the fuzzers ever kept. The fuzz runs
# go on in the background, at the lowest CPU priority, while the tests run: most of the tests' time is
# the lab tests, which run one at a time and wait on their nodes more than they compute.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$(dirname "${BASH_SOURCE[0]}")/.."

started=$SECONDS
# Each step with the run's elapsed time, so a slow CI run shows where its time went.
step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*" >&2; }

step "setup (scripts/setup.sh)"
bash scripts/setup.sh

# The SPDX project's validator: bundle-spec's tests check every bundle's SBOM with it, and fail without it.
if command -v pyspdxtools >/dev/null 2>&1; then
  printf 'setup: pyspdxtools present\n' >&2
else
  step "python3 -m pip install spdx-tools (pyspdxtools, the SBOM validator)"
  python3 -m pip install --quiet spdx-tools
  command -v pyspdxtools >/dev/null 2>&1 || { printf 'error: pyspdxtools is still not on PATH after installing spdx-tools\n' >&2; exit 1; }
fi

find_cargo

# CI builds a fresh clone once: incremental compilation's caches would only cost time and about
# 10 GiB of disk there, and a full disk fails the lab tests' own precheck (`airgap.disk_space`).
export CARGO_INCREMENTAL=0
free_gib=$(($(df -k --output=avail . | tail -1) / 1024 / 1024))
if ((free_gib < 20)); then
  printf 'warning: only %d GiB free here; the build and the lab tests use about 20 GiB, and a lab node whose disk is full fails its precheck\n' "$free_gib" >&2
fi

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "no module imports a module that imports it (scripts/check-modules.py, after its self-test)"
python3 scripts/check-modules.py --self-test

step "cargo clippy --workspace --all-targets --locked -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "the lab's kubeadm/kubelet/kubectl/crictl stand-ins behave as scripts/lab/standins/README.md says"
bash scripts/lab/standins/selftest.sh

step "fuzz: fmt and clippy of fuzz/, every kept input replayed"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
# In the workspace's target directory: the dependencies it shares with the workspace are built
# once (a separate one costs another 5 GB of disk and minutes of CPU).
cargo clippy --manifest-path fuzz/Cargo.toml --target-dir target --all-targets --locked -- -D warnings
cargo test --manifest-path fuzz/Cargo.toml --target-dir target --locked

# The sanitizer build has its own target directory (target/fuzz), so it never holds the lock the
# tests' own `cargo build` of the binaries waits on.
fuzz_log=target/fuzz-ci.log
step "fuzz: each target for 10 s, niced, in the background (log: $fuzz_log)"
nice -n 19 bash scripts/fuzz.sh all 10 >"$fuzz_log" 2>&1 &
fuzz_pid=$!

# A missing or changed snapshot fails the run (insta would otherwise write `.snap.new` files and,
# outside CI, pass); `cargo insta review` is how a developer accepts a change.
export INSTA_UPDATE=no
unset INSTA_FORCE_PASS
failed=()
step "cargo nextest run --workspace --locked --profile ci"
cargo nextest run --workspace --locked --profile ci || failed+=(nextest)

step "cargo test --workspace --doc --locked"
cargo test --workspace --doc --locked || failed+=(doctests)

step "waiting for the fuzz runs"
wait "$fuzz_pid" || failed+=(fuzz)
grep -E '^(==>|error)|^\| `' "$fuzz_log" >&2 || true
if [ "${#failed[@]}" -gt 0 ]; then
  [[ " ${failed[*]} " == *" fuzz "* ]] && tail -60 "$fuzz_log" >&2
  step "failed: ${failed[*]}"
  exit 1
fi

step "all checks passed"

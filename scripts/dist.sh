#!/usr/bin/env bash
# Builds kk-install as one statically linked file: target/dist/kk-install (in cargo's target directory),
# with the node agent kk-node (profile `node`, also written as target/dist/kk-node) appended behind a
# 48-byte trailer: `KKAGENT1`, its length (u64, little-endian), its sha256 (installer/src/agent.rs).
# Prefers musl (x86_64-unknown-linux-musl + musl-gcc for the C in zstd-sys); falls back to a static glibc
# build (crt-static) when the musl target or musl-gcc is missing.
set -euo pipefail
LOG_NAME=dist
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
find_cargo

MUSL_TARGET=x86_64-unknown-linux-musl
GNU_TARGET=x86_64-unknown-linux-gnu

musl_ready() {
  command -v musl-gcc >/dev/null 2>&1 || return 1
  # Without rustup the toolchain's own target list cannot be asked; trust the sysroot instead.
  local sysroot
  sysroot=$(rustc --print sysroot)
  [ -d "$sysroot/lib/rustlib/$MUSL_TARGET/lib" ]
}

if musl_ready; then
  target=$MUSL_TARGET
  how="musl ($MUSL_TARGET, C code built with musl-gcc)"
  export CC_x86_64_unknown_linux_musl=musl-gcc
  cargo_env=()
else
  target=$GNU_TARGET
  how="static glibc ($GNU_TARGET, -C target-feature=+crt-static; musl target or musl-gcc missing)"
  # Only for this target: --target keeps RUSTFLAGS away from build scripts and proc macros.
  cargo_env=(env "RUSTFLAGS=${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static")
fi

# cargo's target directory (CARGO_TARGET_DIR or build.target-dir may move it away from ./target).
target_dir=$(cargo metadata --format-version 1 --no-deps --locked | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -n "$target_dir" ] || { log "error: cannot find cargo's target directory"; exit 1; }
out="$target_dir/dist/kk-install"
shown=${out#"$PWD/"}

log "building kk-install: $how, release profile"
rm -f "$out"
"${cargo_env[@]}" cargo build --release --locked -p kk-install --target "$target"

log "building kk-node: $how, node profile (size over speed)"
agent="$target_dir/dist/kk-node"
rm -f "$agent"
"${cargo_env[@]}" cargo build --profile node --locked -p kk-node --target "$target"

mkdir -p "$target_dir/dist"
cp "$target_dir/$target/release/kk-install" "$out"
cp "$target_dir/$target/node/kk-node" "$agent"

# A static binary has no program interpreter and no NEEDED shared libraries.
for file in "$out" "$agent"; do
  if command -v readelf >/dev/null 2>&1; then
    if readelf -l "$file" | grep -q 'INTERP' || readelf -d "$file" | grep -q '(NEEDED)'; then
      log "error: ${file#"$PWD/"} is not statically linked:"
      readelf -d "$file" | grep '(NEEDED)' >&2 || true
      exit 1
    fi
  else
    log "warning: readelf not found (binutils); static linking not verified"
  fi
done

# The agent behind kk-install, then the trailer that finds and verifies it.
le64() {
  local n=$1 i
  for i in 0 1 2 3 4 5 6 7; do
    # shellcheck disable=SC2059 # the format is the byte
    printf "\\x$(printf %02x $(((n >> (8 * i)) & 255)))"
  done
}
agent_bytes=$(stat -c %s "$agent")
{
  cat "$agent"
  printf 'KKAGENT1'
  le64 "$agent_bytes"
  # shellcheck disable=SC2059 # the format is the digest's bytes
  printf "$(sha256sum "$agent" | cut -c1-64 | sed 's/../\\x&/g')"
} >>"$out"
log "${agent#"$PWD/"}: $agent_bytes bytes, appended to $shown"

bytes=$(stat -c %s "$out")
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
log "$shown: $bytes bytes ($mib MiB), built as $how"

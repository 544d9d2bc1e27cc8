#!/usr/bin/env bash
# Builds kk-install as one statically linked file: target/dist/kk-install (in cargo's target directory).
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

mkdir -p "$target_dir/dist"
cp "$target_dir/$target/release/kk-install" "$out"

# A static binary has no program interpreter and no NEEDED shared libraries.
if command -v readelf >/dev/null 2>&1; then
  if readelf -l "$out" | grep -q 'INTERP' || readelf -d "$out" | grep -q '(NEEDED)'; then
    log "error: $shown is not statically linked:"
    readelf -d "$out" | grep '(NEEDED)' >&2 || true
    exit 1
  fi
else
  log "warning: readelf not found (binutils); static linking not verified"
fi

bytes=$(stat -c %s "$out")
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
log "$shown: $bytes bytes ($mib MiB), built as $how"

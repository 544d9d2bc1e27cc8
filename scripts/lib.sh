# shellcheck shell=bash
# Shared by the scripts under scripts/ (source it; it sets no shell options of its own).

# log MESSAGE / die MESSAGE: to stderr, prefixed with LOG_NAME (set it before the first call;
# by default the script's name).
log() { printf '%s: %s\n' "${LOG_NAME:-$(basename "$0" .sh)}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# find_cargo: puts cargo on PATH when it is not there. Under `sudo`, root's PATH usually lacks
# the invoking user's rustup toolchain: try CARGO_HOME (or ~/.cargo), then the sudo user's.
find_cargo() {
  command -v cargo >/dev/null 2>&1 && return 0
  local dir
  for dir in "${CARGO_HOME:-$HOME/.cargo}/bin" ${SUDO_USER:+"$(getent passwd "$SUDO_USER" | cut -d: -f6)/.cargo/bin"}; do
    if [ -x "$dir/cargo" ]; then PATH="$dir:$PATH"; export PATH; return 0; fi
  done
}

# shellcheck shell=bash
# Shared by the upstream-lab scripts (source it; it sets no shell options of its own).
#
# Paths: LAB_DIR (default <repo>/target/lab/upstream) holds one lab's state; LAB_CACHE (default
# <repo>/target/lab/cache) holds downloads that every lab directory shares (helm, the arm64 busybox).

LAB_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$LAB_SCRIPTS/../.." && pwd)
LAB_CACHE=${LAB_CACHE:-$REPO/target/lab/cache}

# Debian's python3 when there is one: the lab needs only the standard library, and a pyenv shim
# would add its start-up time to every call (and its own process between us and the server).
if [ -z "${PYTHON:-}" ]; then
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=$(command -v python3 || true); fi
fi

lab_log() { printf '%s: %s\n' "${LAB_LOG_NAME:-lab}" "$*" >&2; }
lab_die() { lab_log "error: $*"; exit 1; }

# Makes LAB_DIR absolute (the env file and the registry config need absolute paths) and exports
# the helm homes inside it, so no helm call writes to $HOME.
lab_init_dir() {
  LAB_DIR=${LAB_DIR:-$REPO/target/lab/upstream}
  mkdir -p "$LAB_DIR" || lab_die "cannot create LAB_DIR $LAB_DIR"
  LAB_DIR=$(cd "$LAB_DIR" && pwd)
  case "$LAB_DIR" in
    *[[:space:]]*) lab_die "LAB_DIR must not contain whitespace (the env file is KEY=VALUE lines): '$LAB_DIR'" ;;
  esac
  export LAB_DIR
  export HELM_CONFIG_HOME=$LAB_DIR/helm/config HELM_CACHE_HOME=$LAB_DIR/helm/cache HELM_DATA_HOME=$LAB_DIR/helm/data
}

lab_require() {
  local tool missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  [ -n "$PYTHON" ] || missing+=(python3)
  [ "${#missing[@]}" -eq 0 ] || lab_die "missing tools: ${missing[*]} (install them as root: bash scripts/setup.sh)"
}

# A loopback port that was free a moment ago (the kernel picks it).
lab_free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Whether 127.0.0.1:PORT can be bound right now.
lab_port_free() {
  "$PYTHON" - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT leftovers are fine
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
}

# Whether PID runs. `kill -0` is not enough: an orphan that PID 1 has not reaped yet is a zombie,
# and signals to zombies succeed (LAB-NOTES pitfall P11).
lab_pid_alive() {
  local pid=$1 state
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Whether PID runs and its command line contains WORD (a recorded PID may have been reused).
lab_pid_is() {
  local pid=$1 word=$2
  lab_pid_alive "$pid" || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$word"
}

# The HTTP status of URL, or 000 when nothing answers.
lab_http_code() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" || true
}

lab_sha256() { sha256sum "$1" | cut -d' ' -f1; }

# --- images without Docker (LAB-NOTES §2): busybox-static + umoci, pushed with skopeo ---------

# Every image of the lab is built from these fixed inputs with fixed timestamps, so reseeding
# gives the same digests.
LAB_EPOCH=1970-01-01T00:00:00Z

# Creates (once) the OCI layout DIR with tags base-amd64 and base-arm64: one layer holding a real
# busybox for that architecture plus applet links. Needs BUSYBOX_ARM64 (scripts/lab/tools.sh).
lab_base_layout() {
  local layout=$1 arch rootfs applet
  if [ -f "$layout/.base-done" ]; then return 0; fi
  rm -rf "$layout" "$layout.rootfs"
  umoci init --layout "$layout"
  for arch in amd64 arm64; do
    rootfs=$layout.rootfs/$arch
    mkdir -p "$rootfs/bin"
    if [ "$arch" = amd64 ]; then cp /bin/busybox "$rootfs/bin/busybox"; else cp "$BUSYBOX_ARM64" "$rootfs/bin/busybox"; fi
    chmod 0755 "$rootfs/bin/busybox"
    for applet in sh echo ls cat sleep uname hostname env; do ln -s busybox "$rootfs/bin/$applet"; done
    # Layer bytes depend on file mtimes: pin them.
    find "$rootfs" -exec touch -h -d @0 {} +
    umoci new --image "$layout:base-$arch"
    umoci insert --image "$layout:base-$arch" --history.created "$LAB_EPOCH" \
      --history.created_by "kk lab: busybox-static ($arch)" "$rootfs" /
    umoci config --image "$layout:base-$arch" --no-history --created "$LAB_EPOCH" \
      --architecture "$arch" --os linux --config.cmd /bin/sh --config.cmd -c \
      --config.cmd 'echo hello from the kk lab busybox'
  done
  rm -rf "$layout.rootfs"
  touch "$layout/.base-done"
}

# lab_image_variant LAYOUT ARCH TAG MESSAGE [FILE TARGET]: tag TAG = base-ARCH whose command
# echoes MESSAGE, optionally with one more layer holding FILE at TARGET.
lab_image_variant() {
  local layout=$1 arch=$2 tag=$3 message=$4 file=${5:-} target=${6:-}
  umoci config --image "$layout:base-$arch" --tag "$tag" --no-history --created "$LAB_EPOCH" \
    --config.cmd /bin/sh --config.cmd -c --config.cmd "echo $message"
  if [ -n "$file" ]; then
    find "$file" -exec touch -h -d @0 {} +
    umoci insert --image "$layout:$tag" --history.created "$LAB_EPOCH" \
      --history.created_by "kk lab: add $target" "$file" "$target"
  fi
}

# lab_image_index LAYOUT NAME TAG=ARCH...: an OCI image index tagged NAME over those manifests.
lab_image_index() {
  "$PYTHON" "$LAB_SCRIPTS/mkindex.py" "$@"
}

# lab_push [skopeo copy options...] SRC DEST (plain HTTP to the lab registry).
lab_push() {
  local out
  if ! out=$(skopeo copy --quiet --dest-tls-verify=false "$@" 2>&1); then
    printf '%s\n' "$out" >&2
    lab_die "skopeo copy $* failed"
  fi
}

# Whether the lab registry has REPO:TAG (any manifest or index media type).
lab_registry_has() {
  local code
  code=$(lab_http_code -I \
    -H 'Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json' \
    -H 'Accept: application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json' \
    "http://$KK_LAB_REGISTRY/v2/$1/manifests/$2")
  [ "$code" = 200 ]
}

# Reads and exports the KEY=VALUE lines of the lab's env file (written by `upstream.sh up`).
lab_load_env() {
  local file=${LAB_DIR:-$REPO/target/lab/upstream}/env key value
  [ -f "$file" ] || lab_die "$file does not exist: start the lab first (scripts/lab/upstream.sh up)"
  while IFS='=' read -r key value; do
    case "$key" in KK_LAB_*|HELM_*) printf -v "$key" '%s' "$value"; export "${key?}" ;; esac
  done < "$file"
  if [ -z "${KK_LAB_REGISTRY:-}" ] || [ -z "${KK_LAB_HTTP:-}" ]; then
    lab_die "$file lacks KK_LAB_REGISTRY or KK_LAB_HTTP"
  fi
}

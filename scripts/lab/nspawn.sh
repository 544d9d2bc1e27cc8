#!/usr/bin/env bash
# The install lab: N real Debian 12 machines with systemd as PID 1, one systemd-nspawn container
# each, on a bridge this script creates (LAB-NOTES §4b). Same interface and env-file keys as
# scripts/lab/nodes.sh, so tests can switch lab kinds. Needs root.
#
#   scripts/lab/nspawn.sh up [N]   start (or keep) nodes node1..nodeN (N: default the running
#                                  lab's count, else 3; at most 244), wait until every node's
#                                  sshd answers and its systemd finished booting, write
#                                  $NODES_DIR/env and print it
#   scripts/lab/nspawn.sh down     power every node off (TERM to its recorded systemd-nspawn PID),
#                                  unmount its root, delete the namespaces, veths and bridge, the
#                                  nodes' cgroups and their file system changes; idempotent
#   scripts/lab/nspawn.sh status   say what runs (exit 0 when every node does, 3 otherwise)
#   scripts/lab/nspawn.sh env      print $NODES_DIR/env
#
# Environment:
#   NODES_DIR     state directory (default <repo>/target/lab/nspawn)
#   NODES_PREFIX  names: bridge <prefix>br0, namespaces and host veths <prefix>-n<i>, cgroups
#                 <prefix>-n<i>, machine names <prefix>-n<i> (default kkns; [a-z][a-z0-9]{0,7})
#   NODES_NET     the /24 inside 10.250.0.0/16, as its first three octets (default 10.250.1):
#                 bridge (the host, as seen from the nodes) .1, node i at .(10+i)
#   NSPAWN_IMAGES_DIR  base image cache (default <repo>/target/lab/images)
#   NSPAWN_BOOT_TIMEOUT  seconds `up` waits for all nodes to boot (default 60)
#   NSPAWN_STOP_TIMEOUT  seconds `down` waits for a clean poweroff before ending a node (default 5)
# Once a lab is up, `down`, `status` and `env` use the prefix and net recorded in $NODES_DIR/state.
#
# Base image: `mmdebstrap --variant=minbase --include=systemd,systemd-sysv,dbus,openssh-server,
# iproute2,iptables,kmod,procps,util-linux,ca-certificates,libseccomp2 bookworm DIR -`, fed the
# host's own apt sources for bookworm on stdin (deb822 stanzas of /etc/apt/sources.list.d/*.sources,
# else the one-line entries of sources.list), so it uses whatever mirror the host is configured
# with. Cached in $NSPAWN_IMAGES_DIR/<sha256 of suite, variant, package list, architecture and
# IMAGE_VERSION below>, built in a temporary directory and renamed into place (under a lock, so
# two labs starting together build it once); reused while present (`rm -rf` it to rebuild).
# Prepared once, inside the build: no ssh host keys (every node gets its own); no apt sources and
# an empty resolv.conf (the nodes are offline machines; the image names no mirror); root's ~/.ssh
# 0700; Debian's default root dotfiles (/usr/share/base-files/dot.*, not the host's);
# console-getty masked; cgroup-rw.service (below) enabled; an sshd drop-in allowing root by key
# only, UseDNS no, the node's ed25519 host key, many parallel sessions (Debian's sshd_config keeps
# `Subsystem sftp`, checked).
#
# Each node i: machine name <prefix>-n<i>, hostname node<i>, IP $NODES_NET.(10+i)/24 on eth0 in
# network namespace <prefix>-n<i> (host veth <prefix>-n<i> on bridge <prefix>br0, whose address
# $NODES_NET.1 is the host as the nodes see it). NO default route: a node reaches its /24 (other
# nodes and the host's bridge address) and nothing else ("Network is unreachable").
# Root file system: an overlay (lower = the image, upper/work = $NODES_DIR/nodes/n<i>/upper, work;
# mounted on .../root), so a node starts from a fresh install on every `up` after `down`. Real
# directories ($NODES_DIR/nodes/n<i>/data/...) are bound on /var/lib/containerd, /var/lib/kk and
# /var/lib/etcd. /etc/hosts: localhost and the node itself. /etc/machine-id, the ed25519 host key
# (made BEFORE boot: LAB-NOTES P12) and root's authorized_keys are written into the upper layer
# before boot; host key and machine id live in $NODES_DIR/nodes/n<i>/{ssh,machine-id} and survive
# `down`, so known_hosts stays valid. systemd-nspawn runs with
#   SYSTEMD_NSPAWN_API_VFS_WRITABLE=yes --boot --capability=all --system-call-filter="@keyring bpf"
#   --register=no --keep-unit --console=pipe --link-journal=no --resolv-conf=off
#   --network-namespace-path=/run/netns/<prefix>-n<i> --bind=<data dir>:/var/lib/... (3x)
# in its own session (setsid), from its own cgroups (<prefix>-n<i> in every cgroup hierarchy of
# the host, below the cgroup this script runs in); its PID is $NODES_DIR/nodes/n<i>/pid, its
# console (nspawn's own messages) $NODES_DIR/nodes/n<i>/console.log.
#
# SSH: port 22, root by key only (the one ed25519 client key in $NODES_DIR/keys), SFTP on,
# known_hosts lists each node by IP and name. Unlike nodes.sh there is no non-root user and no
# password: nodes.sh's KK_NODES_NONROOT_USER, KK_NODES_SUDO_USER, KK_NODES_PASSWORD_USER and
# KK_NODES_PASSWORD are absent from the env file.
#
# The env file ($NODES_DIR/env; KEY=VALUE lines, values with spaces in double quotes, so bash can
# source it): KK_NODES_KIND (nspawn), KK_NODES_DIR, KK_NODES_PREFIX, KK_NODES_COUNT, KK_NODES_IPS /
# KK_NODES_NAMES / KK_NODES_NETNS / KK_NODES_VETHS (space-separated, node1 first; `ip link set VETH
# down` cuts that node off), KK_NODES_BRIDGE, KK_NODES_HOST_IP, KK_NODES_CIDR, KK_NODES_PORT,
# KK_NODES_USER (root), KK_NODES_KEY (client private key), KK_NODES_PUBKEY, KK_NODES_KNOWN_HOSTS,
# KK_NODES_SSH_CONFIG (`ssh -F FILE node1` works, strict host key checking included), and
# KK_NODES_IMAGE (the base image directory).
#
# Measured 2026-11-24 on a 2-core Debian 12 VM (ext4 root, cgroup v1 hybrid, no systemd as PID 1),
# with other builds running at the same time:
#   image build (mmdebstrap from the host's mirror + preparation), once: 13 s on a quiet machine,
#     36-51 s while two or three rustc processes ran; 233 MB
#   up, image cached (boot to sshd + is-system-running=running): 3 nodes 1.4-1.7 s, 4 nodes 1.6-1.9 s
#   down (clean poweroff, all nodes in parallel): 3 nodes 0.5-0.9 s, 4 nodes 0.9-1.0 s; a node
#     whose poweroff hangs (a process that ignores TERM) adds NSPAWN_STOP_TIMEOUT (5 s) + ~1 s
#   about 50 MB RSS per idle node (nspawn, systemd, journald, logind, dbus, sshd; summed per process)
#
# Workarounds, each with the failure it fixes (LAB-NOTES §4b first, then this script's own):
# - No systemd on the host: without --register=no --keep-unit, nspawn fails with "Failed to open
#   system bus: No such file or directory".
# - cgroups: with --keep-unit nspawn uses its current cgroup (+ /payload), which all nodes would
#   share, and moving only the name=systemd cgroup gives "Failed to attach ... to compat systemd
#   cgroup //payload": nspawn starts in a cgroup of its own in `systemd` AND `unified`.
# - Overlay root: containerd's overlayfs snapshotter fails on an overlay upper ("failed to mount
#   /tmp/containerd-mount...: invalid argument", P3): real directories bound on /var/lib/containerd
#   (and on /var/lib/etcd and /var/lib/kk, for fsync behaviour and to be safe).
# - nspawn mounts the v1 controllers read-only: runc "mkdir /sys/fs/cgroup/cpuset/k8s.io:
#   read-only file system"; `mount -o remount,rw` and a fresh `mount -t cgroup` are EBUSY,
#   `remount,bind,rw` works: cgroup-rw.service (a oneshot before containerd.service) in the image.
# - seccomp: runc "unable to join session keyring ... operation not permitted" ->
#   --system-call-filter="@keyring bpf".
# - SYSTEMD_NSPAWN_API_VFS_WRITABLE=yes: /proc/sys and /sys writable in the node (sysctls that an
#   installer sets, cgroup files).
# - Host key race (P12): the node's host key is written into the root before boot.
# - console-getty masked: with --console=pipe the node has no /dev/console for a getty.
# - nspawn leaves /run/systemd/nspawn/propagate/<machine> behind because /run is on disk here
#   ("Attempted to remove disk file system under /run/systemd/nspawn/propagate/..., and we can't
#   allow that"): `down` removes it, and machine names carry the prefix so labs do not share it.
# Own:
# - The v1 controller hierarchies get per-node cgroups too (cpuset: cpus/mems first, or it takes
#   no process): nspawn gives the node a cgroup namespace rooted at its starting cgroups, so runc's
#   cgroups of the node's containers (/k8s.io/<id>) land below the node's, not in the host's tree
#   (checked: containerd + runc as a unit in a node, `ctr run`), and `down` removes them (P5).
# - A poweroff can hang: systemd in the node waits 90 s for a process that ignores TERM (seen with
#   a running `ctr run -d` container). After NSPAWN_STOP_TIMEOUT `down` sends nspawn a second TERM
#   ("immediate termination": KILL to the node's PID 1, nspawn still cleans up), then KILL.
# - KILL to systemd-nspawn does NOT end the node (its systemd, sshd, ... kept running in the
#   node's cgroups) and leaves its locks (/run/systemd/nspawn/locks/inode-<dev>:<ino>, named
#   after the overlay root, and nodes/n<i>/.#root.lck): `down` (and `up`, for a node whose nspawn
#   died) KILLs what is left in the node's own cgroups and removes the locks.
# - For a moment after the launch the recorded PID is still bash/env/setsid on their way to exec
#   systemd-nspawn: the boot wait checks only that the PID lives (a comm check failed 2 in 12 ups).
# - With --console=pipe systemd's stdout in the node is /dev/null, so console.log has only nspawn's
#   own lines: for a node that fails to boot, `up` prints the end of its journal as well.
# - mmdebstrap copies the host's /etc/resolv.conf and /etc/hostname into the image, and writes the
#   host's apt sources: all replaced (the image must not name the host's mirror: checked after
#   the build; mmdebstrap's output, which does, stays in memory and is redacted on failure).
# - sshd settings come as a drop-in (Debian's sshd_config Includes sshd_config.d first, so they
#   win); `Subsystem sftp` stays in Debian's file only (a second definition is an error).
# - --link-journal=no (nspawn would use the host's /var/log/journal/<machine-id> if present) and
#   --resolv-conf=off (the nodes have no DNS; the image's resolv.conf is empty).
#
# Logs: $NODES_DIR/nodes/n<i>/console.log (systemd-nspawn's own messages: with --console=pipe the
# node has no /dev/console); the node's journal (persistent: /var/log/journal in the node, so
# $NODES_DIR/nodes/n<i>/root/var/log/journal while the node is up; `journalctl -D DIR` reads it).
# `up` prints the end of both for a node that does not boot.
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LAB_LOG_NAME=nspawn

usage() { lab_die "usage: $0 up [N] | down | status | env"; }
[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
  up) [ $# -le 1 ] || usage ;;
  down|status|env) [ $# -eq 0 ] || usage ;;
  *) usage ;;
esac

# Bump when the image's preparation changes: the image cache key includes it.
IMAGE_VERSION=1
IMAGE_SUITE=bookworm
IMAGE_VARIANT=minbase
IMAGE_PACKAGES=systemd,systemd-sysv,dbus,openssh-server,iproute2,iptables,kmod,procps,util-linux,ca-certificates,libseccomp2
# Whether the bridge and namespace names of PREFIX are this lab's to delete (see `down`).
OWN_NAMES=yes
# Node i has address .(10+i) of a /24.
MAX_NODES=244
BOOT_TIMEOUT=${NSPAWN_BOOT_TIMEOUT:-60}
# Seconds `down` waits for a clean poweroff before it ends the node at once.
STOP_TIMEOUT=${NSPAWN_STOP_TIMEOUT:-5}
# Directories of the node that are real directories of $NODES_DIR, not the overlay.
DATA_DIRS=(var/lib/containerd var/lib/kk var/lib/etcd)
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

[ "$(id -u)" = 0 ] || lab_die "the nspawn lab needs root (network namespaces, mounts, cgroups)"

NODES_DIR=${NODES_DIR:-$REPO/target/lab/nspawn}
mkdir -p "$NODES_DIR" || lab_die "cannot create NODES_DIR $NODES_DIR"
NODES_DIR=$(cd "$NODES_DIR" && pwd -P)
case "$NODES_DIR" in
  *[[:space:]]*) lab_die "NODES_DIR must not contain whitespace: '$NODES_DIR'" ;;
esac
IMAGES_DIR=${NSPAWN_IMAGES_DIR:-$REPO/target/lab/images}
STATE=$NODES_DIR/state
KEYS=$NODES_DIR/keys

# `up` and `down` of one lab never overlap. Node processes must not inherit the lock's
# descriptor (they would hold the lock for as long as they run): they are started with `9>&-`.
exec 9>"$NODES_DIR/.lock"
flock 9

state_get() { sed -n "s/^$1=//p" "$STATE" 2>/dev/null || true; }

recorded_prefix=$(state_get PREFIX)
recorded_net=$(state_get NET)
recorded_count=$(state_get COUNT)
if [ "$command" = up ]; then
  PREFIX=${NODES_PREFIX:-${recorded_prefix:-kkns}}
  NET=${NODES_NET:-${recorded_net:-10.250.1}}
  if [ -f "$STATE" ] && { [ "$PREFIX" != "$recorded_prefix" ] || [ "$NET" != "$recorded_net" ]; }; then
    lab_die "the lab in $NODES_DIR runs with NODES_PREFIX=$recorded_prefix NODES_NET=$recorded_net;" \
      "run \`$0 down\` before changing them"
  fi
else
  PREFIX=${recorded_prefix:-${NODES_PREFIX:-kkns}}
  NET=${recorded_net:-${NODES_NET:-10.250.1}}
fi
[[ "$PREFIX" =~ ^[a-z][a-z0-9]{0,7}$ ]] \
  || lab_die "NODES_PREFIX=$PREFIX: want [a-z][a-z0-9]{0,7} (interface names have at most 15 characters)"
if ! { [[ "$NET" =~ ^10\.250\.([0-9]{1,3})$ ]] && [ "${BASH_REMATCH[1]}" -le 255 ]; }; then
  lab_die "NODES_NET=$NET: want 10.250.X with X in 0..255 (the lab only uses 10.250.0.0/16)"
fi

BRIDGE=${PREFIX}br0
GATEWAY=$NET.1
# The bridge's ifalias names the lab directory that owns it: another lab with the same prefix is
# refused instead of taken over.
BRIDGE_ALIAS="kk nspawn lab $NODES_DIR"

node_dir() { printf '%s/nodes/n%s' "$NODES_DIR" "$1"; }
node_ns() { printf '%s-n%s' "$PREFIX" "$1"; }   # also the host veth, the cgroups, the machine name
node_ip() { printf '%s.%s' "$NET" "$((10 + $1))"; }
# What the recorded PID's command line contains (systemd-nspawn's -D argument).
node_word() { printf '%s/root' "$(node_dir "$1")"; }
node_pid() {
  local pid=""
  read -r pid 2>/dev/null < "$NODES_DIR/nodes/n$1/pid" || true
  printf '%s' "$pid"
}

# lab_pid_alive with builtins only (no zombie, no X): stop_nodes polls it for every node.
pid_alive() {
  local stat=""
  [ -n "$1" ] || return 1
  read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
  stat=${stat##*) }
  case "${stat%% *}" in Z|X|"") return 1 ;; *) return 0 ;; esac
}

elapsed() { printf '%.2f' "$(echo "$(date +%s.%N) - $1" | bc)"; }

# Whether node i runs: the recorded PID is alive and is this node's systemd-nspawn.
node_running() {
  local pid comm
  pid=$(node_pid "$1")
  lab_pid_is "$pid" "$(node_word "$1")" || return 1
  read -r comm 2>/dev/null < "/proc/$pid/comm" || return 1
  [ "$comm" = systemd-nspawn ]
}

ssh_opts() {
  # -F none: no user or system ssh_config can change what the lab checks.
  printf '%s\n' -F none -i "$KEYS/id_ed25519" -o IdentitiesOnly=yes \
    -o UserKnownHostsFile="$KEYS/known_hosts" -o GlobalKnownHostsFile=/dev/null \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=2 -o LogLevel=ERROR
}

# --- the base image -----------------------------------------------------------------------------

image_key() {
  printf '%s\n' "kk nspawn lab image v$IMAGE_VERSION" "$IMAGE_SUITE" "$IMAGE_VARIANT" "$IMAGE_PACKAGES" \
    "$(dpkg --print-architecture)" | sha256sum | cut -c1-16
}

# The host's apt sources for IMAGE_SUITE (and its -updates/-security suites) on stdout: deb822
# stanzas when the host has any, else one-line entries. Comments are dropped.
host_sources() {
  local f out=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    out+=$(awk -v suite="$IMAGE_SUITE" '
      BEGIN { RS = "" }
      {
        n = split($0, lines, "\n"); keep = ""; enabled = 1; types = 0; suites = 0
        for (k = 1; k <= n; k++) {
          l = lines[k]
          if (l ~ /^[ \t]*#/) continue
          keep = keep l "\n"
          if (tolower(l) ~ /^enabled:[ \t]*no/) enabled = 0
          if (l ~ /^Types:/ && (substr(l, 7) " ") ~ /[ \t]deb[ \t]/) types = 1
          if (l ~ /^Suites:/ && (substr(l, 8) " ") ~ ("[ \t]" suite "[ \t-]")) suites = 1
        }
        if (enabled && types && suites) printf "%s\n", keep
      }' "$f")
    out+=$'\n'
  done
  if [ -n "${out//[[:space:]]/}" ]; then
    printf '%s\n' "$out"
    return 0
  fi
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | grep -E "^[[:space:]]*deb[[:space:]].*[[:space:]]$IMAGE_SUITE([[:space:]-]|$)" || true
}

# The host names of the mirrors in the host's apt sources (kept in memory only: nothing this
# script writes may name them).
mirror_hosts() {
  host_sources | grep -oE '[a-z+]+://[^/[:space:]]+' | sed 's#^[^:]*://##; s#^[^@]*@##; s#:[0-9]*$##' | sort -u
}

# redact TEXT: TEXT with every mirror host name replaced.
redact() {
  local text=$1 host
  while read -r host; do
    [ -n "$host" ] || continue
    text=${text//"$host"/<apt-mirror>}
  done <<< "$MIRROR_HOSTS"
  printf '%s\n' "$text"
}

# Everything the image needs before its first boot (runs once, inside the build directory).
prepare_image() {
  local b=$1 f
  # Every node gets its own host key (else they would all share the build's).
  rm -f "$b"/etc/ssh/ssh_host_*
  # An offline machine: no package sources (and nothing naming the host's mirror), no DNS; the
  # host name mmdebstrap copied from the host goes too (each node writes its own).
  rm -f "$b"/etc/apt/sources.list.d/*
  echo '# kk nspawn lab node: an offline machine, no package sources' > "$b/etc/apt/sources.list"
  rm -f "$b/etc/resolv.conf"
  : > "$b/etc/resolv.conf"
  echo localhost > "$b/etc/hostname"
  : > "$b/etc/machine-id"

  # Root's shell start-up files are Debian's defaults (base-files), not the host's.
  for f in bashrc profile; do
    if [ -f "$b/usr/share/base-files/dot.$f" ]; then cp "$b/usr/share/base-files/dot.$f" "$b/root/.$f"; fi
  done
  mkdir -p "$b/root/.ssh"
  chmod 700 "$b/root" "$b/root/.ssh"

  # With --console=pipe there is no terminal for a getty.
  ln -sfn /dev/null "$b/etc/systemd/system/console-getty.service"

  cat > "$b/etc/systemd/system/cgroup-rw.service" <<'EOF'
# kk nspawn lab (scripts/lab/nspawn.sh): systemd-nspawn mounts the cgroup v1 controller
# hierarchies read-only, and runc then fails with "mkdir /sys/fs/cgroup/cpuset/k8s.io: read-only
# file system". `remount,rw` is EBUSY; `remount,bind,rw` works.
[Unit]
Description=lab: make cgroup v1 controller mounts writable (nspawn mounts them ro)
DefaultDependencies=no
Before=containerd.service

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'for c in /sys/fs/cgroup/*; do [ "$c" = /sys/fs/cgroup/systemd ] || [ "$c" = /sys/fs/cgroup/unified ] || mount -o remount,bind,rw "$c"; done'
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
EOF
  mkdir -p "$b/etc/systemd/system/multi-user.target.wants"
  ln -sfn /etc/systemd/system/cgroup-rw.service "$b/etc/systemd/system/multi-user.target.wants/cgroup-rw.service"

  # sshd: Debian's sshd_config (which Includes sshd_config.d/*.conf first, so these win) plus:
  mkdir -p "$b/etc/ssh/sshd_config.d"
  cat > "$b/etc/ssh/sshd_config.d/kk-lab.conf" <<'EOF'
# kk nspawn lab (scripts/lab/nspawn.sh)
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
# An installer opens many connections to the same node at once.
MaxStartups 100:30:200
MaxSessions 100
EOF
  # A second Subsystem line would be fatal ("Subsystem 'sftp' already defined"): only when missing.
  if ! grep -qE '^[[:space:]]*Subsystem[[:space:]]+sftp[[:space:]]' "$b/etc/ssh/sshd_config"; then
    echo 'Subsystem sftp /usr/lib/openssh/sftp-server' >> "$b/etc/ssh/sshd_config"
  fi
  [ -x "$b/usr/lib/openssh/sftp-server" ] || lab_die "the image has no /usr/lib/openssh/sftp-server"
}

# Sets IMAGE, building it first when the cache lacks it.
ensure_image() {
  local key tmp sources out t0 leaks
  key=$(image_key)
  IMAGE=$IMAGES_DIR/$key
  [ -d "$IMAGE" ] && return 0
  mkdir -p "$IMAGES_DIR"
  # Two labs starting together build it once. The lock is closed again before any node starts.
  exec 8>"$IMAGES_DIR/.lock"
  flock 8
  if [ -d "$IMAGE" ]; then exec 8>&-; return 0; fi
  command -v mmdebstrap >/dev/null 2>&1 || lab_die "mmdebstrap missing (install it with: sudo bash scripts/setup.sh)"
  # Leftovers of builds that died (nobody else builds while we hold the lock).
  rm -rf "$IMAGES_DIR"/.build-*
  tmp=$IMAGES_DIR/.build-$key-$$
  sources=$(host_sources)
  [ -n "$sources" ] || lab_die "the host has no apt source for $IMAGE_SUITE (/etc/apt/sources.list{,.d/}): cannot build the node image"
  MIRROR_HOSTS=$(mirror_hosts)
  t0=$(date +%s.%N)
  lab_log "building the node image ($IMAGE_SUITE $IMAGE_VARIANT + $IMAGE_PACKAGES) from the host's apt sources; once"
  # Its output stays in memory: it names the mirror.
  if ! out=$(printf '%s\n' "$sources" | env -u TMPDIR mmdebstrap --variant="$IMAGE_VARIANT" \
      --include="$IMAGE_PACKAGES" "$IMAGE_SUITE" "$tmp" - 2>&1 9>&- 8>&-); then
    redact "$out" | tail -n 40 >&2
    rm -rf "$tmp"
    lab_die "mmdebstrap failed (above)"
  fi
  prepare_image "$tmp"
  # Nothing in the image may name the host's mirror.
  if [ -n "$MIRROR_HOSTS" ]; then
    leaks=$(grep -rlIF -f <(printf '%s\n' "$MIRROR_HOSTS") "$tmp/etc" "$tmp/var" "$tmp/root" 2>/dev/null || true)
    if [ -n "$leaks" ]; then
      rm -rf "$tmp"
      lab_die "the built image names the host's apt mirror in: $(tr '\n' ' ' <<< "$leaks")"
    fi
  fi
  mv -T "$tmp" "$IMAGE"
  exec 8>&-
  lab_log "image $IMAGE built in $(elapsed "$t0") s ($(du -sh "$IMAGE" | cut -f1))"
}

# --- up -----------------------------------------------------------------------------------------

check_nodes_dir() {
  case "$NODES_DIR/" in
    "$IMAGES_DIR/"*) lab_die "NODES_DIR=$NODES_DIR lies under the image cache $IMAGES_DIR" ;;
  esac
}

make_keys() {
  local count=$1 i d mid
  mkdir -p "$KEYS"
  chmod 700 "$KEYS"
  if [ ! -f "$KEYS/id_ed25519" ] || [ ! -f "$KEYS/id_ed25519.pub" ]; then
    rm -f "$KEYS/id_ed25519" "$KEYS/id_ed25519.pub"
    ssh-keygen -q -t ed25519 -N '' -C kk-nspawn-lab-client -f "$KEYS/id_ed25519"
  fi
  # Host keys exist before the node boots (LAB-NOTES P12) and outlive `down`, so known_hosts stays
  # valid across restarts; so does the machine id.
  for ((i = 1; i <= count; i++)); do
    d=$NODES_DIR/nodes/n$i
    if [ ! -f "$d/ssh/ssh_host_ed25519_key" ] || [ ! -f "$d/ssh/ssh_host_ed25519_key.pub" ]; then
      mkdir -p "$d/ssh"
      rm -f "$d/ssh/ssh_host_ed25519_key" "$d/ssh/ssh_host_ed25519_key.pub"
      ssh-keygen -q -t ed25519 -N '' -C "node$i" -f "$d/ssh/ssh_host_ed25519_key"
    fi
    if [ ! -s "$d/machine-id" ]; then
      mid=$(tr -d '-' < /proc/sys/kernel/random/uuid)
      echo "$mid" > "$d/machine-id"
    fi
  done
  for ((i = 1; i <= count; i++)); do
    read -r key < "$NODES_DIR/nodes/n$i/ssh/ssh_host_ed25519_key.pub"
    printf '%s.%s,node%s %s\n' "$NET" "$((10 + i))" "$i" "${key% *}"
  done > "$KEYS/known_hosts.tmp"
  mv "$KEYS/known_hosts.tmp" "$KEYS/known_hosts"
  {
    echo "# Written by scripts/lab/nspawn.sh: ssh -F $NODES_DIR/ssh_config node1"
    for ((i = 1; i <= count; i++)); do ip=$NET.$((10 + i)); printf 'Host node%s %s\n  HostName %s\n' "$i" "$ip" "$ip"; done
    cat <<EOF
Host *
  User root
  IdentityFile $KEYS/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $KEYS/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
EOF
  } > "$NODES_DIR/ssh_config"
}

# A fresh node: its overlay root mounted on NODE_DIR/root with the node's own files written into
# the upper layer, and empty data directories.
prepare_node() {
  local i=$1 d r dir ip
  d=$(node_dir "$i")
  ip=$(node_ip "$i")
  rm -rf "$d/upper" "$d/work" "$d/data"
  mkdir -p "$d/upper" "$d/work" "$d/root"
  for dir in "${DATA_DIRS[@]}"; do mkdir -p "$d/data/$dir"; done
  chmod 700 "$d/data/var/lib/etcd"
  echo "$IMAGE" > "$d/image"
  # `volatile`: no sync of the upper file system when the overlay goes (the upper directory is
  # thrown away by `down`); /var/lib/{containerd,etcd,kk} are real directories anyway.
  mount -t overlay "$(node_ns "$i")" -o "lowerdir=$IMAGE,upperdir=$d/upper,workdir=$d/work,volatile" "$d/root"
  r=$d/root
  echo "node$i" > "$r/etc/hostname"
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n\n%s\tnode%s\n' \
    "$ip" "$i" > "$r/etc/hosts"
  cp "$d/machine-id" "$r/etc/machine-id"
  install -m 600 "$d/ssh/ssh_host_ed25519_key" "$r/etc/ssh/ssh_host_ed25519_key"
  install -m 644 "$d/ssh/ssh_host_ed25519_key.pub" "$r/etc/ssh/ssh_host_ed25519_key.pub"
  install -m 600 "$KEYS/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
}

# The host's cgroup hierarchies, one line each: MOUNTPOINT FSTYPE MOUNT_OPTIONS OUR_CGROUP.
cgroup_hierarchies() {
  local id controllers path mountpoint
  while IFS=: read -r id controllers path; do
    if [ "$id" = 0 ]; then
      mountpoint=$(awk '{ split($0, p, " - "); split(p[2], f, " ") }
        f[1] == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
      if [ -n "$mountpoint" ]; then printf '%s cgroup2 rw %s\n' "$mountpoint" "$path"; fi
    else
      mountpoint=$(awk -v want="$controllers" '{ split($0, p, " - "); split(p[2], f, " ") }
        f[1] == "cgroup" && $4 == "/" {
          n = split(f[3], have, ","); delete set; for (k = 1; k <= n; k++) set[have[k]] = 1
          m = split(want, need, ","); ok = 1; for (k = 1; k <= m; k++) if (!(need[k] in set)) ok = 0
          if (ok) { print $5; exit }
        }' /proc/self/mountinfo)
      [ -n "$mountpoint" ] || continue
      printf '%s cgroup %s %s\n' "$mountpoint" "$controllers" "$path"
    fi
  done < /proc/self/cgroup
}

# Node i's cgroups, one per hierarchy of HIERARCHIES, below the cgroup this script runs in (so
# the node stays inside whatever limits apply to us); listed in NODE_DIR/cgroups for `down`.
make_cgroups() {
  local i=$1 d mountpoint path dir f value
  d=$(node_dir "$i")
  : > "$d/cgroups"
  [ -n "$HIERARCHIES" ] || return 0
  while read -r mountpoint _ _ path; do
    dir=${mountpoint}${path%/}/$(node_ns "$i")
    mkdir -p "$dir"
    # A v1 cpuset cgroup takes no process until it has CPUs and memory nodes.
    for f in cpuset.cpus cpuset.mems; do
      [ -f "$dir/$f" ] || continue
      value=""
      read -r value < "$dir/$f" || true
      if [ -z "$value" ]; then read -r value < "${dir%/*}/$f" || true; echo "$value" > "$dir/$f"; fi
    done
    printf '%s\n' "$dir"
  done <<< "$HIERARCHIES" > "$d/cgroups"
}

# The bridge's owner, from its ifalias: "" when there is no bridge, "ours", or whose it is.
bridge_owner() {
  local alias
  ip link show dev "$BRIDGE" >/dev/null 2>&1 || return 0
  alias=$(cat "/sys/class/net/$BRIDGE/ifalias" 2>/dev/null || true)
  if [ "$alias" = "$BRIDGE_ALIAS" ]; then echo ours; else echo "${alias:-an unnamed owner}"; fi
}

# Before `up` records or makes anything: the names and the /24 are free for this lab.
check_names() {
  local owner clash
  owner=$(bridge_owner)
  case "$owner" in
    ""|ours) ;;
    *) lab_die "bridge $BRIDGE exists and belongs to '$owner', not to this lab ($NODES_DIR): choose another NODES_PREFIX" ;;
  esac
  clash=$(ip -o -4 addr show | awk -v br="$BRIDGE" -v net="$NET." '$2 != br && index($4, net) == 1 { print $2 " " $4 }')
  [ -z "$clash" ] || lab_die "$NET.0/24 is already used on this host ($clash): choose another NODES_NET"
}

ensure_bridge() {
  if [ -z "$(bridge_owner)" ]; then
    ip link add "$BRIDGE" type bridge
    ip link set dev "$BRIDGE" alias "$BRIDGE_ALIAS"
  fi
  ip addr replace "$GATEWAY/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

# Network namespaces for the given nodes (none of which runs): each with eth0, the peer of host
# veth <ns> on the bridge, its address in the /24 and NO default route.
make_netns() {
  local i ns batch=""
  for i in "$@"; do
    ns=$(node_ns "$i")
    batch+="netns add $ns"$'\n'
    batch+="link add $ns type veth peer name eth0 netns $ns"$'\n'
    batch+="link set $ns master $BRIDGE up"$'\n'
  done
  [ -n "$batch" ] || return 0
  printf '%s' "$batch" | ip -batch -
  for i in "$@"; do
    ip -n "$(node_ns "$i")" -batch - <<EOF
link set lo up
addr add $(node_ip "$i")/24 dev eth0
link set eth0 up
EOF
  done
}

launch_node() {
  local i=$1 d ns dir bind_args=()
  d=$(node_dir "$i")
  ns=$(node_ns "$i")
  for dir in "${DATA_DIRS[@]}"; do bind_args+=("--bind=$d/data/$dir:/$dir"); done
  (
    # Into the node's cgroups first: nspawn (with --keep-unit) puts the node below its own cgroup.
    while read -r dir; do echo "$BASHPID" > "$dir/cgroup.procs"; done < "$d/cgroups"
    # A clean environment (not this script's or a test runner's). setsid: a session of its own
    # (no terminal signal reaches the node); it execs (this subshell is no group leader), so $!
    # below is systemd-nspawn's PID.
    exec env -i PATH="$NODE_PATH" LANG=C.UTF-8 SYSTEMD_NSPAWN_API_VFS_WRITABLE=yes \
      setsid systemd-nspawn --quiet --boot --directory="$d/root" --machine="$ns" \
      --register=no --keep-unit --console=pipe --link-journal=no --resolv-conf=off \
      --capability=all --system-call-filter="@keyring bpf" \
      --network-namespace-path="/run/netns/$ns" "${bind_args[@]}"
  ) >"$d/console.log" 2>&1 </dev/null 9>&- &
  echo $! > "$d/pid"
}

# The end of node i's journal, read from the host. With --console=pipe the node has no
# /dev/console and its systemd's stdout is /dev/null, so console.log holds only nspawn's own
# messages; the boot's story is in the journal: /var/log/journal in the node's root (Debian's
# systemd keeps it persistent), else /run/log/journal (seen through the node's PID 1).
node_journal() {
  local i=$1 d pid init dir
  d=$(node_dir "$i")
  pid=$(node_pid "$i")
  init=""
  if [ -n "$pid" ]; then read -r init _ 2>/dev/null < "/proc/$pid/task/$pid/children" || true; fi
  for dir in "$d/root/var/log/journal" ${init:+"/proc/$init/root/run/log/journal"}; do
    [ -n "$(find "$dir" -name '*.journal' -print -quit 2>/dev/null)" ] || continue
    lab_log "node$i: the end of its journal ($dir):"
    journalctl --directory="$dir" --no-pager -q -n 40 >&2 || true
    return 0
  done
  lab_log "node$i: no journal to show"
}

# wait_node I DEADLINE: until root@node i answers over ssh (strict host key checking against
# known_hosts) and its systemd finished booting, or fail with the node's console log.
wait_node() {
  local i=$1 deadline=$2 ip d opts left state
  ip=$(node_ip "$i")
  d=$(node_dir "$i")
  mapfile -t opts < <(ssh_opts)
  # Only for these probes: curve25519 instead of OpenSSH 9's default post-quantum key exchange,
  # which costs about 0.2 s of CPU per connection.
  opts+=(-o KexAlgorithms=curve25519-sha256)
  fail() {
    lab_log "node$i ($ip): $*; the end of $d/console.log:"
    tail -n 20 "$d/console.log" >&2 || true
    node_journal "$i"
    return 1
  }
  while ! ssh "${opts[@]}" "root@$ip" true </dev/null >/dev/null 2>"$d/ssh-check.err"; do
    # (Not node_running: for a moment after the launch the PID is still the subshell, env or
    # setsid on their way to exec systemd-nspawn.)
    if ! lab_pid_alive "$(node_pid "$i")"; then fail "systemd-nspawn ended while booting"; return 1; fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      lab_log "node$i: last ssh error: $(cat "$d/ssh-check.err" 2>/dev/null)"
      fail "sshd does not answer after ${BOOT_TIMEOUT} s"
      return 1
    fi
    sleep 0.1
  done
  rm -f "$d/ssh-check.err"
  left=$(( deadline - $(date +%s) ))
  [ "$left" -ge 1 ] || left=1
  # running, or degraded (some unit failed; listed): the node booted.
  # shellcheck disable=SC2029 # $left is meant to expand here
  state=$(ssh "${opts[@]}" "root@$ip" "timeout $left systemctl is-system-running --wait" </dev/null 2>&1) || true
  case "$state" in
    running) return 0 ;;
    degraded)
      lab_log "warning: node$i is degraded; failed units: $(ssh "${opts[@]}" "root@$ip" \
        'systemctl --failed --no-legend --plain | cut -d" " -f1 | tr "\n" " "' </dev/null 2>&1 || true)"
      return 0 ;;
    *) fail "systemd did not finish booting within ${BOOT_TIMEOUT} s (is-system-running: ${state:-nothing})"; return 1 ;;
  esac
}

write_env() {
  local count=$1 i ips="" names="" netns="" tmp=$NODES_DIR/env.tmp
  for i in $(seq 1 "$count"); do
    ips+="${ips:+ }$(node_ip "$i")"
    names+="${names:+ }node$i"
    netns+="${netns:+ }$(node_ns "$i")"
  done
  # KEY=VALUE lines that bash can also source: values with spaces are in double quotes.
  # The host veths have the namespaces' names.
  cat > "$tmp" <<EOF
KK_NODES_KIND=nspawn
KK_NODES_DIR=$NODES_DIR
KK_NODES_PREFIX=$PREFIX
KK_NODES_COUNT=$count
KK_NODES_IPS="$ips"
KK_NODES_NAMES="$names"
KK_NODES_NETNS="$netns"
KK_NODES_VETHS="$netns"
KK_NODES_BRIDGE=$BRIDGE
KK_NODES_HOST_IP=$GATEWAY
KK_NODES_CIDR=$NET.0/24
KK_NODES_PORT=22
KK_NODES_USER=root
KK_NODES_KEY=$KEYS/id_ed25519
KK_NODES_PUBKEY=$KEYS/id_ed25519.pub
KK_NODES_KNOWN_HOSTS=$KEYS/known_hosts
KK_NODES_SSH_CONFIG=$NODES_DIR/ssh_config
KK_NODES_IMAGE=$IMAGE
EOF
  mv "$tmp" "$NODES_DIR/env"
}

up() {
  local count=${1:-${recorded_count:-3}} t0 i start=() extra=() deadline failed=0 pids=()
  t0=$(date +%s.%N)
  if ! { [[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le "$MAX_NODES" ]; }; then
    lab_die "N=$count: want a number of nodes from 1 to $MAX_NODES"
  fi
  local tool missing=()
  for tool in ip systemd-nspawn setsid ssh ssh-keygen flock bc awk mount umount dpkg; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ "${#missing[@]}" -eq 0 ] || lab_die "missing: ${missing[*]} (install them with: sudo bash scripts/setup.sh)"
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
  check_nodes_dir
  check_names

  # Fewer nodes than before: the extra ones go.
  if [ -n "$recorded_count" ] && [ "$recorded_count" -gt "$count" ]; then
    mapfile -t extra < <(seq $((count + 1)) "$recorded_count")
    stop_nodes "${extra[@]}"
  fi
  # Recorded before anything is made, so that `down` cleans up after a failed `up` too.
  printf 'PREFIX=%s\nNET=%s\nCOUNT=%s\n' "$PREFIX" "$NET" "$count" > "$STATE.tmp"
  mv "$STATE.tmp" "$STATE"

  ensure_image
  make_keys "$count"
  ensure_bridge
  for i in $(seq 1 "$count"); do node_running "$i" || start+=("$i"); done
  if [ "${#start[@]}" -gt 0 ]; then
    # Leftovers of nodes that died (their processes, if any, by recorded PID).
    stop_nodes "${start[@]}"
    HIERARCHIES=$(cgroup_hierarchies)
    # In parallel: each node is a few dozen small file operations, which wait on the disk.
    for i in "${start[@]}"; do
      (
        prepare_node "$i"
        make_cgroups "$i"
      ) 9>&- &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || failed=1; done
    [ "$failed" = 0 ] || lab_die "preparing the nodes failed (above; \`$0 down\` cleans up)"
    pids=()
    make_netns "${start[@]}"
    for i in "${start[@]}"; do launch_node "$i"; done
  fi

  # Every node in parallel: a serial check would add up the boots.
  deadline=$(( $(date +%s) + BOOT_TIMEOUT ))
  for i in $(seq 1 "$count"); do
    wait_node "$i" "$deadline" 9>&- &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  [ "$failed" = 0 ] || lab_die "not every node came up (\`$0 down\` cleans up)"

  write_env "$count"
  lab_log "up in $(elapsed "$t0") s: $count nodes, ${#start[@]} started ($NODES_DIR)"
  cat "$NODES_DIR/env"
}

# --- down ---------------------------------------------------------------------------------------

# Mount points under NODES_DIR/nodes/ (deepest first).
lab_mounts() {
  awk -v d="$NODES_DIR/nodes/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

# kill_cgroup_leftovers NODE_DIR: processes still in the node's cgroups after its nspawn ended
# (there should be none: the node's PID namespace ends with its PID 1). Only the node's own
# cgroups are read; nothing is matched by name.
kill_cgroup_leftovers() {
  local d=$1 dir pid pids=()
  [ -f "$d/cgroups" ] || return 0
  while read -r dir; do
    [ -d "$dir" ] || continue
    while read -r pid; do pids+=("$pid"); done < <(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done < "$d/cgroups"
  [ "${#pids[@]}" -gt 0 ] || return 0
  # (Every hierarchy lists the same processes.)
  mapfile -t pids < <(printf '%s\n' "${pids[@]}" | sort -nu)
  lab_log "${d##*/}: KILL to ${#pids[@]} processes left in the node's cgroups"
  kill -KILL "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 1 40); do
    pids=()
    while read -r dir; do
      [ -d "$dir" ] || continue
      while read -r pid; do pids+=("$pid"); done < <(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null)
    done < "$d/cgroups"
    [ "${#pids[@]}" -gt 0 ] || return 0
    sleep 0.05
  done
}

# wait_gone SECONDS NODE...: until the recorded nspawn PIDs (node_pids) of those nodes ended;
# sets `alive` to the nodes still running.
wait_gone() {
  local tries=$(( $1 * 20 )) k i
  shift
  for ((k = 0; k <= tries; k++)); do
    alive=()
    for i in "$@"; do
      if pid_alive "${node_pids[$i]}"; then alive+=("$i"); fi
    done
    [ "${#alive[@]}" -gt 0 ] || return 0
    if [ "$k" -lt "$tries" ]; then sleep 0.05; fi
  done
  return 0
}

# Stops the given nodes by their recorded PIDs and removes what they had on the host: root
# overlay, veth, namespace, cgroups, file system changes. Host keys, machine ids and logs stay.
stop_nodes() {
  local i pid d ns waiting=() alive=() batch="" mnt
  local -A node_pids=() node_locks=()
  for i in "$@"; do
    d=$(node_dir "$i")
    # nspawn's lock on its root directory, named after the overlay's device and inode: gone with
    # the overlay, so known now (nspawn removes it itself unless it is killed).
    if mountpoint -q "$d/root" 2>/dev/null; then
      node_locks[$i]=/run/systemd/nspawn/locks/inode-$(stat -c '%d:%i' "$d/root")
    fi
    pid=$(node_pid "$i")
    [ -n "$pid" ] || continue
    if ! lab_pid_is "$pid" "$(node_word "$i")"; then
      rm -f "$d/pid"
      continue
    fi
    # TERM to systemd-nspawn: it asks the node's systemd for a clean poweroff (SIGRTMIN+4).
    kill -TERM "$pid" 2>/dev/null || true
    node_pids[$i]=$pid
    waiting+=("$i")
  done
  # All nodes were signalled first: they power off in parallel (1-3 s). A node whose poweroff
  # hangs (e.g. a container process that ignores TERM: systemd waits 90 s for it) gets a second
  # TERM, which makes nspawn end the node at once (KILL to its PID 1, so to its PID namespace) and
  # still clean up after itself; KILL to nspawn is the last resort.
  [ "${#waiting[@]}" -eq 0 ] || wait_gone "$STOP_TIMEOUT" "${waiting[@]}"
  for i in ${alive[@]+"${alive[@]}"}; do
    lab_log "node$i: still running $STOP_TIMEOUT s after TERM (console: $(node_dir "$i")/console.log); TERM again: immediate termination"
    kill -TERM "${node_pids[$i]}" 2>/dev/null || true
  done
  [ "${#alive[@]}" -eq 0 ] || wait_gone 5 "${alive[@]}"
  for i in ${alive[@]+"${alive[@]}"}; do
    lab_log "node$i: systemd-nspawn (pid ${node_pids[$i]}) still runs; KILL"
    kill -KILL "${node_pids[$i]}" 2>/dev/null || true
  done
  [ "${#alive[@]}" -eq 0 ] || wait_gone 5 "${alive[@]}"
  for i in ${alive[@]+"${alive[@]}"}; do
    lab_die "node$i: systemd-nspawn (pid ${node_pids[$i]}) survives KILL"
  done
  for i in ${waiting[@]+"${waiting[@]}"}; do
    # Our own child when `up` restarts a node: reap it rather than leave a zombie.
    wait "${node_pids[$i]}" 2>/dev/null || true
    rm -f "$(node_dir "$i")/pid"
  done
  for i in "$@"; do kill_cgroup_leftovers "$(node_dir "$i")"; done

  # Deleting the host veth deletes its peer at once. One listing and one `ip -batch` for all.
  local present=""
  if [ "$OWN_NAMES" = yes ]; then
    present=$( { ip netns list | awk '{ print "netns " $1 }'; ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link " $2 }'; } )
  fi
  for i in "$@"; do
    ns=$(node_ns "$i")
    if grep -qx -- "link $ns" <<< "$present"; then batch+="link del $ns"$'\n'; fi
    if grep -qx -- "netns $ns" <<< "$present"; then batch+="netns del $ns"$'\n'; fi
  done
  if [ -n "$batch" ]; then printf '%s' "$batch" | ip -batch - || lab_log "warning: deleting links/namespaces failed"; fi

  # The overlay roots (nspawn's binds lived in its own mount namespace and went with it).
  while read -r mnt; do
    [ -n "$mnt" ] || continue
    umount "$mnt" 2>/dev/null || umount -l "$mnt" || lab_log "warning: cannot unmount $mnt"
  done < <(lab_mounts)

  local cleaners=()
  for i in "$@"; do
    d=$(node_dir "$i")
    # nspawn cannot remove it itself: /run is no tmpfs here.
    rm -rf "/run/systemd/nspawn/propagate/$(node_ns "$i")"
    # Locks a killed nspawn left (no process holds them any more).
    rm -f "$d/.#root.lck" ${node_locks[$i]:+"${node_locks[$i]}"}
    if [ -e "$d/cgroups" ] || [ -e "$d/upper" ] || [ -e "$d/work" ] || [ -e "$d/data" ] || [ -e "$d/root" ]; then
      clean_node "$d" 9>&- &
      cleaners+=($!)
    fi
  done
  for i in ${cleaners[@]+"${cleaners[@]}"}; do wait "$i" || true; done
}

# clean_node NODE_DIR: the cgroups and file system changes of a stopped node.
clean_node() {
  local d=$1 dir
  # Depth-first: nspawn's payload cgroups and whatever runc made inside the node lie below.
  if [ -f "$d/cgroups" ]; then
    while read -r dir; do
      [ -d "$dir" ] || continue
      find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ ! -d "$dir" ] || lab_log "warning: cgroup $dir is not empty (processes left in it?)"
    done < "$d/cgroups"
    rm -f "$d/cgroups"
  fi
  # Never `rm -rf` the root mount point: while mounted, it is the image.
  if mountpoint -q "$d/root" 2>/dev/null; then
    lab_log "warning: $d/root is still mounted; its upper directory stays"
    return 0
  fi
  [ ! -d "$d/root" ] || rmdir "$d/root" 2>/dev/null || lab_log "warning: $d/root is not empty"
  rm -rf "$d/upper" "$d/work" "$d/data" "$d/image"
}

# What of this lab is still on the host (nothing after `down`): one line per thing.
leftovers() {
  lab_mounts | sed 's/^/mount /'
  if [ "$OWN_NAMES" = yes ]; then
    ip netns list | awk -v p="$PREFIX-n" 'index($1, p) == 1 { print "netns " $1 }'
    ip -o link show | awk -F': ' -v p="$PREFIX-n" -v br="$BRIDGE" '{ sub(/@.*/, "", $2) }
      index($2, p) == 1 || $2 == br { print "link " $2 }'
    find /sys/fs/cgroup/ -mindepth 2 -maxdepth 5 -type d -name "$PREFIX-n[0-9]*" -printf 'cgroup %p\n' 2>/dev/null
    find /run/systemd/nspawn/propagate/ -mindepth 1 -maxdepth 1 -name "$PREFIX-n[0-9]*" -printf 'dir %p\n' 2>/dev/null
  fi
  true
}

down() {
  local t0 nodes=() i dir ns owner rest
  t0=$(date +%s.%N)
  owner=$(bridge_owner)
  case "$owner" in
    ""|ours) ;;
    *)
      # This lab never got its names (its `up` was refused): the bridge and the namespaces with
      # this prefix are another lab's. Only this lab's own processes and files are touched.
      lab_log "warning: bridge $BRIDGE and the namespaces $PREFIX-n* belong to '$owner'; left alone"
      OWN_NAMES=no
      ;;
  esac
  # Every node this lab may have: recorded ones, directories with a PID file, cgroups or files,
  # and namespaces with the lab's names (leftovers of a run that died).
  if [ -n "$recorded_count" ]; then mapfile -t nodes < <(seq 1 "$recorded_count"); fi
  for dir in "$NODES_DIR"/nodes/n*; do
    [ -e "$dir/pid" ] || [ -e "$dir/cgroups" ] || [ -d "$dir/upper" ] || [ -d "$dir/root" ] || continue
    nodes+=("${dir##*/n}")
  done
  if [ "$OWN_NAMES" = yes ]; then
    while read -r ns; do
      if [[ "$ns" =~ ^$PREFIX-n([0-9]+)$ ]]; then nodes+=("${BASH_REMATCH[1]}"); fi
    done < <(ip netns list | awk '{ print $1 }')
  fi
  if [ "${#nodes[@]}" -gt 0 ]; then
    mapfile -t nodes < <(printf '%s\n' "${nodes[@]}" | sort -nu)
    stop_nodes "${nodes[@]}"
  fi
  if [ "$owner" = ours ]; then ip link del "$BRIDGE"; fi
  rm -f "$NODES_DIR/env" "$STATE"
  rest=$(leftovers)
  if [ -n "$rest" ]; then
    lab_log "left behind:"$'\n'"$rest"
    lab_die "down did not remove everything (above)"
  fi
  lab_log "down in $(elapsed "$t0") s (${#nodes[@]} nodes, $NODES_DIR)"
}

status() {
  local ok=0 count=${recorded_count:-0} i
  if [ ! -f "$STATE" ]; then
    echo "nspawn lab: down ($NODES_DIR)"
    return 3
  fi
  for i in $(seq 1 "$count"); do
    if node_running "$i"; then
      echo "node$i: running, $(node_ip "$i"), netns $(node_ns "$i"), systemd-nspawn pid $(node_pid "$i")"
    else
      echo "node$i: stopped"; ok=3
    fi
  done
  if ip link show dev "$BRIDGE" >/dev/null 2>&1; then echo "bridge: $BRIDGE $GATEWAY/24"; else echo "bridge: missing"; ok=3; fi
  echo "lab dir: $NODES_DIR"
  return "$ok"
}

case "$command" in
  up) up "$@" ;;
  down) down ;;
  status) status ;;
  env) [ -f "$NODES_DIR/env" ] || lab_die "the nspawn lab in $NODES_DIR is not up (no env file)"; cat "$NODES_DIR/env" ;;
esac

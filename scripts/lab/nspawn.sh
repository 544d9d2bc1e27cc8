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
# iproute2,iptables,kmod,procps,util-linux,ca-certificates,libseccomp2,python3,python3-yaml,openssl
# bookworm DIR -` (python3, PyYAML and openssl run the kubeadm/kubelet/kubectl/crictl stand-ins of
# scripts/lab/standins), fed the
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
# /var/lib/etcd; $NODES_DIR/standin-cluster on /var/lib/kk-standin/cluster of every node (the
# stand-ins' shared cluster state). /etc/hosts: localhost and the node itself. /etc/machine-id, the ed25519 host key
# (made BEFORE boot: LAB-NOTES P12) and root's authorized_keys are written into the upper layer
# before boot; host key and machine id live in $NODES_DIR/nodes/n<i>/{ssh,machine-id} and survive
# `down`, so known_hosts stays valid. systemd-nspawn runs with
#   SYSTEMD_NSPAWN_API_VFS_WRITABLE=yes --boot --capability=all --system-call-filter="@keyring bpf"
#   --register=no --keep-unit --console=pipe --link-journal=no --resolv-conf=off
#   --network-namespace-path=/run/netns/<prefix>-n<i> --bind=<data dir>:/var/lib/... (3x)
#   --bind=$NODES_DIR/standin-cluster:/var/lib/kk-standin/cluster
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
#
# What both node labs share (arguments, state, names, keys, bridge and namespaces, cgroups, the
# env file's common keys, the steps of up/down/status): scripts/lab/nodelib.sh.
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/lab/nodelib.sh
source "$LAB_SCRIPTS/nodelib.sh"
# shellcheck source=scripts/lab/aptsources.sh
source "$LAB_SCRIPTS/aptsources.sh"

# This kind's settings for nodelib.sh (whose header lists them and the functions defined below
# for it: node_word ... after_down).
LAB_LOG_NAME=nspawn
LAB_KIND="nspawn lab"
LAB_ROOT_FOR="network namespaces, mounts, cgroups"
NODES_DIR_DEFAULT=$REPO/target/lab/nspawn
PREFIX_DEFAULT=kkns
NET_DEFAULT=10.250.1
NODE_DEFAULT_ROUTE=no
BOOT_TIMEOUT=${NSPAWN_BOOT_TIMEOUT:-60}
# Seconds `down` waits for a clean poweroff before it ends the node at once.
STOP_TIMEOUT=${NSPAWN_STOP_TIMEOUT:-5}
NODE_PROCESS=systemd-nspawn
ENV_VETHS=yes

# Bump when the image's preparation changes: the image cache key includes it.
IMAGE_VERSION=1
IMAGE_SUITE=bookworm
IMAGE_VARIANT=minbase
IMAGE_PACKAGES=systemd,systemd-sysv,dbus,openssh-server,iproute2,iptables,kmod,procps,util-linux,ca-certificates,libseccomp2,python3,python3-yaml,openssl
# A minimal server lacks these (issue 21: the install brings them from the bundle); a build whose
# image has one fails (a package of IMAGE_PACKAGES may come to pull one in).
IMAGE_LACKS=(socat conntrack ebtables ethtool nfs-common)
# Directories of the node that are real directories of $NODES_DIR, not the overlay.
DATA_DIRS=(var/lib/containerd var/lib/kk var/lib/etcd)
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
IMAGES_DIR=${NSPAWN_IMAGES_DIR:-$REPO/target/lab/images}

# What the recorded PID's command line contains (systemd-nspawn's -D argument).
node_word() { printf '%s/root' "$(node_dir "$1")"; }

# Whether node i runs: the recorded PID is alive and is this node's systemd-nspawn.
node_running() {
  local pid comm
  pid=$(node_pid "$1")
  lab_pid_is "$pid" "$(node_word "$1")" || return 1
  read -r comm 2>/dev/null < "/proc/$pid/comm" || return 1
  [ "$comm" = systemd-nspawn ]
}

node_status() { printf 'systemd-nspawn pid %s' "$(node_pid "$1")"; }

# --- the base image -----------------------------------------------------------------------------

image_key() {
  printf '%s\n' "kk nspawn lab image v$IMAGE_VERSION" "$IMAGE_SUITE" "$IMAGE_VARIANT" "$IMAGE_PACKAGES" \
    "$(dpkg --print-architecture)" | sha256sum | cut -c1-16
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

# check_image_lacks ROOT: fails (removing ROOT) when the image has a package of IMAGE_LACKS.
check_image_lacks() {
  local b=$1 pkg status present=()
  for pkg in "${IMAGE_LACKS[@]}"; do
    status=$(dpkg-query --admindir="$b/var/lib/dpkg" -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = not-installed ] || [ -z "$status" ] || present+=("$pkg")
  done
  if [ "${#present[@]}" -gt 0 ]; then
    rm -rf "$b"
    lab_die "the node image has ${present[*]}, which a minimal server lacks (IMAGE_PACKAGES pulls them in)"
  fi
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
  command -v mmdebstrap >/dev/null 2>&1 || lab_die "mmdebstrap missing (install it as root: bash scripts/setup.sh)"
  # Leftovers of builds that died (nobody else builds while we hold the lock).
  rm -rf "$IMAGES_DIR"/.build-*
  tmp=$IMAGES_DIR/.build-$key-$$
  sources=$(host_sources "$IMAGE_SUITE")
  [ -n "$sources" ] || lab_die "the host has no apt source for $IMAGE_SUITE (/etc/apt/sources.list{,.d/}): cannot build the node image"
  MIRROR_HOSTS=$(mirror_hosts "$IMAGE_SUITE")
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
  check_image_lacks "$tmp"
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

check_up() {
  local tool missing=()
  for tool in ip systemd-nspawn setsid ssh ssh-keygen flock bc awk mount umount dpkg; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ "${#missing[@]}" -eq 0 ] || lab_die "missing: ${missing[*]} (install them as root: bash scripts/setup.sh)"
  grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
  case "$NODES_DIR/" in
    "$IMAGES_DIR/"*) lab_die "NODES_DIR=$NODES_DIR lies under the image cache $IMAGES_DIR" ;;
  esac
}

prepare_lab() {
  local i d
  ensure_image
  # Like the host keys (make_keys), the machine ids outlive `down`.
  for ((i = 1; i <= $1; i++)); do
    d=$NODES_DIR/nodes/n$i
    if [ ! -s "$d/machine-id" ]; then
      mkdir -p "$d"
      tr -d '-' < /proc/sys/kernel/random/uuid > "$d/machine-id"
    fi
  done
}

# The stand-ins' cluster directory (scripts/lab/standins/README.md: what an API server would know,
# kubeadm-config, each kubelet's Node, the cluster's call log), bound into every node: emptied when
# no node of the lab runs, kept while one does (a node restarted alone rejoins the same cluster).
STANDIN_CLUSTER_DIR=/var/lib/kk-standin/cluster
prepare_start() {
  local i
  for i in $(seq 1 "$1"); do
    if node_running "$i"; then mkdir -p "$NODES_DIR/standin-cluster"; return; fi
  done
  rm -rf "$NODES_DIR/standin-cluster"
  mkdir -p "$NODES_DIR/standin-cluster"
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

launch_node() {
  local i=$1 d ns dir bind_args=()
  d=$(node_dir "$i")
  ns=$(node_ns "$i")
  for dir in "${DATA_DIRS[@]}"; do bind_args+=("--bind=$d/data/$dir:/$dir"); done
  bind_args+=("--bind=$NODES_DIR/standin-cluster:$STANDIN_CLUSTER_DIR")
  (
    # Into the node's cgroups first: nspawn (with --keep-unit) puts the node below its own cgroup.
    while read -r dir _; do echo "$BASHPID" > "$dir/cgroup.procs"; done < "$d/cgroups"
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

env_head() { echo KK_NODES_KIND=nspawn; }
env_tail() { echo "KK_NODES_IMAGE=$IMAGE"; }

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
  while read -r dir _; do
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
    while read -r dir _; do
      [ -d "$dir" ] || continue
      while read -r pid; do pids+=("$pid"); done < <(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null)
    done < "$d/cgroups"
    [ "${#pids[@]}" -gt 0 ] || return 0
    sleep 0.05
  done
}

# TERM to systemd-nspawn: it asks the node's systemd for a clean poweroff (SIGRTMIN+4).
node_term() { kill -TERM "$2" 2>/dev/null || true; }

# A node whose poweroff hangs (e.g. a container process that ignores TERM: systemd waits 90 s for
# it) gets a second TERM, which makes nspawn end the node at once (KILL to its PID 1, so to its
# PID namespace) and still clean up after itself; KILL to nspawn is the last resort.
stop_harder() {
  local i
  for i in "${alive[@]}"; do
    lab_log "node$i: still running $STOP_TIMEOUT s after TERM (console: $(node_dir "$i")/console.log); TERM again: immediate termination"
    kill -TERM "${node_pids[$i]}" 2>/dev/null || true
  done
  wait_gone 5 "${alive[@]}"
  for i in ${alive[@]+"${alive[@]}"}; do
    lab_log "node$i: systemd-nspawn (pid ${node_pids[$i]}) still runs; KILL"
    kill -KILL "${node_pids[$i]}" 2>/dev/null || true
  done
}

# After the nodes' nspawn ended: their processes left in their cgroups, the overlay roots
# (nspawn's binds lived in its own mount namespace and went with it), and what a killed nspawn
# leaves in /run and in the node directory.
release_nodes() {
  local i d mnt locks=()
  for i in "$@"; do
    d=$(node_dir "$i")
    kill_cgroup_leftovers "$d"
    # nspawn's lock on its root directory, named after the overlay's device and inode: gone with
    # the overlay, so known now (nspawn removes it itself unless it is killed).
    if mountpoint -q "$d/root" 2>/dev/null; then
      locks+=("/run/systemd/nspawn/locks/inode-$(stat -c '%d:%i' "$d/root")")
    fi
  done
  # Only the stopped nodes' own mounts: the others still run (`up` with fewer nodes).
  while read -r mnt; do
    [ -n "$mnt" ] || continue
    for i in "$@"; do
      case "$mnt" in
        "$(node_dir "$i")"/*)
          umount "$mnt" 2>/dev/null || umount -l "$mnt" || lab_log "warning: cannot unmount $mnt" ;;
      esac
    done
  done < <(lab_mounts)
  for i in "$@"; do
    # nspawn cannot remove it itself: /run is no tmpfs here.
    rm -rf "/run/systemd/nspawn/propagate/$(node_ns "$i")"
    # Locks a killed nspawn left (no process holds them any more).
    rm -f "$(node_dir "$i")/.#root.lck"
  done
  rm -f ${locks[@]+"${locks[@]}"}
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

after_down() {
  local rest
  rest=$(leftovers)
  if [ -n "$rest" ]; then
    lab_log "left behind:"$'\n'"$rest"
    lab_die "down did not remove everything (above)"
  fi
}

node_lab_main "$@"

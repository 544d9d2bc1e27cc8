#!/usr/bin/env bash
# The node lab: N "machines" for the installer to ssh into, each a network namespace on a bridge
# this script creates, with a real OpenSSH sshd as PID 1 of its own PID namespace
# (LAB-NOTES §4a). Needs root.
#
#   scripts/lab/nodes.sh up [N]   start (or keep) nodes node1..nodeN (N: default the running
#                                 lab's count, else 3; at most 244), wait until every sshd
#                                 answers, write $NODES_DIR/env and print it
#   scripts/lab/nodes.sh down     stop every node by its recorded PID, delete the namespaces,
#                                 veths and bridge, the nodes' cgroups and file system changes
#   scripts/lab/nodes.sh status   say what runs (exit 0 when every node does, 3 otherwise)
#   scripts/lab/nodes.sh env      print $NODES_DIR/env
#
# Environment:
#   NODES_DIR     state directory (default <repo>/target/lab/nodes); must not lie under a
#                 directory the nodes overlay (/etc, /usr, /var, /opt, /root, /home, /srv)
#   NODES_PREFIX  names: bridge <prefix>br0, namespaces and host veths <prefix>-n<i> (default kklab;
#                 [a-z][a-z0-9]{0,7}), so that labs in different NODES_DIRs can coexist
#   NODES_NET     the /24 inside 10.250.0.0/16 to use, as its first three octets (default 10.250.0):
#                 bridge (the host, as seen from the nodes) .1, node i at .(10+i)
# Once a lab is up, `down`, `status` and `env` use the prefix and net recorded in $NODES_DIR/state.
#
# Each node: hostname node<i>; its own network namespace (so its own sysctls net.*, e.g.
# net.ipv4.ip_forward) with eth0 on the bridge and a default route via the bridge; its own PID,
# mount, UTS and cgroup namespaces (/proc shows only the node's processes); copy-on-write overlays
# over the host's /etc /usr /var /opt /root /home /srv (and /bin /sbin /lib* where they are not
# symlinks), whose writes land in $NODES_DIR/nodes/n<i>/upper and never reach the host or the
# other nodes; a private tmpfs on /tmp and /run; real directories (not overlays) on
# /var/lib/containerd and /var/lib/etcd; the cgroup file systems, rooted at the node's own cgroups.
# Not isolated: /dev, the kernel (non-net sysctls, modules) and directories outside the list above
# (e.g. the repository under /work), which the node sees and writes as the host does.
#
# SSH: port 22, an ed25519 host key per node (kept across down/up; known_hosts lists them by IP
# and name), one ed25519 client key for every user. root logs in by key only; user kk by key or
# by password (KK_NODES_PASSWORD); kk gets passwordless sudo when sudo is installed. SFTP is on.
# The nodes run no systemd.
#
# The env file ($NODES_DIR/env; KEY=VALUE lines, values with spaces in double quotes, so bash can
# source it): KK_NODES_DIR, KK_NODES_PREFIX, KK_NODES_COUNT, KK_NODES_IPS / KK_NODES_NAMES /
# KK_NODES_NETNS (space-separated, node1 first), KK_NODES_BRIDGE, KK_NODES_HOST_IP (the host as
# the nodes reach it), KK_NODES_CIDR, KK_NODES_PORT, KK_NODES_USER (root), KK_NODES_KEY (client
# private key) and KK_NODES_PUBKEY, KK_NODES_KNOWN_HOSTS, KK_NODES_SSH_CONFIG (`ssh -F FILE node1`
# works, strict host key checking included), KK_NODES_NONROOT_USER (kk), KK_NODES_SUDO_USER (kk,
# or empty when the host has no sudo), KK_NODES_PASSWORD_USER and KK_NODES_PASSWORD.
#
# Logs: $NODES_DIR/nodes/n<i>/init.out (the node's first process and sshd's log).
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LAB_LOG_NAME=nodes

usage() { lab_die "usage: $0 up [N] | down | status | env"; }
[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
  up) [ $# -le 1 ] || usage ;;
  down|status|env) [ $# -eq 0 ] || usage ;;
  *) usage ;;
esac

# Whether the bridge and namespace names of PREFIX are this lab's to delete (see `down`).
OWN_NAMES=yes
# Node i has address .(10+i) of a /24.
MAX_NODES=244
NONROOT_USER=kk
NODE_PASSWORD=kk-node-lab
SFTP_SERVER=/usr/lib/openssh/sftp-server
# Host directories every node overlays (those that exist as real directories on this host).
OVERLAY_CANDIDATES=(bin sbin lib lib32 lib64 libx32 etc usr var opt root home srv)

[ "$(id -u)" = 0 ] || lab_die "the node lab needs root (network namespaces, mounts)"

NODES_DIR=${NODES_DIR:-$REPO/target/lab/nodes}
mkdir -p "$NODES_DIR" || lab_die "cannot create NODES_DIR $NODES_DIR"
NODES_DIR=$(cd "$NODES_DIR" && pwd -P)
case "$NODES_DIR" in
  *[[:space:]]*) lab_die "NODES_DIR must not contain whitespace: '$NODES_DIR'" ;;
esac
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
  PREFIX=${NODES_PREFIX:-${recorded_prefix:-kklab}}
  NET=${NODES_NET:-${recorded_net:-10.250.0}}
  if [ -f "$STATE" ] && { [ "$PREFIX" != "$recorded_prefix" ] || [ "$NET" != "$recorded_net" ]; }; then
    lab_die "the lab in $NODES_DIR runs with NODES_PREFIX=$recorded_prefix NODES_NET=$recorded_net;" \
      "run \`$0 down\` before changing them"
  fi
else
  PREFIX=${recorded_prefix:-${NODES_PREFIX:-kklab}}
  NET=${recorded_net:-${NODES_NET:-10.250.0}}
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
BRIDGE_ALIAS="kk node lab $NODES_DIR"

node_dir() { printf '%s/nodes/n%s' "$NODES_DIR" "$1"; }
node_ns() { printf '%s-n%s' "$PREFIX" "$1"; }   # also the host side of the node's veth
node_ip() { printf '%s.%s' "$NET" "$((10 + $1))"; }
# What the recorded PID's command line contains (unshare's, after `ip netns exec` exec'd it).
node_word() { printf 'node-init.sh %s %s' "$1" "$(node_dir "$1")"; }
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

# The node's first process (PID 1 in its namespace): the only child of the recorded unshare.
node_init_pid() {
  local pid=$1 children
  children=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null || true)
  printf '%s' "${children%% *}"
}

# Whether node i runs: the recorded unshare is alive and its child is sshd.
node_running() {
  local pid init comm
  pid=$(node_pid "$1")
  lab_pid_is "$pid" "$(node_word "$1")" || return 1
  init=$(node_init_pid "$pid")
  pid_alive "$init" || return 1
  read -r comm 2>/dev/null < "/proc/$init/comm" || return 1
  [ "$comm" = sshd ]
}

ssh_opts() {
  # -F none: no user or system ssh_config can change what the lab checks.
  printf '%s\n' -F none -i "$KEYS/id_ed25519" -o IdentitiesOnly=yes \
    -o UserKnownHostsFile="$KEYS/known_hosts" -o GlobalKnownHostsFile=/dev/null \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=2 -o LogLevel=ERROR
}

# --- up -----------------------------------------------------------------------------------------

overlay_dirs() {
  local dir
  for dir in "${OVERLAY_CANDIDATES[@]}"; do
    if [ -d "/$dir" ] && [ ! -L "/$dir" ]; then printf '%s\n' "$dir"; fi
  done
}

check_nodes_dir() {
  local dir
  for dir in $(overlay_dirs); do
    case "$NODES_DIR/" in
      "/$dir/"*) lab_die "NODES_DIR=$NODES_DIR lies under /$dir, which the nodes overlay (an overlay's" \
        "upper directory cannot be inside its lower one): use a directory elsewhere, e.g. under /tmp or the repository" ;;
    esac
  done
}

make_keys() {
  local count=$1 i d key ip
  mkdir -p "$KEYS"
  chmod 700 "$KEYS"
  if [ ! -f "$KEYS/id_ed25519" ] || [ ! -f "$KEYS/id_ed25519.pub" ]; then
    rm -f "$KEYS/id_ed25519" "$KEYS/id_ed25519.pub"
    ssh-keygen -q -t ed25519 -N '' -C kk-node-lab-client -f "$KEYS/id_ed25519"
  fi
  # Host keys exist before their sshd starts (LAB-NOTES P12) and outlive `down`, so known_hosts
  # stays valid across restarts.
  for ((i = 1; i <= count; i++)); do
    d=$NODES_DIR/nodes/n$i/ssh
    if [ ! -f "$d/ssh_host_ed25519_key" ] || [ ! -f "$d/ssh_host_ed25519_key.pub" ]; then
      mkdir -p "$d"
      rm -f "$d/ssh_host_ed25519_key" "$d/ssh_host_ed25519_key.pub"
      ssh-keygen -q -t ed25519 -N '' -C "node$i" -f "$d/ssh_host_ed25519_key"
    fi
  done
  # Builtins only in these loops: they run once per node.
  for ((i = 1; i <= count; i++)); do
    read -r key < "$NODES_DIR/nodes/n$i/ssh/ssh_host_ed25519_key.pub"
    printf '%s.%s,node%s %s\n' "$NET" "$((10 + i))" "$i" "${key% *}"
  done > "$KEYS/known_hosts.tmp"
  mv "$KEYS/known_hosts.tmp" "$KEYS/known_hosts"
  {
    echo "# Written by scripts/lab/nodes.sh: ssh -F $NODES_DIR/ssh_config node1"
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

# write_account_file HOST_FILE UPPER_FILE LINE: the host's file without user kk, plus LINE, with
# the host file's owner and mode.
write_account_file() {
  local host=$1 upper=$2 line=$3
  [ -f "$host" ] || return 0
  { grep -v "^$NONROOT_USER:" "$host" || true; printf '%s\n' "$line"; } > "$upper"
  chown --reference="$host" "$upper"
  chmod --reference="$host" "$upper"
}

# NODES_DIR/template: what every fresh node's upper directories start with. One empty directory
# per overlaid host directory, with that directory's owner and mode (an overlay's root takes its
# attributes from the upper directory); sshd's configuration; the host's account files plus user
# kk (replacing a host kk, keeping its ids so that host-side file ownership agrees), with a
# password and, when sudo is installed, passwordless sudo; the client key in root's and kk's
# authorized_keys; /etc/hosts naming every node.
make_template() {
  local count=$1 t=$NODES_DIR/template dir uid gid hash home=/home/$NONROOT_USER i
  rm -rf "$t" "$NODES_DIR/overlay-dirs"
  overlay_dirs > "$NODES_DIR/overlay-dirs"
  while IFS= read -r dir; do
    mkdir -p "$t/$dir"
    chown --reference="/$dir" "$t/$dir"
    chmod --reference="/$dir" "$t/$dir"
  done < "$NODES_DIR/overlay-dirs"
  grep -qx etc "$NODES_DIR/overlay-dirs" || lab_die "/etc is not a directory the nodes can overlay"

  mkdir -p "$t/etc/ssh"
  cat > "$t/etc/ssh/sshd_config" <<EOF
# Written by scripts/lab/nodes.sh for the node lab in $NODES_DIR.
ListenAddress 0.0.0.0
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PidFile /run/sshd.pid
AuthorizedKeysFile .ssh/authorized_keys
PubkeyAuthentication yes
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
# No PAM stack in the node: sshd checks /etc/shadow itself.
UsePAM no
UseDNS no
PrintMotd no
# An installer opens many connections to the same node at once.
MaxStartups 100:30:200
MaxSessions 100
AcceptEnv LANG LC_*
Subsystem sftp $SFTP_SERVER
Match User $NONROOT_USER
  PasswordAuthentication yes
EOF
  {
    cat /etc/hosts
    echo "# the kk node lab (nodes added to a running lab later are missing from older nodes' lists)"
    for ((i = 1; i <= count; i++)); do printf '%s.%s node%s\n' "$NET" "$((10 + i))" "$i"; done
  } > "$t/etc/hosts"

  uid=$(awk -F: -v u="$NONROOT_USER" '$1 == u { print $3 }' /etc/passwd)
  gid=$(awk -F: -v u="$NONROOT_USER" '$1 == u { print $4 }' /etc/passwd)
  if [ -z "$uid" ]; then
    uid=$(awk -F: '{ used[$3] = 1 } END { for (i = 1000; used[i]; i++) ; print i }' /etc/passwd)
    gid=$(awk -F: -v want="$uid" '{ used[$3] = 1 } END { for (i = want; used[i]; i++) ; print i }' /etc/group)
  fi
  hash=$(openssl passwd -6 "$NODE_PASSWORD")
  write_account_file /etc/passwd "$t/etc/passwd" "$NONROOT_USER:x:$uid:$gid:kk node lab user:$home:/bin/bash"
  write_account_file /etc/group "$t/etc/group" "$NONROOT_USER:x:$gid:"
  write_account_file /etc/shadow "$t/etc/shadow" "$NONROOT_USER:$hash:$(( $(date +%s) / 86400 )):0:99999:7:::"
  write_account_file /etc/gshadow "$t/etc/gshadow" "$NONROOT_USER:!::"
  if command -v sudo >/dev/null 2>&1 && [ -d /etc/sudoers.d ]; then
    mkdir -p "$t/etc/sudoers.d"
    echo "$NONROOT_USER ALL=(ALL:ALL) NOPASSWD: ALL" > "$t/etc/sudoers.d/kk-node-lab"
    chmod 440 "$t/etc/sudoers.d/kk-node-lab"
  fi

  mkdir -p "$t/root/.ssh"
  chmod 700 "$t/root/.ssh"
  install -m 600 "$KEYS/id_ed25519.pub" "$t/root/.ssh/authorized_keys"
  if [ -d "$t/home" ]; then
    mkdir -p "$t$home/.ssh"
    chmod 755 "$t$home"
    chmod 700 "$t$home/.ssh"
    install -m 600 "$KEYS/id_ed25519.pub" "$t$home/.ssh/authorized_keys"
    chown -R "$uid:$gid" "$t$home"
  fi
}

# A fresh node file system: the template as upper directories, plus the node's host key and
# hostname; empty overlay work directories.
prepare_node() {
  local i=$1 d dir work=()
  d=$NODES_DIR/nodes/n$i
  rm -rf "$d/upper" "$d/work" "$d/data"
  cp "$NODES_DIR/overlay-dirs" "$d/overlay-dirs"
  while IFS= read -r dir; do work+=("$d/work/$dir"); done < "$d/overlay-dirs"
  mkdir -p "${work[@]}"
  cp -a "$NODES_DIR/template" "$d/upper"
  cp "$d/ssh/ssh_host_ed25519_key" "$d/ssh/ssh_host_ed25519_key.pub" "$d/upper/etc/ssh/"
  echo "node$i" > "$d/upper/etc/hostname"
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
      case "$controllers" in
        name=*) printf '%s cgroup none,%s %s\n' "$mountpoint" "$controllers" "$path" ;;
        *) printf '%s cgroup %s %s\n' "$mountpoint" "$controllers" "$path" ;;
      esac
    fi
  done < /proc/self/cgroup
}

# Node i's cgroups, one per hierarchy of HIERARCHIES (cgroup_hierarchies), below the cgroup this
# script runs in (so the node stays inside whatever limits apply to us). Written to
# NODE_DIR/cgroups as HOST_DIR FSTYPE OPTIONS NODE_MOUNTPOINT: node-init.sh mounts them, `down`
# removes them.
make_cgroups() {
  local i=$1 d mountpoint fstype options path dir target f value
  d=$NODES_DIR/nodes/n$i
  : > "$d/cgroups"
  [ -n "$HIERARCHIES" ] || return 0
  while read -r mountpoint fstype options path; do
    dir=${mountpoint}${path%/}/$PREFIX-n$i
    mkdir -p "$dir"
    # A v1 cpuset cgroup takes no process until it has CPUs and memory nodes.
    for f in cpuset.cpus cpuset.mems; do
      [ -f "$dir/$f" ] || continue
      value=""
      read -r value < "$dir/$f" || true
      if [ -z "$value" ]; then read -r value < "${dir%/*}/$f" || true; echo "$value" > "$dir/$f"; fi
    done
    case "$mountpoint" in
      /sys/fs/cgroup|/sys/fs/cgroup/*) target=$mountpoint ;;
      *) target=/sys/fs/cgroup/${mountpoint##*/} ;;
    esac
    printf '%s %s %s %s\n' "$dir" "$fstype" "$options" "$target"
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
# veth <ns> on the bridge. Batched: one `ip` for the host side, one per node inside.
make_netns() {
  local i ns batch=""
  # (stop_nodes removed this node's old veth and namespace, if any.)
  for i in "$@"; do
    ns=$PREFIX-n$i
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
route add default via $GATEWAY
EOF
  done
}

launch_node() {
  local i=$1 d ns
  d=$(node_dir "$i")
  ns=$(node_ns "$i")
  (
    # Into the node's cgroups first: the cgroup namespace that unshare makes is rooted where its
    # creator is.
    while read -r dir _; do echo "$BASHPID" > "$dir/cgroup.procs"; done < "$d/cgroups"
    # A clean environment (not this script's or a test runner's); `ip netns exec` execs unshare,
    # so $! below is unshare's PID. --kill-child: if unshare is killed, so is the node's PID 1,
    # and with it every process of the node.
    exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      ip netns exec "$ns" unshare --cgroup --mount --uts --pid --fork --mount-proc --kill-child \
      bash "$LAB_SCRIPTS/node-init.sh" "$i" "$d"
  ) >"$d/init.out" 2>&1 </dev/null 9>&- &
  echo $! > "$d/pid"
}

# wait_ssh I DEADLINE: until root@node i answers over ssh (strict host key checking against
# known_hosts), or fail.
wait_ssh() {
  local i=$1 deadline=$2 ip d opts
  ip=$(node_ip "$i")
  d=$(node_dir "$i")
  mapfile -t opts < <(ssh_opts)
  # Only for this probe: curve25519 instead of OpenSSH 9's default post-quantum key exchange,
  # which costs about 0.2 s of CPU per connection (20 nodes on 2 cores).
  opts+=(-o KexAlgorithms=curve25519-sha256)
  while :; do
    if ssh "${opts[@]}" "root@$ip" true </dev/null >/dev/null 2>"$d/ssh-check.err"; then
      rm -f "$d/ssh-check.err"
      return 0
    fi
    if ! lab_pid_alive "$(node_pid "$i")"; then
      lab_log "node$i: its processes ended while starting; $d/init.out:"
      tail -n 20 "$d/init.out" >&2 || true
      return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      lab_log "node$i ($ip): sshd does not answer; last ssh error:"
      cat "$d/ssh-check.err" >&2 || true
      tail -n 20 "$d/init.out" >&2 || true
      return 1
    fi
    sleep 0.05
  done
}

write_env() {
  local count=$1 i ips="" names="" netns="" tmp=$NODES_DIR/env.tmp sudo_user=""
  for i in $(seq 1 "$count"); do
    ips+="${ips:+ }$(node_ip "$i")"
    names+="${names:+ }node$i"
    netns+="${netns:+ }$(node_ns "$i")"
  done
  # Without sudo on the host there is none in the nodes either (they see the host's /usr).
  if [ -f "$NODES_DIR/template/etc/sudoers.d/kk-node-lab" ]; then sudo_user=$NONROOT_USER; fi
  # KEY=VALUE lines that bash can also source: values with spaces are in double quotes.
  cat > "$tmp" <<EOF
KK_NODES_DIR=$NODES_DIR
KK_NODES_PREFIX=$PREFIX
KK_NODES_COUNT=$count
KK_NODES_IPS="$ips"
KK_NODES_NAMES="$names"
KK_NODES_NETNS="$netns"
KK_NODES_BRIDGE=$BRIDGE
KK_NODES_HOST_IP=$GATEWAY
KK_NODES_CIDR=$NET.0/24
KK_NODES_PORT=22
KK_NODES_USER=root
KK_NODES_KEY=$KEYS/id_ed25519
KK_NODES_PUBKEY=$KEYS/id_ed25519.pub
KK_NODES_KNOWN_HOSTS=$KEYS/known_hosts
KK_NODES_SSH_CONFIG=$NODES_DIR/ssh_config
KK_NODES_NONROOT_USER=$NONROOT_USER
KK_NODES_SUDO_USER=$sudo_user
KK_NODES_PASSWORD_USER=$NONROOT_USER
KK_NODES_PASSWORD=$NODE_PASSWORD
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
  for tool in ip unshare ssh ssh-keygen openssl flock bc awk mount; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ -x /usr/sbin/sshd ] || missing+=(/usr/sbin/sshd)
  [ -x "$SFTP_SERVER" ] || missing+=("$SFTP_SERVER")
  [ "${#missing[@]}" -eq 0 ] || lab_die "missing: ${missing[*]} (install them with: sudo bash scripts/setup.sh)"
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

  make_keys "$count"
  ensure_bridge
  for i in $(seq 1 "$count"); do node_running "$i" || start+=("$i"); done
  if [ "${#start[@]}" -gt 0 ]; then
    # Leftovers of nodes that died (their processes, if any, by recorded PID).
    stop_nodes "${start[@]}"
    make_template "$count"
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
    [ "$failed" = 0 ] || lab_die "preparing the nodes failed (above)"
    pids=()
    make_netns "${start[@]}"
    for i in "${start[@]}"; do launch_node "$i"; done
  fi

  # Every node in parallel: a serial check would cost a connection set-up per node.
  deadline=$(( $(date +%s) + 30 ))
  for i in $(seq 1 "$count"); do
    wait_ssh "$i" "$deadline" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  [ "$failed" = 0 ] || lab_die "not every node came up (\`$0 down\` cleans up)"

  write_env "$count"
  lab_log "up in $(elapsed "$t0") s: $count nodes, ${#start[@]} started ($NODES_DIR)"
  cat "$NODES_DIR/env"
}

# --- down ---------------------------------------------------------------------------------------

# Stops the given nodes by their recorded PIDs and removes what they had on the host: veth,
# namespace, cgroups, file system changes. Host keys and logs stay.
stop_nodes() {
  local i pid init d ns waiting=() alive=() batch="" mnt
  local -A node_pids=()
  for i in "$@"; do
    pid=$(node_pid "$i")
    [ -n "$pid" ] || continue
    if ! lab_pid_is "$pid" "$(node_word "$i")"; then
      rm -f "$NODES_DIR/nodes/n$i/pid"
      continue
    fi
    # TERM to the node's PID 1 (sshd): when it exits, the kernel kills every other process of
    # the node's PID namespace, and unshare returns.
    init=$(node_init_pid "$pid")
    if [ -n "$init" ]; then kill -TERM "$init" 2>/dev/null || true; fi
    node_pids[$i]=$pid
    waiting+=("$i")
  done
  # All nodes were signalled first: the PID namespaces go down in parallel.
  for _ in $(seq 1 100); do
    alive=()
    for i in ${waiting[@]+"${waiting[@]}"}; do
      if pid_alive "${node_pids[$i]}"; then alive+=("$i"); fi
    done
    [ "${#alive[@]}" -gt 0 ] || break
    sleep 0.05
  done
  for i in ${alive[@]+"${alive[@]}"}; do
    lab_log "node$i: still running 5 s after TERM; sending KILL to unshare (pid ${node_pids[$i]}; it takes the node with it)"
    # unshare ignores TERM while it waits for its child; --kill-child turns its death into a KILL
    # of the node's PID 1.
    kill -KILL "${node_pids[$i]}" 2>/dev/null || true
  done
  for i in ${alive[@]+"${alive[@]}"}; do
    for _ in $(seq 1 100); do pid_alive "${node_pids[$i]}" || break; sleep 0.05; done
    if pid_alive "${node_pids[$i]}"; then lab_die "node$i: unshare (pid ${node_pids[$i]}) survives KILL"; fi
  done
  for i in ${waiting[@]+"${waiting[@]}"}; do
    # Our own child when `up` restarts a node: reap it rather than leave a zombie.
    wait "${node_pids[$i]}" 2>/dev/null || true
    rm -f "$NODES_DIR/nodes/n$i/pid"
  done

  # Deleting the host veth deletes its peer at once; a namespace's own teardown is asynchronous.
  # One listing and one `ip -batch` for all nodes: per-node calls add up with 20 nodes.
  local present=""
  if [ "$OWN_NAMES" = yes ]; then
    present=$( { ip netns list | awk '{ print "netns " $1 }'; ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link " $2 }'; } )
  fi
  for i in "$@"; do
    ns=$PREFIX-n$i
    if grep -qx -- "link $ns" <<< "$present"; then batch+="link del $ns"$'\n'; fi
    if grep -qx -- "netns $ns" <<< "$present"; then batch+="netns del $ns"$'\n'; fi
  done
  if [ -n "$batch" ]; then printf '%s' "$batch" | ip -batch - || lab_log "warning: deleting links/namespaces failed"; fi

  # The overlays live in the nodes' mount namespaces and went with them; this catches any that a
  # host-side command mounted by hand (deepest first).
  while read -r mnt; do
    [ -n "$mnt" ] || continue
    lab_log "unmounting $mnt"
    umount -l "$mnt" || lab_log "warning: cannot unmount $mnt"
  done < <(awk -v d="$NODES_DIR/nodes/" 'index($5, d) == 1 || index($0, "upperdir=" d) { print $5 }' /proc/self/mountinfo | sort -r)

  local cleaners=()
  for i in "$@"; do
    d=$NODES_DIR/nodes/n$i
    # In parallel, as in `up`: removing even a small tree waits on the disk.
    if [ -e "$d/cgroups" ] || [ -e "$d/upper" ] || [ -e "$d/work" ] || [ -e "$d/data" ]; then
      clean_node "$d" 9>&- &
      cleaners+=($!)
    fi
  done
  for i in ${cleaners[@]+"${cleaners[@]}"}; do wait "$i" || true; done
}

# clean_node NODE_DIR: the cgroups and file system changes of a stopped node.
clean_node() {
  local d=$1 dir
  # Depth-first: runc inside the node leaves cgroups of its containers below the node's.
  if [ -f "$d/cgroups" ]; then
    while read -r dir _; do
      [ -d "$dir" ] || continue
      find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ ! -d "$dir" ] || lab_log "warning: cgroup $dir is not empty (processes left in it?)"
    done < "$d/cgroups"
    rm -f "$d/cgroups"
  fi
  rm -rf "$d/upper" "$d/work" "$d/data"
}

down() {
  local t0 nodes=() i dir ns owner
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
  # Every node this lab may have: recorded ones, directories with a PID file, and namespaces
  # with the lab's names (leftovers of a run that died).
  if [ -n "$recorded_count" ]; then mapfile -t nodes < <(seq 1 "$recorded_count"); fi
  for dir in "$NODES_DIR"/nodes/n*; do
    [ -e "$dir/pid" ] || [ -e "$dir/cgroups" ] || [ -d "$dir/upper" ] || continue
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
  lab_log "down in $(elapsed "$t0") s (${#nodes[@]} nodes, $NODES_DIR)"
}

status() {
  local ok=0 count=${recorded_count:-0} i pid
  if [ ! -f "$STATE" ]; then
    echo "node lab: down ($NODES_DIR)"
    return 3
  fi
  for i in $(seq 1 "$count"); do
    pid=$(node_pid "$i")
    if node_running "$i"; then
      echo "node$i: running, $(node_ip "$i"), netns $(node_ns "$i"), unshare pid $pid, sshd pid $(node_init_pid "$pid")"
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
  env) [ -f "$NODES_DIR/env" ] || lab_die "the node lab in $NODES_DIR is not up (no env file)"; cat "$NODES_DIR/env" ;;
esac

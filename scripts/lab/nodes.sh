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
#
# What both node labs share (arguments, state, names, keys, bridge and namespaces, cgroups, the
# env file's common keys, the steps of up/down/status): scripts/lab/nodelib.sh.
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/lab/nodelib.sh
source "$LAB_SCRIPTS/nodelib.sh"

# This kind's settings for nodelib.sh (whose header lists them and the functions defined below
# for it: node_word ... after_down).
LAB_LOG_NAME=nodes
LAB_KIND="node lab"
LAB_ROOT_FOR="network namespaces, mounts"
NODES_DIR_DEFAULT=$REPO/target/lab/nodes
PREFIX_DEFAULT=kklab
NET_DEFAULT=10.250.0
NODE_DEFAULT_ROUTE=yes
BOOT_TIMEOUT=30
STOP_TIMEOUT=5
NODE_PROCESS=unshare
ENV_VETHS=no

NONROOT_USER=kk
NODE_PASSWORD=kk-node-lab
SFTP_SERVER=/usr/lib/openssh/sftp-server
# Host directories every node overlays (those that exist as real directories on this host).
OVERLAY_CANDIDATES=(bin sbin lib lib32 lib64 libx32 etc usr var opt root home srv)

# What the recorded PID's command line contains (unshare's, after `ip netns exec` exec'd it).
node_word() { printf 'node-init.sh %s %s' "$1" "$(node_dir "$1")"; }

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

node_status() {
  local pid
  pid=$(node_pid "$1")
  printf 'unshare pid %s, sshd pid %s' "$pid" "$(node_init_pid "$pid")"
}

# --- up -----------------------------------------------------------------------------------------

overlay_dirs() {
  local dir
  for dir in "${OVERLAY_CANDIDATES[@]}"; do
    if [ -d "/$dir" ] && [ ! -L "/$dir" ]; then printf '%s\n' "$dir"; fi
  done
}

check_up() {
  local tool missing=() dir
  for tool in ip unshare ssh ssh-keygen openssl flock bc awk mount; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [ -x /usr/sbin/sshd ] || missing+=(/usr/sbin/sshd)
  [ -x "$SFTP_SERVER" ] || missing+=("$SFTP_SERVER")
  [ "${#missing[@]}" -eq 0 ] || lab_die "missing: ${missing[*]} (install them as root: bash scripts/setup.sh)"
  for dir in $(overlay_dirs); do
    case "$NODES_DIR/" in
      "/$dir/"*) lab_die "NODES_DIR=$NODES_DIR lies under /$dir, which the nodes overlay (an overlay's" \
        "upper directory cannot be inside its lower one): use a directory elsewhere, e.g. under /tmp or the repository" ;;
    esac
  done
}

prepare_lab() { :; }
# The template is made afresh whenever a node starts (it lists every node in /etc/hosts).
prepare_start() { make_template "$1"; }

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

# wait_node I DEADLINE: until root@node i answers over ssh (strict host key checking against
# known_hosts), or fail.
wait_node() {
  local i=$1 deadline=$2 ip d opts
  ip=$(node_ip "$i")
  d=$(node_dir "$i")
  mapfile -t opts < <(ssh_opts)
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

env_head() { :; }

env_tail() {
  local sudo_user=""
  # Without sudo on the host there is none in the nodes either (they see the host's /usr).
  if [ -f "$NODES_DIR/template/etc/sudoers.d/kk-node-lab" ]; then sudo_user=$NONROOT_USER; fi
  cat <<EOF
KK_NODES_NONROOT_USER=$NONROOT_USER
KK_NODES_SUDO_USER=$sudo_user
KK_NODES_PASSWORD_USER=$NONROOT_USER
KK_NODES_PASSWORD=$NODE_PASSWORD
EOF
}

# --- down ---------------------------------------------------------------------------------------

# TERM to the node's PID 1 (sshd): when it exits, the kernel kills every other process of the
# node's PID namespace, and unshare returns.
node_term() {
  local init
  init=$(node_init_pid "$2")
  if [ -n "$init" ]; then kill -TERM "$init" 2>/dev/null || true; fi
}

stop_harder() {
  local i
  for i in "${alive[@]}"; do
    lab_log "node$i: still running $STOP_TIMEOUT s after TERM; sending KILL to unshare (pid ${node_pids[$i]}; it takes the node with it)"
    # unshare ignores TERM while it waits for its child; --kill-child turns its death into a KILL
    # of the node's PID 1.
    kill -KILL "${node_pids[$i]}" 2>/dev/null || true
  done
}

# The overlays live in the nodes' mount namespaces and went with them; this catches any that a
# host-side command mounted by hand (deepest first).
release_nodes() {
  local mnt
  while read -r mnt; do
    [ -n "$mnt" ] || continue
    lab_log "unmounting $mnt"
    umount -l "$mnt" || lab_log "warning: cannot unmount $mnt"
  done < <(awk -v d="$NODES_DIR/nodes/" 'index($5, d) == 1 || index($0, "upperdir=" d) { print $5 }' /proc/self/mountinfo | sort -r)
}

after_down() { :; }

node_lab_main "$@"

# shellcheck shell=bash
# What the two node labs share: scripts/lab/nodes.sh (network namespaces with sshd as PID 1) and
# scripts/lab/nspawn.sh (systemd-nspawn machines). Their interface (`up [N] | down | status |
# env`), NODES_DIR / NODES_PREFIX / NODES_NET and the state file, node names and addresses, ssh
# keys and known_hosts, the bridge, network namespaces and veths, the nodes' cgroups, the env
# file's common keys, and the order of `up`, `down` and `status` live here; how a node is made,
# started, awaited and stopped lives in the kind's script. Source it after lib.sh (it sets no
# shell options of its own and runs nothing), then call `node_lab_main "$@"` last.
#
# A kind's script sets:
#   LAB_LOG_NAME        lib.sh's log prefix (nodes, nspawn)
#   LAB_KIND            the lab in messages ("node lab", "nspawn lab"); also names the bridge's
#                       ifalias ("kk <kind> <NODES_DIR>") and the client key ("kk-<kind>-client")
#   LAB_ROOT_FOR        why root is needed (in the message for anyone else)
#   NODES_DIR_DEFAULT, PREFIX_DEFAULT, NET_DEFAULT   NODES_DIR, NODES_PREFIX, NODES_NET defaults
#   NODE_DEFAULT_ROUTE  yes: each node's default route goes via the bridge; no: none
#   BOOT_TIMEOUT        seconds `up` waits for all nodes to answer
#   STOP_TIMEOUT        seconds stop_nodes waits after node_term before stop_harder
#   NODE_PROCESS        the recorded process, for messages (unshare, systemd-nspawn)
#   ENV_VETHS           yes: the env file has KK_NODES_VETHS (the host veths) after KK_NODES_NETNS
# and defines:
#   node_word I         what the command line of node I's recorded PID contains
#   node_running I      whether node I runs
#   node_status I       status's words on a running node I after its netns ("unshare pid ...")
#   check_up            `up`'s checks (tools, NODES_DIR) before anything is recorded or made
#   prepare_lab COUNT   after the state is recorded, before the keys (nspawn: the image)
#   prepare_start COUNT before the nodes to start are prepared (nodes.sh: the template)
#   prepare_node I      node I's files (runs in parallel with the other nodes'; then make_cgroups)
#   launch_node I       start node I (in the background) and write its PID to NODE_DIR/pid
#   wait_node I DEADLINE  until node I answers (run in parallel); fail with its logs
#   env_head, env_tail  the kind's own env-file lines, before and after the common keys
#   node_term I PID     the first signal that stops node I (PID: its recorded process)
#   stop_harder         for the nodes in `alive` (node_pids: their recorded PIDs) still running
#                       STOP_TIMEOUT s after node_term: end them, last with KILL to the PID
#   release_nodes NODE...  after the given nodes stopped: what the kind left on the host
#                       (mounts under NODES_DIR/nodes, ...), before veths and namespaces go
#   after_down          last step of `down`, after the bridge, env and state file went

# Node i has address .(10+i) of a /24.
MAX_NODES=244
# Whether the bridge and namespace names of PREFIX are this lab's to delete (see `down`).
OWN_NAMES=yes

node_lab_usage() { lab_die "usage: $0 up [N] | down | status | env"; }

# node_lab_main ARGS...: the whole script after the kind's definitions.
node_lab_main() {
  [ $# -ge 1 ] || node_lab_usage
  command=$1
  shift
  case "$command" in
    up) [ $# -le 1 ] || node_lab_usage ;;
    down|status|env) [ $# -eq 0 ] || node_lab_usage ;;
    *) node_lab_usage ;;
  esac
  node_lab_init
  case "$command" in
    up) up "$@" ;;
    down) down ;;
    status) status ;;
    env) [ -f "$NODES_DIR/env" ] || lab_die "the $LAB_KIND in $NODES_DIR is not up (no env file)"; cat "$NODES_DIR/env" ;;
  esac
}

# NODES_DIR (absolute, locked), the recorded state, PREFIX and NET (checked), and the names.
node_lab_init() {
  [ "$(id -u)" = 0 ] || lab_die "the $LAB_KIND needs root ($LAB_ROOT_FOR)"

  NODES_DIR=${NODES_DIR:-$NODES_DIR_DEFAULT}
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

  recorded_prefix=$(state_get PREFIX)
  recorded_net=$(state_get NET)
  recorded_count=$(state_get COUNT)
  if [ "$command" = up ]; then
    PREFIX=${NODES_PREFIX:-${recorded_prefix:-$PREFIX_DEFAULT}}
    NET=${NODES_NET:-${recorded_net:-$NET_DEFAULT}}
    if [ -f "$STATE" ] && { [ "$PREFIX" != "$recorded_prefix" ] || [ "$NET" != "$recorded_net" ]; }; then
      lab_die "the lab in $NODES_DIR runs with NODES_PREFIX=$recorded_prefix NODES_NET=$recorded_net;" \
        "run \`$0 down\` before changing them"
    fi
  else
    PREFIX=${recorded_prefix:-${NODES_PREFIX:-$PREFIX_DEFAULT}}
    NET=${recorded_net:-${NODES_NET:-$NET_DEFAULT}}
  fi
  [[ "$PREFIX" =~ ^[a-z][a-z0-9]{0,7}$ ]] \
    || lab_die "NODES_PREFIX=$PREFIX: want [a-z][a-z0-9]{0,7} (interface names have at most 15 characters)"
  if ! { [[ "$NET" =~ ^10\.250\.([0-9]{1,3})$ ]] && [ "${BASH_REMATCH[1]}" -le 255 ]; }; then
    lab_die "NODES_NET=$NET: want 10.250.X with X in 0..255 (the lab only uses 10.250.0.0/16)"
  fi

  BRIDGE=${PREFIX}br0
  GATEWAY=$NET.1
  # The bridge's ifalias names the lab directory that owns it: another lab with the same prefix
  # is refused instead of taken over.
  BRIDGE_ALIAS="kk $LAB_KIND $NODES_DIR"
}

state_get() { sed -n "s/^$1=//p" "$STATE" 2>/dev/null || true; }

node_dir() { printf '%s/nodes/n%s' "$NODES_DIR" "$1"; }
# Node i's network namespace; also its host veth, its cgroups and (nspawn) its machine name.
node_ns() { printf '%s-n%s' "$PREFIX" "$1"; }
node_ip() { printf '%s.%s' "$NET" "$((10 + $1))"; }
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

# The options of the probes that wait for a node (one a line, for mapfile).
ssh_opts() {
  # -F none: no user or system ssh_config can change what the lab checks. curve25519 instead of
  # OpenSSH 9's default post-quantum key exchange, which costs about 0.2 s of CPU per connection
  # (20 nodes on 2 cores).
  printf '%s\n' -F none -i "$KEYS/id_ed25519" -o IdentitiesOnly=yes \
    -o UserKnownHostsFile="$KEYS/known_hosts" -o GlobalKnownHostsFile=/dev/null \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=2 -o LogLevel=ERROR \
    -o KexAlgorithms=curve25519-sha256
}

# --- up -----------------------------------------------------------------------------------------

# The client key, a host key per node, known_hosts and ssh_config.
make_keys() {
  local count=$1 i d key ip
  mkdir -p "$KEYS"
  chmod 700 "$KEYS"
  if [ ! -f "$KEYS/id_ed25519" ] || [ ! -f "$KEYS/id_ed25519.pub" ]; then
    rm -f "$KEYS/id_ed25519" "$KEYS/id_ed25519.pub"
    ssh-keygen -q -t ed25519 -N '' -C "kk-${LAB_KIND// /-}-client" -f "$KEYS/id_ed25519"
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
    echo "# Written by scripts/lab/${0##*/}: ssh -F $NODES_DIR/ssh_config node1"
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

# Node i's cgroups (<prefix>-n<i>), one per hierarchy of HIERARCHIES (cgroup_hierarchies), below
# the cgroup this script runs in (so the node stays inside whatever limits apply to us). Written
# to NODE_DIR/cgroups as HOST_DIR FSTYPE OPTIONS NODE_MOUNTPOINT: node-init.sh mounts them (the
# nodes.sh kind), launch_node enters them, `down` removes them.
make_cgroups() {
  local i=$1 d mountpoint fstype options path dir target f value
  d=$(node_dir "$i")
  : > "$d/cgroups"
  [ -n "$HIERARCHIES" ] || return 0
  while read -r mountpoint fstype options path; do
    dir=${mountpoint}${path%/}/$(node_ns "$i")
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

# Network namespaces for the given nodes (none of which runs; stop_nodes removed their old veths
# and namespaces, if any): each with eth0, the peer of host veth <ns> on the bridge, its address
# in the /24 and, with NODE_DEFAULT_ROUTE=yes, a default route via the bridge. Batched: one `ip`
# for the host side, one per node inside.
make_netns() {
  local i ns batch="" route=""
  for i in "$@"; do
    ns=$(node_ns "$i")
    batch+="netns add $ns"$'\n'
    batch+="link add $ns type veth peer name eth0 netns $ns"$'\n'
    batch+="link set $ns master $BRIDGE up"$'\n'
  done
  [ -n "$batch" ] || return 0
  printf '%s' "$batch" | ip -batch -
  if [ "$NODE_DEFAULT_ROUTE" = yes ]; then route="route add default via $GATEWAY"; fi
  for i in "$@"; do
    ip -n "$(node_ns "$i")" -batch - <<EOF
link set lo up
addr add $(node_ip "$i")/24 dev eth0
link set eth0 up
$route
EOF
  done
}

write_env() {
  local count=$1 i ips="" names="" netns="" tmp=$NODES_DIR/env.tmp
  for i in $(seq 1 "$count"); do
    ips+="${ips:+ }$(node_ip "$i")"
    names+="${names:+ }node$i"
    netns+="${netns:+ }$(node_ns "$i")"
  done
  # KEY=VALUE lines that bash can also source: values with spaces are in double quotes.
  {
    env_head
    cat <<EOF
KK_NODES_DIR=$NODES_DIR
KK_NODES_PREFIX=$PREFIX
KK_NODES_COUNT=$count
KK_NODES_IPS="$ips"
KK_NODES_NAMES="$names"
KK_NODES_NETNS="$netns"
EOF
    # The host veths have the namespaces' names.
    if [ "$ENV_VETHS" = yes ]; then printf 'KK_NODES_VETHS="%s"\n' "$netns"; fi
    cat <<EOF
KK_NODES_BRIDGE=$BRIDGE
KK_NODES_HOST_IP=$GATEWAY
KK_NODES_CIDR=$NET.0/24
KK_NODES_PORT=22
KK_NODES_USER=root
KK_NODES_KEY=$KEYS/id_ed25519
KK_NODES_PUBKEY=$KEYS/id_ed25519.pub
KK_NODES_KNOWN_HOSTS=$KEYS/known_hosts
KK_NODES_SSH_CONFIG=$NODES_DIR/ssh_config
EOF
    env_tail
  } > "$tmp"
  mv "$tmp" "$NODES_DIR/env"
}

up() {
  local count=${1:-${recorded_count:-3}} t0 i start=() extra=() deadline failed=0 pids=()
  t0=$(date +%s.%N)
  if ! { [[ "$count" =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] && [ "$count" -le "$MAX_NODES" ]; }; then
    lab_die "N=$count: want a number of nodes from 1 to $MAX_NODES"
  fi
  check_up
  check_names

  # Fewer nodes than before: the extra ones go.
  if [ -n "$recorded_count" ] && [ "$recorded_count" -gt "$count" ]; then
    mapfile -t extra < <(seq $((count + 1)) "$recorded_count")
    stop_nodes "${extra[@]}"
  fi
  # Recorded before anything is made, so that `down` cleans up after a failed `up` too.
  printf 'PREFIX=%s\nNET=%s\nCOUNT=%s\n' "$PREFIX" "$NET" "$count" > "$STATE.tmp"
  mv "$STATE.tmp" "$STATE"

  prepare_lab "$count"
  make_keys "$count"
  ensure_bridge
  for i in $(seq 1 "$count"); do node_running "$i" || start+=("$i"); done
  if [ "${#start[@]}" -gt 0 ]; then
    # Leftovers of nodes that died (their processes, if any, by recorded PID).
    stop_nodes "${start[@]}"
    prepare_start "$count"
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

  # Every node in parallel: a serial check would add up a connection set-up (or a boot) per node.
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

# wait_gone SECONDS NODE...: until the recorded PIDs (node_pids) of those nodes ended; sets
# `alive` to the nodes still running.
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

# Stops the given nodes by their recorded PIDs and removes what they had on the host: veth,
# namespace, cgroups, file system changes (and what release_nodes removes). Host keys and logs
# stay.
stop_nodes() {
  local i pid waiting=() alive=() batch="" ns
  local -A node_pids=()
  for i in "$@"; do
    pid=$(node_pid "$i")
    [ -n "$pid" ] || continue
    if ! lab_pid_is "$pid" "$(node_word "$i")"; then
      rm -f "$(node_dir "$i")/pid"
      continue
    fi
    node_term "$i" "$pid"
    node_pids[$i]=$pid
    waiting+=("$i")
  done
  # All nodes were signalled first: they go down in parallel.
  [ "${#waiting[@]}" -eq 0 ] || wait_gone "$STOP_TIMEOUT" "${waiting[@]}"
  [ "${#alive[@]}" -eq 0 ] || stop_harder
  [ "${#alive[@]}" -eq 0 ] || wait_gone 5 "${alive[@]}"
  for i in ${alive[@]+"${alive[@]}"}; do
    lab_die "node$i: $NODE_PROCESS (pid ${node_pids[$i]}) survives KILL"
  done
  for i in ${waiting[@]+"${waiting[@]}"}; do
    # Our own child when `up` restarts a node: reap it rather than leave a zombie.
    wait "${node_pids[$i]}" 2>/dev/null || true
    rm -f "$(node_dir "$i")/pid"
  done
  release_nodes "$@"

  # Deleting the host veth deletes its peer at once; a namespace's own teardown is asynchronous.
  # One listing and one `ip -batch` for all nodes: per-node calls add up with 20 nodes.
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

  local cleaners=() d
  for i in "$@"; do
    d=$(node_dir "$i")
    # In parallel, as in `up`: removing even a small tree waits on the disk.
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
  # Depth-first: the cgroups that runc (and nspawn, for its payload) made inside the node lie
  # below the node's.
  if [ -f "$d/cgroups" ]; then
    while read -r dir _; do
      [ -d "$dir" ] || continue
      find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ ! -d "$dir" ] || lab_log "warning: cgroup $dir is not empty (processes left in it?)"
    done < "$d/cgroups"
    rm -f "$d/cgroups"
  fi
  # Never `rm -rf` a mounted root (nspawn's overlay): while mounted, it is the image.
  if mountpoint -q "$d/root" 2>/dev/null; then
    lab_log "warning: $d/root is still mounted; its upper directory stays"
    return 0
  fi
  [ ! -d "$d/root" ] || rmdir "$d/root" 2>/dev/null || lab_log "warning: $d/root is not empty"
  rm -rf "$d/upper" "$d/work" "$d/data" "$d/image"
}

down() {
  local t0 nodes=() dir ns owner
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
  after_down
  lab_log "down in $(elapsed "$t0") s (${#nodes[@]} nodes, $NODES_DIR)"
}

status() {
  local ok=0 count=${recorded_count:-0} i
  if [ ! -f "$STATE" ]; then
    echo "$LAB_KIND: down ($NODES_DIR)"
    return 3
  fi
  for i in $(seq 1 "$count"); do
    if node_running "$i"; then
      echo "node$i: running, $(node_ip "$i"), netns $(node_ns "$i"), $(node_status "$i")"
    else
      echo "node$i: stopped"; ok=3
    fi
  done
  if ip link show dev "$BRIDGE" >/dev/null 2>&1; then echo "bridge: $BRIDGE $GATEWAY/24"; else echo "bridge: missing"; ok=3; fi
  echo "lab dir: $NODES_DIR"
  return "$ok"
}

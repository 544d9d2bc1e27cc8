#!/usr/bin/env bash
# The upstream lab: the registry and download server that `kk-bundle build` fetches from in tests,
# the demo and benchmarks. Real servers on 127.0.0.1 only, started and stopped by recorded PID.
#
#   scripts/lab/upstream.sh up       start (or keep) both servers, seed them, write $LAB_DIR/env
#   scripts/lab/upstream.sh down     stop both servers (by their recorded PIDs)
#   scripts/lab/upstream.sh status   say what runs (exit 0 when both do, 3 otherwise)
#   scripts/lab/upstream.sh env      print $LAB_DIR/env
#
# Environment: LAB_DIR (default <repo>/target/lab/upstream), REGISTRY_PORT and HTTP_PORT (default:
# the ports this lab had, else free ones the kernel picks), LAB_CACHE (shared downloads, default
# <repo>/target/lab/cache). Works from any directory; `up` is idempotent and fast when warm.
#
# Servers: Debian's docker-registry (distribution 2.8, storage in $LAB_DIR/registry/data, delete
# enabled) and scripts/lab/fileserver.py over $LAB_DIR/http (Range, HEAD, fault injection from
# $LAB_DIR/faults.json, access log $LAB_DIR/http-access.log).
#
# Seeded content (each part once, stamped in $LAB_DIR/stamps; redone when its scripts change):
#   registry   library/busybox:1.36      OCI index, linux/amd64 + linux/arm64 (real busybox each)
#              lab/app-a:1.0, lab/app-b:1.0   OCI indexes sharing their busybox base layers,
#                                        one small layer of their own each
#              lab/docker-media:1.0      Docker v2 schema 2 manifest (amd64)
#              lab/docker-list:1.0       Docker manifest list of v2s2 manifests (amd64 + arm64)
#              lab/oci-media:1.0         OCI manifest (amd64)
#              charts/kk-demo:0.1.0      Helm chart as an OCI artifact (pushed by real helm)
#   http       charts/                   Helm HTTP repository: index.yaml, kk-demo 0.1.0, kk-web 1.2.0
#              etcd/, containerd/, runc/ release files shaped like upstream's, with checksum files
#                                        (scripts/lab/lab-binaries.json): Debian's real etcd 3.5.16
#                                        and containerd 1.7.24 from trixie, bookworm's runc
#                                        (scripts/lab/suitedebs.sh; catalog.py maps containerd 2.x
#                                        to sid's 2.1.9)
#              debian/                   a signed Debian repository (suite bookworm, main, amd64) of
#                                        real .debs: socat conntrack ebtables ethtool ipset ipvsadm
#                                        nfs-common nfs-kernel-server and their closure
#                                        (scripts/lab/debrepo.sh; keyrings $LAB_DIR/debian-*keyring.gpg)
# Every image's command echoes a line (`/bin/sh -c 'echo ...'`).
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LAB_LOG_NAME=lab

usage() { lab_die "usage: $0 up|down|status|env"; }
[ $# -eq 1 ] || usage
command=$1
case "$command" in up|down|status|env) ;; *) usage ;; esac

lab_init_dir
REG_DIR=$LAB_DIR/registry
FS_DIR=$LAB_DIR/fileserver
STAMPS=$LAB_DIR/stamps
mkdir -p "$REG_DIR" "$FS_DIR" "$STAMPS" "$LAB_DIR/http" "$LAB_DIR/work"

# `up` and `down` of one lab directory never overlap. The daemons must not inherit this lock's
# descriptor (they would hold the lock for as long as they run): they are started with `9>&-`.
exec 9>"$LAB_DIR/.lock"
flock 9

registry_pid() { cat "$REG_DIR/pid" 2>/dev/null || true; }
fileserver_pid() { cat "$FS_DIR/pid" 2>/dev/null || true; }
# What the recorded PID's command line must contain to be this lab's server (and not a reused PID,
# nor another lab's server).
REG_WORD="docker-registry serve $REG_DIR/config.yml"
FS_WORD="fileserver.py --root $LAB_DIR/http "
registry_running() { lab_pid_is "$(registry_pid)" "$REG_WORD"; }
fileserver_running() { lab_pid_is "$(fileserver_pid)" "$FS_WORD"; }
# The file server is restarted when its code changed since it started.
fileserver_key() { stamp_key "$LAB_SCRIPTS/fileserver.py"; }

elapsed() { printf '%.2f' "$(echo "$(date +%s.%N) - $1" | bc)"; }

# choose_port VAR_NAME REQUESTED RUNNING(yes|"") PORT_FILE: the port to serve on.
choose_port() {
  local var=$1 requested=$2 running=$3 recorded
  recorded=$(cat "$4" 2>/dev/null || true)
  if [ -n "$requested" ]; then
    if ! [[ "$requested" =~ ^[0-9]+$ ]] || [ "$requested" -lt 1 ] || [ "$requested" -gt 65535 ]; then
      lab_die "$var=$requested is not a port number"
    fi
    printf '%s\n' "$requested"
  elif [ -n "$running" ] && [ -n "$recorded" ]; then
    printf '%s\n' "$recorded"
  elif [ -n "$recorded" ] && lab_port_free "$recorded"; then
    printf '%s\n' "$recorded"       # the same port as last time: URLs in the lab stay valid
  else
    if [ -n "$recorded" ]; then
      lab_log "warning: port $recorded of this lab's last run is taken by a process that is not the recorded one" \
        "(another program, or a server of this lab whose pid file was lost: check with ss -ltnp); using another port"
    fi
    lab_free_port
  fi
}

# wait_ready NAME URL PID LOG: until URL answers (any HTTP status), or fail naming NAME.
wait_ready() {
  local name=$1 url=$2 pid=$3 log=$4
  for _ in $(seq 1 200); do
    if ! lab_pid_alive "$pid"; then
      tail -n 20 "$log" >&2 || true
      lab_die "$name (pid $pid) exited while starting; log: $log"
    fi
    [ "$(lab_http_code "$url")" = 000 ] || return 0
    sleep 0.05
  done
  tail -n 20 "$log" >&2 || true
  lab_die "$name (pid $pid) does not answer on $url after 10 s; log: $log"
}

# stop NAME PID_FILE WORD: TERM the recorded PID (if it is still that program), wait until it is
# gone or a zombie, KILL after 5 s; remove the PID file.
stop() {
  local name=$1 pid_file=$2 word=$3 pid
  pid=$(cat "$pid_file" 2>/dev/null || true)
  if [ -z "$pid" ]; then rm -f "$pid_file"; return 0; fi
  if ! lab_pid_is "$pid" "$word"; then
    lab_log "$name: recorded pid $pid is not running (any more); removing $pid_file"
    rm -f "$pid_file"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do lab_pid_alive "$pid" || break; sleep 0.05; done
  if lab_pid_alive "$pid"; then
    lab_log "$name: pid $pid ignored TERM for 5 s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do lab_pid_alive "$pid" || break; sleep 0.05; done
    lab_pid_alive "$pid" && lab_die "$name: pid $pid survives KILL"
  fi
  # Our own child (a restart inside `up`): reap it here rather than leave a zombie.
  wait "$pid" 2>/dev/null || true
  rm -f "$pid_file"
  lab_log "$name: stopped pid $pid"
}

start_registry() {
  local port=$1
  mkdir -p "$REG_DIR/data"
  cat > "$REG_DIR/config.yml" <<EOF
# Written by scripts/lab/upstream.sh: the lab's upstream registry (distribution 2.8).
version: 0.1
log:
  level: info
  formatter: text
  accesslog: {disabled: true}
storage:
  filesystem: {rootdirectory: $REG_DIR/data}
  delete: {enabled: true}
  maintenance:
    uploadpurging: {enabled: false}
http:
  addr: 127.0.0.1:$port
  # Only silences the warning about a random secret; one instance needs no shared one.
  secret: kk-lab-upstream
EOF
  lab_port_free "$port" || lab_die "registry: 127.0.0.1:$port is already in use (REGISTRY_PORT)"
  # One simple command, so that $! is the registry itself (LAB-NOTES pitfall P10).
  docker-registry serve "$REG_DIR/config.yml" >"$REG_DIR/log" 2>&1 </dev/null 9>&- &
  echo $! > "$REG_DIR/pid"
  echo "$port" > "$REG_DIR/port"
  wait_ready registry "http://127.0.0.1:$port/v2/" "$(registry_pid)" "$REG_DIR/log"
  lab_log "registry: pid $(registry_pid) on 127.0.0.1:$port"
}

start_fileserver() {
  local port=$1
  lab_port_free "$port" || lab_die "file server: 127.0.0.1:$port is already in use (HTTP_PORT)"
  "$PYTHON" "$LAB_SCRIPTS/fileserver.py" --root "$LAB_DIR/http" --port "$port" \
    --faults "$LAB_DIR/faults.json" --access-log "$LAB_DIR/http-access.log" >"$FS_DIR/log" 2>&1 </dev/null 9>&- &
  echo $! > "$FS_DIR/pid"
  echo "$port" > "$FS_DIR/port"
  fileserver_key > "$FS_DIR/code"
  wait_ready "file server" "http://127.0.0.1:$port/" "$(fileserver_pid)" "$FS_DIR/log"
  lab_log "file server: pid $(fileserver_pid) on 127.0.0.1:$port serving $LAB_DIR/http"
}

# A seeding part is redone when the files that make it change: its stamp holds their digest.
stamp_key() { cat "$@" | sha256sum | cut -d' ' -f1; }
stamp_ok() { [ "$(cat "$STAMPS/$1" 2>/dev/null || true)" = "$2" ]; }
stamp_set() { printf '%s\n' "$2" > "$STAMPS/$1"; }

seed_images() {
  local key layout=$LAB_DIR/work/oci arch files=$LAB_DIR/work/files
  key=$(stamp_key "$LAB_SCRIPTS/upstream.sh" "$LAB_SCRIPTS/lib.sh" "$LAB_SCRIPTS/mkindex.py")
  if stamp_ok images "$key" && lab_registry_has library/busybox 1.36 && lab_registry_has lab/app-a 1.0 \
     && lab_registry_has lab/app-b 1.0 && lab_registry_has lab/docker-media 1.0 \
     && lab_registry_has lab/docker-list 1.0 && lab_registry_has lab/oci-media 1.0; then
    return 0
  fi
  local t0; t0=$(date +%s.%N)
  rm -rf "$layout" "$files"
  lab_base_layout "$layout"
  lab_image_index "$layout" busybox base-amd64=amd64 base-arm64=arm64
  lab_push --all "oci:$layout:busybox" "docker://$KK_LAB_REGISTRY/library/busybox:1.36"

  # app-a and app-b: the busybox base layer (same digest) plus one small layer each.
  for app in a b; do
    mkdir -p "$files/app-$app/app"
    printf 'app-%s of the kk upstream lab\n' "$app" > "$files/app-$app/app/app-$app.txt"
    for arch in amd64 arm64; do
      lab_image_variant "$layout" "$arch" "app-$app-$arch" "app-$app from the kk lab ($arch)" "$files/app-$app/app" /app
    done
    lab_image_index "$layout" "app-$app" "app-$app-amd64=amd64" "app-$app-arm64=arm64"
    lab_push --all "oci:$layout:app-$app" "docker://$KK_LAB_REGISTRY/lab/app-$app:1.0"
  done

  # Media types: skopeo converts to Docker v2 schema 2 on the way (manifest and, with --all, the list).
  for arch in amd64 arm64; do
    lab_image_variant "$layout" "$arch" "docker-media-$arch" "docker-media from the kk lab ($arch)"
  done
  lab_push --format v2s2 "oci:$layout:docker-media-amd64" "docker://$KK_LAB_REGISTRY/lab/docker-media:1.0"
  lab_image_index "$layout" docker-list docker-media-amd64=amd64 docker-media-arm64=arm64
  lab_push --all --format v2s2 "oci:$layout:docker-list" "docker://$KK_LAB_REGISTRY/lab/docker-list:1.0"
  lab_image_variant "$layout" amd64 oci-media "oci-media from the kk lab (amd64)"
  lab_push --format oci "oci:$layout:oci-media" "docker://$KK_LAB_REGISTRY/lab/oci-media:1.0"
  umoci gc --layout "$layout"
  stamp_set images "$key"
  lab_log "seeded images in $(elapsed "$t0") s"
}

seed_charts() {
  local key charts=$LAB_DIR/http/charts work=$LAB_DIR/work/charts
  key=$(stamp_key "$LAB_SCRIPTS/upstream.sh" "$HELM")
  if ! { stamp_ok charts "$key" && [ -f "$charts/kk-demo-0.1.0.tgz" ] && [ -f "$charts/kk-web-1.2.0.tgz" ]; }; then
    local t0; t0=$(date +%s.%N)
    rm -rf "$work" "$charts"; mkdir -p "$work" "$charts"
    # Real `helm create` charts: kk-demo at helm's default version 0.1.0, kk-web packaged as 1.2.0.
    (cd "$work" && "$HELM" create kk-demo >/dev/null && "$HELM" create kk-web >/dev/null) || lab_die "helm create failed"
    # Their images are the lab manifest's (manifests/lab.yaml), not helm's nginx and busybox:latest,
    # so kk-bundle's check that a chart names only bundled images passes on the lab manifest.
    local chart
    for chart in kk-demo kk-web; do
      sed -i -e 's|^  repository: nginx$|  repository: lab.local/lab/app-a|' -e 's|^  tag: ""$|  tag: "1.0"|' \
        "$work/$chart/values.yaml"
      sed -i 's|^\( *image: \)busybox$|\1docker.io/library/busybox:1.36|' "$work/$chart/templates/tests/test-connection.yaml"
      grep -q '^  repository: lab.local/lab/app-a$' "$work/$chart/values.yaml" \
        && grep -q '^  tag: "1.0"$' "$work/$chart/values.yaml" \
        && grep -q 'image: docker.io/library/busybox:1.36$' "$work/$chart/templates/tests/test-connection.yaml" \
        || lab_die "helm create's $chart no longer names nginx and busybox where this script expects"
    done
    "$HELM" package "$work/kk-demo" --destination "$charts" >/dev/null || lab_die "helm package kk-demo failed"
    "$HELM" package "$work/kk-web" --version 1.2.0 --app-version 1.2.0 --destination "$charts" >/dev/null \
      || lab_die "helm package kk-web failed"
    rm -f "$STAMPS/chart-index" "$STAMPS/oci-chart"
    stamp_set charts "$key"
    lab_log "packaged charts in $(elapsed "$t0") s"
  fi
  # The same kk-demo package as an OCI artifact: charts/kk-demo:0.1.0.
  if ! { stamp_ok oci-chart "$key" && lab_registry_has charts/kk-demo 0.1.0; }; then
    "$HELM" push "$charts/kk-demo-0.1.0.tgz" "oci://$KK_LAB_REGISTRY/charts" --plain-http >/dev/null 2>"$work/push.err" \
      || { cat "$work/push.err" >&2; lab_die "helm push kk-demo-0.1.0.tgz to oci://$KK_LAB_REGISTRY/charts failed"; }
    stamp_set oci-chart "$key"
  fi
  # index.yaml holds absolute URLs, so every Helm repository in the lab (including those that
  # seed-catalog.sh made) is indexed again when the file server's URL changes.
  if ! stamp_ok chart-index "$KK_LAB_HTTP"; then
    local index dir rel
    while IFS= read -r index; do
      dir=$(dirname "$index"); rel=${dir#"$LAB_DIR/http/"}
      "$HELM" repo index --url "$KK_LAB_HTTP/$rel" "$dir" || lab_die "helm repo index $dir failed"
    done < <({ echo "$charts/index.yaml"; find "$LAB_DIR/http" -name index.yaml; } | sort -u)
    stamp_set chart-index "$KK_LAB_HTTP"
  fi
}

seed_binaries() {
  local key force="" t0
  # The stand-ins (kubeadm, kubelet, kubectl, crictl) are files of these releases too.
  key=$(stamp_key "$LAB_SCRIPTS/catalog.py" "$LAB_SCRIPTS/lab-binaries.json" "$LAB_SCRIPTS"/standins/*.py)
  if stamp_ok binaries "$key" && [ -f "$LAB_DIR/seeded/lab-binaries.json" ]; then return 0; fi
  stamp_ok binaries "$key" || force=--force
  t0=$(date +%s.%N)
  mkdir -p "$LAB_DIR/seeded"
  bash "$LAB_SCRIPTS/render.sh" "$LAB_SCRIPTS/lab-binaries.json" "$LAB_DIR/work/lab-binaries.json"
  "$PYTHON" "$LAB_SCRIPTS/catalog.py" --lab-dir "$LAB_DIR" --lab-http "$KK_LAB_HTTP" \
    --catalog "$LAB_DIR/work/lab-binaries.json" --plan "$LAB_DIR/work/lab-binaries.plan" \
    --record "$LAB_DIR/seeded/lab-binaries.json" $force || lab_die "making the lab's release files failed"
  stamp_set binaries "$key"
  lab_log "made release files in $(elapsed "$t0") s"
}

# The Debian repository (scripts/lab/debrepo.sh): real .debs, indexed and signed with a lab key.
seed_debian() {
  local key
  key=$(stamp_key "$LAB_SCRIPTS/debrepo.sh" "$LAB_SCRIPTS/aptsources.sh" "$LAB_SCRIPTS/lib.sh")
  if stamp_ok debian "$key" && [ -f "$LAB_DIR/http/debian/dists/bookworm/InRelease" ] \
     && [ -f "$LAB_DIR/debian-keyring.gpg" ] && [ -f "$LAB_DIR/debian-other-keyring.gpg" ]; then
    return 0
  fi
  bash "$LAB_SCRIPTS/debrepo.sh" seed 9>&- || lab_die "making the lab's Debian repository failed (above)"
  stamp_set debian "$key"
}

write_env() {
  local tmp=$LAB_DIR/env.tmp
  cat > "$tmp" <<EOF
KK_LAB_REGISTRY=$KK_LAB_REGISTRY
KK_LAB_HTTP=$KK_LAB_HTTP
KK_LAB_DIR=$LAB_DIR
KK_LAB_HELM=$HELM
KK_LAB_FAULTS=$LAB_DIR/faults.json
KK_LAB_HTTP_LOG=$LAB_DIR/http-access.log
KK_LAB_REGISTRY_LOG=$REG_DIR/log
KK_LAB_REGISTRY_PID=$(registry_pid)
KK_LAB_HTTP_PID=$(fileserver_pid)
KK_LAB_DEBIAN_URL=$KK_LAB_HTTP/debian
KK_LAB_DEBIAN_SUITE=bookworm
KK_LAB_DEBIAN_KEYRING=$LAB_DIR/debian-keyring.gpg
KK_LAB_DEBIAN_OTHER_KEYRING=$LAB_DIR/debian-other-keyring.gpg
HELM_CONFIG_HOME=$HELM_CONFIG_HOME
HELM_CACHE_HOME=$HELM_CACHE_HOME
HELM_DATA_HOME=$HELM_DATA_HOME
EOF
  mv "$tmp" "$LAB_DIR/env"
}

up() {
  local t0 reg_port http_port running
  t0=$(date +%s.%N)
  lab_require docker-registry skopeo umoci busybox curl tar gzip bc flock envsubst
  # Both tools are downloads on a fresh machine: fetch them side by side.
  local busybox_out=$LAB_DIR/work/busybox-arm64.path busybox_pid
  bash "$LAB_SCRIPTS/tools.sh" busybox-arm64 >"$busybox_out" 9>&- &
  busybox_pid=$!
  HELM=$(bash "$LAB_SCRIPTS/tools.sh" helm 9>&-) || { wait "$busybox_pid" || true; lab_die "getting helm failed (above)"; }
  wait "$busybox_pid" || lab_die "getting the arm64 busybox failed (above)"
  BUSYBOX_ARM64=$(cat "$busybox_out")

  running=""; registry_running && running=yes
  reg_port=$(choose_port REGISTRY_PORT "${REGISTRY_PORT:-}" "$running" "$REG_DIR/port")
  if [ -n "$running" ] && [ "$(cat "$REG_DIR/port")" != "$reg_port" ]; then stop registry "$REG_DIR/pid" "$REG_WORD"; fi
  registry_running || start_registry "$reg_port"

  running=""; fileserver_running && running=yes
  http_port=$(choose_port HTTP_PORT "${HTTP_PORT:-}" "$running" "$FS_DIR/port")
  if [ -n "$running" ] && { [ "$(cat "$FS_DIR/port")" != "$http_port" ] \
       || [ "$(cat "$FS_DIR/code" 2>/dev/null || true)" != "$(fileserver_key)" ]; }; then
    stop "file server" "$FS_DIR/pid" "$FS_WORD"
  fi
  fileserver_running || start_fileserver "$http_port"

  export KK_LAB_REGISTRY=127.0.0.1:$reg_port KK_LAB_HTTP=http://127.0.0.1:$http_port
  seed_images
  seed_charts
  seed_binaries
  seed_debian
  write_env
  lab_log "up in $(elapsed "$t0") s ($LAB_DIR)"
  cat "$LAB_DIR/env"
}

down() {
  stop registry "$REG_DIR/pid" "$REG_WORD"
  stop "file server" "$FS_DIR/pid" "$FS_WORD"
  rm -f "$LAB_DIR/env"
}

status() {
  local ok=0
  if registry_running; then
    echo "registry: running, pid $(registry_pid), 127.0.0.1:$(cat "$REG_DIR/port")"
  else
    echo "registry: stopped"; ok=3
  fi
  if fileserver_running; then
    echo "file server: running, pid $(fileserver_pid), http://127.0.0.1:$(cat "$FS_DIR/port")"
  else
    echo "file server: stopped"; ok=3
  fi
  echo "lab dir: $LAB_DIR"
  return "$ok"
}

case "$command" in
  up) up ;;
  down) down ;;
  status) status ;;
  env) [ -f "$LAB_DIR/env" ] || lab_die "the lab in $LAB_DIR is not up (no env file)"; cat "$LAB_DIR/env" ;;
esac

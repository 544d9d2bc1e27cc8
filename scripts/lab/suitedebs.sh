#!/usr/bin/env bash
# Real programs from a newer Debian suite for the lab: `apt-get download` of named packages from
# trixie or sid, unpacked (not installed) into a cache directory whose path is printed.
#
#   scripts/lab/suitedebs.sh SUITE PACKAGE...    e.g. suitedebs.sh sid containerd
#
# Prints the directory the packages' files are unpacked into (`<dir>/usr/bin/containerd`…), and
# `<dir>/versions` lists `package version` of each. Only the named packages are fetched, not their
# dependencies: the lab needs their static Go programs (containerd, etcd, dockerd), which run on
# this bookworm machine. Not their runc: trixie's and sid's need glibc 2.38 (LAB-NOTES §7).
#
# The machine's own apt sources are never changed: apt-get runs on a PRIVATE state directory
# under $LAB_CACHE/suites/apt-SUITE whose sources list is the host's bookworm mirror with the suite
# replaced, verified with Debian's archive keyring. That list names the mirror, so it stays in the
# cache; nothing printed or logged names it (aptsources.sh's redact).
#
# Environment: LAB_CACHE (as upstream.sh). Cached by SUITE and package list; remove the directory
# to fetch the suite's current versions again.
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/lab/aptsources.sh
source "$LAB_SCRIPTS/aptsources.sh"
LAB_LOG_NAME=suitedebs

[ $# -ge 2 ] || lab_die "usage: $0 trixie|sid PACKAGE..."
SUITE=$1; shift
case "$SUITE" in trixie|sid) ;; *) lab_die "suite \`$SUITE\` is not trixie or sid" ;; esac
for package in "$@"; do
  [[ "$package" =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || lab_die "\`$package\` is not a Debian package name"
done
lab_require apt-get dpkg-deb sha256sum

key=$(printf '%s\n' "$SUITE" "$@" | sha256sum | cut -c1-16)
OUT=$LAB_CACHE/suites/$SUITE-$key
if [ -f "$OUT/.complete" ]; then
  printf '%s\n' "$OUT"
  exit 0
fi

APT_DIR=$LAB_CACHE/suites/apt-$SUITE
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$KEYRING" ] || lab_die "$KEYRING is missing: install Debian's debian-archive-keyring"

# One-line source for SUITE on the host's main Debian mirror (the bookworm source's first URI that
# is not the security archive).
MIRROR_HOSTS=$(mirror_hosts bookworm)
uri=$(host_sources bookworm | grep -oE '(https?|file)://[^[:space:]]+' | grep -v -- '-security' | head -n1 || true)
[ -n "$uri" ] || lab_die "the host has no apt source for bookworm to take the Debian mirror from"

apt_private() {
  local out
  if ! out=$("$@" -o Dir::Etc::SourceList="$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null \
      -o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
      -o Debug::NoLocking=1 2>&1); then
    redact "$out" | tail -n 30 >&2
    lab_die "$1 $2 on the private $SUITE apt state failed (above)"
  fi
  printf '%s\n' "$out"
}

mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
printf 'deb [signed-by=%s] %s %s main\n' "$KEYRING" "$uri" "$SUITE" > "$APT_DIR/sources.list"
apt_private apt-get -q update >/dev/null

rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp/debs"
(cd "$OUT.tmp/debs" && apt_private apt-get -q download "$@" >/dev/null)
: > "$OUT.tmp/versions"
for package in "$@"; do
  deb=$(find "$OUT.tmp/debs" -maxdepth 1 -name "${package}_*.deb" | head -n1)
  [ -n "$deb" ] || lab_die "apt-get download left no .deb of \`$package\` ($SUITE)"
  dpkg-deb -x "$deb" "$OUT.tmp"
  printf '%s %s\n' "$package" "$(dpkg-deb -f "$deb" Version)" >> "$OUT.tmp/versions"
done
rm -rf "$OUT.tmp/debs"
touch "$OUT.tmp/.complete"
rm -rf "$OUT"; mv -T "$OUT.tmp" "$OUT"
lab_log "$SUITE: $(tr '\n' ' ' < "$OUT/versions")unpacked into $OUT"
printf '%s\n' "$OUT"

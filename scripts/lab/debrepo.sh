#!/usr/bin/env bash
# The upstream lab's Debian repository: real bookworm .deb files from this machine's own Debian
# package source, indexed with apt-ftparchive and signed with a lab key that gpg makes here, so a
# build checks a real signature over a real index. Tests never reach beyond the lab: everything is
# fetched here, at setup.
#
#   scripts/lab/debrepo.sh seed
#       (upstream.sh `up` runs it) make $LAB_DIR/http/debian and the keyrings, unless they are there
#   scripts/lab/debrepo.sh variant corrupt-deb NAME [PACKAGE]
#       $LAB_DIR/http/NAME: a copy of the repository whose PACKAGE .deb (default socat) has other
#       bytes of the same size than the index says (the index, Release and signature are kept)
#   scripts/lab/debrepo.sh variant unsatisfiable NAME [PACKAGE]
#       $LAB_DIR/http/NAME: a copy whose index rewrites PACKAGE's (default socat) last dependency to
#       `libdoesnotexist (>= 9)`, with Release made again and signed again with the lab key
#   A variant prints KEY=VALUE lines: URL (the repository's URL), PACKAGE, and DEPENDENCY
#   (unsatisfiable) or FILE, INDEX_SHA256, FILE_SHA256 (corrupt-deb).
#
# Environment: LAB_DIR, LAB_CACHE (as upstream.sh); KK_LAB_HTTP (the file server's URL; variants
# read it from $LAB_DIR/env).
#
# Seeding (measured on a 2-core machine: 5 s apt update, ~10 s download once, 3 s index + keys):
#   1. a PRIVATE apt state under $LAB_CACHE/debian/apt (own sources list = the host's bookworm
#      sources as nspawn.sh extracts them, own lists and cache; the machine's apt setup is never
#      changed and the mirror's host name is never written: apt's output stays in memory and is
#      redacted on failure);
#   2. the closure of ROOTS (apt-cache depends --recurse without recommends/suggests/conflicts/
#      breaks/replaces/enhances; real packages only, amd64), `apt-get download`ed once into
#      $LAB_CACHE/debian/bookworm-amd64/<key of ROOTS> (a rebuilt lab does not download again);
#   3. $LAB_DIR/http/debian/pool/main/*.deb, dists/bookworm/main/binary-amd64/Packages{,.gz,.xz}
#      (apt-ftparchive packages, with the archive's Priority and Section as its override file, as
#      a real mirror's index has them: a .deb's own can differ), dists/bookworm/Release (apt-ftparchive release: Suite and Codename
#      bookworm, Components main, Architectures amd64), InRelease (gpg --clearsign) and Release.gpg
#      (gpg --detach-sign --armor);
#   4. the keys, in a private GNUPGHOME ($LAB_DIR/debian-gnupg): the lab key (its binary keyring:
#      $LAB_DIR/debian-keyring.gpg) and an unrelated second key ($LAB_DIR/debian-other-keyring.gpg,
#      for the bad-signature test).
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/lab/aptsources.sh
source "$LAB_SCRIPTS/aptsources.sh"
LAB_LOG_NAME=debrepo

SUITE=bookworm
ARCH=amd64
# The packages the lab's tests install on nodes (issue 21: kubeadm's commands, ipvs, NFS).
ROOTS=(socat conntrack ebtables ethtool ipset ipvsadm nfs-common nfs-kernel-server)
LAB_KEY_UID='kk lab Debian repository <debian-repo@kk-lab.invalid>'
OTHER_KEY_UID='kk lab unrelated key <other@kk-lab.invalid>'

usage() { lab_die "usage: $0 seed | variant corrupt-deb|unsatisfiable NAME [PACKAGE]"; }

lab_init_dir
REPO_DIR=$LAB_DIR/http/debian
export GNUPGHOME=$LAB_DIR/debian-gnupg
KEYRING=$LAB_DIR/debian-keyring.gpg
OTHER_KEYRING=$LAB_DIR/debian-other-keyring.gpg
APT_DIR=$LAB_CACHE/debian/apt

elapsed() { printf '%.2f' "$(echo "$(date +%s.%N) - $1" | bc)"; }

# apt_private CMD ARGS...: apt-get/apt-cache on the private state (the host's config otherwise,
# e.g. its proxy settings; never its sources). Output in memory, redacted when it fails.
apt_private() {
  local cmd=$1 out; shift
  if ! out=$("$cmd" -o Dir::Etc::SourceList="$APT_DIR/host.sources" -o Dir::Etc::SourceParts=/dev/null \
      -o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" \
      -o APT::Architecture="$ARCH" -o APT::Architectures::="$ARCH" -o Debug::NoLocking=1 "$@" 2>&1); then
    redact "$out" | tail -n 30 >&2
    lab_die "$cmd $1 on the private apt state ($APT_DIR) failed (above)"
  fi
  printf '%s\n' "$out"
}

# The closure of ROOTS, one real package name a line (virtual ones, shown as <name>, left out).
closure() {
  apt_private apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${ROOTS[@]}" | grep -E '^[a-z0-9]' | sort -u
}

# Sets DEBS to the cache directory holding the closure's .debs, downloading them once.
download_closure() {
  local key sources names t0
  key=$(printf '%s\n' "$SUITE" "$ARCH" "${ROOTS[@]}" | sha256sum | cut -c1-16)
  DEBS=$LAB_CACHE/debian/$SUITE-$ARCH/$key
  [ -f "$DEBS/.complete" ] && [ -f "$DEBS/override" ] && return 0
  t0=$(date +%s.%N)
  sources=$(host_sources "$SUITE")
  [ -n "$sources" ] || lab_die "the host has no apt source for $SUITE (/etc/apt/sources.list{,.d/}): cannot make the lab's Debian repository"
  MIRROR_HOSTS=$(mirror_hosts "$SUITE")
  mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
  # This file names the mirror: it stays in the cache (never in the lab's repository, env or logs).
  printf '%s\n' "$sources" > "$APT_DIR/host.sources"
  apt_private apt-get -q update >/dev/null
  names=$(closure)
  [ -n "$names" ] || lab_die "apt-cache found no closure of ${ROOTS[*]}"
  rm -rf "$DEBS.tmp"; mkdir -p "$DEBS.tmp"
  # shellcheck disable=SC2086  # one argument per package name
  (cd "$DEBS.tmp" && apt_private apt-get -q download $names >/dev/null)
  printf '%s\n' "$names" > "$DEBS.tmp/closure.txt"
  # The archive's Priority and Section of each package: a .deb's own control fields can differ
  # (zlib1g's says required, the archive's override optional), and a mirror's index has the
  # archive's. apt-ftparchive applies them as an override file: `package priority section`.
  # shellcheck disable=SC2086  # one argument per package name
  apt_private apt-cache show --no-all-versions $names | awk '
    /^Package: / { p = $2 } /^Priority: / { r = $2 } /^Section: / { s = $2 }
    /^$/ { if (p != "") print p, r, s; p = r = s = "" }
    END { if (p != "") print p, r, s }' > "$DEBS.tmp/override"
  [ "$(wc -l < "$DEBS.tmp/override")" = "$(wc -l < "$DEBS.tmp/closure.txt")" ] \
    || lab_die "apt-cache show did not give one Priority and Section per package of the closure"
  [ "$(find "$DEBS.tmp" -name '*.deb' | wc -l)" = "$(wc -l < "$DEBS.tmp/closure.txt")" ] \
    || lab_die "apt-get download did not fetch one .deb per package of the closure ($DEBS.tmp)"
  touch "$DEBS.tmp/.complete"
  rm -rf "$DEBS"; mv -T "$DEBS.tmp" "$DEBS"
  lab_log "downloaded $(wc -l < "$DEBS/closure.txt") .debs ($(du -sh "$DEBS" | cut -f1)) in $(elapsed "$t0") s into $DEBS"
}

gpg_quiet() { gpg --batch --quiet --no-tty --pinentry-mode loopback --passphrase '' "$@"; }

# The fingerprint of the key with UID in GNUPGHOME, made when missing.
key_fpr() {
  local uid=$1 fpr
  fpr=$(gpg_quiet --with-colons --list-secret-keys "=$uid" 2>/dev/null | awk -F: '$1 == "fpr" { print $10; exit }')
  if [ -z "$fpr" ]; then
    # RSA: every OpenPGP implementation verifies it (Debian's own archive keys are RSA too).
    gpg_quiet --quick-gen-key "$uid" rsa3072 sign never 2>/dev/null || lab_die "gpg could not make the key $uid"
    fpr=$(gpg_quiet --with-colons --list-secret-keys "=$uid" | awk -F: '$1 == "fpr" { print $10; exit }')
  fi
  printf '%s\n' "$fpr"
}

# Makes (once) both keys and exports their binary keyrings; sets LAB_FPR.
ensure_keys() {
  local other
  mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"
  LAB_FPR=$(key_fpr "$LAB_KEY_UID")
  other=$(key_fpr "$OTHER_KEY_UID")
  gpg_quiet --export "$LAB_FPR" > "$KEYRING.tmp" && mv "$KEYRING.tmp" "$KEYRING"
  gpg_quiet --export "$other" > "$OTHER_KEYRING.tmp" && mv "$OTHER_KEYRING.tmp" "$OTHER_KEYRING"
}

# index REPO: Packages{,.gz,.xz} of REPO's pool (when missing), Release, InRelease, Release.gpg.
index() {
  local repo=$1 dist=$1/dists/$SUITE bin=$1/dists/$SUITE/main/binary-$ARCH
  mkdir -p "$bin"
  if [ ! -f "$bin/Packages" ]; then
    (cd "$repo" && apt-ftparchive packages pool/main "$DEBS/override") > "$bin/Packages"
  fi
  compress_index "$bin"
  sign_release "$dist"
}

compress_index() {
  gzip -9nc "$1/Packages" > "$1/Packages.gz"
  xz -9c "$1/Packages" > "$1/Packages.xz"
}

# sign_release DIST: Release of DIST's index files, clear-signed (InRelease) and detached (Release.gpg).
sign_release() {
  local dist=$1 release
  rm -f "$dist/Release" "$dist/InRelease" "$dist/Release.gpg"
  release=$(apt-ftparchive -o APT::FTPArchive::Release::Origin=kk-lab -o APT::FTPArchive::Release::Label=kk-lab \
    -o APT::FTPArchive::Release::Suite="$SUITE" -o APT::FTPArchive::Release::Codename="$SUITE" \
    -o APT::FTPArchive::Release::Components=main -o APT::FTPArchive::Release::Architectures="$ARCH" \
    -o APT::FTPArchive::Release::Description='kk lab: real Debian packages for the tests' \
    release "$dist")
  printf '%s\n' "$release" > "$dist/Release"
  gpg_quiet --local-user "$LAB_FPR" --clearsign -o "$dist/InRelease" "$dist/Release"
  gpg_quiet --local-user "$LAB_FPR" --armor --detach-sign -o "$dist/Release.gpg" "$dist/Release"
}

# Fails unless the index has one Priority per package (the resolver leaves out `required` ones).
check_index() {
  local packages=$1/dists/$SUITE/main/binary-$ARCH/Packages n p
  n=$(grep -c '^Package: ' "$packages")
  p=$(grep -c '^Priority: ' "$packages")
  [ "$n" -gt 0 ] && [ "$n" = "$p" ] || lab_die "$packages: $n packages but $p Priority fields"
  gpgv --keyring "$KEYRING" "$1/dists/$SUITE/InRelease" 2>/dev/null || lab_die "$1: InRelease does not verify against $KEYRING"
}

seed() {
  local t0 deb name
  t0=$(date +%s.%N)
  lab_require apt-get apt-cache apt-ftparchive gpg gpgv gzip xz sha256sum
  download_closure
  ensure_keys
  rm -rf "$REPO_DIR.tmp"; mkdir -p "$REPO_DIR.tmp/pool/main"
  for deb in "$DEBS"/*.deb; do
    # apt-get download names a file with its version's epoch URL-encoded (`conntrack_1%3a1.4.7-1+b2_amd64.deb`);
    # an archive's pool names it without the epoch (`conntrack_1.4.7-1+b2_amd64.deb`).
    name=$(basename "$deb" | sed -E 's/_[0-9]+%3a/_/')
    ln "$deb" "$REPO_DIR.tmp/pool/main/$name" 2>/dev/null || cp "$deb" "$REPO_DIR.tmp/pool/main/$name"
  done
  index "$REPO_DIR.tmp"
  check_index "$REPO_DIR.tmp"
  rm -rf "$REPO_DIR"; mv -T "$REPO_DIR.tmp" "$REPO_DIR"
  # gpg started its agent for GNUPGHOME: stop it (the repository is signed).
  gpgconf --kill gpg-agent 2>/dev/null || true
  lab_log "repository $REPO_DIR: $(ls "$REPO_DIR/pool/main" | wc -l) packages, signed by $LAB_FPR, in $(elapsed "$t0") s"
}

# copy_repo NAME: $LAB_DIR/http/NAME, a copy of the repository (the .debs hard-linked); its path.
copy_repo() {
  local name=$1 dest=$LAB_DIR/http/$1
  [[ "$name" =~ ^[a-z0-9][a-z0-9._-]*$ ]] && [ "$name" != debian ] || lab_die "bad variant name: $name"
  [ -f "$REPO_DIR/dists/$SUITE/InRelease" ] || lab_die "$REPO_DIR is not seeded (scripts/lab/upstream.sh up)"
  rm -rf "$dest"
  cp -al "$REPO_DIR" "$dest" 2>/dev/null || cp -a "$REPO_DIR" "$dest"
  # The index files are rewritten in place below: never through a link to the original.
  find "$dest/dists" -type f -exec sh -c 'for f; do cp "$f" "$f.x" && mv "$f.x" "$f"; done' sh {} +
  printf '%s\n' "$dest"
}

# deb_of REPO PACKAGE: the pool path (relative to REPO) of PACKAGE in REPO's index.
deb_of() {
  awk -v p="$2" '$1 == "Package:" { cur = $2 } $1 == "Filename:" && cur == p { print $2; exit }' \
    "$1/dists/$SUITE/main/binary-$ARCH/Packages"
}

variant_corrupt_deb() {
  local dest=$1 package=$2 file index_sha
  file=$(deb_of "$dest" "$package")
  [ -n "$file" ] || lab_die "$package is not in the lab repository"
  index_sha=$(lab_sha256 "$dest/$file")
  # Same size, other bytes (one flipped in the middle): only the digest can tell.
  "$PYTHON" - "$dest/$file" <<'EOF'
import os, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[len(data) // 2] ^= 0xFF
os.unlink(path)  # a hard link to the real .deb: replace it, never write through it
open(path, "wb").write(bytes(data))
EOF
  printf 'URL=%s\nPACKAGE=%s\nFILE=%s\nINDEX_SHA256=%s\nFILE_SHA256=%s\n' "$KK_LAB_HTTP/$(basename "$dest")" \
    "$package" "$file" "$index_sha" "$(lab_sha256 "$dest/$file")"
}

variant_unsatisfiable() {
  local dest=$1 package=$2 bin=$1/dists/$SUITE/main/binary-$ARCH
  "$PYTHON" - "$bin/Packages" "$package" <<'EOF' || lab_die "rewriting $package's dependency failed"
import sys
path, package = sys.argv[1], sys.argv[2]
stanzas = open(path).read().rstrip("\n").split("\n\n")
done = False
for i, stanza in enumerate(stanzas):
    lines = stanza.split("\n")
    if f"Package: {package}" not in lines:
        continue
    for k, line in enumerate(lines):
        if line.startswith("Depends: "):
            deps = line[len("Depends: "):].split(", ")
            deps[-1] = "libdoesnotexist (>= 9)"
            lines[k] = "Depends: " + ", ".join(deps)
            done = True
    stanzas[i] = "\n".join(lines)
if not done:
    sys.exit(f"{package} has no Depends field in {path}")
open(path, "w").write("\n\n".join(stanzas) + "\n")
EOF
  compress_index "$bin"
  LAB_FPR=$(key_fpr "$LAB_KEY_UID")
  sign_release "$dest/dists/$SUITE"
  gpgconf --kill gpg-agent 2>/dev/null || true
  printf 'URL=%s\nPACKAGE=%s\nDEPENDENCY=libdoesnotexist\n' "$KK_LAB_HTTP/$(basename "$dest")" "$package"
}

variant() {
  [ $# -ge 2 ] && [ $# -le 3 ] || usage
  local kind=$1 name=$2 package=${3:-socat} dest
  lab_load_env
  dest=$(copy_repo "$name")
  case "$kind" in
    corrupt-deb) variant_corrupt_deb "$dest" "$package" ;;
    unsatisfiable) variant_unsatisfiable "$dest" "$package" ;;
    *) usage ;;
  esac
}

[ $# -ge 1 ] || usage
case "$1" in
  seed) [ $# -eq 1 ] || usage; seed ;;
  variant) shift; variant "$@" ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# Crafted 1 GiB bundles against the reader: peak memory and time of `kk-install inspect`,
# `verify`, `unpack` and the install itself, and of `kk-bundle inspect`, until each refuses the
# file.
#
#   bash scripts/bench/crafted.sh [GiB, default 1]
#
# The seek table lies (sparse files: only the table is written):
# (a) a table that fills the file and lists every 8 bytes as a frame (the count a naive reader
#     allocates for); (b) the most frames the format allows for the file's size, whose sizes do
#     not add up to it (the most a reader must hold before it can tell).
# The member sizes lie, in valid frames around 1 GiB of incompressible content, with a valid
# seek table, integrity frame and checksum list (bundle-spec's `crafted_bundle` example):
# (c) a blob header claiming a size near 2^64; (d) one claiming four times the file;
# (e) one claiming half of what its frames hold, with the listed digest of that half.
# (f) is valid: the largest description the format allows (8 MiB), made of the JSON that costs a
#     parser most memory per byte (millions of empty strings); it is read, not refused, and the
#     table shows what reading it costs (the install is left out: the bundle holds no cluster).
# The install runs against an inventory whose one node is a closed loopback port: it must refuse
# the bundle before it reaches for the node. Prints a BENCHMARKS.md table on stdout.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
gib=${1:-1}

bash scripts/setup.sh >/dev/null
find_cargo
cargo build --release --locked -p kk-install -p kk-bundle >&2
cargo build --release --locked -p bundle-spec --features test-support --example crafted_bundle >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
dir=$target/bench/crafted
rm -rf "$dir" && mkdir -p "$dir"

python3 - "$dir" "$gib" <<'PY'
import struct, sys
d, gib = sys.argv[1], int(sys.argv[2])
size = gib << 30
def table(path, count, entry=None):
    # The seekable format: skippable frame 0x184D2A5E, entries, then count, descriptor, magic.
    # Without `entry` the entries are zeros (left sparse); with it, every data frame is `entry`
    # and the last is the integrity frame's (44, 0), as the format requires.
    length = 8 + 8 * count + 9
    with open(path, "wb") as f:
        f.truncate(size - length)
        f.seek(size - length)
        f.write(struct.pack("<II", 0x184D2A5E, 8 * count + 9))
        if entry is None:
            f.truncate(size - 9)
            f.seek(size - 9)
        else:
            f.write(struct.pack("<II", *entry) * (count - 1) + struct.pack("<II", 44, 0))
        f.write(struct.pack("<IBI", count, 0, 0x8F92EAB1))
# (a) every 8 bytes of the file a frame: what a reader that trusts the count allocates for.
table(f"{d}/a-frame-count.tar.zst", (size - 17) // 8)
# (b) as many frames as the format allows for this size (SPEC 2.3), each 14 compressed bytes
# holding one: a table that parses, whose frames end megabytes before it starts.
limit = size // 1024 + 2 * (16 * 2**20 // 77 + 1) + 2
table(f"{d}/b-frame-sizes.tar.zst", limit, (14, 1))
PY
for kind in header-size beyond-file short; do
  case $kind in header-size) n=c ;; beyond-file) n=d ;; short) n=e ;; esac
  "$target/release/examples/crafted_bundle" "$kind" "$((gib << 30))" "$dir/$n-member-$kind.tar.zst"
done
"$target/release/examples/crafted_bundle" empty-strings 0 "$dir/f-description-empty-strings.tar.zst"
cat >"$dir/inventory.yaml" <<'YAML'
apiVersion: kubekey.kubesphere.io/v1
kind: Inventory
metadata:
  name: crafted
spec:
  hosts:
    node1:
      connector: {host: 127.0.0.1, port: 1}
      internal_ipv4: 127.0.0.1
  groups:
    k8s_cluster:
      groups: [kube_control_plane, kube_worker]
    kube_control_plane: {hosts: [node1]}
    kube_worker: {hosts: [node1]}
    etcd: {hosts: [node1]}
    image_registry: {hosts: [node1]}
YAML

kki=$target/release/kk-install kkb=$target/release/kk-bundle
printf '| crafted %s GiB bundle | command | peak memory | time | refused with |\n|---|---|---|---|---|\n' "$gib"
for f in "$dir"/*.tar.zst; do
  name=$(basename "$f" .tar.zst)
  valid=false
  case $name in f-*) valid=true ;; esac
  for cmd in "kk-install inspect" "kk-install verify" "kk-install unpack" "kk-install (install)" "kk-bundle inspect"; do
    if $valid && [ "$cmd" = "kk-install (install)" ]; then continue; fi
    rm -rf "$dir/store"
    case $cmd in
      "kk-install inspect") args=("$kki" inspect --bundle "$f") ;;
      "kk-install verify") args=("$kki" verify --bundle "$f") ;;
      "kk-install unpack") args=("$kki" unpack --bundle "$f" --store "$dir/store") ;;
      "kk-install (install)") args=("$kki" --bundle "$f" -i "$dir/inventory.yaml" --work-dir "$dir/work") ;;
      "kk-bundle inspect") args=("$kkb" inspect "$f") ;;
    esac
    if /usr/bin/time -o "$dir/time" -f '%M %e' "${args[@]}" >/dev/null 2>"$dir/err"; then
      $valid || { echo "error: $cmd accepted $f" >&2; exit 1; }
      read -r kib secs < <(tail -1 "$dir/time")
      printf '| %s | `%s` | %.1f MiB | %s s | (valid: read) |\n' "$name" "$cmd" "$(echo "$kib / 1024" | bc -l)" "$secs"
      continue
    fi
    if $valid; then echo "error: $cmd refused the valid $f:" >&2; cat "$dir/err" >&2; exit 1; fi
    # GNU time writes "Command exited with non-zero status N" first; the figures come last.
    read -r kib secs < <(tail -1 "$dir/time")
    if ! grep -q 'bundle' "$dir/err"; then
      echo "error: $cmd failed on $f, but not on the bundle:" >&2; cat "$dir/err" >&2; exit 1
    fi
    # Refused before anything was written: an unpack leaves no store behind.
    if [ -e "$dir/store" ]; then echo "error: $cmd left a store for $f" >&2; exit 1; fi
    why=$(grep -v '^ *$' "$dir/err" | tail -1 | sed -e 's/.*not a kk bundle: //' -e 's/.*cannot open bundle `[^`]*`: //' -e 's/.*into `[^`]*`: //' -e 's/.*is not intact: //' -e 's/.*cannot inspect `[^`]*`: //' -e 's/|/\\|/g' -e 's/\(sha256[/:][0-9a-f]\{12\}\)[0-9a-f]\{52\}/\1…/g')
    printf '| %s | `%s` | %.1f MiB | %s s | %s |\n' "$name" "$cmd" "$(echo "$kib / 1024" | bc -l)" "$secs" "$why"
  done
done
rm -rf "$dir"

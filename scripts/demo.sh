#!/usr/bin/env bash
# The README's main command: starts the upstream lab (a real registry and file server on
# loopback), builds a bundle from manifests/lab.yaml with kk-bundle, shows what is inside, then
# verifies it and unpacks it into a content store with kk-install.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "setup"
bash scripts/setup.sh
if ! command -v cargo >/dev/null 2>&1; then PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"; fi

step "building kk-bundle and kk-install (release)"
cargo build --release --locked -p kk-bundle -p kk-install
release="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release"
kk_bundle=$release/kk-bundle kk_install=$release/kk-install

demo=target/demo
mkdir -p "$demo"
export LAB_DIR="$PWD/target/lab/demo"
step "starting the upstream lab in $LAB_DIR"
bash scripts/lab/upstream.sh up
trap 'bash scripts/lab/upstream.sh down >/dev/null 2>&1 || true' EXIT
# shellcheck disable=SC1091
source "$LAB_DIR/env"

step "rendering manifests/lab.yaml for this lab"
bash scripts/lab/render.sh manifests/lab.yaml "$demo/lab.yaml"

step "kk-bundle build $demo/lab.yaml"
# The lab's single-platform images have no linux/arm64 variant: say so, and bundle what exists.
"$kk_bundle" build "$demo/lab.yaml" -o "$demo/cluster.tar.zst" --cache "$demo/cache" --allow-missing-platforms

step "kk-bundle inspect $demo/cluster.tar.zst"
"$kk_bundle" inspect "$demo/cluster.tar.zst"

step "kk-install verify --bundle $demo/cluster.tar.zst (the airgap side)"
"$kk_install" verify --bundle "$demo/cluster.tar.zst"

step "kk-install unpack into $demo/store (the registry's data)"
rm -rf "$demo/store"
"$kk_install" unpack --bundle "$demo/cluster.tar.zst" --store "$demo/store"

#!/usr/bin/env bash
# Renders a lab template (manifests/lab.yaml, scripts/lab/lab-binaries.json): replaces exactly
# ${KK_LAB_REGISTRY} and ${KK_LAB_HTTP}, nothing else (the manifest's own {version} placeholders
# and any other `$` stay as they are).
#
#   scripts/lab/render.sh TEMPLATE OUT      (OUT `-` = stdout)
#
# The values come from the environment, or else from the lab's env file ($LAB_DIR/env, default
# target/lab/upstream/env), which `scripts/lab/upstream.sh up` writes.
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LAB_LOG_NAME=lab-render

[ $# -eq 2 ] || lab_die "usage: $0 TEMPLATE OUT"
template=$1 out=$2
[ -f "$template" ] || lab_die "template $template does not exist"
if [ -z "${KK_LAB_REGISTRY:-}" ] || [ -z "${KK_LAB_HTTP:-}" ]; then lab_load_env; fi
command -v envsubst >/dev/null 2>&1 || lab_die "envsubst is missing (Debian package gettext-base; as root: bash scripts/setup.sh)"

# envsubst with an explicit list substitutes only those variables (single quotes: literal names).
# shellcheck disable=SC2016
rendered=$(KK_LAB_REGISTRY=$KK_LAB_REGISTRY KK_LAB_HTTP=$KK_LAB_HTTP envsubst '${KK_LAB_REGISTRY} ${KK_LAB_HTTP}' < "$template")
# shellcheck disable=SC2016
if leftover=$(grep -n '\${KK_LAB_' <<<"$rendered"); then
  lab_die "$template uses a placeholder other than \${KK_LAB_REGISTRY} and \${KK_LAB_HTTP}: $leftover"
fi
if [ "$out" = - ]; then
  printf '%s\n' "$rendered"
else
  mkdir -p "$(dirname "$out")"
  printf '%s\n' "$rendered" > "$out.tmp.$$"
  mv "$out.tmp.$$" "$out"
fi

#!/usr/bin/env bash
# Seeds the running upstream lab with stand-ins for everything a catalog names, so that
# `kk-bundle build` of a manifest with `spec.kubernetes` can run against the lab:
#
#   scripts/lab/seed-catalog.sh [--force] CATALOG_JSON
#
# CATALOG_JSON is what `kk-bundle catalog v1.31.4 --output json` prints:
#   {"kubernetes": "v1.31.4",
#    "binaries": [{"name": "kubeadm", "version": "v1.31.4",
#                  "url": "https://dl.k8s.io/release/{version}/bin/{os}/{arch}/kubeadm",
#                  "checksumUrl": "https://dl.k8s.io/release/{version}/bin/{os}/{arch}/kubeadm.sha256"}, ...],
#    "images": ["registry.k8s.io/kube-apiserver:v1.31.4", ...],
#    "charts": [{"name": "tigera-operator", "version": "v3.28.0", "repo": "https://docs.tigera.io/calico/charts"}]}
# (a binary has `checksumUrl` or `sha256` {arch: hex}; example: scripts/lab/testdata/catalog-sample.json).
#
# For linux/amd64 and linux/arm64 (override: LAB_PLATFORMS="linux/amd64 ..."):
# - binaries: `https://HOST/PATH` is served as `$KK_LAB_HTTP/HOST/PATH` (file under $LAB_DIR/http/HOST/PATH),
#   made by scripts/lab/catalog.py (real Debian etcd/containerd/runc/CNI bytes and real helm shaped like
#   upstream's artifacts, stand-in scripts for the rest), plus the checksum files the catalog names;
# - images: a busybox-based stand-in (amd64 + arm64 index) at the reference's path without its host
#   (`registry.k8s.io/coredns/coredns:v1.11.3` -> `$KK_LAB_REGISTRY/coredns/coredns:v1.11.3`,
#   `docker.io/calico/node:v3.28.0` -> `calico/node:v3.28.0`); digest-pinned references are skipped;
# - charts: a stand-in chart with that name and version in a Helm HTTP repository at the repo URL's
#   mapped path (`$LAB_DIR/http/docs.tigera.io/calico/charts/` + index.yaml with absolute URLs under
#   `$KK_LAB_HTTP/docs.tigera.io/calico/charts`), or pushed to the lab registry for `oci:` charts.
# What exists already is kept (--force remakes it). A record of what was seeded, with file digests,
# goes to $LAB_DIR/seeded/<catalog file name>.
set -euo pipefail

# shellcheck source=scripts/lab/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
LAB_LOG_NAME=seed-catalog

force=""
if [ "${1:-}" = --force ]; then force=--force; shift; fi
[ $# -eq 1 ] || lab_die "usage: $0 [--force] CATALOG_JSON"
catalog=$1
[ -f "$catalog" ] || lab_die "catalog file $catalog does not exist"
catalog=$(cd "$(dirname "$catalog")" && pwd)/$(basename "$catalog")

lab_init_dir
lab_require skopeo umoci curl tar gzip
lab_load_env
[ "$(lab_http_code "http://$KK_LAB_REGISTRY/v2/")" = 200 ] || lab_die "the lab registry $KK_LAB_REGISTRY does not answer: run scripts/lab/upstream.sh up"
[ "$(lab_http_code "$KK_LAB_HTTP/")" != 000 ] || lab_die "the lab file server $KK_LAB_HTTP does not answer: run scripts/lab/upstream.sh up"
HELM=$KK_LAB_HELM
[ -x "$HELM" ] || lab_die "KK_LAB_HELM ($HELM) is not executable"
BUSYBOX_ARM64=$(bash "$LAB_SCRIPTS/tools.sh" busybox-arm64)

work=$LAB_DIR/work/catalog
mkdir -p "$work" "$LAB_DIR/seeded"
platform_args=()
for platform in ${LAB_PLATFORMS:-linux/amd64 linux/arm64}; do platform_args+=(--platform "$platform"); done

started=$(date +%s.%N)
"$PYTHON" "$LAB_SCRIPTS/catalog.py" --lab-dir "$LAB_DIR" --lab-http "$KK_LAB_HTTP" --catalog "$catalog" \
  --plan "$work/plan.tsv" --record "$LAB_DIR/seeded/$(basename "$catalog")" --helm "$HELM" \
  "${platform_args[@]}" $force

# Stand-in images: the lab's busybox base for both architectures with a command naming the image,
# so each reference gets its own digest.
layout=$LAB_DIR/work/oci
lab_base_layout "$layout"
images=0 image_skipped=0
n=0
while IFS=$'\t' read -r kind ref path tag; do
  [ "$kind" = image ] || continue
  n=$((n + 1))
  if [ -z "$force" ] && lab_registry_has "$path" "$tag"; then image_skipped=$((image_skipped + 1)); continue; fi
  for arch in amd64 arm64; do
    lab_image_variant "$layout" "$arch" "standin-$n-$arch" "$ref stand-in from the kk lab ($arch)"
  done
  lab_image_index "$layout" "standin-$n" "standin-$n-amd64=amd64" "standin-$n-arm64=arm64"
  lab_push --all "oci:$layout:standin-$n" "docker://$KK_LAB_REGISTRY/$path:$tag"
  images=$((images + 1))
done < "$work/plan.tsv"
umoci gc --layout "$layout"

# The NFS provisioner's stand-in renders what the real chart does with its values (the real
# chart's defaults: nfs.server empty, nfs.path /nfs-storage, storageClass.name nfs-client,
# storageClass.defaultClass false): a StorageClass and a Deployment of the catalog's image whose
# volume is nfs.server:nfs.path.
nfs_provisioner_template() { # IMAGES (the catalog's; the first is the provisioner's)
  local image
  # shellcheck disable=SC2086 # one image reference per word
  image=$(printf '%s\n' $1 | head -n 1)
  [ -n "$image" ] || image=registry.k8s.io/sig-storage/nfs-subdir-external-provisioner:v4.0.2
  cat <<EOF
{{- \$server := dig "nfs" "server" "" .Values.AsMap }}
{{- \$path := dig "nfs" "path" "/nfs-storage" .Values.AsMap }}
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: {{ dig "storageClass" "name" "nfs-client" .Values.AsMap }}
  annotations:
    storageclass.kubernetes.io/is-default-class: {{ dig "storageClass" "defaultClass" false .Values.AsMap | quote }}
provisioner: cluster.local/{{ .Release.Name }}-{{ .Chart.Name }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  namespace: {{ .Release.Namespace }}
spec:
  selector:
    matchLabels: {app: {{ .Release.Name }}-{{ .Chart.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-{{ .Chart.Name }}}
    spec:
      containers:
        - name: nfs-subdir-external-provisioner
          image: "$image"
          env:
            - {name: NFS_SERVER, value: {{ \$server | quote }}}
            - {name: NFS_PATH, value: {{ \$path | quote }}}
          volumeMounts: [{name: nfs-subdir-external-provisioner-root, mountPath: /persistentvolumes}]
      volumes:
        - name: nfs-subdir-external-provisioner-root
          nfs: {server: {{ \$server | quote }}, path: {{ \$path | quote }}}
EOF
}

# Stand-in charts. A chart whose catalog entry lists `images` (the network plugin's) also renders a
# DaemonSet whose containers are exactly those images, by their original names (values.yaml
# `standinImages`), so `helm template` names what the catalog bundles. Where the real chart would
# have an airgapped cluster ask for images the catalog lacks, the stand-in refuses to render:
# tigera-operator unless `installation.registry` is set (it then puts that registry in front of the
# calico/* images, as the operator does with Installation.spec.registry), cilium unless
# `envoy.enabled` is false (the cilium-envoy image is not in the catalog), kube-ovn unless
# `MASTER_NODES` is set (the real chart `lookup`s labelled nodes otherwise, which `helm template`
# cannot, and fails), hybridnet unless `manager`/`webhook.nodeSelector` are set (the real chart's
# default selects `node-role.kubernetes.io/master`, which no node of Kubernetes >= 1.24 has). The
# kube-ovn and hybridnet stand-ins keep their charts' value keys and render the ones kk sets
# (pod and service ranges) into a ConfigMap, `<release>-settings`; kube-ovn's vpc-nat-gateway
# image is named under `image` in a ConfigMap, as the real chart's `ovn-vpc-nat-config`.
make_chart() { # NAME VERSION DIR: packages a minimal chart into DIR (kept while its sources are unchanged)
  local name=$1 version=$2 dest=$3 src images sources
  src=$work/charts/$name-$version/$name
  rm -rf "$src"; mkdir -p "$src/templates" "$dest"
  cat > "$src/Chart.yaml" <<EOF
apiVersion: v2
name: $name
version: $version
appVersion: "$version"
description: kk lab stand-in for the $name chart $version
type: application
EOF
  images=$("$PYTHON" -c 'import json, sys
for chart in json.load(open(sys.argv[1])).get("charts", []):
    if chart.get("name") == sys.argv[2] and chart.get("version") == sys.argv[3]:
        print("\n".join(chart.get("images") or []))
        break' "$catalog" "$name" "$version") || lab_die "cannot read the images of chart $name $version from $catalog"
  {
    printf 'message: stand-in for %s %s\n' "$name" "$version"
    if [ -n "$images" ]; then
      printf 'standinImages:\n'
      # shellcheck disable=SC2086 # one image reference per word
      printf '  - "%s"\n' $images
    fi
    case "$name" in
      tigera-operator) printf 'installation:\n  enabled: true\n  # registry: the calico/* images'"'"' registry (Installation.spec.registry); required\n' ;;
      cilium) printf 'envoy:\n  # must be false: the cilium-envoy image is not in the catalog\n  enabled: null\n' ;;
      hybridnet) cat <<'EOF'
init: {cidr: 100.64.0.0/16, ipVersion: "4", vxlanID: 4}
defaultIPFamily: IPv4
# the real chart's default selector is node-role.kubernetes.io/master; required here
manager: {replicas: 3, nodeSelector: {}}
webhook: {replicas: 3, nodeSelector: {}}
typha: {replicas: 3, nodeSelector: {}}
EOF
        ;;
      kube-ovn) cat <<'EOF'
namespace: kube-system
# the control planes' addresses; required (the real chart looks them up, which helm template cannot)
MASTER_NODES: ""
MASTER_NODES_LABEL: "kube-ovn/role=master"
networking: {NET_STACK: ipv4}
ipv4: {POD_CIDR: "10.16.0.0/16", POD_GATEWAY: "10.16.0.1", SVC_CIDR: "10.96.0.0/12", JOIN_CIDR: "100.64.0.0/16"}
ipv6: {POD_CIDR: "fd00:10:16::/112", POD_GATEWAY: "fd00:10:16::1", SVC_CIDR: "fd00:10:96::/112", JOIN_CIDR: "fd00:100:64::/112"}
dual_stack: {POD_CIDR: "10.16.0.0/16,fd00:10:16::/112", POD_GATEWAY: "10.16.0.1,fd00:10:16::1", SVC_CIDR: "10.96.0.0/12,fd00:10:96::/112", JOIN_CIDR: "100.64.0.0/16,fd00:100:64::/112"}
EOF
        ;;
    esac
  } > "$src/values.yaml"
  cat > "$src/templates/configmap.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
data:
  message: {{ .Values.message | quote }}
EOF
  if [ "$name" = nfs-subdir-external-provisioner ]; then
    nfs_provisioner_template "$images" > "$src/templates/provisioner.yaml"
  elif [ -n "$images" ]; then
    {
      case "$name" in
        tigera-operator) cat <<'EOF'
{{- $registry := required "kk lab stand-in of tigera-operator: set installation.registry (Installation.spec.registry) so the calico images keep their original names" (dig "installation" "registry" "" .Values.AsMap) }}
EOF
          ;;
        cilium) cat <<'EOF'
{{- if ne (toString (dig "envoy" "enabled" "unset" .Values.AsMap)) "false" }}
{{- fail "kk lab stand-in of cilium: set envoy.enabled=false (the cilium-envoy image is not in the catalog)" }}
{{- end }}
EOF
          ;;
        hybridnet) cat <<'EOF'
{{- if or (not .Values.manager.nodeSelector) (not .Values.webhook.nodeSelector) }}
{{- fail "kk lab stand-in of hybridnet: set manager.nodeSelector and webhook.nodeSelector (the chart's default, node-role.kubernetes.io/master, is on no node since Kubernetes 1.24)" }}
{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  namespace: kube-system
data:
  init-cidr: {{ .Values.init.cidr | quote }}
  init-ip-version: {{ .Values.init.ipVersion | quote }}
  default-ip-family: {{ .Values.defaultIPFamily | quote }}
  manager: {{ printf "%v on %s" .Values.manager.replicas (toJson .Values.manager.nodeSelector) | quote }}
  webhook: {{ printf "%v on %s" .Values.webhook.replicas (toJson .Values.webhook.nodeSelector) | quote }}
  typha-replicas: {{ .Values.typha.replicas | quote }}
---
EOF
          ;;
        kube-ovn) cat <<'EOF'
{{- if not .Values.MASTER_NODES }}
{{- fail (printf "No nodes found with label '%s'. Please check your MASTER_NODES_LABEL configuration or ensure master nodes are properly labeled." .Values.MASTER_NODES_LABEL) }}
{{- end }}
{{- $stack := get .Values .Values.networking.NET_STACK }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  namespace: {{ .Values.namespace }}
data:
  master-nodes: {{ .Values.MASTER_NODES | quote }}
  net-stack: {{ .Values.networking.NET_STACK | quote }}
  pod-cidr: {{ $stack.POD_CIDR | quote }}
  pod-gateway: {{ $stack.POD_GATEWAY | quote }}
  svc-cidr: {{ $stack.SVC_CIDR | quote }}
---
EOF
          ;;
      esac
      cat <<'EOF'
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Chart.Name }}
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      containers:
      {{- range $index, $image := .Values.standinImages }}
      {{- if not (and (eq $.Chart.Name "kube-ovn") (contains "/vpc-nat-gateway:" $image)) }}
      {{- $path := regexReplaceAll "^[^/]+/" $image "" }}
      {{- if and (eq $.Chart.Name "tigera-operator") (hasPrefix "calico/" $path) }}
      {{- $image = printf "%s/%s" (trimSuffix "/" $.Values.installation.registry) $path }}
      {{- end }}
        - name: standin-{{ $index }}
          image: {{ $image | quote }}
      {{- end }}
      {{- end }}
{{- if eq .Chart.Name "kube-ovn" }}
{{- range .Values.standinImages }}
{{- if contains "/vpc-nat-gateway:" . }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ovn-vpc-nat-config
  namespace: {{ $.Values.namespace }}
data:
  image: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
EOF
    } > "$src/templates/workloads.yaml"
  fi
  # helm package stamps times into the archive: a chart is packaged again only when its sources
  # changed (recorded beside it), so its digest stays put between seedings.
  sources=$(cd "$src" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-64)
  if [ -z "$force" ] && [ -f "$dest/$name-$version.tgz" ] \
     && [ "$(cat "$dest/$name-$version.tgz.sources" 2>/dev/null)" = "$sources" ]; then
    return 0
  fi
  "$HELM" package "$src" --destination "$dest" >/dev/null || lab_die "helm package $name $version failed"
  printf '%s\n' "$sources" > "$dest/$name-$version.tgz.sources"
}
charts=0
declare -A reindex=()
while IFS=$'\t' read -r kind name version where; do
  case "$kind" in
    chart-repo)
      make_chart "$name" "$version" "$LAB_DIR/http/$where"
      reindex[$where]=1
      charts=$((charts + 1))
      ;;
    chart-oci)
      repo=$where${where:+/}$name
      if [ -n "$force" ] || ! lab_registry_has "$repo" "$version"; then
        make_chart "$name" "$version" "$work/oci-charts"
        "$HELM" push "$work/oci-charts/$name-$version.tgz" "oci://$KK_LAB_REGISTRY${where:+/}$where" --plain-http \
          >/dev/null 2>"$work/helm-push.err" || { cat "$work/helm-push.err" >&2; lab_die "helm push $name $version failed"; }
      fi
      charts=$((charts + 1))
      ;;
  esac
done < "$work/plan.tsv"
for where in "${!reindex[@]}"; do
  "$HELM" repo index --url "$KK_LAB_HTTP/$where" "$LAB_DIR/http/$where" || lab_die "helm repo index $LAB_DIR/http/$where failed"
done

record=$LAB_DIR/seeded/$(basename "$catalog")
binaries=$("$PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["binaries"]))' "$record")
lab_log "seeded $(basename "$catalog") in $(printf '%.1f' "$(echo "$(date +%s.%N) - $started" | bc)") s: $binaries release files," \
  "$images images pushed ($image_skipped were there), $charts charts; record: $record"

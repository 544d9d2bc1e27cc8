#!/usr/bin/env bash
# Self-test of the kubeadm, kubelet, kubectl and crictl stand-ins, without a node: each runs with
# python3 against a temporary directory that stands for the node's root (KK_STANDIN_ROOT), with
# test doubles (this self-test only, no node) for ctr (KK_STANDIN_CTR: pulls succeed unless the image is listed in $ROOT/ctr-fail),
# systemctl (KK_STANDIN_SYSTEMCTL: `restart kubelet` runs the kubelet stand-in first on PATH once
# with the flags kubeadm wrote, as systemd's unit would) and journalctl (KK_STANDIN_JOURNALCTL).
# KK_STANDIN_CLUSTER, the directory the lab binds into every node, is $W/cluster.
#
#   bash scripts/lab/standins/selftest.sh        (needs python3 with PyYAML and openssl; ~15 s)
#
# Prints one line per case and exits non-zero when any case does not behave as the README says.
# shellcheck disable=SC2016 # the `bash -c '...'` checks expand their own $0
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/kk-standin-selftest.XXXXXX)
trap 'rm -rf "$W"' EXIT
ROOT=$W/node
export KK_STANDIN_ROOT=$ROOT KK_STANDIN_LOG=$W/standin.log
export KK_STANDIN_CTR=$W/bin/ctr KK_STANDIN_SYSTEMCTL=$W/bin/systemctl KK_STANDIN_JOURNALCTL=$W/bin/journalctl
export KK_STANDIN_CONTAINERD=$W/bin/containerd KK_STANDIN_KUBELET_TIMEOUT=3 KK_STANDIN_CLUSTER=$W/cluster
mkdir -p "$W/bin" "$W/pki-template"
failures=0
cases=0

# ---- test doubles and helpers ----
cat > "$W/bin/ctr" <<'EOF'
#!/bin/sh
# test double for ctr: `images ls -q` lists $ROOT/ctr-images; `images pull ... REF` adds REF unless in $ROOT/ctr-fail
store=$KK_STANDIN_ROOT/ctr-images
case "$*" in
  *"images ls -q"*) cat "$store" 2>/dev/null; exit 0 ;;
  *"images pull"*)
    for ref; do :; done
    if [ -f "$KK_STANDIN_ROOT/ctr-fail" ] && grep -qxF "$ref" "$KK_STANDIN_ROOT/ctr-fail"; then
      echo "ctr: failed to resolve reference \"$ref\": $ref: not found"; exit 1
    fi
    echo "$ref" >> "$store"; echo "$ref: resolved"; exit 0 ;;
esac
exit 1
EOF
cat > "$W/bin/systemctl" <<EOF
#!/bin/sh
# test double for systemctl: \`restart kubelet\` runs the kubelet stand-in once, as kubelet.service would
[ "\$1 \$2" = "restart kubelet" ] || exit 0
KUBELET_KUBEADM_ARGS=
[ -f "\$KK_STANDIN_ROOT/var/lib/kubelet/kubeadm-flags.env" ] && . "\$KK_STANDIN_ROOT/var/lib/kubelet/kubeadm-flags.env"
KK_STANDIN_KUBELET_ONCE=1 kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \\
  --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml \$KUBELET_KUBEADM_ARGS \\
  >> "$W/kubelet.journal" 2>&1
exit 0
EOF
printf '#!/bin/sh\ncat "%s/kubelet.journal" 2>/dev/null\n' "$W" > "$W/bin/journalctl"
printf '#!/bin/sh\necho "containerd github.com/containerd/containerd v1.7.30 0000000"\n' > "$W/bin/containerd"
printf '#!/bin/sh\nexec python3 "%s/kubelet.py" "$@"\n' "$HERE" > "$W/bin/kubelet"
printf '#!/bin/sh\nexec python3 "%s/crictl.py" "$@"\n' "$HERE" > "$W/bin/crictl"
for c in conntrack ip iptables mount nsenter; do
  command -v "$c" >/dev/null || printf '#!/bin/sh\nexit 0\n' > "$W/bin/$c"
done
chmod +x "$W"/bin/*
export PATH=$W/bin:$PATH

# kubeadm stand-ins of two versions, the way catalog.py makes them: self-contained (its
# standin_source puts common.py in), VERSION and IMAGES set (and a kubelet of the same version
# first on PATH: kubeadm's KubeletVersion check runs it). The other runs use the files here.
standin() { python3 -B -c 'import sys; sys.path.insert(0, sys.argv[1]); import catalog
sys.stdout.write(catalog.standin_source(sys.argv[2]))' "$HERE/.." "$1"; }
for v in v1.30.0 v1.32.0 v1.33.0; do
  mkdir -p "$W/bin-$v"
  standin kubeadm | sed -e "s|^VERSION = .*|VERSION = \"$v\"|" -e "s|:v1.33.0\"|:$v\"|g" > "$W/kubeadm-$v.py" &&
    standin kubelet | sed -e "s|^VERSION = .*|VERSION = \"$v\"|" > "$W/bin-$v/kubelet" ||
    { echo "selftest: making the $v stand-ins with catalog.py failed" >&2; exit 1; }
  chmod +x "$W/bin-$v/kubelet"
done
kubeadm130() { PATH=$W/bin-v1.30.0:$PATH python3 "$W/kubeadm-v1.30.0.py" "$@"; }
kubeadm132() { PATH=$W/bin-v1.32.0:$PATH python3 "$W/kubeadm-v1.32.0.py" "$@"; }
kubeadm133() { PATH=$W/bin-v1.33.0:$PATH python3 "$W/kubeadm-v1.33.0.py" "$@"; }
kubelet() { KK_STANDIN_KUBELET_ONCE=1 python3 "$HERE/kubelet.py" "$@"; }
kubectl() { python3 "$HERE/kubectl.py" "$@"; }
crictl() { python3 "$HERE/crictl.py" "$@"; }
IGNORE=""
[ "$(id -u)" = 0 ] || IGNORE=--ignore-preflight-errors=IsPrivilegedUser

# The PKI kk pre-fills: cluster CA, front-proxy CA, etcd CA, service-account key pair, and an
# apiserver leaf with the SANs kubeadm expects for node cp1 at 10.0.0.11.
T=$W/pki-template
ca() { mkdir -p "$(dirname "$T/$1")"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/$1.key" -out "$T/$1.crt" \
    -subj "/CN=$2" -days 10 2>/dev/null; }
leaf() { # NAME CA SANS
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/$1.key" -subj "/CN=$1" \
    -out "$W/req" 2>/dev/null
  printf 'subjectAltName=%s\n' "$3" > "$W/ext"
  openssl x509 -req -in "$W/req" -CA "$T/$2.crt" -CAkey "$T/$2.key" -set_serial 7 -days 10 -extfile "$W/ext" \
    -out "$T/$1.crt" 2>/dev/null; }
ca ca kubernetes; ca front-proxy-ca front-proxy-ca; ca etcd/ca etcd-ca; ca other other-ca
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/sa.key" 2>/dev/null
openssl pkey -in "$T/sa.key" -pubout -out "$T/sa.pub"
leaf apiserver ca "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:cp1,IP:10.96.0.1,IP:10.0.0.11"
HASH=sha256:$(openssl x509 -pubkey -noout -in "$T/ca.crt" | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)
OTHER=sha256:$(openssl x509 -pubkey -noout -in "$T/other.crt" | openssl pkey -pubin -outform der | sha256sum | cut -d' ' -f1)

fresh_node() { # a node as kk leaves it before kubeadm: PKI, trust CA, containerd config and socket
  rm -rf "$ROOT" "$KK_STANDIN_CLUSTER"; mkdir -p "$ROOT/etc/kubernetes/pki/etcd" "$ROOT/etc/kk/pki" "$ROOT/etc/containerd" \
    "$ROOT/run/containerd" "$ROOT/proc" "$ROOT/cfg"
  for f in ca front-proxy-ca etcd/ca; do
    cp "$T/$f.crt" "$ROOT/etc/kubernetes/pki/$f.crt"; cp "$T/$f.key" "$ROOT/etc/kubernetes/pki/$f.key"
  done
  cp "$T/sa.key" "$T/sa.pub" "$ROOT/etc/kubernetes/pki/"
  cp "$T/ca.crt" "$ROOT/etc/kk/pki/ca.crt"
  printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.10"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n' \
    > "$ROOT/etc/containerd/config.toml"
  printf 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n' > "$ROOT/proc/swaps"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$ROOT/run/containerd/containerd.sock"
  rm -f "$W/kubelet.journal"
}

config() { # API CLUSTER_EXTRA INIT_EXTRA KUBERNETES_VERSION TOKEN -> $ROOT/cfg/kubeadm.yaml
  cat > "$ROOT/cfg/kubeadm.yaml" <<EOF
apiVersion: kubeadm.k8s.io/$1
kind: InitConfiguration
bootstrapTokens:
- token: "$5"
  ttl: 24h0m0s
localAPIEndpoint: {advertiseAddress: 10.0.0.11, bindPort: 6443}
nodeRegistration:
  name: cp1
  criSocket: unix:///run/containerd/containerd.sock
$3
---
apiVersion: kubeadm.k8s.io/$1
kind: ClusterConfiguration
kubernetesVersion: $4
networking: {serviceSubnet: 10.96.0.0/12, podSubnet: 10.244.0.0/16}
$2
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
EOF
}

join_config() { # API HASH EXTRA -> $ROOT/cfg/join.yaml
  cat > "$ROOT/cfg/join.yaml" <<EOF
apiVersion: kubeadm.k8s.io/$1
kind: JoinConfiguration
discovery:
  bootstrapToken:
    token: abcdef.0123456789abcdef
    apiServerEndpoint: 10.0.0.11:6443
    caCertHashes: ["$2"]
nodeRegistration: {name: w1, criSocket: "unix:///run/containerd/containerd.sock"}
$3
EOF
}

# expect NAME fail|ok PATTERN COMMAND...: runs COMMAND, checks its exit and that PATTERN (grep -E)
# is in its stdout+stderr.
expect() {
  local name=$1 want=$2 pattern=$3 out rc
  shift 3
  cases=$((cases + 1))
  out=$("$@" 2>&1 </dev/null); rc=$?
  if { [ "$want" = fail ] && [ $rc -eq 0 ]; } || { [ "$want" = ok ] && [ $rc -ne 0 ]; } \
     || ! grep -qE -- "$pattern" <<<"$out"; then
    failures=$((failures + 1))
    printf 'FAIL  %s (exit %s, wanted %s, pattern %s)\n%s\n' "$name" "$rc" "$want" "$pattern" "$out" | sed 's/^/      /'
  else
    printf 'ok    %s\n' "$name"
  fi
}
check() { # NAME CONDITION...
  local name=$1; shift
  cases=$((cases + 1))
  if "$@"; then printf 'ok    %s\n' "$name"; else failures=$((failures + 1)); printf 'FAIL  %s\n' "$name"; fi
}
yaml_ok() { python3 -c 'import yaml, sys; [list(yaml.safe_load_all(open(f))) for f in sys.argv[1:]]' "$@"; }

# ---- kubeadm: config API versions and shapes ----
fresh_node
config v1beta4 "" "" v1.30.0 abcdef.0123456789abcdef
expect "v1beta4 rejected by a v1.30 kubeadm" fail \
  'no kind "InitConfiguration" is registered for version "kubeadm.k8s.io/v1beta4"' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
config v1beta3 "apiServer: {extraArgs: [{name: audit-log-maxage, value: '7'}]}" "" v1.30.0 abcdef.0123456789abcdef
expect "list-shaped extraArgs rejected in v1beta3" fail \
  'cannot unmarshal array into Go struct field ClusterConfiguration.apiServer.extraArgs of type map\[string\]string' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
config v1beta4 "apiServer: {extraArgs: {audit-log-maxage: '7'}}" "" v1.33.0 abcdef.0123456789abcdef
expect "map-shaped extraArgs rejected in v1beta4" fail \
  'cannot unmarshal object into Go struct field ClusterConfiguration.apiServer.extraArgs of type \[\]v1beta4.Arg' \
  kubeadm133 init --config /cfg/kubeadm.yaml $IGNORE
config v1beta3 "" "" v1.30.4 abcdef.0123456789abcdef
expect "wrong kubernetesVersion" fail 'this stand-in kubeadm v1.30.0 refuses kubernetesVersion v1.30.4' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
config v1beta3 "" "" v1.30.0 ABCDEF.0123456789abcdef
expect "bad bootstrap token" fail 'the bootstrap token "ABCDEF.0123456789abcdef" was not of the form' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
config v1beta3 "" "" v1.30.0 abcdef.0123456789abcdef
expect "flags mixed with --config" fail "can not mix '--config' with arguments \[pod-network-cidr\]" \
  kubeadm130 init --config /cfg/kubeadm.yaml --pod-network-cidr 10.0.0.0/8 $IGNORE

# ---- kubeadm init: certificates, external etcd, preflight ----
config v1beta3 "etcd: {external: {endpoints: [https://10.0.0.5:2379], caFile: /etc/kubernetes/pki/etcd/ext-ca.crt, certFile: /etc/kubernetes/pki/ext.crt, keyFile: /etc/kubernetes/pki/ext.key}}" "" v1.30.0 abcdef.0123456789abcdef
expect "missing external etcd file" fail '\[ERROR ExternalEtcdClientCertificates\]: /etc/kubernetes/pki/etcd/ext-ca.crt doesn.t exist' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
expect "config images list without etcd for external etcd" ok '^registry.k8s.io/pause:' \
  kubeadm130 config images list --config /cfg/kubeadm.yaml
check "config images list leaves out etcd" \
  bash -c '! python3 "$0" config images list --config /cfg/kubeadm.yaml 2>/dev/null | grep -q etcd' "$W/kubeadm-v1.30.0.py"
expect "config images list names the catalog's images" ok 'registry.k8s.io/coredns/coredns:v1.12.0' \
  kubeadm133 config images list
config v1beta3 "" "" v1.30.0 abcdef.0123456789abcdef
cp "$T/apiserver.crt" "$ROOT/etc/kubernetes/pki/"
expect "half pair (crt without key)" fail 'failure loading apiserver certificate: couldn.t load the private key file /etc/kubernetes/pki/apiserver.key' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
cp "$T/other.key" "$ROOT/etc/kubernetes/pki/apiserver.key"
expect "key that does not match its certificate" fail 'the private key /etc/kubernetes/pki/apiserver.key does not match the public key of /etc/kubernetes/pki/apiserver.crt' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
rm "$ROOT/etc/kubernetes/pki/apiserver."*
rm "$ROOT/etc/kubernetes/pki/front-proxy-ca.key"
expect "missing CA key" fail 'couldn.t load the private key file /etc/kubernetes/pki/front-proxy-ca.key' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
fresh_node
config v1beta3 "" "" v1.30.0 abcdef.0123456789abcdef
mkdir -p "$ROOT/etc/kubernetes/manifests"; touch "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
printf 'Filename Type Size Used Priority\n/swapfile file 1024 0 -2\n' > "$ROOT/proc/swaps"
echo registry.k8s.io/kube-proxy:v1.30.0 > "$ROOT/ctr-fail"
expect "manifest present: FileAvailable error, swap only a warning" fail \
  '\[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml\]: /etc/kubernetes/manifests/kube-apiserver.yaml already exists' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
rm "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
printf 'Filename Type Size Used Priority\n' > "$ROOT/proc/swaps"
expect "kubelet newer than kubeadm" fail '\[ERROR KubeletVersion\]: the kubelet version is higher than the control plane version' \
  python3 "$W/kubeadm-v1.30.0.py" init --config /cfg/kubeadm.yaml $IGNORE
expect "image pull through ctr fails" fail '\[ERROR ImagePull\]: failed to pull image registry.k8s.io/kube-proxy:v1.30.0: ctr: failed to resolve' \
  kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
rm "$ROOT/ctr-fail"

# ---- kubeadm init that works (v1beta3 on v1.30), then what it wrote ----
cp "$T/apiserver.crt" "$T/apiserver.key" "$ROOT/etc/kubernetes/pki/"
expect "v1beta3 accepted by v1.30: init succeeds" ok 'Your Kubernetes control-plane has initialized successfully' \
  kubeadm130 init --config /cfg/kubeadm.yaml --upload-certs $IGNORE
K=$ROOT/etc/kubernetes
check "init wrote the kubeconfigs (0600, valid YAML, CA data)" bash -c '
  for f in admin super-admin kubelet controller-manager scheduler; do
    [ "$(stat -c %a "$0/$f.conf")" = 600 ] || exit 1
    python3 -c "import yaml,sys,base64; d=yaml.safe_load(open(sys.argv[1])); c=d[\"clusters\"][0][\"cluster\"]
assert base64.b64decode(c[\"certificate-authority-data\"]).decode()==open(sys.argv[2]).read(), \"ca\"
assert c[\"server\"].startswith(\"https://10.0.0.11:6443\"), c" "$0/$f.conf" "$0/pki/ca.crt" || exit 1
  done' "$K"
check "init wrote the static pods with the original image names" bash -c '
  grep -q "image: registry.k8s.io/kube-apiserver:v1.30.0" "$0/manifests/kube-apiserver.yaml" &&
  grep -q "image: registry.k8s.io/etcd:3.5.21-0" "$0/manifests/etcd.yaml" &&
  [ -f "$0/manifests/kube-controller-manager.yaml" ] && [ -f "$0/manifests/kube-scheduler.yaml" ]' "$K"
check "static pods and kubelet config are valid YAML" yaml_ok "$K"/manifests/*.yaml "$ROOT/var/lib/kubelet/config.yaml"
check "kubelet config has kubeadm's defaults" bash -c '
  grep -q "cgroupDriver: systemd" "$0" && grep -q "staticPodPath: /etc/kubernetes/manifests" "$0" &&
  grep -q -- "- 10.96.0.10" "$0" && grep -q "clusterDomain: cluster.local" "$0"' "$ROOT/var/lib/kubelet/config.yaml"
check "kubeadm-flags.env" grep -q 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10' \
  "$ROOT/var/lib/kubelet/kubeadm-flags.env"
check "tokens file" grep -qx 'abcdef.0123456789abcdef 24h0m0s' "$K/kk-standin/tokens"
check "kubelet ready file lists the control-plane images" grep -qx 'registry.k8s.io/kube-apiserver:v1.30.0' \
  "$ROOT/var/lib/kubelet/kk-standin-ready"
expect "token create" ok '^abcdef.fedcba9876543210$' kubeadm130 token create abcdef.fedcba9876543210 --ttl 1h
expect "token create with a bad token" fail 'was not of the form' kubeadm130 token create abc --ttl 1h
expect "token list" ok 'abcdef.fedcba9876543210 1h' kubeadm130 token list
before=$(python3 -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))['users'][0]['user']['client-certificate-data'])" "$K/admin.conf")
expect "certs renew of a kubeconfig and a certificate" ok '\[renew\] admin.conf renewed' kubeadm130 certs renew admin.conf apiserver
check "certs renew kept admin.conf's key and changed its certificate" bash -c '
  python3 -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))[\"users\"][0][\"user\"][\"client-certificate-data\"])" "$0/admin.conf" | grep -vqx "$1"' "$K" "$before"
check "the renewed apiserver certificate is the CA's and its key's" bash -c '
  openssl verify -CAfile "$0/pki/ca.crt" "$0/pki/apiserver.crt" >/dev/null &&
  [ "$(openssl x509 -in "$0/pki/apiserver.crt" -noout -pubkey)" = "$(openssl pkey -in "$0/pki/apiserver.key" -pubout)" ]' "$K"
expect "certs renew of an unknown name" fail 'unknown command "ca" for "kubeadm certs renew"' kubeadm130 certs renew ca
mv "$K/pki/ca.key" "$W/ca.key"
expect "certs renew without the CA key" fail "couldn't load the private key file /etc/kubernetes/pki/ca.key" \
  kubeadm130 certs renew apiserver
mv "$W/ca.key" "$K/pki/ca.key"
expect "reset without -f refuses" fail 'aborted reset operation' kubeadm130 reset
expect "reset -f" ok 'does not clean CNI configuration' kubeadm130 reset -f
check "reset removed what init wrote" bash -c '! ls "$0"/etc/kubernetes/*.conf "$0"/etc/kubernetes/manifests/* "$0"/var/lib/kubelet/* "$0"/etc/kubernetes/pki/* >/dev/null 2>&1 && [ ! -e "$0/etc/kubernetes/kk-standin" ]' "$ROOT"
expect "token create without admin.conf" fail 'failed to load admin kubeconfig' kubeadm130 token create abcdef.fedcba9876543210

# ---- kubeadm init on v1.33 (v1beta4) whose kubelet never comes up ----
fresh_node
config v1beta4 "apiServer: {extraArgs: [{name: audit-log-maxage, value: '7'}]}" "  kubeletExtraArgs: [{name: node-ip, value: 10.0.0.11}]" v1.33.0 abcdef.0123456789abcdef
sed -i 's/SystemdCgroup = true/SystemdCgroup = false/' "$ROOT/etc/containerd/config.toml"
expect "kubelet that fails (cgroup driver): init times out" fail 'timed out waiting for the condition' \
  kubeadm133 init --config /cfg/kubeadm.yaml $IGNORE
check "its journal is in the error" bash -c 'python3 "$0" init --config /cfg/kubeadm.yaml --ignore-preflight-errors=all 2>&1 | grep -q "is different from container runtime cgroup driver"' "$W/kubeadm-v1.33.0.py"
check "node-ip from kubeletExtraArgs" grep -q -- '--node-ip=10.0.0.11' "$ROOT/var/lib/kubelet/kubeadm-flags.env"

# ---- kubeadm join ----
fresh_node
rm -rf "$ROOT/etc/kubernetes/pki"
join_config v1beta4 "sha256:1234" ""
expect "join: malformed CA hash" fail 'expected a 32 byte SHA-256 hash, found 2 bytes' kubeadm133 join --config /cfg/join.yaml $IGNORE
join_config v1beta4 "$OTHER" ""
expect "join: CA hash mismatch" fail "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys \"$HASH\" are pinned" \
  kubeadm133 join --config /cfg/join.yaml $IGNORE
join_config v1beta4 "$HASH" ""
mkdir -p "$ROOT/etc/kubernetes/manifests"; touch "$ROOT/etc/kubernetes/manifests/old.yaml"
expect "join into a non-empty manifests dir" fail '\[ERROR DirAvailable--etc-kubernetes-manifests\]: /etc/kubernetes/manifests is not empty' \
  kubeadm133 join --config /cfg/join.yaml $IGNORE
rm "$ROOT/etc/kubernetes/manifests/old.yaml"
join_config v1beta3 "$HASH" ""
expect "join: v1beta3 on v1.33 works, with the deprecation warning" ok 'deprecated API spec' \
  kubeadm133 join --config /cfg/join.yaml $IGNORE
check "worker join wrote kubelet.conf, the CA and the kubelet config" bash -c '
  [ -f "$0/etc/kubernetes/kubelet.conf" ] && cmp -s "$0/etc/kubernetes/pki/ca.crt" "$0/etc/kk/pki/ca.crt" &&
  [ -f "$0/var/lib/kubelet/config.yaml" ] && [ -f "$0/var/lib/kubelet/kk-standin-ready" ]' "$ROOT"
expect "join again: kubelet.conf and ca.crt exist" fail '\[ERROR FileAvailable--etc-kubernetes-pki-ca.crt\]' \
  kubeadm133 join --config /cfg/join.yaml $IGNORE
fresh_node
join_config v1beta4 "$HASH" "controlPlane: {localAPIEndpoint: {advertiseAddress: 10.0.0.11, bindPort: 6443}}"
expect "control-plane join (stacked etcd)" ok 'This node has joined the cluster' kubeadm133 join --config /cfg/join.yaml $IGNORE
check "control-plane join wrote admin.conf and etcd.yaml" test -f "$ROOT/etc/kubernetes/admin.conf" -a -f "$ROOT/etc/kubernetes/manifests/etcd.yaml"

# ---- kubeadm upgrade (and kubectl's nodes, drain, cordon, uncordon) ----
# A kubelet that keeps running (as systemd's unit, until stopped): upgrade waits for it to pull
# what the rewritten static pods run.
kubelet_start() { # VERSION
  ( KUBELET_KUBEADM_ARGS=; . "$ROOT/var/lib/kubelet/kubeadm-flags.env"
    # shellcheck disable=SC2086 # the flags kubeadm wrote, split as systemd splits them
    KK_STANDIN_KUBELET_INTERVAL=0.2 exec python3 "$W/bin-$1/kubelet" --kubeconfig=/etc/kubernetes/kubelet.conf \
      --config=/var/lib/kubelet/config.yaml $KUBELET_KUBEADM_ARGS ) >> "$W/kubelet.journal" 2>&1 &
  KUBELET_PID=$!
}
kubelet_stop() { kill "$KUBELET_PID" 2>/dev/null; wait "$KUBELET_PID" 2>/dev/null; }
ADMIN=(--kubeconfig /etc/kubernetes/admin.conf)

fresh_node
config v1beta3 "" "" v1.30.0 abcdef.0123456789abcdef
cp "$T/apiserver.crt" "$T/apiserver.key" "$ROOT/etc/kubernetes/pki/"
expect "a v1.30 cluster for the skipped minor" ok 'initialized successfully' kubeadm130 init --config /cfg/kubeadm.yaml $IGNORE
expect "upgrade plan to a skipped minor" fail 'Specified version to upgrade to "v1.32.0" is too high; kubeadm can upgrade only 1 minor version at a time' \
  kubeadm132 upgrade plan
expect "upgrade apply of a skipped minor" fail 'is too high; kubeadm can upgrade only 1 minor version at a time' \
  kubeadm132 upgrade apply v1.32.0 --yes

fresh_node
config v1beta4 "" "" v1.32.0 abcdef.0123456789abcdef
cp "$T/apiserver.crt" "$T/apiserver.key" "$ROOT/etc/kubernetes/pki/"
expect "a v1.32 cluster" ok 'initialized successfully' kubeadm132 init --config /cfg/kubeadm.yaml $IGNORE
check "init recorded the cluster's configuration" grep -qx 'kubernetesVersion: v1.32.0' "$W/cluster/kubeadm-config.yaml"
expect "kubectl get nodes: the kubelet's version" ok '^cp1 +Ready +control-plane +1d +v1.32.0$' kubectl "${ADMIN[@]}" get nodes
expect "upgrade apply without --yes, stdin not a terminal" fail "won't proceed; the user didn't answer \(Y\|n\) in order to continue" \
  kubeadm133 upgrade apply v1.33.0
expect "upgrade apply newer than kubeadm" fail 'Specified version to upgrade to "v1.33.0" is at least one minor release higher than the kubeadm minor release \(33 > 32\)' \
  kubeadm132 upgrade apply v1.33.0 --yes
expect "upgrade apply of a lower minor" fail 'is lower than the cluster version "v1.32.0": kubeadm does not downgrade the minor version' \
  kubeadm130 upgrade apply v1.30.0 --yes
mkdir -p "$W/cluster/nodes/cp9"
echo '{"kubeletVersion": "v1.34.0", "ready": true, "controlPlane": true}' > "$W/cluster/nodes/cp9/kubelet"
expect "upgrade apply with a kubelet newer than the target" fail 'Kubelet version "v1.34.0" on node "cp9" is newer than the version to upgrade to "v1.33.0"' \
  kubeadm133 upgrade apply v1.33.0 --yes
rm -r "$W/cluster/nodes/cp9"
echo registry.k8s.io/kube-proxy:v1.33.0 > "$ROOT/ctr-fail"
expect "upgrade apply pulls the target's images through containerd" fail '\[ERROR ImagePull\]: failed to pull image registry.k8s.io/kube-proxy:v1.33.0' \
  kubeadm133 upgrade apply v1.33.0 -y
rm "$ROOT/ctr-fail"
check "a refused upgrade left the manifests alone" grep -q 'image: registry.k8s.io/kube-apiserver:v1.32.0' "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
expect "upgrade node on a control plane before apply" fail 'the cluster is at "v1.32.0" and this kubeadm at "v1.33.0"' \
  kubeadm133 upgrade node
expect "upgrade plan" ok 'kubeadm upgrade apply v1.33.0' kubeadm133 upgrade plan
expect "upgrade with another command" fail 'unknown command "diff" for "kubeadm upgrade"' kubeadm133 upgrade diff
cert_before=$(openssl x509 -in "$ROOT/etc/kubernetes/pki/apiserver.crt" -noout -serial)
kubelet_start v1.32.0
expect "upgrade apply v1.33.0" ok 'SUCCESS! A control plane node of your cluster was upgraded to "v1.33.0"' \
  kubeadm133 upgrade apply v1.33.0 --yes --certificate-renewal=true
kubelet_stop
check "upgrade apply rewrote the static pods with the target's tags (etcd too: stacked)" bash -c '
  grep -q "image: registry.k8s.io/kube-apiserver:v1.33.0" "$0/kube-apiserver.yaml" &&
  grep -q "image: registry.k8s.io/kube-scheduler:v1.33.0" "$0/kube-scheduler.yaml" &&
  grep -q "image: registry.k8s.io/etcd:3.5.21-0" "$0/etcd.yaml"' "$ROOT/etc/kubernetes/manifests"
check "the upgraded static pods are valid YAML" yaml_ok "$ROOT"/etc/kubernetes/manifests/*.yaml
check "upgrade apply backed the old manifests up" bash -c 'grep -q "kube-apiserver:v1.32.0" "$0"/etc/kubernetes/tmp/kubeadm-backup-manifests-*/kube-apiserver.yaml' "$ROOT"
check "upgrade apply renewed the certificates" bash -c '[ "$(openssl x509 -in "$0" -noout -serial)" != "$1" ]' \
  "$ROOT/etc/kubernetes/pki/apiserver.crt" "$cert_before"
check "upgrade apply recorded the cluster's new version" grep -qx 'kubernetesVersion: v1.33.0' "$W/cluster/kubeadm-config.yaml"
kubelet_start v1.32.0
expect "upgrade node on a control plane after apply" ok 'control plane instance for this node was successfully upgraded' \
  kubeadm133 upgrade node
kubelet_stop
expect "upgrade node on a worker updates its kubelet config" ok 'configuration for this node was successfully upgraded' \
  env KK_STANDIN_ROOT="$W/worker" python3 "$W/kubeadm-v1.33.0.py" upgrade node
check "the worker's kubelet config" grep -q 'staticPodPath: /etc/kubernetes/manifests' "$W/worker/var/lib/kubelet/config.yaml"

printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: cni, namespace: kube-system}\n' > "$ROOT/cfg/ds.yaml"
kubectl "${ADMIN[@]}" apply -f /cfg/ds.yaml >/dev/null
expect "kubectl drain of an unknown node" fail 'Error from server \(NotFound\): nodes "nope" not found' kubectl "${ADMIN[@]}" drain nope
expect "kubectl drain without --ignore-daemonsets" fail 'cannot delete DaemonSet-managed Pods \(use --ignore-daemonsets to ignore\): cni-cp1' \
  kubectl "${ADMIN[@]}" drain cp1
expect "kubectl drain" ok '^node/cp1 drained$' kubectl "${ADMIN[@]}" drain cp1 --ignore-daemonsets --delete-emptydir-data --timeout 5m
expect "a drained node is unschedulable" ok '^cp1 +Ready,SchedulingDisabled ' kubectl "${ADMIN[@]}" get nodes
check "get nodes -o json: unschedulable and the kubelet's version" bash -c '
  python3 "$0/kubectl.py" --kubeconfig /etc/kubernetes/admin.conf get node cp1 -o json | python3 -c "import json,sys
n=json.load(sys.stdin); assert n[\"spec\"][\"unschedulable\"] is True and n[\"status\"][\"nodeInfo\"][\"kubeletVersion\"]==\"v1.32.0\", n"' "$HERE"
KK_STANDIN_KUBELET_ONCE=1 python3 "$W/bin-v1.33.0/kubelet" --kubeconfig=/etc/kubernetes/kubelet.conf \
  --config=/var/lib/kubelet/config.yaml --hostname-override=cp1 >> "$W/kubelet.journal" 2>&1
expect "a restarted kubelet reports its new version" ok '^cp1 +Ready,SchedulingDisabled +control-plane +1d +v1.33.0$' kubectl "${ADMIN[@]}" get nodes
expect "kubectl uncordon" ok '^node/cp1 uncordoned$' kubectl "${ADMIN[@]}" uncordon cp1
expect "kubectl uncordon again" ok '^node/cp1 already uncordoned$' kubectl "${ADMIN[@]}" uncordon cp1
expect "kubectl cordon" ok '^node/cp1 cordoned$' kubectl "${ADMIN[@]}" cordon cp1
expect "kubectl wait for a node's Ready" ok '^node/cp1 condition met$' kubectl "${ADMIN[@]}" wait --for=condition=Ready node/cp1 --timeout=300s
mkdir -p "$W/cluster/nodes/w9"
echo '{"kubeletVersion": "v1.33.0", "ready": false, "controlPlane": false}' > "$W/cluster/nodes/w9/kubelet"
expect "kubectl wait for a node that stays NotReady" fail 'timed out waiting for the condition on nodes/w9' \
  kubectl "${ADMIN[@]}" wait --for=condition=Ready node/w9 --timeout=1s
check "kubectl wait sees a node become Ready" bash -c '
  (sleep 1; echo "{\"kubeletVersion\": \"v1.33.0\", \"ready\": true}" > "$0/w9.tmp"; mv "$0/w9.tmp" "$0/nodes/w9/kubelet") &
  python3 "$1/kubectl.py" --kubeconfig /etc/kubernetes/admin.conf wait --for=condition=Ready node/w9 --timeout=1m | grep -qx "node/w9 condition met"' \
  "$W/cluster" "$HERE"
expect "kubectl delete node" ok '^node "cp1" deleted$' kubectl "${ADMIN[@]}" delete node cp1
expect "kubectl delete node again" fail 'Error from server \(NotFound\): nodes "cp1" not found' kubectl "${ADMIN[@]}" delete node/cp1
check "the cluster's call log keeps the order across stand-ins" bash -c '
  grep -n -e "kubeadm upgrade apply v1.33.0 --yes --certificate-renewal=true" -e "kubectl --kubeconfig /etc/kubernetes/admin.conf drain cp1 --ignore" \
    -e "kubectl --kubeconfig /etc/kubernetes/admin.conf uncordon cp1" "$0" | cut -d: -f1 | sort -nc' "$W/cluster/calls"

# ---- kubelet ----
fresh_node
expect "kubelet without its config file" fail 'failed to load kubelet config file, path: /var/lib/kubelet/config.yaml, error: .*no such file or directory' \
  kubelet --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/kubernetes/kubelet.conf
mkdir -p "$ROOT/var/lib/kubelet"
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n' > "$ROOT/var/lib/kubelet/config.yaml"
expect "kubelet without any kubeconfig" fail 'unable to load bootstrap kubeconfig' \
  kubelet --config=/var/lib/kubelet/config.yaml --kubeconfig=/etc/kubernetes/kubelet.conf --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf
printf 'apiVersion: v1\nkind: Config\nclusters: []\nusers: []\n' > "$ROOT/etc/kubernetes/kubelet.conf"
expect "kubelet cgroup driver mismatch" fail 'kubelet cgroup driver: "cgroupfs" .* is different from container runtime cgroup driver: "systemd" \(SystemdCgroup = true' \
  kubelet --config /var/lib/kubelet/config.yaml --kubeconfig /etc/kubernetes/kubelet.conf
sed -i 's/cgroupfs/systemd/' "$ROOT/var/lib/kubelet/config.yaml"
rm "$ROOT/run/containerd/containerd.sock"
expect "kubelet without the runtime socket" fail 'dial unix /run/containerd/containerd.sock: connect: no such file' \
  kubelet --config /var/lib/kubelet/config.yaml --kubeconfig /etc/kubernetes/kubelet.conf
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$ROOT/run/containerd/containerd.sock"
expect "kubelet --version" ok '^Kubernetes v1.33.0$' kubelet --version

# ---- kubectl ----
fresh_node
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n' > "$ROOT/cfg/bad.yaml"
printf 'apiVersion: v1\ndata: {}\nmetadata: {name: a}\n' > "$ROOT/cfg/nokind.yaml"
printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: cni, namespace: kube-system}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: tigera}\n' > "$ROOT/cfg/good.yaml"
expect "kubectl without a kubeconfig" fail 'The connection to the server localhost:8080 was refused' \
  kubectl apply -f /cfg/good.yaml
printf 'apiVersion: v1\nkind: Config\nclusters: [{name: k, cluster: {server: "https://10.0.0.11:6443"}}]\n' > "$ROOT/cfg/admin.conf"
expect "kubectl apply of malformed YAML" fail 'error: error parsing /cfg/bad.yaml: error converting YAML to JSON' \
  kubectl --kubeconfig /cfg/admin.conf apply -f /cfg/bad.yaml
expect "kubectl apply of a document without kind" fail 'error validating "/cfg/nokind.yaml": error validating data: \[kind not set\]' \
  kubectl --kubeconfig /cfg/admin.conf apply -f /cfg/nokind.yaml
expect "kubectl apply --server-side" ok '^daemonset.apps/cni serverside-applied$' \
  kubectl --kubeconfig /cfg/admin.conf apply --server-side --force-conflicts --field-manager kk -f /cfg/good.yaml
check "kubectl kept the file and the objects" bash -c '
  cmp -s "$0/var/lib/kk-standin/kubectl/0001-good.yaml" "$0/cfg/good.yaml" &&
  [ "$(cat "$0/var/lib/kk-standin/kubectl/objects")" = "$(printf "DaemonSet/cni\nNamespace/tigera")" ]' "$ROOT"
expect "kubectl create namespace" ok '^namespace/kk created$' kubectl --kubeconfig /cfg/admin.conf create namespace kk
expect "kubectl create namespace twice" fail 'AlreadyExists' kubectl --kubeconfig /cfg/admin.conf create namespace kk
expect "kubectl get an applied object" ok 'cni' kubectl --kubeconfig /cfg/admin.conf get daemonset cni -n kube-system
expect "kubectl wait for an applied object" ok 'daemonset/cni condition met' \
  kubectl --kubeconfig /cfg/admin.conf wait --for=condition=Ready ds/cni -n kube-system
expect "kubectl label nodes" ok '^node/cp1 labeled$' \
  kubectl --kubeconfig /cfg/admin.conf label nodes cp1 kube-ovn/role=master --overwrite
expect "kubectl label nodes again" ok '^node/cp1 not labeled$' \
  kubectl --kubeconfig /cfg/admin.conf label nodes cp1 kube-ovn/role=master --overwrite
expect "kubectl label with another value" fail "'kube-ovn/role' already has a value \(master\), and --overwrite is false" \
  kubectl --kubeconfig /cfg/admin.conf label nodes cp1 kube-ovn/role=worker
expect "kubectl label with a bad key" fail 'error: invalid label spec: -bad=x' \
  kubectl --kubeconfig /cfg/admin.conf label nodes cp1 -- -bad=x
check "kubectl kept the label" grep -qx 'node/cp1 kube-ovn/role=master' "$ROOT/var/lib/kk-standin/kubectl/labels"
expect "kubectl unknown verb" fail 'error: unknown command "frobnicate"' kubectl --kubeconfig /cfg/admin.conf frobnicate
expect "kubectl version --client" ok '^Client Version: v1.33.0' kubectl version --client

# ---- crictl ----
expect "crictl version" ok 'RuntimeName:  containerd' crictl --runtime-endpoint unix:///run/containerd/containerd.sock version
expect "crictl images" ok 'IMAGE' crictl -r unix:///run/containerd/containerd.sock images
mkdir -p "$ROOT/etc/kubernetes/manifests" && touch "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
expect "crictl ps lists the static pods" ok 'Running +kube-apiserver' crictl -r unix:///run/containerd/containerd.sock ps --name '^kube-apiserver$'
rm "$ROOT/etc/kubernetes/manifests/kube-apiserver.yaml"
check "crictl ps without the manifest lists nothing" bash -c 'out=$(python3 "$0/crictl.py" -r unix:///run/containerd/containerd.sock ps -q --name kube-apiserver) && [ -z "$out" ]' "$HERE"
expect "crictl unknown command" fail "No help topic for 'frob'" crictl frob
rm "$ROOT/run/containerd/containerd.sock"
expect "crictl without a runtime" fail 'validate service connection' crictl -r unix:///run/containerd/containerd.sock ps

# ---- the call log ----
check "every call is logged" grep -qx 'kubectl --kubeconfig /cfg/admin.conf create namespace kk' "$KK_STANDIN_LOG"

echo "$((cases - failures))/$cases cases passed"
[ $failures -eq 0 ]

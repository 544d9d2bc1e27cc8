#!/usr/bin/env python3
''':'
exec python3 "$0" "$@"
'''
# kk lab stand-in for kubeadm; not the real program (scripts/lab/standins/README.md says what it
# checks and writes). It fails where the real kubeadm would fail on a node, for the reasons an
# installer can get wrong: the config's API version and shape, the certificates it finds, the
# preflight checks, the image pulls through containerd, and a kubelet that does not come up.
# The lines above let `sh kubeadm ...` run it too. scripts/lab/catalog.py replaces VERSION and
# IMAGES when it writes the stand-in for a catalog, and the `from common import *` line with
# common.py (what the stand-ins share).

import base64
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time

VERSION = "v1.33.0"  # set by scripts/lab/catalog.py
IMAGES = ["registry.k8s.io/kube-apiserver:v1.33.0", "registry.k8s.io/kube-controller-manager:v1.33.0", "registry.k8s.io/kube-scheduler:v1.33.0", "registry.k8s.io/kube-proxy:v1.33.0", "registry.k8s.io/coredns/coredns:v1.12.0", "registry.k8s.io/pause:3.10", "registry.k8s.io/etcd:3.5.21-0"]  # set by scripts/lab/catalog.py

sys.dont_write_bytecode = True  # run from the repo: no __pycache__ beside common.py
from common import *  # kk-standin: common

DEFAULT_REPOSITORY = "registry.k8s.io"
KUBERNETES_DIR = "/etc/kubernetes"
MANIFESTS = "/etc/kubernetes/manifests"
STANDIN_DIR = "/etc/kubernetes/kk-standin"
TOKENS = "/etc/kubernetes/kk-standin/tokens"
KUBELET_DIR = "/var/lib/kubelet"
TRUST_CA = "/etc/kk/pki/ca.crt"
TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
SCHEME = "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31"
STACK_HINT = "To see the stack trace of this error execute with --v=5 or higher"


def vt(version):
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", str(version))
    if not m:
        raise Fail(f"couldn't parse Kubernetes version {str(version)!r}")
    return tuple(int(x) for x in m.groups())


V = vt(VERSION)


# ---- command line ----

VALUE_FLAGS = {
    "config", "ignore-preflight-errors", "skip-phases", "kubeconfig", "node-name", "certificate-key",
    "cri-socket", "cert-dir", "ttl", "description", "groups", "usages", "output", "o", "v", "rootfs",
    "log-file", "apiserver-advertise-address", "apiserver-bind-port", "control-plane-endpoint",
    "pod-network-cidr", "service-cidr", "service-dns-domain", "kubernetes-version", "image-repository",
    "token", "discovery-token", "discovery-token-ca-cert-hash", "discovery-file", "tls-bootstrap-token",
    "feature-gates", "patches", "token-ttl", "apiserver-cert-extra-sans", "kubeconfig-dir", "image-pull-timeout",
}
BOOL_FLAGS = {
    "upload-certs", "dry-run", "skip-token-print", "skip-certificate-key-print", "force", "f",
    "print-join-command", "control-plane", "discovery-token-unsafe-skip-ca-verification",
    "allow-missing-template-keys", "show-managed-fields", "yes", "skip-headers", "cleanup-tmp-dir", "y",
    "certificate-renewal", "etcd-upgrade", "allow-experimental-upgrades", "allow-release-candidate-upgrades",
    "print-config",
}


def parse(argv):
    """(positional args, {flag: value or True}, [flag names in order given]); repeated
    --ignore-preflight-errors and --skip-phases add up."""
    flags, positional, given = parse_args(argv, VALUE_FLAGS, BOOL_FLAGS, strict=True)
    for name in ("ignore-preflight-errors", "skip-phases"):
        if name in flags:
            flags[name] = ",".join(value for n, value in given if n == name)
    return positional, flags, [name for name, _ in given]


def check_mixed(flags, order):
    """kubeadm refuses flags that the config file replaces (ValidateMixedArguments)."""
    if "config" not in flags:
        return
    allowed = {"config", "ignore-preflight-errors", "dry-run", "kubeconfig", "node-name", "kubeconfig-dir",
               "upload-certs", "print-manifest", "print-join-command", "rootfs", "v", "log-file", "yes"}
    mixed = []
    for name in order:
        if name not in allowed and not name.startswith("skip-") and name not in mixed:
            mixed.append(name)
    if mixed:
        raise Fail(f"can not mix '--config' with arguments [{' '.join(mixed)}]")


# ---- config files ----

OLD_APIS = {"v1alpha1": "v1.11", "v1alpha2": "v1.12", "v1alpha3": "v1.14", "v1beta1": "v1.14", "v1beta2": "v1.25"}
KINDS = {"v1beta3": {"InitConfiguration", "ClusterConfiguration", "JoinConfiguration"},
         "v1beta4": {"InitConfiguration", "ClusterConfiguration", "JoinConfiguration", "ResetConfiguration",
                     "UpgradeConfiguration"}}


def api_available(version):
    if version == "v1beta3":
        return (1, 22, 0) <= V < (1, 37, 0)
    if version == "v1beta4":
        return V >= (1, 31, 0)
    return False


def go_type(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def schemas(version):
    """The fields of each kubeadm kind: a type name or a nested dict; `args` is the version's shape."""
    args = "args4" if version == "v1beta4" else "smap"
    env = ("list", {"name": "str", "value": "str", "valueFrom": "any"})
    volume = ("list", {"name": "str", "hostPath": "str", "mountPath": "str", "readOnly": "bool", "pathType": "str"})
    component = {"extraArgs": args, "extraVolumes": volume}
    if version == "v1beta4":
        component["extraEnvs"] = env
    api_server = dict(component, certSANs="strs")
    if version == "v1beta3":
        api_server["timeoutForControlPlane"] = "str"
    local_etcd = {"imageRepository": "str", "imageTag": "str", "dataDir": "str", "extraArgs": args,
                  "serverCertSANs": "strs", "peerCertSANs": "strs"}
    if version == "v1beta4":
        local_etcd["extraEnvs"] = env
    cluster = {
        "etcd": {"local": local_etcd,
                 "external": {"endpoints": "strs", "caFile": "str", "certFile": "str", "keyFile": "str"}},
        "networking": {"serviceSubnet": "str", "podSubnet": "str", "dnsDomain": "str"},
        "kubernetesVersion": "str", "controlPlaneEndpoint": "str", "apiServer": api_server,
        "controllerManager": dict(component), "scheduler": dict(component),
        "dns": {"imageRepository": "str", "imageTag": "str"}, "certificatesDir": "str",
        "imageRepository": "str", "featureGates": "bmap", "clusterName": "str",
    }
    if version == "v1beta4":
        cluster["dns"]["disabled"] = "bool"
        cluster["proxy"] = {"disabled": "bool"}
        cluster.update(encryptionAlgorithm="str", certificateValidityPeriod="str",
                       caCertificateValidityPeriod="str")
    taint = ("list", {"key": "str", "value": "str", "effect": "str", "timeAdded": "any"})
    node_registration = {"name": "str", "criSocket": "str", "taints": taint, "kubeletExtraArgs": args,
                         "ignorePreflightErrors": "strs", "imagePullPolicy": "str"}
    if version == "v1beta4":
        node_registration["imagePullSerial"] = "bool"
    endpoint = {"advertiseAddress": "str", "bindPort": "int"}
    timeouts = {k: "str" for k in ("controlPlaneComponentHealthCheck", "kubeletHealthCheck", "kubernetesAPICall",
                                   "etcdAPICall", "tlsBootstrap", "discovery", "upgradeManifests")}
    init = {
        "bootstrapTokens": ("list", {"token": "str", "description": "str", "ttl": "str", "expires": "str",
                                     "usages": "strs", "groups": "strs"}),
        "nodeRegistration": node_registration, "localAPIEndpoint": endpoint, "certificateKey": "str",
        "skipPhases": "strs", "patches": {"directory": "str"},
    }
    discovery = {"bootstrapToken": {"token": "str", "apiServerEndpoint": "str", "caCertHashes": "strs",
                                    "unsafeSkipCAVerification": "bool"},
                 "file": {"kubeConfigPath": "str"}, "tlsBootstrapToken": "str"}
    if version == "v1beta3":
        discovery["timeout"] = "str"
    join = {"nodeRegistration": node_registration, "caCertPath": "str", "discovery": discovery,
            "controlPlane": {"localAPIEndpoint": endpoint, "certificateKey": "str"}, "skipPhases": "strs",
            "patches": {"directory": "str"}}
    if version == "v1beta4":
        init.update(timeouts=timeouts, dryRun="bool")
        join.update(timeouts=timeouts, dryRun="bool")
    reset = {"certificatesDir": "str", "cleanupTmpDir": "bool", "criSocket": "str", "dryRun": "bool",
             "force": "bool", "ignorePreflightErrors": "strs", "skipPhases": "strs", "unmountFlags": "strs"}
    return {"InitConfiguration": init, "ClusterConfiguration": cluster, "JoinConfiguration": join,
            "ResetConfiguration": reset, "UpgradeConfiguration": "any"}


def check_shape(value, schema, path, errors, warnings):
    """Go's JSON decoding into kubeadm's types: a wrong type is an error, an unknown field a warning."""
    def wrong(gotype):
        errors.append(f"json: cannot unmarshal {go_type(value)} into Go struct field {path} of type {gotype}")
    if value is None or schema == "any":
        return
    if schema == "str":
        if not isinstance(value, str):
            wrong("string")
    elif schema == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            wrong("int32")
    elif schema == "bool":
        if not isinstance(value, bool):
            wrong("bool")
    elif schema == "strs":
        if not isinstance(value, list):
            wrong("[]string")
        else:
            for i, item in enumerate(value):
                check_shape(item, "str", f"{path}[{i}]", errors, warnings)
    elif schema in ("smap", "bmap"):
        gotype = "map[string]string" if schema == "smap" else "map[string]bool"
        if not isinstance(value, dict):
            wrong(gotype)
        else:
            for key, item in value.items():
                if schema == "smap" and not isinstance(item, str):
                    errors.append(f"json: cannot unmarshal {go_type(item)} into Go struct field {path} of type string")
                if schema == "bmap" and not isinstance(item, bool):
                    errors.append(f"json: cannot unmarshal {go_type(item)} into Go struct field {path} of type bool")
    elif schema == "args4":
        if not isinstance(value, list):
            wrong("[]v1beta4.Arg")
        else:
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    errors.append(f"json: cannot unmarshal {go_type(item)} into Go struct field {path} of type "
                                  "v1beta4.Arg")
                    continue
                check_shape(item, {"name": "str", "value": "str"}, f"{path}[{i}]", errors, warnings)
    elif isinstance(schema, tuple):
        if not isinstance(value, list):
            wrong("[]" + path.rsplit(".", 1)[-1])
        else:
            for i, item in enumerate(value):
                check_shape(item, schema[1], f"{path}[{i}]", errors, warnings)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            wrong(path.rsplit(".", 1)[-1])
            return
        for key, item in value.items():
            if path.count(".") == 0 and key in ("apiVersion", "kind"):
                continue
            if key not in schema:
                inner = path.split(".", 1)[1] + "." if "." in path else ""
                warnings.append(f'strict decoding error: unknown field "{inner}{key}"')
                continue
            check_shape(item, schema[key], f"{path}.{key}", errors, warnings)


def load_config(path, wanted):
    """The documents of a kubeadm config file, by kind, checked as kubeadm decodes them.

    wanted: the kinds this command reads; other kubeadm kinds and foreign groups are ignored with
    kubeadm's warning. KubeletConfiguration and KubeProxyConfiguration are read when wanted."""
    yaml = yaml_module("kubeadm")
    try:
        with open(P(path)) as f:
            text = f.read()
    except OSError as e:
        raise Fail(f'unable to read config from "{path}" : open {path}: {e.strerror.lower()}')
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise Fail(f"couldn't parse config file {path}: error converting YAML to JSON: yaml: {e}")
    found, seen = {}, set()
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise Fail(f"couldn't parse config file {path}: error unmarshaling JSON: while decoding JSON: json: "
                       f"cannot unmarshal {go_type(doc)} into Go value of type struct")
        api, kind = doc.get("apiVersion"), doc.get("kind")
        if not api or not kind:
            raise Fail(f"invalid configuration for GroupVersionKind {api or ''}, Kind={kind or ''}: kind and "
                       "apiVersion is mandatory information that must be specified")
        if (api, kind) in seen:
            raise Fail(f'invalid configuration: kind "{kind}" is specified twice in YAML file')
        seen.add((api, kind))
        group, _, version = str(api).rpartition("/")
        if group == "kubeadm.k8s.io":
            if version in OLD_APIS:
                raise Fail(f'your configuration file uses an old API spec: "{api}" (kind: "{kind}"). Please use '
                           f"kubeadm {OLD_APIS[version]} instead and run 'kubeadm config migrate --old-config "
                           "old.yaml --new-config new.yaml', which will write the new, similar spec using a newer "
                           "API version.")
            if not api_available(version) or kind not in KINDS.get(version, ()):
                raise Fail(f'no kind "{kind}" is registered for version "{api}" in scheme "{SCHEME}"')
            if version == "v1beta3" and V >= (1, 31, 0):
                warn(f'your configuration file uses a deprecated API spec: "{api}" (kind: "{kind}"). Please use '
                     "'kubeadm config migrate --old-config old.yaml --new-config new.yaml', which will write the "
                     "new, similar spec using a newer API version.")
            errors, warnings = [], []
            check_shape(doc, schemas(version)[kind], kind, errors, warnings)
            for w in warnings:
                warn(w)
            if errors:
                raise Fail("error unmarshaling JSON: while decoding JSON: " + "; ".join(errors))
            if kind in wanted:
                found[kind] = doc
                found.setdefault("_api", api)
                if found["_api"] != api:
                    raise Fail(f"this stand-in expects one kubeadm API version per file, found {found['_api']} "
                               f"and {api}")
            else:
                warn(f"[config] WARNING: Ignored YAML document with GroupVersionKind {api}, Kind={kind}")
        elif group in ("kubelet.config.k8s.io", "kubeproxy.config.k8s.io"):
            expected = {"kubelet.config.k8s.io": ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"),
                        "kubeproxy.config.k8s.io": ("kubeproxy.config.k8s.io/v1alpha1", "KubeProxyConfiguration")}
            want_api, want_kind = expected[group]
            if kind != want_kind:
                raise Fail(f'no kind "{kind}" is registered for version "{api}" in scheme "{SCHEME}"')
            if api != want_api:
                raise Fail(f'unsupported apiVersion "{api}", you may have to do manual conversion to "{want_api}" '
                           "and run kubeadm again")
            if kind in wanted:
                found[kind] = doc
            else:
                warn(f"[config] WARNING: Ignored YAML document with GroupVersionKind {api}, Kind={kind}")
        else:
            warn(f"[config] WARNING: Ignored YAML document with GroupVersionKind {api}, Kind={kind}")
    return found


def warn(message):
    klog("W", message, "kubeadm")


def get(doc, *path, default=None):
    for key in path:
        if not isinstance(doc, dict) or doc.get(key) is None:
            return default
        doc = doc[key]
    return doc


def args_of(value):
    """extraArgs / kubeletExtraArgs as (name, value) pairs, either shape."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return [(a.get("name"), a.get("value", "")) for a in value if isinstance(a, dict)]
    return []


# ---- the cluster as the config describes it ----

class Cluster:
    def __init__(self, cluster, init=None, kubelet=None):
        cluster = cluster or {}
        self.doc = cluster
        version = cluster.get("kubernetesVersion")
        if version is None:
            warn("could not fetch a Kubernetes version from the internet: unable to get URL "
                 '"https://dl.k8s.io/release/stable-1.txt"')
            warn(f"falling back to the local client version: {VERSION}")
            version = VERSION
        version = version if str(version).startswith("v") else f"v{version}"
        if version != VERSION:
            raise Fail(f"this stand-in kubeadm {VERSION} refuses kubernetesVersion {version}")
        self.version = version
        self.repository = cluster.get("imageRepository") or DEFAULT_REPOSITORY
        self.cert_dir = cluster.get("certificatesDir") or "/etc/kubernetes/pki"
        self.cluster_name = cluster.get("clusterName") or "kubernetes"
        self.external = get(cluster, "etcd", "external")
        self.local_etcd = get(cluster, "etcd", "local", default={})
        self.service_subnet = get(cluster, "networking", "serviceSubnet", default="10.96.0.0/12")
        self.pod_subnet = get(cluster, "networking", "podSubnet")
        self.dns_domain = get(cluster, "networking", "dnsDomain", default="cluster.local")
        self.endpoint = cluster.get("controlPlaneEndpoint") or ""
        self.kubelet = kubelet

    def images(self, etcd=True, control_plane=True):
        """`kubeadm config images list` for this config (coredns is `coredns` below a custom repository)."""
        tags = {}
        for ref in IMAGES:
            repo, _, tag = ref.rpartition(":")
            tags[repo.split("/", 1)[1]] = tag
        out = []
        if control_plane:
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"):
                out.append(f"{self.repository}/{name}:{tags.get(name, self.version)}")
            dns_repo = get(self.doc, "dns", "imageRepository") or self.repository
            dns_path = "coredns/coredns" if dns_repo == DEFAULT_REPOSITORY else "coredns"
            out.append(f"{dns_repo}/{dns_path}:{get(self.doc, 'dns', 'imageTag') or tags['coredns/coredns']}")
        out.append(self.pause())
        if etcd and not self.external:
            out.append(self.etcd_image())
        return out

    def pause(self):
        tag = [r for r in IMAGES if r.rpartition(":")[0].endswith("/pause")][0].rpartition(":")[2]
        return f"{self.repository}/pause:{tag}"

    def etcd_image(self):
        tag = [r for r in IMAGES if r.rpartition(":")[0].endswith("/etcd")][0].rpartition(":")[2]
        repo = self.local_etcd.get("imageRepository") or self.repository
        return f"{repo}/etcd:{self.local_etcd.get('imageTag') or tag}"

    def image(self, name):
        return f"{self.repository}/{name}:{self.version}"

    def dns_ip(self):
        net = ipaddress.ip_network(self.service_subnet.split(",")[0].strip(), strict=False)
        return str(net.network_address + 10)

    def api_service_ip(self):
        net = ipaddress.ip_network(self.service_subnet.split(",")[0].strip(), strict=False)
        return str(net.network_address + 1)


def check_token(token):
    if not isinstance(token, str) or not TOKEN_RE.match(token):
        raise Fail(f'the bootstrap token "{token}" was not of the form "{TOKEN_RE.pattern}"')


DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")


def check_duration(text, what):
    if not isinstance(text, str) or not (text == "0" or DURATION.match(text)):
        raise Fail(f'invalid argument "{text}" for "{what}" flag: time: invalid duration "{text}"')


def default_address():
    """kubeadm's choice of an advertise address: the address of the default route's interface."""
    try:
        with open(P("/proc/net/route")) as f:
            rows = [line.split() for line in f.read().splitlines()[1:]]
    except OSError:
        rows = []
    default = [r for r in rows if len(r) > 2 and r[1] == "00000000"]
    if not default:
        warn("WARNING: could not obtain a bind address for the API Server: no default routes found in "
             '"/proc/net/route" or "/proc/net/ipv6_route"; using: 0.0.0.0')
        raise Fail("couldn't use \"0.0.0.0\" as \"apiserver-advertise-address\", must be ipv4 or ipv6 address")
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", default[0][0]], capture_output=True, text=True)
    m = re.search(r"inet ([0-9.]+)/", out.stdout)
    if not m:
        raise Fail(f"unable to select an IP from {default[0][0]} (the default route's interface)")
    return m.group(1)


def host_port(endpoint, default_port):
    if endpoint.startswith("["):
        host, _, rest = endpoint[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else str(default_port)
    if endpoint.count(":") == 1:
        host, port = endpoint.split(":")
        return host, port
    return endpoint, str(default_port)


def url_host(host, port):
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def node_name(registration):
    return (registration.get("name") or socket.gethostname()).lower()


# ---- certificates ----

def openssl(*args, data=None):
    try:
        out = subprocess.run(["openssl", *args], input=data, capture_output=True)
    except FileNotFoundError:
        raise Fail("kk stand-in kubeadm needs openssl")
    return out.returncode, out.stdout, out.stderr.decode(errors="replace").strip()


def cert_pub(path):
    rc, pem, err = openssl("x509", "-in", path, "-noout", "-pubkey")
    if rc != 0:
        return None, f"failed to parse certificate {path}: {err.splitlines()[-1] if err else 'invalid PEM'}"
    rc, der, err = openssl("pkey", "-pubin", "-outform", "der", data=pem)
    return (der, None) if rc == 0 else (None, err)


def key_pub(path, public=False):
    rc, der, err = openssl("pkey", *(["-pubin"] if public else []), "-in", path, "-pubout", "-outform", "der")
    if rc != 0:
        return None, f"couldn't load the {'public' if public else 'private'} key file {path}: failed to parse"
    return der, None


def spki_hash(path):
    der, err = cert_pub(path)
    if der is None:
        raise Fail(err)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def missing(path):
    return f"open {path}: no such file or directory"


def load_pair(cert_dir, base, label):
    """Loads base.crt + base.key of cert_dir as kubeadm's TryLoadCertAndKeyFromDisk, plus key match."""
    crt, key = f"{cert_dir}/{base}.crt", f"{cert_dir}/{base}.key"
    if not os.path.isfile(P(crt)):
        raise Fail(f"failure loading {label}: couldn't load the certificate file {crt}: {missing(crt)}")
    if not os.path.isfile(P(key)):
        raise Fail(f"failure loading {label}: couldn't load the private key file {key}: {missing(key)}")
    cpub, err = cert_pub(P(crt))
    if cpub is None:
        raise Fail(f"failure loading {label}: {err}")
    kpub, err = key_pub(P(key))
    if kpub is None:
        raise Fail(f"failure loading {label}: {err}")
    if cpub != kpub:
        raise Fail(f"failure loading {label}: the private key {key} does not match the public key of {crt}")


def sans(path):
    rc, out, _ = openssl("x509", "-in", path, "-noout", "-ext", "subjectAltName")
    dns, ips = set(), set()
    for item in out.decode(errors="replace").replace("\n", ",").split(","):
        item = item.strip()
        if item.startswith("DNS:"):
            dns.add(item[4:].lower())
        elif item.startswith("IP Address:"):
            try:
                ips.add(ipaddress.ip_address(item[11:]))
            except ValueError:
                pass
    return dns, ips


def check_sans(cert_dir, base, names):
    dns, ips = sans(P(f"{cert_dir}/{base}.crt"))
    for name in names:
        try:
            ok = ipaddress.ip_address(name) in ips
        except ValueError:
            name = name.lower()
            ok = name in dns or any(d.startswith("*.") and name.split(".", 1)[-1] == d[2:] for d in dns)
        if not ok:
            valid = ", ".join(sorted(dns) + sorted(str(i) for i in ips)) or "no names"
            raise Fail(f"certificate {base} is invalid: x509: certificate is valid for {valid}, not {name}")


def check_signed(cert_dir, base, ca):
    rc, _, _ = openssl("verify", "-no_check_time", "-partial_chain", "-CAfile", P(f"{cert_dir}/{ca}.crt"),
                       P(f"{cert_dir}/{base}.crt"))
    if rc != 0:
        raise Fail(f"certificate {base} is not signed by corresponding CA")


def check_certs(cluster, advertise, name, control_plane_join=False, stacked=None):
    """The certs phase with kk's pre-filled PKI: CAs present, every leaf present whole and valid."""
    d = cluster.cert_dir
    phase = "certs" if not control_plane_join else "control-plane-prepare/certs"

    def step(label, fn):
        try:
            fn()
        except Fail as e:
            raise Fail(f"error execution phase {phase}/{label}: {e}")
    for base, label in (("ca", "ca certificate authority"), ("front-proxy-ca", "front-proxy-ca certificate "
                                                                                 "authority")):
        step(base, lambda b=base, lb=label: load_pair(d, b, lb))
    if stacked is None:
        stacked = not cluster.external
    if stacked:
        step("etcd-ca", lambda: load_pair(d, "etcd/ca", "etcd/ca certificate authority"))

    def sa():
        for f in ("sa.key", "sa.pub"):
            if not os.path.isfile(P(f"{d}/{f}")):
                raise Fail(f"failure loading the service account key: {missing(f'{d}/{f}')}")
        kpub, err = key_pub(P(f"{d}/sa.key"))
        ppub, err2 = key_pub(P(f"{d}/sa.pub"), public=True)
        if kpub is None or ppub is None:
            raise Fail(f"failure loading the service account key: {err or err2}")
        if kpub != ppub:
            raise Fail(f"the service account key {d}/sa.key does not match {d}/sa.pub")
    step("sa", sa)

    endpoint_host = host_port(cluster.endpoint, 6443)[0] if cluster.endpoint else None
    # A joining control plane's service range is the cluster's (kubeadm-config ConfigMap), which
    # the stand-in cannot read: the service IP is checked only where the config names the range.
    service_ip = [cluster.api_service_ip()] if get(cluster.doc, "networking", "serviceSubnet") else []
    leaves = [
        ("apiserver", "ca", ["kubernetes", "kubernetes.default", "kubernetes.default.svc",
                             f"kubernetes.default.svc.{cluster.dns_domain}", name, advertise]
         + service_ip + ([endpoint_host] if endpoint_host else [])
         + list(get(cluster.doc, "apiServer", "certSANs", default=[]))),
        ("apiserver-kubelet-client", "ca", []),
        ("front-proxy-client", "front-proxy-ca", []),
    ]
    if stacked:
        local = cluster.local_etcd
        leaves += [
            ("apiserver-etcd-client", "etcd/ca", []),
            ("etcd/server", "etcd/ca", ["localhost", name, "127.0.0.1", "::1", advertise]
             + list(local.get("serverCertSANs") or [])),
            ("etcd/peer", "etcd/ca", ["localhost", name, "127.0.0.1", "::1", advertise]
             + list(local.get("peerCertSANs") or [])),
            ("etcd/healthcheck-client", "etcd/ca", []),
        ]
    for base, ca, names in leaves:
        crt, key = os.path.isfile(P(f"{d}/{base}.crt")), os.path.isfile(P(f"{d}/{base}.key"))
        if not crt and not key:
            continue

        def leaf(base=base, ca=ca, names=names):
            load_pair(d, base, f"{base} certificate")
            check_signed(d, base, ca)
            check_sans(d, base, names)
        step(base.replace("/", "-"), leaf)
        print(f'[certs] Using the existing "{base}" certificate and key')


def new_client_cert(cluster, cn, orgs):
    """A client certificate of the cluster CA: (cert PEM, key PEM)."""
    d = cluster.cert_dir
    with tempfile.TemporaryDirectory() as tmp:
        subject = "".join(f"/O={o}" for o in orgs) + f"/CN={cn}"
        rc, _, err = openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", f"{tmp}/k", "-subj", subject, "-out", f"{tmp}/r")
        if rc == 0:
            with open(f"{tmp}/x", "w") as f:
                f.write("keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n")
            rc, _, err = openssl("x509", "-req", "-in", f"{tmp}/r", "-CA", P(f"{d}/ca.crt"), "-CAkey",
                                 P(f"{d}/ca.key"), "-set_serial", str(secrets.randbits(63)), "-days", "365",
                                 "-extfile", f"{tmp}/x", "-out", f"{tmp}/c")
        if rc != 0:
            raise Fail(f"failure creating the client certificate for {cn}: {err}")
        with open(f"{tmp}/c") as c, open(f"{tmp}/k") as k:
            return c.read(), k.read()


def b64(text):
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


def kubeconfig(cluster_name, server, ca_pem, user, cert=None, key=None, cert_file=None):
    auth = ({"client-certificate-data": b64(cert), "client-key-data": b64(key)} if cert is not None
            else {"client-certificate": cert_file, "client-key": cert_file})
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"cluster": {"certificate-authority-data": b64(ca_pem), "server": server},
                      "name": cluster_name}],
        "contexts": [{"context": {"cluster": cluster_name, "user": user}, "name": f"{user}@{cluster_name}"}],
        "current-context": f"{user}@{cluster_name}", "preferences": {},
        "users": [{"name": user, "user": auth}],
    }


def write_yaml(path, doc, mode=0o644):
    write(path, yaml_module("kubeadm").safe_dump(doc, sort_keys=False, default_flow_style=False), mode)


# ---- preflight ----

class Preflight:
    def __init__(self, ignored):
        names = [n.strip().lower() for n in ignored if n and n.strip()]
        if "all" in names and len(set(names)) > 1:
            raise Fail("ignore-preflight-errors: Invalid value: \"" + ",".join(names) + "\": don't specify "
                       "individual checks if 'all' is used")
        self.ignored = set(names)
        self.errors = []
        print("[preflight] Running pre-flight checks")

    def error(self, name, message):
        if "all" in self.ignored or name.lower() in self.ignored:
            print(f"\t[WARNING {name}]: {message}", file=sys.stderr)
        else:
            self.errors.append(f"\t[ERROR {name}]: {message}")

    @staticmethod
    def warning(name, message):
        print(f"\t[WARNING {name}]: {message}", file=sys.stderr)

    def finish(self, phase="preflight"):
        if self.errors:
            raise Fail(f"error execution phase {phase}: [preflight] Some fatal errors occurred:\n"
                       + "\n".join(self.errors)
                       + "\n[preflight] If you know what you are doing, you can make a check non-fatal with "
                         "`--ignore-preflight-errors=...`")

    def common(self, cri):
        if os.geteuid() != 0:
            self.error("IsPrivilegedUser", "user is not running as root")
        if swap_on():
            self.warning("Swap", "swap is enabled; production deployments should disable swap unless testing the "
                                 "NodeSwap feature gate of the kubelet")
        if not is_socket(cri.removeprefix("unix://")):
            crictl = logrus("fatal", cri_dial_error(cri, quote='\\"'))
            self.error("CRI", f"container runtime is not running: output: {crictl}\n, error: exit status 1")
        commands = ["ip", "iptables", "mount", "nsenter"]
        if V < (1, 31, 0):
            commands.insert(0, "crictl")
        if V < (1, 32, 0):
            commands.insert(0, "conntrack")
        for command in commands:
            if not shutil.which(command):
                self.error(f"FileExisting-{command}", f"{command} not found in system path")
        for command in ("ebtables", "ethtool", "socat", "tc", "touch"):
            if not shutil.which(command):
                self.warning(f"FileExisting-{command}", f"{command} not found in system path")
        kubelet = shutil.which("kubelet")
        if not kubelet:
            self.error("KubeletVersion", 'couldn\'t get kubelet version: cannot execute \'kubelet --version\': '
                                         'exec: "kubelet": executable file not found in $PATH')
        else:
            out = subprocess.run([kubelet, "--version"], capture_output=True, text=True)
            m = re.search(r"v\d+\.\d+\.\d+", out.stdout)
            if out.returncode != 0 or not m:
                self.error("KubeletVersion", f"couldn't get kubelet version: {out.stdout.strip()} "
                                             f"{out.stderr.strip()}".strip())
            else:
                kv = vt(m.group(0))
                if kv[:2] < (V[0], V[1] - 3):
                    self.error("KubeletVersion", f'Kubelet version "{m.group(0)}" is lower than kubeadm can '
                                                 "support. Please upgrade kubelet")
                elif kv[:2] > V[:2]:
                    self.error("KubeletVersion", "the kubelet version is higher than the control plane version. "
                                                 "This is not a supported version skew and may lead to a "
                                                 f'malfunctional cluster. Kubelet version: "{m.group(0)}" Control '
                                                 f'plane version: "{VERSION}"')

    def file_available(self, path):
        if os.path.exists(P(path)):
            self.error("FileAvailable-" + path.replace("/", "-"), f"{path} already exists")

    def dir_available(self, path):
        if os.path.isdir(P(path)) and os.listdir(P(path)):
            self.error("DirAvailable-" + path.replace("/", "-"), f"{path} is not empty")

    def file_existing(self, label, path):
        if not os.path.isfile(P(path)):
            self.error(label, f"{path} doesn't exist")

    def pull(self, images, policy="IfNotPresent", cri=DEFAULT_CRI):
        print("[preflight] Pulling images required for setting up a Kubernetes cluster")
        print("[preflight] This might take a minute or two, depending on the speed of your internet connection")
        present = set() if policy == "Always" else present_images(cri)
        for image in images:
            if policy != "Always" and normalize(image) in present:
                continue
            if policy == "Never":
                self.error("ImagePull", f"image {image} does not exist and the image pull policy is Never")
                continue
            ok, output = pull(image, cri)
            if not ok:
                self.error("ImagePull", f"failed to pull image {image}: {output}")


# ---- what init and join write ----

def kubelet_config(cluster, given):
    doc = dict(given or {})
    doc["apiVersion"], doc["kind"] = "kubelet.config.k8s.io/v1beta1", "KubeletConfiguration"
    defaults = {
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"cacheTTL": "0s", "enabled": True},
                           "x509": {"clientCAFile": f"{cluster.cert_dir}/ca.crt"}},
        "authorization": {"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "0s", "cacheUnauthorizedTTL": "0s"}},
        "cgroupDriver": "systemd",
        "clusterDNS": [cluster.dns_ip()],
        "clusterDomain": cluster.dns_domain,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "rotateCertificates": True,
        "staticPodPath": MANIFESTS,
    }
    for key, value in defaults.items():
        doc.setdefault(key, value)
    return doc


def flags_env(registration, pause):
    cri = registration.get("criSocket") or DEFAULT_CRI
    flags = [f"--container-runtime-endpoint={cri}", f"--pod-infra-container-image={pause}"]
    if registration.get("name") and registration["name"].lower() != socket.gethostname().lower():
        flags.append(f"--hostname-override={registration['name']}")
    for name, value in args_of(registration.get("kubeletExtraArgs")):
        flags.append(f"--{name}={value}")
    return f'KUBELET_KUBEADM_ARGS="{" ".join(flags)}"\n'


def host_path(name, path, kind="DirectoryOrCreate"):
    return {"hostPath": {"path": path, "type": kind}, "name": name}


def static_pod(name, image, command, mounts, extra_args, component, probe_port, scheme="HTTPS"):
    given = dict(args_of(extra_args))
    args = [f"--{k}={v}" for k, v in command.items() if k not in given] + [f"--{k}={v}" for k, v in given.items()]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"labels": {"component": component, "tier": "control-plane"}, "name": name,
                     "namespace": "kube-system"},
        "spec": {
            "containers": [{
                "command": [name if name != "etcd" else "etcd"] + args,
                "image": image, "imagePullPolicy": "IfNotPresent", "name": name,
                "livenessProbe": {"failureThreshold": 8, "httpGet": {"host": "127.0.0.1", "path": "/livez" if
                                                                     name != "etcd" else "/livez",
                                                                     "port": probe_port, "scheme": scheme},
                                  "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 15},
                "resources": {"requests": {"cpu": "250m" if name == "kube-apiserver" else "100m"}},
                "volumeMounts": [{"mountPath": path, "name": vol, "readOnly": ro} for vol, path, ro in mounts],
            }],
            "hostNetwork": True,
            "priority": 2000001000, "priorityClassName": "system-node-critical",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [host_path(vol, path) for vol, path, _ in mounts],
        },
    }


def write_manifests(cluster, advertise, port, name, stacked, etcd_servers=None):
    d = cluster.cert_dir
    etcd_ext = cluster.external or {}
    if stacked:
        etcd_flags = {"etcd-cafile": f"{d}/etcd/ca.crt", "etcd-certfile": f"{d}/apiserver-etcd-client.crt",
                      "etcd-keyfile": f"{d}/apiserver-etcd-client.key", "etcd-servers": "https://127.0.0.1:2379"}
    else:
        etcd_flags = {"etcd-cafile": etcd_ext.get("caFile", ""), "etcd-certfile": etcd_ext.get("certFile", ""),
                      "etcd-keyfile": etcd_ext.get("keyFile", ""),
                      "etcd-servers": ",".join(etcd_ext.get("endpoints") or [])}
    api = {
        "advertise-address": advertise, "allow-privileged": "true", "authorization-mode": "Node,RBAC",
        "client-ca-file": f"{d}/ca.crt", "enable-admission-plugins": "NodeRestriction",
        "enable-bootstrap-token-auth": "true", **etcd_flags,
        "kubelet-client-certificate": f"{d}/apiserver-kubelet-client.crt",
        "kubelet-client-key": f"{d}/apiserver-kubelet-client.key",
        "kubelet-preferred-address-types": "InternalIP,ExternalIP,Hostname",
        "proxy-client-cert-file": f"{d}/front-proxy-client.crt", "proxy-client-key-file": f"{d}/front-proxy-client.key",
        "requestheader-client-ca-file": f"{d}/front-proxy-ca.crt", "secure-port": str(port),
        "service-account-issuer": f"https://kubernetes.default.svc.{cluster.dns_domain}",
        "service-account-key-file": f"{d}/sa.pub", "service-account-signing-key-file": f"{d}/sa.key",
        "service-cluster-ip-range": cluster.service_subnet, "tls-cert-file": f"{d}/apiserver.crt",
        "tls-private-key-file": f"{d}/apiserver.key",
    }
    pki = [("k8s-certs", d, True), ("ca-certs", "/etc/ssl/certs", True)]
    write_yaml(f"{MANIFESTS}/kube-apiserver.yaml",
               static_pod("kube-apiserver", cluster.image("kube-apiserver"), api, pki,
                          get(cluster.doc, "apiServer", "extraArgs"), "kube-apiserver", port), 0o600)
    cm = {"authentication-kubeconfig": "/etc/kubernetes/controller-manager.conf",
          "authorization-kubeconfig": "/etc/kubernetes/controller-manager.conf", "bind-address": "127.0.0.1",
          "client-ca-file": f"{d}/ca.crt", "cluster-name": cluster.cluster_name,
          "cluster-signing-cert-file": f"{d}/ca.crt", "cluster-signing-key-file": f"{d}/ca.key",
          "controllers": "*,bootstrapsigner,tokencleaner", "kubeconfig": "/etc/kubernetes/controller-manager.conf",
          "leader-elect": "true", "requestheader-client-ca-file": f"{d}/front-proxy-ca.crt",
          "root-ca-file": f"{d}/ca.crt", "service-account-private-key-file": f"{d}/sa.key",
          "use-service-account-credentials": "true"}
    if cluster.pod_subnet:
        cm.update({"allocate-node-cidrs": "true", "cluster-cidr": cluster.pod_subnet})
    write_yaml(f"{MANIFESTS}/kube-controller-manager.yaml",
               static_pod("kube-controller-manager", cluster.image("kube-controller-manager"), cm,
                          pki + [("kubeconfig", "/etc/kubernetes/controller-manager.conf", True)],
                          get(cluster.doc, "controllerManager", "extraArgs"), "kube-controller-manager", 10257), 0o600)
    sched = {"authentication-kubeconfig": "/etc/kubernetes/scheduler.conf",
             "authorization-kubeconfig": "/etc/kubernetes/scheduler.conf", "bind-address": "127.0.0.1",
             "kubeconfig": "/etc/kubernetes/scheduler.conf", "leader-elect": "true"}
    write_yaml(f"{MANIFESTS}/kube-scheduler.yaml",
               static_pod("kube-scheduler", cluster.image("kube-scheduler"), sched,
                          [("kubeconfig", "/etc/kubernetes/scheduler.conf", True)],
                          get(cluster.doc, "scheduler", "extraArgs"), "kube-scheduler", 10259), 0o600)
    if stacked:
        data_dir = cluster.local_etcd.get("dataDir") or "/var/lib/etcd"
        ip = f"[{advertise}]" if ":" in advertise else advertise
        etcd = {"advertise-client-urls": f"https://{ip}:2379", "cert-file": f"{d}/etcd/server.crt",
                "client-cert-auth": "true", "data-dir": data_dir,
                "initial-advertise-peer-urls": f"https://{ip}:2380",
                "initial-cluster": etcd_servers or f"{name}=https://{ip}:2380",
                "key-file": f"{d}/etcd/server.key", "listen-client-urls": f"https://127.0.0.1:2379,https://{ip}:2379",
                "listen-metrics-urls": "http://127.0.0.1:2381", "listen-peer-urls": f"https://{ip}:2380",
                "name": name, "peer-cert-file": f"{d}/etcd/peer.crt", "peer-client-cert-auth": "true",
                "peer-key-file": f"{d}/etcd/peer.key", "peer-trusted-ca-file": f"{d}/etcd/ca.crt",
                "snapshot-count": "10000", "trusted-ca-file": f"{d}/etcd/ca.crt"}
        pod = static_pod("etcd", cluster.etcd_image(), etcd, [("etcd-data", data_dir, False),
                                                              ("etcd-certs", f"{d}/etcd", False)],
                         cluster.local_etcd.get("extraArgs"), "etcd", 2381, "HTTP")
        pod["metadata"]["labels"]["component"] = "etcd"
        write_yaml(f"{MANIFESTS}/etcd.yaml", pod, 0o600)


def manifest_images():
    yaml = yaml_module("kubeadm")
    images = []
    directory = P(MANIFESTS)
    for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        try:
            with open(os.path.join(directory, entry)) as f:
                for doc in yaml.safe_load_all(f):
                    for c in get(doc, "spec", "containers", default=[]) + get(doc, "spec", "initContainers",
                                                                              default=[]):
                        images.append(c.get("image"))
        except (OSError, yaml.YAMLError):
            pass
    return images


def start_kubelet(expected, static_pods=True):
    """kubelet-start, then wait for the kubelet stand-in to have pulled everything it must run."""
    remove(READY)
    print("[kubelet-start] Starting the kubelet")
    out = subprocess.run([SYSTEMCTL, "restart", "kubelet"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"[kubelet-start] WARNING: unable to start the kubelet service: [couldn't start kubelet: "
              f"{(out.stderr or out.stdout).strip()}]", file=sys.stderr)
    if static_pods:
        print('[wait-control-plane] Waiting for the kubelet to boot up the control plane as static Pods from '
              f'directory "{MANIFESTS}"')
    print("[kubelet-check] Waiting for a healthy kubelet at http://127.0.0.1:10248/healthz. This can take up to "
          f"{int(KUBELET_TIMEOUT)}s")
    deadline = time.monotonic() + KUBELET_TIMEOUT
    want = {normalize(i) for i in expected}
    while True:
        try:
            have = {normalize(i) for i in read(READY).split()}
            if want <= have:
                print("[kubelet-check] The kubelet is healthy")
                return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    journal = subprocess.run([JOURNALCTL, "-u", "kubelet", "--no-pager", "-n", "20"], capture_output=True,
                             text=True)
    tail = "\n".join((journal.stdout or journal.stderr).splitlines()[-20:])
    raise Fail(f"[kubelet-check] The kubelet is not healthy after {int(KUBELET_TIMEOUT)}s\n\n"
               "Unfortunately, an error has occurred, likely caused by:\n"
               "\t- The kubelet is not running\n"
               "\t- The kubelet is unhealthy due to a misconfiguration of the node in some way (required cgroups "
               "disabled)\n\n"
               "If you are on a systemd-powered system, you can try to troubleshoot the error with the following "
               "commands:\n\t- 'systemctl status kubelet'\n\t- 'journalctl -xeu kubelet'\n\n"
               f"journalctl -u kubelet --no-pager (last 20 lines):\n{tail}\n\n"
               f"error execution phase {'wait-control-plane' if static_pods else 'kubelet-start'}: timed out "
               "waiting for the condition")


def store_tokens(tokens):
    os.makedirs(P(STANDIN_DIR), exist_ok=True)
    with open(P(TOKENS), "a") as f:
        for token, ttl in tokens:
            f.write(f"{token} {ttl}\n")


def random_token():
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    part = lambda n: "".join(secrets.choice(alphabet) for _ in range(n))  # noqa: E731
    return f"{part(6)}.{part(16)}"


def check_etcd_external(ext, pf):
    endpoints = ext.get("endpoints") or []
    if not endpoints:
        raise Fail("etcd.external.endpoints: Required value: must be set")
    tls = any(ext.get(k) for k in ("caFile", "certFile", "keyFile"))
    for url in endpoints:
        m = re.match(r"^(https?)://([^/]+)", url)
        if not m:
            raise Fail(f'etcd.external.endpoints: Invalid value: "{url}": URL parse error: missing scheme or host')
        if tls and m.group(1) != "https":
            raise Fail(f'etcd.external.endpoints: Invalid value: "{url}": URL scheme must be https if CA/cert/key '
                       "are set")
    if bool(ext.get("certFile")) != bool(ext.get("keyFile")):
        raise Fail("etcd.external.certFile: Invalid value: either both or none of .Etcd.External.CertFile and "
                   ".Etcd.External.KeyFile must be set")
    for key in ("caFile", "certFile", "keyFile"):
        if ext.get(key):
            pf.file_existing("ExternalEtcdClientCertificates", ext[key])


def mixed_or_config(flags, order, kinds):
    check_mixed(flags, order)
    if "config" not in flags:
        return None
    return load_config(flags["config"], kinds)


# ---- commands ----

def cmd_version(pos, flags):
    output = flags.get("output") or flags.get("o") or ""
    major, minor, _ = V
    info = {"major": str(major), "minor": str(minor), "gitVersion": VERSION,
            "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z", "goVersion": "go1.24.0", "compiler": "gc",
            "platform": "linux/amd64"}
    if output == "short":
        print(VERSION)
    elif output == "json":
        print(json.dumps({"clientVersion": info}, indent=2))
    elif output == "yaml":
        print(yaml_module("kubeadm").safe_dump({"clientVersion": info}, sort_keys=False), end="")
    elif output == "":
        # The stand-in's own line (the lab's end-to-end test reads it); `-o` gives the real shapes.
        print(f"kubeadm version {VERSION} (stand-in)")
    else:
        raise Fail(f'invalid output format: {output}')


def cmd_config(pos, flags, order):
    if pos[:2] != ["images", "list"] and pos[:2] != ["images", "pull"] or len(pos) != 2:
        raise Fail(f'unknown command "{" ".join(pos)}" for "kubeadm config"')
    docs = mixed_or_config(flags, order, {"InitConfiguration", "ClusterConfiguration"}) or {}
    cluster = Cluster(docs.get("ClusterConfiguration"))
    images = cluster.images()
    if pos[1] == "list":
        output = flags.get("output") or flags.get("o") or "text"
        if output == "json":
            print(json.dumps({"kind": "Images", "apiVersion": "output.kubeadm.k8s.io/v1alpha3", "images": images},
                             indent=4))
        else:
            print("\n".join(images))
        return
    for image in images:
        ok, output = pull(image)
        if not ok:
            raise Fail(f"failed to pull image {image}: {output}")
        print(f"[config/images] Pulled {image}")


def init_from_flags(flags):
    init = {"apiVersion": "kubeadm.k8s.io/v1beta4" if V >= (1, 31, 0) else "kubeadm.k8s.io/v1beta3",
            "kind": "InitConfiguration", "nodeRegistration": {}, "localAPIEndpoint": {}}
    cluster = {"apiVersion": init["apiVersion"], "kind": "ClusterConfiguration", "networking": {}}
    if flags.get("apiserver-advertise-address"):
        init["localAPIEndpoint"]["advertiseAddress"] = flags["apiserver-advertise-address"]
    if flags.get("apiserver-bind-port"):
        init["localAPIEndpoint"]["bindPort"] = int(flags["apiserver-bind-port"])
    if flags.get("token"):
        init["bootstrapTokens"] = [{"token": flags["token"], "ttl": flags.get("token-ttl", "24h0m0s")}]
    if flags.get("cri-socket"):
        init["nodeRegistration"]["criSocket"] = flags["cri-socket"]
    if flags.get("node-name"):
        init["nodeRegistration"]["name"] = flags["node-name"]
    if flags.get("certificate-key"):
        init["certificateKey"] = flags["certificate-key"]
    for flag, key in (("control-plane-endpoint", "controlPlaneEndpoint"), ("kubernetes-version", "kubernetesVersion"),
                      ("image-repository", "imageRepository"), ("cert-dir", "certificatesDir")):
        if flags.get(flag):
            cluster[key] = flags[flag]
    for flag, key in (("pod-network-cidr", "podSubnet"), ("service-cidr", "serviceSubnet"),
                      ("service-dns-domain", "dnsDomain")):
        if flags.get(flag):
            cluster["networking"][key] = flags[flag]
    return {"InitConfiguration": init, "ClusterConfiguration": cluster}


def split_list(value):
    return [v for v in (value or "").split(",") if v]


def cmd_init(pos, flags, order):
    if pos:
        raise Fail(f'unknown command "{pos[0]}" for "kubeadm init"')
    if flags.get("dry-run"):
        raise Fail("this stand-in kubeadm does not do --dry-run")
    docs = mixed_or_config(flags, order, {"InitConfiguration", "ClusterConfiguration", "KubeletConfiguration",
                                          "KubeProxyConfiguration"})
    if docs is None:
        docs = init_from_flags(flags)
    init = docs.get("InitConfiguration") or {}
    cluster = Cluster(docs.get("ClusterConfiguration"), init, docs.get("KubeletConfiguration"))
    print(f"[init] Using Kubernetes version: {cluster.version}")
    registration = init.get("nodeRegistration") or {}
    name = node_name(registration)
    skip = set(split_list(flags.get("skip-phases"))) | set(init.get("skipPhases") or [])
    tokens = []
    for entry in init.get("bootstrapTokens") or [{}]:
        token = entry.get("token") or random_token()
        check_token(token)
        ttl = entry.get("ttl") or "24h0m0s"
        check_duration(ttl, "ttl")
        tokens.append((token, ttl))
    endpoint = init.get("localAPIEndpoint") or {}
    advertise = endpoint.get("advertiseAddress") or default_address()
    try:
        ipaddress.ip_address(advertise)
    except ValueError:
        raise Fail(f'localAPIEndpoint.advertiseAddress: Invalid value: "{advertise}": must be a valid IP address')
    port = endpoint.get("bindPort") or 6443
    cpe = cluster.endpoint
    server_host, server_port = host_port(cpe, port) if cpe else (advertise, str(port))
    cri = registration.get("criSocket") or DEFAULT_CRI
    stacked = not cluster.external
    if init.get("certificateKey") and not re.fullmatch(r"[0-9a-fA-F]{64}", init["certificateKey"]):
        raise Fail("certificateKey: Invalid value: the certificate key must be a hex encoded 32-byte string")

    if "preflight" not in skip:
        pf = Preflight(split_list(flags.get("ignore-preflight-errors")) + list(registration.get("ignorePreflightErrors")
                                                                                 or []))
        pf.common(cri)
        for f in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"):
            pf.file_available(f"{MANIFESTS}/{f}.yaml")
        if stacked:
            pf.dir_available(cluster.local_etcd.get("dataDir") or "/var/lib/etcd")
        else:
            check_etcd_external(cluster.external, pf)
        pf.finish()
        pf.pull(cluster.images(), registration.get("imagePullPolicy") or "IfNotPresent", cri)
        pf.finish()
    elif not stacked:
        check_etcd_external(cluster.external, Preflight(["all"]))

    if "certs" not in skip:
        print(f'[certs] Using certificateDir folder "{cluster.cert_dir}"')
        check_certs(cluster, advertise, name)
    ca_pem = read(f"{cluster.cert_dir}/ca.crt") if os.path.isfile(P(f"{cluster.cert_dir}/ca.crt")) else ""
    if "kubeconfig" not in skip:
        print(f'[kubeconfig] Using kubeconfig folder "{KUBERNETES_DIR}"')
        server = url_host(server_host, server_port)
        local = url_host(advertise, port)
        files = [("admin.conf", server, "kubernetes-admin",
                  ["kubeadm:cluster-admins"] if V >= (1, 29, 0) else ["system:masters"]),
                 ("kubelet.conf", server, f"system:node:{name}", ["system:nodes"]),
                 ("controller-manager.conf", local, "system:kube-controller-manager", []),
                 ("scheduler.conf", local, "system:kube-scheduler", [])]
        if V >= (1, 29, 0):
            files.insert(1, ("super-admin.conf", server, "kubernetes-super-admin", ["system:masters"]))
        for file, url, user, orgs in files:
            cert, key = new_client_cert(cluster, user, orgs)
            write_yaml(f"{KUBERNETES_DIR}/{file}", kubeconfig(cluster.cluster_name, url, ca_pem, user, cert, key),
                       0o600)
            print(f'[kubeconfig] Writing "{file}" kubeconfig file')
    if "control-plane" not in skip:
        print(f'[control-plane] Using manifest folder "{MANIFESTS}"')
        write_manifests(cluster, advertise, port, name, stacked and "etcd" not in skip)
    if "kubelet-start" not in skip:
        print('[kubelet-start] Writing kubelet environment file with flags to file "/var/lib/kubelet/kubeadm-flags.env"')
        write(f"{KUBELET_DIR}/kubeadm-flags.env", flags_env(registration, cluster.pause()))
        print('[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml"')
        write_yaml(f"{KUBELET_DIR}/config.yaml", kubelet_config(cluster, cluster.kubelet))
        if "wait-control-plane" not in skip:
            start_kubelet(manifest_images())
        else:
            subprocess.run([SYSTEMCTL, "restart", "kubelet"], capture_output=True)
    if "upload-config" not in skip:
        upload_config(cluster.doc, cluster.version)
    if "upload-certs" not in skip and flags.get("upload-certs"):
        key = init.get("certificateKey") or secrets.token_hex(32)
        print('[upload-certs] Storing the certificates in Secret "kubeadm-certs" in the "kube-system" Namespace')
        if not flags.get("skip-certificate-key-print"):
            print(f"[upload-certs] Using certificate key:\n{key}")
    if "bootstrap-token" not in skip:
        store_tokens(tokens)
        print(f"[bootstrap-token] Using token: {tokens[0][0]}")
    hash_ = spki_hash(P(f"{cluster.cert_dir}/ca.crt")) if ca_pem else "sha256:<unknown>"
    join = f"kubeadm join {server_host if ':' not in server_host else '[' + server_host + ']'}:{server_port} " \
           f"--token {tokens[0][0]} \\\n\t--discovery-token-ca-cert-hash {hash_}"
    print(f"""
Your Kubernetes control-plane has initialized successfully!

To start using your cluster, you need to run the following as a regular user:

  mkdir -p $HOME/.kube
  sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
  sudo chown $(id -u):$(id -g) $HOME/.kube/config

You should now deploy a pod network to the cluster.
Run "kubectl apply -f [podnetwork].yaml" with one of the options listed at:
  https://kubernetes.io/docs/concepts/cluster-administration/addons/

Then you can join any number of worker nodes by running the following on each as root:

{join if not flags.get("skip-token-print") else "kubeadm join <endpoint> --token <value withheld> ..."}
(kk lab stand-in kubeadm {VERSION}: nothing of this cluster runs; see scripts/lab/standins/README.md)""")


def join_from_flags(pos, flags):
    api = "kubeadm.k8s.io/v1beta4" if V >= (1, 31, 0) else "kubeadm.k8s.io/v1beta3"
    bootstrap = {"token": flags.get("discovery-token") or flags.get("token"),
                 "apiServerEndpoint": pos[0] if pos else "",
                 "caCertHashes": split_list(flags.get("discovery-token-ca-cert-hash"))}
    if flags.get("discovery-token-unsafe-skip-ca-verification"):
        bootstrap["unsafeSkipCAVerification"] = True
    join = {"apiVersion": api, "kind": "JoinConfiguration", "discovery": {"bootstrapToken": bootstrap},
            "nodeRegistration": {}}
    if flags.get("cri-socket"):
        join["nodeRegistration"]["criSocket"] = flags["cri-socket"]
    if flags.get("node-name"):
        join["nodeRegistration"]["name"] = flags["node-name"]
    if flags.get("control-plane"):
        join["controlPlane"] = {"localAPIEndpoint": {}}
        if flags.get("apiserver-advertise-address"):
            join["controlPlane"]["localAPIEndpoint"]["advertiseAddress"] = flags["apiserver-advertise-address"]
        if flags.get("apiserver-bind-port"):
            join["controlPlane"]["localAPIEndpoint"]["bindPort"] = int(flags["apiserver-bind-port"])
        if flags.get("certificate-key"):
            join["controlPlane"]["certificateKey"] = flags["certificate-key"]
    return join


def check_discovery(join):
    discovery = join.get("discovery") or {}
    bootstrap = discovery.get("bootstrapToken")
    if not bootstrap and not discovery.get("file"):
        raise Fail("discovery: Invalid value: \"\": bootstrapToken or file must be set")
    if discovery.get("file"):
        path = get(discovery, "file", "kubeConfigPath") or ""
        if not os.path.isfile(P(path)):
            raise Fail(f"couldn't validate the identity of the API Server: open {path}: no such file or directory")
        return None, discovery.get("tlsBootstrapToken")
    token = bootstrap.get("token")
    check_token(token)
    endpoint = bootstrap.get("apiServerEndpoint") or ""
    m = re.match(r"^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):(\d+)$", endpoint)
    if not m or not 0 < int(m.group(2)) < 65536:
        raise Fail(f'discovery.bootstrapToken.apiServerEndpoint: Invalid value: "{endpoint}": address {endpoint}: '
                   "missing port in address" if ":" not in endpoint else
                   f'discovery.bootstrapToken.apiServerEndpoint: Invalid value: "{endpoint}": invalid address')
    hashes = bootstrap.get("caCertHashes") or []
    if not hashes and not bootstrap.get("unsafeSkipCAVerification"):
        raise Fail('discovery.bootstrapToken.caCertHashes: Invalid value: "": using token-based discovery without '
                   "caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or "
                   "pass --discovery-token-unsafe-skip-ca-verification flag to continue")
    for h in hashes:
        kind, sep, value = str(h).partition(":")
        if not sep:
            raise Fail(f'invalid hash "{h}", expected "format:hex-value". Known format(s) are: sha256')
        if kind.lower() != "sha256":
            raise Fail(f'unknown hash format "{kind}". Known format(s) are: sha256')
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raise Fail(f'invalid hash "{h}": encoding/hex: invalid byte in {value!r}')
        if len(raw) != 32:
            raise Fail(f"expected a 32 byte SHA-256 hash, found {len(raw)} bytes")
    return endpoint, token, hashes, bootstrap.get("unsafeSkipCAVerification")


def cmd_join(pos, flags, order):
    if flags.get("dry-run"):
        raise Fail("this stand-in kubeadm does not do --dry-run")
    docs = mixed_or_config(flags, order, {"JoinConfiguration"})
    if docs is None:
        join = join_from_flags(pos, flags)
    else:
        if pos:
            raise Fail(f"can not mix '--config' with arguments [{pos[0]}]")
        join = docs.get("JoinConfiguration")
        if not join:
            raise Fail(f"no JoinConfiguration kind was found in the YAML file {flags['config']}")
    registration = join.get("nodeRegistration") or {}
    name = node_name(registration)
    skip = set(split_list(flags.get("skip-phases"))) | set(join.get("skipPhases") or [])
    discovered = check_discovery(join)
    control_plane = join.get("controlPlane")
    advertise = None
    if control_plane is not None:
        control_plane = control_plane or {}
        advertise = get(control_plane, "localAPIEndpoint", "advertiseAddress") or default_address()
        if control_plane.get("certificateKey") and not re.fullmatch(r"[0-9a-fA-F]{64}",
                                                                     control_plane["certificateKey"]):
            raise Fail("controlPlane.certificateKey: Invalid value: the certificate key must be a hex encoded "
                       "32-byte string")
    ca_path = join.get("caCertPath") or "/etc/kubernetes/pki/ca.crt"
    cert_dir = os.path.dirname(ca_path)
    cri = registration.get("criSocket") or DEFAULT_CRI
    cluster = Cluster({"certificatesDir": cert_dir, "kubernetesVersion": VERSION})
    stacked = os.path.isfile(P(f"{cert_dir}/etcd/ca.key"))
    external = (not stacked and os.path.isfile(P(f"{cert_dir}/apiserver-etcd-client.crt"))
                and os.path.isfile(P(f"{cert_dir}/apiserver-etcd-client.key")))

    if "preflight" not in skip:
        pf = Preflight(split_list(flags.get("ignore-preflight-errors")) + list(registration.get("ignorePreflightErrors")
                                                                                 or []))
        pf.common(cri)
        pf.dir_available(MANIFESTS)
        pf.file_available(f"{KUBERNETES_DIR}/kubelet.conf")
        pf.file_available(f"{KUBERNETES_DIR}/bootstrap-kubelet.conf")
        if control_plane is None:
            pf.file_available(ca_path)
        elif stacked:
            pf.dir_available("/var/lib/etcd")
        pf.finish()
    if discovered and discovered[0]:
        endpoint, token, hashes, unsafe = discovered
        print(f'[preflight] Discovering cluster-info from "{endpoint}" (kk stand-in: the cluster CA is {TRUST_CA})')
        if not os.path.isfile(P(TRUST_CA)):
            raise Fail(f"error execution phase preflight: couldn't validate the identity of the API Server: "
                       f"kk stand-in: {TRUST_CA} is missing (it stands in for the cluster-info ConfigMap)")
        actual = spki_hash(P(TRUST_CA))
        if not unsafe and actual not in [h.lower() for h in hashes]:
            raise Fail("error execution phase preflight: couldn't validate the identity of the API Server: cluster "
                       f'CA found in cluster-info ConfigMap is invalid: none of the public keys "{actual}" are pinned')
        server_host, server_port = host_port(endpoint, 6443)
    else:
        server_host, server_port = None, None
    if control_plane is not None:
        print("[preflight] Running pre-flight checks before initializing the new control plane instance")
        if not stacked and not external:
            raise Fail("error execution phase control-plane-prepare/certs: one or more conditions for hosting a new "
                       "control plane instance is not satisfied.\n\nfailure loading key for etcd: neither "
                       f"{cert_dir}/etcd/ca.key (stacked etcd) nor {cert_dir}/apiserver-etcd-client.{{crt,key}} "
                       "(external etcd) is present\n\nPlease ensure that:\n* The cluster has a stable "
                       "controlPlaneEndpoint address.\n* The certificates that must be shared among control plane "
                       "instances are provided.")
        if "preflight" not in skip:
            images = cluster.images(etcd=stacked)
            pf.pull(images, registration.get("imagePullPolicy") or "IfNotPresent", cri)
            pf.finish()
        try:
            check_certs(cluster, advertise, name, control_plane_join=True, stacked=stacked)
        except Fail as e:
            raise Fail(f"{e}\n\none or more conditions for hosting a new control plane instance is not satisfied."
                       "\n\nPlease ensure that:\n* The cluster has a stable controlPlaneEndpoint address.\n* The "
                       "certificates that must be shared among control plane instances are provided.")
        if external:
            load_pair(cert_dir, "apiserver-etcd-client", "apiserver-etcd-client certificate")
    ca_pem = read(TRUST_CA) if os.path.isfile(P(TRUST_CA)) else (read(ca_path) if os.path.isfile(P(ca_path)) else "")
    server = url_host(server_host, server_port) if server_host else None
    if control_plane is not None:
        port = get(control_plane, "localAPIEndpoint", "bindPort") or 6443
        local = url_host(advertise, port)
        server = server or local
        for file, url, user, orgs in (
                ("admin.conf", server, "kubernetes-admin",
                 ["kubeadm:cluster-admins"] if V >= (1, 29, 0) else ["system:masters"]),
                ("controller-manager.conf", local, "system:kube-controller-manager", []),
                ("scheduler.conf", local, "system:kube-scheduler", [])):
            cert, key = new_client_cert(cluster, user, orgs)
            write_yaml(f"{KUBERNETES_DIR}/{file}", kubeconfig(cluster.cluster_name, url, ca_pem, user, cert, key),
                       0o600)
            print(f'[kubeconfig] Writing "{file}" kubeconfig file')
        if external:
            cluster.external = {"endpoints": ["https://127.0.0.1:2379"], "caFile": f"{cert_dir}/etcd/ca.crt",
                                "certFile": f"{cert_dir}/apiserver-etcd-client.crt",
                                "keyFile": f"{cert_dir}/apiserver-etcd-client.key"}
        write_manifests(cluster, advertise, port, name, stacked)
        cert, key = new_client_cert(cluster, f"system:node:{name}", ["system:nodes"])
        write_yaml(f"{KUBERNETES_DIR}/kubelet.conf", kubeconfig(cluster.cluster_name, server, ca_pem,
                                                                f"system:node:{name}", cert, key), 0o600)
    else:
        if os.path.isfile(P(TRUST_CA)):
            write(ca_path, ca_pem)
        pem = f"{KUBELET_DIR}/pki/kubelet-client-current.pem"
        write(pem, self_signed(f"system:node:{name}"), 0o600)
        write_yaml(f"{KUBERNETES_DIR}/kubelet.conf",
                   kubeconfig(cluster.cluster_name, server or "https://127.0.0.1:6443", ca_pem, "default-auth",
                              cert_file="/var/lib/kubelet/pki/kubelet-client-current.pem"), 0o600)
    print('[kubelet-start] Writing kubelet configuration to file "/var/lib/kubelet/config.yaml" (kk stand-in: '
          "kubeadm's defaults; the cluster's kubelet-config ConfigMap cannot be read)")
    write_yaml(f"{KUBELET_DIR}/config.yaml", kubelet_config(cluster, None))
    write(f"{KUBELET_DIR}/kubeadm-flags.env", flags_env(registration, cluster.pause()))
    if "kubelet-start" not in skip:
        start_kubelet(manifest_images(), static_pods=control_plane is not None)
    print("""
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.
(kk lab stand-in kubeadm: nothing of this cluster runs; see scripts/lab/standins/README.md)""")


def self_signed(cn):
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", f"{tmp}/k", "-subj", f"/O=system:nodes/CN={cn}", "-days", "365",
                             "-out", f"{tmp}/c")
        if rc != 0:
            raise Fail(f"failure creating the kubelet client certificate: {err}")
        with open(f"{tmp}/c") as c, open(f"{tmp}/k") as k:
            return c.read() + k.read()


def cmd_token(pos, flags):
    if not pos:
        raise Fail('unknown command "" for "kubeadm token"')
    config = flags.get("kubeconfig") or "/etc/kubernetes/admin.conf"
    if pos[0] in ("create", "list", "delete"):
        if not os.path.isfile(P(config)):
            raise Fail(f"failed to load admin kubeconfig: open {config}: no such file or directory")
    if pos[0] == "create":
        if len(pos) > 2:
            raise Fail(f"unknown command \"{pos[2]}\" for \"kubeadm token create\"")
        token = pos[1] if len(pos) > 1 else random_token()
        check_token(token)
        ttl = flags.get("ttl") or "24h0m0s"
        check_duration(ttl, "ttl")
        store_tokens([(token, ttl)])
        if flags.get("print-join-command"):
            doc = yaml_module("kubeadm").safe_load(read(config))
            server = get(doc, "clusters", default=[{}])[0].get("cluster", {}).get("server", "")
            ca = base64.b64decode(get(doc, "clusters", default=[{}])[0].get("cluster", {})
                                  .get("certificate-authority-data", ""))
            with tempfile.NamedTemporaryFile() as f:
                f.write(ca)
                f.flush()
                hash_ = spki_hash(f.name)
            print(f"kubeadm join {server.removeprefix('https://')} --token {token} --discovery-token-ca-cert-hash "
                  f"{hash_} ")
        else:
            print(token)
    elif pos[0] == "list":
        try:
            print(read(TOKENS), end="")
        except OSError:
            pass
    elif pos[0] == "generate":
        print(random_token())
    else:
        raise Fail(f'unknown command "{pos[0]}" for "kubeadm token"')


def remove_contents(path):
    directory = P(path)
    if not os.path.isdir(directory):
        return
    for entry in os.listdir(directory):
        full = os.path.join(directory, entry)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            try:
                os.remove(full)
            except OSError:
                pass


def cmd_reset(pos, flags, order):
    if pos:
        raise Fail(f'unknown command "{pos[0]}" for "kubeadm reset"')
    cert_dir = flags.get("cert-dir") or "/etc/kubernetes/pki"
    force = flags.get("force") or flags.get("f")
    if flags.get("config"):
        check_mixed(flags, order)
        reset = load_config(flags["config"], {"ResetConfiguration"}).get("ResetConfiguration") or {}
        cert_dir = reset.get("certificatesDir") or cert_dir
        force = force or reset.get("force")
    warn("[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted.")
    if not force:
        print("[reset] Are you sure you want to proceed? [y/N]: ", end="", flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            raise Fail("aborted reset operation")
    etcd_dir = None
    etcd_manifest = P(f"{MANIFESTS}/etcd.yaml")
    if os.path.isfile(etcd_manifest):
        etcd_dir = "/var/lib/etcd"
        try:
            pod = yaml_module("kubeadm").safe_load(read(f"{MANIFESTS}/etcd.yaml"))
            for vol in get(pod, "spec", "volumes", default=[]):
                if vol.get("name") == "etcd-data" and get(vol, "hostPath", "path"):
                    etcd_dir = vol["hostPath"]["path"]
        except Exception:  # noqa: BLE001 - a broken manifest still means stacked etcd
            pass
    print("[preflight] Running pre-flight checks")
    subprocess.run([SYSTEMCTL, "stop", "kubelet"], capture_output=True)
    print("[reset] Stopping the kubelet service")
    if etcd_dir:
        print(f"[reset] Deleting contents of the etcd data directory: {etcd_dir}")
        remove_contents(etcd_dir)
    print(f"[reset] Deleting contents of directories: [{MANIFESTS} {KUBELET_DIR} {cert_dir}]")
    remove_contents(MANIFESTS)
    remove_contents(KUBELET_DIR)
    remove_contents(cert_dir)
    files = [f"{KUBERNETES_DIR}/{f}.conf" for f in ("admin", "super-admin", "kubelet", "bootstrap-kubelet",
                                                    "controller-manager", "scheduler")]
    print(f"[reset] Deleting files: [{' '.join(files)}]")
    for f in files:
        remove(f)
    shutil.rmtree(P(STANDIN_DIR), ignore_errors=True)
    print("""
The reset process does not perform cleanup of CNI plugin configuration,
network filtering rules and kubeconfig files.

For information on how to perform this cleanup manually, please see:
    https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/

The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d

The reset process does not reset or clean up iptables rules or IPVS tables.
If you wish to reset iptables, you must do so manually by using the "iptables" command.

If your cluster was setup to utilize IPVS, run ipvsadm --clear (or similar)
to reset your system's IPVS tables.

The reset process does not clean your kubeconfig files and you must remove them manually.
Please, check the contents of the $HOME/.kube/config file.""")


# ---- certs renew ----

# kubeadm's `certs renew` names: (file under the cert dir or /etc/kubernetes, CA base), in kubeadm's order.
RENEWABLE = {
    "admin.conf": ("admin.conf", "ca"),
    "super-admin.conf": ("super-admin.conf", "ca"),
    "apiserver": ("apiserver.crt", "ca"),
    "apiserver-etcd-client": ("apiserver-etcd-client.crt", "etcd/ca"),
    "apiserver-kubelet-client": ("apiserver-kubelet-client.crt", "ca"),
    "controller-manager.conf": ("controller-manager.conf", "ca"),
    "etcd-healthcheck-client": ("etcd/healthcheck-client.crt", "etcd/ca"),
    "etcd-peer": ("etcd/peer.crt", "etcd/ca"),
    "etcd-server": ("etcd/server.crt", "etcd/ca"),
    "front-proxy-client": ("front-proxy-client.crt", "front-proxy-ca"),
    "scheduler.conf": ("scheduler.conf", "ca"),
}


def resign(cert_pem, key_pem, cert_dir, ca):
    """The certificate cert_pem signed again by ca with its own key (key_pem): same subject and
    extensions, one year from now, as kubeadm's renewal."""
    for part in ("crt", "key"):
        if not os.path.isfile(P(f"{cert_dir}/{ca}.{part}")):
            kind = "certificate" if part == "crt" else "private key"
            raise Fail(f"failed to load the {ca} CA: couldn't load the {kind} file {cert_dir}/{ca}.{part}: "
                       f"{missing(f'{cert_dir}/{ca}.{part}')}")
    with tempfile.TemporaryDirectory() as tmp:
        # Plain files of this process (write and read would put them under KK_STANDIN_ROOT).
        with open(f"{tmp}/c", "w") as c, open(os.open(f"{tmp}/k", os.O_WRONLY | os.O_CREAT, 0o600), "w") as k:
            c.write(cert_pem)
            k.write(key_pem)
        rc, _, err = openssl("x509", "-x509toreq", "-in", f"{tmp}/c", "-signkey", f"{tmp}/k", "-copy_extensions",
                             "copy", "-out", f"{tmp}/r")
        if rc == 0:
            rc, _, err = openssl("x509", "-req", "-in", f"{tmp}/r", "-CA", P(f"{cert_dir}/{ca}.crt"), "-CAkey",
                                 P(f"{cert_dir}/{ca}.key"), "-copy_extensions", "copyall", "-set_serial",
                                 str(secrets.randbits(63)), "-days", "365", "-out", f"{tmp}/n")
        if rc != 0:
            raise Fail(f"failed to renew the certificate: {err}")
        with open(f"{tmp}/n") as n:
            return n.read()


def renew_one(name, cert_dir):
    file, ca = RENEWABLE[name]
    if file.endswith(".conf"):
        path = f"/etc/kubernetes/{file}"
        if not os.path.isfile(P(path)):
            print(f"MISSING! {name}")
            return
        doc = yaml_module("kubeadm").safe_load(read(path))
        user = get(doc, "users", default=[{}])[0].get("user", {})
        if "client-certificate-data" not in user:
            raise Fail(f"failed to renew the certificate embedded in {path}: it has no embedded client certificate")
        cert = base64.b64decode(user["client-certificate-data"]).decode()
        key = base64.b64decode(user["client-key-data"]).decode()
        user["client-certificate-data"] = b64(resign(cert, key, cert_dir, ca))
        write_yaml(path, doc, 0o600)
    else:
        crt, key = f"{cert_dir}/{file}", f"{cert_dir}/{file[:-4]}.key"
        if not os.path.isfile(P(crt)):
            print(f"MISSING! {name}")
            return
        load_pair(cert_dir, file[:-4], f"{name} certificate")
        write(crt, resign(read(crt), read(key), cert_dir, ca))
    print(f"[renew] {name} renewed")


def cmd_certs(pos, flags):
    if not pos or pos[0] not in ("renew", "check-expiration"):
        raise Fail(f'unknown command "{pos[0] if pos else ""}" for "kubeadm certs"')
    cert_dir = flags.get("cert-dir") or "/etc/kubernetes/pki"
    if pos[0] == "check-expiration":
        for name, (file, _) in RENEWABLE.items():
            path = f"/etc/kubernetes/{file}" if file.endswith(".conf") else f"{cert_dir}/{file}"
            if os.path.isfile(P(path)) and not file.endswith(".conf"):
                rc, out, _ = openssl("x509", "-in", P(path), "-noout", "-enddate")
                print(f"{name} {out.decode().strip().removeprefix('notAfter=')}")
        return
    names = pos[1:]
    if not names:
        raise Fail('"kubeadm certs renew" requires a subcommand (all, or a certificate name)')
    for name in names:
        if name != "all" and name not in RENEWABLE:
            raise Fail(f'unknown command "{name}" for "kubeadm certs renew"')
    if "all" in names:
        names = list(RENEWABLE)
    for name in names:
        renew_one(name, cert_dir)
    print("\nDone renewing certificates. You must restart the kube-apiserver, kube-controller-manager, "
          "kube-scheduler and etcd, so that they can use the new certificates.")


# ---- upgrade ----

CONTROL_PLANE_PODS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
KUBEADM_CONFIG = "kubeadm-config.yaml"  # in CLUSTER: the kubeadm-config ConfigMap's ClusterConfiguration


def upload_config(doc, version):
    """upload-config: the ClusterConfiguration (with its kubernetesVersion) where `upgrade` reads it,
    the cluster directory standing in for the kubeadm-config ConfigMap."""
    doc = dict(doc or {})
    doc["kubernetesVersion"] = version
    os.makedirs(CLUSTER, exist_ok=True)
    tmp = f"{CLUSTER}/{KUBEADM_CONFIG}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(yaml_module("kubeadm").safe_dump(doc, sort_keys=False))
    os.replace(tmp, f"{CLUSTER}/{KUBEADM_CONFIG}")
    print('[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" '
          "Namespace")


def cluster_config():
    """The ClusterConfiguration `kubeadm init` uploaded (upload_config)."""
    try:
        with open(f"{CLUSTER}/{KUBEADM_CONFIG}") as f:
            return yaml_module("kubeadm").safe_load(f) or {}
    except OSError:
        raise Fail('[upgrade/config] FATAL: failed to get config map: configmaps "kubeadm-config" not found (kk '
                   f"stand-in: {CLUSTER}/{KUBEADM_CONFIG}, written by `kubeadm init`)")


def manifest_tag(pod):
    """The image tag of static pod `pod` on this node (None without its manifest)."""
    try:
        doc = yaml_module("kubeadm").safe_load(read(f"{MANIFESTS}/{pod}.yaml"))
    except OSError:
        return None
    return get(doc, "spec", "containers", default=[{}])[0].get("image", "").rpartition(":")[2]


def admin_kubeconfig(flags):
    path = flags.get("kubeconfig") or "/etc/kubernetes/admin.conf"
    if not os.path.isfile(P(path)):
        raise Fail(f'couldn\'t create a Kubernetes client from file "{path}": failed to load admin kubeconfig: '
                   f"open {path}: no such file or directory")


def version_policy(target, cluster_version, kubelets, force):
    """kubeadm's version policy (app/phases/upgrade/policy.go): the errors that stop an upgrade
    from cluster_version to target with this kubeadm; kubelets: {node: kubelet version}. With force,
    the skippable ones are warnings."""
    t, c = vt(target), vt(cluster_version)
    mandatory, skippable = [], []
    if t[:2] > V[:2]:
        mandatory.append(f'Specified version to upgrade to "{target}" is at least one minor release higher than the '
                         f"kubeadm minor release ({t[1]} > {V[1]}). Such an upgrade is not supported")
    elif t > V:
        skippable.append(f'Specified version to upgrade to "{target}" is higher than the kubeadm version "{VERSION}".'
                         " Upgrade kubeadm first using the tool you used to install kubeadm")
    if t[0] != c[0] or t[1] > c[1] + 1:
        mandatory.append(f'Specified version to upgrade to "{target}" is too high; kubeadm can upgrade only 1 minor '
                         "version at a time")
    if t[:2] < c[:2]:
        mandatory.append(f'Specified version to upgrade to "{target}" is lower than the cluster version '
                         f'"{cluster_version}": kubeadm does not downgrade the minor version')
    for node, kubelet in sorted(kubelets.items()):
        if kubelet and vt(kubelet) > t:
            mandatory.append(f'Kubelet version "{kubelet}" on node "{node}" is newer than the version to upgrade to '
                             f'"{target}"; a kubelet must never be newer than the API server')
    if mandatory or (skippable and not force):
        errors = "\n".join(f"- {e}" for e in mandatory + skippable)
        hint = "" if mandatory else "\n\nCan be bypassed if you pass the --force flag"
        raise Fail(f"[upgrade/version] FATAL: the --version argument is invalid due to these fatal errors:\n\n{errors}"
                   f"{hint}\n\nPlease fix the misalignments highlighted above and try upgrading again")
    for warning in skippable:
        warn(f"[upgrade/version] Found 1 potential version compatibility errors but skipping since the --force flag "
             f"is set:\n\n\t- {warning}")


def kubelet_versions():
    """{node: kubelet version} of the cluster's nodes; without the cluster's record, this node's
    kubelet (`kubelet --version`)."""
    nodes = {name: st.get("kubeletVersion", "") for name, st in cluster_nodes().items()}
    if nodes:
        return nodes
    kubelet = shutil.which("kubelet")
    out = subprocess.run([kubelet, "--version"], capture_output=True, text=True) if kubelet else None
    m = re.search(r"v\d+\.\d+\.\d+", out.stdout if out else "")
    return {socket.gethostname().lower(): m.group(0)} if m else {}


def node_cri():
    """The CRI endpoint of this node's kubelet (kubeadm keeps it in the Node's cri-socket annotation)."""
    try:
        m = re.search(r"--container-runtime-endpoint=(\S+?)\"?(\s|$)", read(f"{KUBELET_DIR}/kubeadm-flags.env"))
    except OSError:
        m = None
    return m.group(1) if m else DEFAULT_CRI


def confirm(flags):
    """kubeadm's question before it changes the cluster (--yes, -y or --force answer it)."""
    if flags.get("yes") or flags.get("y") or flags.get("force") or flags.get("f"):
        return
    print("[upgrade] Are you sure you want to proceed? [y/N]: ", end="", flush=True)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise Fail("won't proceed; the user didn't answer (Y|n) in order to continue")


def upgrade_manifests(cluster, etcd):
    """Rewrites this node's static pods with cluster's image tags (etcd's only when etcd: stacked
    etcd and --etcd-upgrade), backing the old ones up as kubeadm does; the images written."""
    yaml = yaml_module("kubeadm")
    backup = f"{KUBERNETES_DIR}/tmp/kubeadm-backup-manifests-{time.strftime('%Y-%m-%d-%H-%M-%S')}"
    pods = [(pod, cluster.image(pod)) for pod in CONTROL_PLANE_PODS]
    if etcd and os.path.isfile(P(f"{MANIFESTS}/etcd.yaml")):
        pods.append(("etcd", cluster.etcd_image()))
    written = []
    for pod, image in pods:
        path = f"{MANIFESTS}/{pod}.yaml"
        text = read(path)
        doc = yaml.safe_load(text)
        doc["spec"]["containers"][0]["image"] = image
        new = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
        if new != text:
            write(f"{backup}/{pod}.yaml", text, 0o600)
            write(path, new, 0o600)
            print(f'[upgrade/staticpods] Moving new manifest to "{path}" and backing up old manifest to '
                  f'"{backup}/{pod}.yaml"')
        written.append(image)
    return written


def wait_static_pods(images):
    """Waits, as kubeadm waits for each static pod's new hash, for the kubelet (its ready file) to
    have pulled what the new manifests run."""
    print("[upgrade/staticpods] Waiting for the kubelet to restart the components")
    deadline = time.monotonic() + KUBELET_TIMEOUT
    want = {normalize(i) for i in images}
    while True:
        try:
            if want <= {normalize(i) for i in read(READY).split()}:
                return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise Fail("[upgrade/staticpods] FATAL: couldn't upgrade control plane. kubeadm has tried to recover "
                       "everything into the earlier state. Errors faced: timed out waiting for the condition (kk "
                       f"stand-in: the kubelet's {READY} never listed {' '.join(sorted(want))})")
        time.sleep(0.5)


def renew_for_upgrade(cluster, stacked):
    """kubeadm's certificate renewal on upgrade (--certificate-renewal, on by default): every
    certificate of this control plane that its CA signs here; etcd's only with stacked etcd (an
    external etcd's certificates are not kubeadm's)."""
    for name, (file, ca) in RENEWABLE.items():
        if name == "super-admin.conf" or (ca == "etcd/ca" and not stacked):
            continue
        if not os.path.isfile(P(f"{cluster.cert_dir}/{ca}.key")):
            print(f"[upgrade/postupgrade] External CA mode: the certificate {name} is not renewed")
            continue
        renew_one(name, cluster.cert_dir)


def write_kubelet_config(cluster):
    """kubelet-config: this node's /var/lib/kubelet/config.yaml from the cluster's (here: the node's
    own with kubeadm's defaults), the kubelet not restarted, as kubeadm's upgrade."""
    try:
        given = yaml_module("kubeadm").safe_load(read(f"{KUBELET_DIR}/config.yaml")) or {}
    except OSError:
        given = {}
    write_yaml(f"{KUBELET_DIR}/config.yaml", kubelet_config(cluster, given))
    print(f'[upgrade] Writing kubelet configuration to file "{KUBELET_DIR}/config.yaml"')


def upgrade_options(flags, order, section):
    """({ignorePreflightErrors, certificateRenewal, etcdUpgrade, kubernetesVersion}, flags): from
    UpgradeConfiguration's `section` (apply or node) with --config, else from the flags."""
    docs = mixed_or_config(flags, order, {"UpgradeConfiguration"})
    if docs is not None:
        opts = (docs.get("UpgradeConfiguration") or {}).get(section) or {}
        return {"ignore": list(opts.get("ignorePreflightErrors") or []), "certs": opts.get("certificateRenewal", True),
                "etcd": opts.get("etcdUpgrade", True), "version": opts.get("kubernetesVersion"),
                "force": opts.get("forceUpgrade", False)}
    return {"ignore": split_list(flags.get("ignore-preflight-errors")),
            "certs": flags.get("certificate-renewal", True), "etcd": flags.get("etcd-upgrade", True),
            "version": None, "force": bool(flags.get("force") or flags.get("f"))}


def upgrade_cluster(target):
    """The cluster as `upgrade` sees it: the uploaded ClusterConfiguration at version target."""
    doc = dict(cluster_config())
    doc["kubernetesVersion"] = target
    return Cluster(doc)


def cmd_upgrade_plan(pos, flags):
    admin_kubeconfig(flags)
    current = manifest_tag("kube-apiserver")
    if not current:
        raise Fail(f"[upgrade/plan] FATAL: {MANIFESTS}/kube-apiserver.yaml: no such file or directory (kk stand-in: "
                   "`upgrade plan` reads the cluster's version on a control plane)")
    target = pos[0] if pos else VERSION
    print("[upgrade/config] Reading configuration from the cluster...")
    version_policy(target, current, kubelet_versions(), False)
    print(f"[upgrade/versions] Cluster version: {current}\n[upgrade/versions] kubeadm version: {VERSION}\n")
    print("Upgrade to the latest stable version:\n")
    print(f"{'COMPONENT':<26}{'NODE':<12}{'CURRENT':<12}TARGET")
    for node, kubelet in sorted(kubelet_versions().items()):
        print(f"{'kubelet':<26}{node:<12}{kubelet:<12}{target}")
    for pod in CONTROL_PLANE_PODS + ("kube-proxy",):
        print(f"{pod:<26}{'':<12}{current:<12}{target}")
    print(f"\nYou can now apply the upgrade by executing the following command:\n\n\tkubeadm upgrade apply {target}")


def cmd_upgrade_apply(pos, flags, order):
    if flags.get("dry-run"):
        raise Fail("this stand-in kubeadm does not do --dry-run")
    opts = upgrade_options(flags, order, "apply")
    target = pos[0] if pos else opts["version"]
    if not target:
        raise Fail("missing one or more required arguments. Required arguments: [version]")
    target = target if str(target).startswith("v") else f"v{target}"
    admin_kubeconfig(flags)
    print("[upgrade] Reading configuration from the cluster...")
    current = manifest_tag("kube-apiserver")
    if not current:
        raise Fail(f"[upgrade/init config] FATAL: {MANIFESTS}/kube-apiserver.yaml: no such file or directory "
                   "(`kubeadm upgrade apply` runs on a control plane node)")
    print(f"[upgrade/version] You have chosen to change the cluster version to \"{target}\"\n"
          f"[upgrade/versions] Cluster version: {current}\n[upgrade/versions] kubeadm version: {VERSION}")
    version_policy(target, current, kubelet_versions(), opts["force"])
    if target != VERSION:
        raise Fail(f"this stand-in kubeadm {VERSION} upgrades to {VERSION} only, not {target}")
    confirm(flags)
    cluster = upgrade_cluster(target)
    upgrade_control_plane(cluster, opts, node_cri())
    upload_config(cluster.doc, target)
    print(f'\n[upgrade] SUCCESS! A control plane node of your cluster was upgraded to "{target}".\n\n'
          "[upgrade] Now please proceed with upgrading the rest of the nodes by following the right order.")


def upgrade_control_plane(cluster, opts, cri):
    """What apply and node do on a control plane: pull the target's images through the runtime,
    renew the certificates, rewrite the static pods and wait for them, write the kubelet config."""
    stacked = os.path.isfile(P(f"{MANIFESTS}/etcd.yaml"))
    pf = Preflight(opts["ignore"])
    pf.pull(cluster.images(etcd=stacked), "IfNotPresent", cri)
    pf.finish()
    if opts["certs"]:
        renew_for_upgrade(cluster, stacked)
    wait_static_pods(upgrade_manifests(cluster, opts["etcd"]))
    write_kubelet_config(cluster)


def cmd_upgrade_node(pos, flags, order):
    if pos:
        raise Fail(f'unknown command "{pos[0]}" for "kubeadm upgrade node"')
    if flags.get("dry-run"):
        raise Fail("this stand-in kubeadm does not do --dry-run")
    opts = upgrade_options(flags, order, "node")
    print("[upgrade] Reading configuration from the cluster...")
    doc = cluster_config()
    version = str(doc.get("kubernetesVersion") or "")
    version = version if version.startswith("v") else f"v{version}"
    if manifest_tag("kube-apiserver") is None:
        print("[upgrade] Skipping phase. Not a control plane node.")
        write_kubelet_config(Cluster(dict(doc, kubernetesVersion=VERSION)))
        print("[upgrade] The configuration for this node was successfully upgraded!")
        return
    if version != VERSION:
        raise Fail(f'[upgrade] FATAL: the cluster is at "{version}" and this kubeadm at "{VERSION}" (kk stand-in: '
                   f"`kubeadm upgrade apply {VERSION}` on the first control plane comes first)")
    upgrade_control_plane(upgrade_cluster(version), opts, node_cri())
    print("[upgrade] The control plane instance for this node was successfully upgraded!\n"
          "[upgrade] The configuration for this node was successfully upgraded!")


def cmd_upgrade(pos, flags, order):
    sub, rest = (pos[0], pos[1:]) if pos else ("", [])
    if sub == "plan":
        cmd_upgrade_plan(rest, flags)
    elif sub == "apply":
        cmd_upgrade_apply(rest, flags, order)
    elif sub == "node":
        cmd_upgrade_node(rest, flags, order)
    else:
        raise Fail(f'unknown command "{sub}" for "kubeadm upgrade" (the kk stand-in has plan, apply and node)')


def main(argv):
    positional, flags, order = parse(argv)
    if not positional:
        if flags.get("version"):
            cmd_version([], flags)
            return 0
        raise Fail("kk stand-in kubeadm: a command is required (version, config, init, join, token, reset, certs, "
                   "upgrade)")
    command, rest = positional[0], positional[1:]
    if command == "version":
        cmd_version(rest, flags)
    elif command == "config":
        cmd_config(rest, flags, order)
    elif command == "init":
        if rest[:1] == ["phase"]:
            raise Fail('unknown command "phase" for "kubeadm init" (not in the kk stand-in)')
        cmd_init(rest, flags, order)
    elif command == "join":
        cmd_join(rest, flags, order)
    elif command == "token":
        cmd_token(rest, flags)
    elif command == "reset":
        cmd_reset(rest, flags, order)
    elif command == "certs":
        cmd_certs(rest, flags)
    elif command == "upgrade":
        cmd_upgrade(rest, flags, order)
    else:
        raise Fail(f'unknown command "{command}" for "kubeadm"')


if __name__ == "__main__":
    sys.exit(run("kubeadm", main, STACK_HINT))

# What the kk lab stand-ins for kubeadm, kubelet, kubectl and crictl share (README.md beside this
# file): the call log, the node's paths below KK_STANDIN_ROOT, the KK_STANDIN_* overrides, the
# command line, errors and log lines, and images through containerd's ctr (or, behind cri-dockerd,
# through dockerd with the docker CLI).
#
# Each stand-in imports this with the line `from common import *  # kk-standin: common`: run from
# this directory (the self-test), Python finds common.py beside the script. A node has no
# common.py: scripts/lab/catalog.py puts this file's text in place of that line when it writes a
# stand-in, so what the lab serves is one self-contained file. Both ways must behave the same,
# hence: nothing here reads a name of the importing script (pass it in), no stand-in defines a
# name defined here, and this file has no shebang, `from __future__` or `__all__`.

import json
import os
import socket
import stat
import subprocess
import sys
import time
import tomllib

# ---- the environment (for the self-test; the defaults are the node's) ----

ROOT = os.environ.get("KK_STANDIN_ROOT", "")
CTR = os.environ.get("KK_STANDIN_CTR", "/usr/local/bin/ctr")
CONTAINERD = os.environ.get("KK_STANDIN_CONTAINERD", "/usr/local/bin/containerd")
DOCKER = os.environ.get("KK_STANDIN_DOCKER", "/usr/local/bin/docker")
SYSTEMCTL = os.environ.get("KK_STANDIN_SYSTEMCTL", "systemctl")
JOURNALCTL = os.environ.get("KK_STANDIN_JOURNALCTL", "journalctl")
KUBELET_TIMEOUT = float(os.environ.get("KK_STANDIN_KUBELET_TIMEOUT", "60"))
KUBELET_INTERVAL = float(os.environ.get("KK_STANDIN_KUBELET_INTERVAL", "3"))
KUBELET_ONCE = os.environ.get("KK_STANDIN_KUBELET_ONCE") == "1"
# What an API server would know of the whole cluster: a directory the lab binds into every node
# (scripts/lab/nspawn.sh), absolute so the self-test's nodes (each its own KK_STANDIN_ROOT) share it.
CLUSTER = os.environ.get("KK_STANDIN_CLUSTER") or ROOT + "/var/lib/kk-standin/cluster"

# ---- node paths the stand-ins share ----

READY = "/var/lib/kubelet/kk-standin-ready"  # the kubelet writes it, kubeadm waits for it, kubectl reads it
HOSTS_DIR = "/etc/containerd/certs.d"
CONTAINERD_CONFIG = "/etc/containerd/config.toml"
DEFAULT_CRI = "unix:///run/containerd/containerd.sock"


def P(path):
    """path on the node (below KK_STANDIN_ROOT for the self-test)."""
    return ROOT + path


def read(path):
    with open(P(path)) as f:
        return f.read()


def write(path, text, mode=0o644):
    """Writes a node file atomically (its directory made)."""
    os.makedirs(os.path.dirname(P(path)), exist_ok=True)
    tmp = P(path) + ".kk-standin.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, P(path))


def remove(path):
    """Removes a node file; one that is not there is fine."""
    try:
        os.remove(P(path))
    except OSError:
        pass


def is_socket(path):
    try:
        return stat.S_ISSOCK(os.stat(P(path)).st_mode)
    except OSError:
        return False


def swap_on():
    """A swap device or file in /proc/swaps (a line after the header)."""
    try:
        return len(read("/proc/swaps").splitlines()) > 1
    except OSError:
        return False


# ---- the process: call log, errors, log lines ----

class Fail(Exception):
    """An error the stand-in reports on stderr, in the real tool's words (then exit 1)."""


def log_call(name):
    """One line `<name> <args>` in the call log, first thing in every stand-in; the same line after
    the node's host name in the cluster's call log (CLUSTER/calls, when the cluster directory is
    there), whose order is the order of calls across nodes."""
    line = " ".join([name] + sys.argv[1:]) + "\n"
    try:
        with open(os.environ.get("KK_STANDIN_LOG") or "/tmp/kk-standin.log", "a") as f:
            f.write(line)
    except OSError:
        pass
    if os.path.isdir(CLUSTER):
        try:
            # One write of an O_APPEND file: lines of nodes writing at once do not interleave.
            fd = os.open(f"{CLUSTER}/calls", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{socket.gethostname().lower()} {line}".encode())
            finally:
                os.close(fd)
        except OSError:
            pass


# ---- the cluster's nodes (CLUSTER/nodes/NAME/): what the API server's Node objects would say ----

def node_dir(name):
    return f"{CLUSTER}/nodes/{name}"


def write_node_status(name, status):
    """The kubelet's part of node NAME's record (CLUSTER/nodes/NAME/kubelet, JSON: kubeletVersion,
    ready, controlPlane), written atomically; cordoning is kubectl's own file beside it."""
    os.makedirs(node_dir(name), exist_ok=True)
    tmp = f"{node_dir(name)}/kubelet.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(status, f)
    os.replace(tmp, f"{node_dir(name)}/kubelet")


def cluster_nodes():
    """{name: {kubeletVersion, ready, controlPlane, unschedulable}} of every node whose kubelet
    registered in the cluster directory."""
    nodes = {}
    try:
        names = sorted(os.listdir(f"{CLUSTER}/nodes"))
    except OSError:
        return nodes
    for name in names:
        try:
            with open(f"{node_dir(name)}/kubelet") as f:
                status = json.load(f)
        except (OSError, ValueError):
            continue
        status["unschedulable"] = os.path.exists(f"{node_dir(name)}/unschedulable")
        nodes[name] = status
    return nodes


def run(name, main, hint=None):
    """The exit status of the stand-in `name`: logs the call, then main(argv); a Fail goes to
    stderr (then hint) and is status 1."""
    log_call(name)
    try:
        return main(sys.argv[1:]) or 0
    except Fail as e:
        print(str(e), file=sys.stderr)
        if hint:
            print(hint, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def klog(level, message, where="kubelet.go"):
    """A log line in klog's shape on stderr (systemd's journal gets it); where: its source."""
    now = time.time()
    print(f"{level}{time.strftime('%m%d %H:%M:%S', time.localtime(now))}.{int(now % 1 * 1e6):06d} "
          f"{os.getpid():7d} {where}] {message}", file=sys.stderr, flush=True)


def logrus(level, message):
    """A log line in logrus's shape (crictl's), as text."""
    return f'time="{time.strftime("%Y-%m-%dT%H:%M:%S")}Z" level={level} msg="{message}"'


def cri_dial_error(endpoint, quote='"'):
    """What a CRI client says when endpoint's socket is not there (quote: `\\"` inside a logrus msg)."""
    sock = endpoint.removeprefix("unix://")
    q = quote
    return (f"validate service connection: validate CRI v1 runtime API for endpoint {q}{endpoint}{q}: rpc error: "
            f"code = Unavailable desc = connection error: desc = {q}transport: Error while dialing: dial unix "
            f"{sock}: connect: no such file or directory{q}")


# ---- command line ----

def parse_args(argv, value_flags, bool_flags=None, strict=False, true=True, prefix=""):
    """(flags, positional, given) of a Go-style command line: `--name=value`, `--name value` for the
    names in value_flags, `--name` alone (value `true`) for the others; given: every (name, value)
    in order, for flags that may be repeated.

    strict: `--` ends the flags, a lone `-` is an argument, and a value flag without its value is a
    Fail (prefix + "flag needs an argument: ..."). bool_flags: the other flags the command knows
    (`=false` and `=0` give False); with it, any other flag is a Fail (`unknown flag: ...`)."""
    flags, positional, given = {}, [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if strict and arg == "--":
            positional += argv[i:]
            break
        if not arg.startswith("-") or (strict and arg == "-"):
            positional.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if bool_flags is not None and name in bool_flags:
            value = value.lower() not in ("false", "0") if eq else true
        elif name in value_flags:
            if not eq:
                if i < len(argv):
                    value = argv[i]
                    i += 1
                elif strict:
                    raise Fail(f"{prefix}flag needs an argument: {arg}")
                else:
                    value = true
        elif bool_flags is not None:
            raise Fail(f"unknown flag: {arg}")
        elif not eq:
            value = true
        flags[name] = value
        given.append((name, value))
    return flags, positional, given


def yaml_module(name):
    try:
        import yaml
    except ImportError:
        raise Fail(f"kk stand-in {name}: python3-yaml (PyYAML) is not installed")
    return yaml


# ---- images through containerd ----

def normalize(ref):
    """containerd's name of an image reference."""
    first, _, rest = ref.partition("/")
    if not rest or not ("." in first or ":" in first or first == "localhost"):
        first, rest = "docker.io", ref
        if "/" not in rest:
            rest = "library/" + rest
    if ":" not in rest.rsplit("/", 1)[-1] and "@" not in rest:
        rest += ":latest"
    return f"{first}/{rest}"


def ctr_images():
    """The names of containerd's images (`ctr -n k8s.io images ls -q`); none when ctr fails."""
    try:
        out = subprocess.run([CTR, "-n", "k8s.io", "images", "ls", "-q"], capture_output=True, text=True)
    except OSError:
        return []
    return out.stdout.split() if out.returncode == 0 else []


def through_docker(endpoint):
    """Whether the CRI endpoint is cri-dockerd's, whose images are dockerd's: it pulls and lists
    them through dockerd (which resolves through /etc/docker/certs.d)."""
    return "cri-dockerd" in (endpoint or "")


def image_host(image):
    """The registry host an image reference names (`docker.io` when it names none)."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def cri_credentials(image):
    """`user:password` the CRI plugin would send for image, or None: the
    `registry.configs."<host>".auth` entry (config version 2's or 3's plugin) of a registry host
    the image host's hosts.toml mirrors to, as the CRI looks credentials up by the host it
    pulls from."""
    try:
        with open(P(CONTAINERD_CONFIG), "rb") as f:
            plugins = tomllib.load(f).get("plugins", {})
        with open(P(f"{HOSTS_DIR}/{image_host(image)}/hosts.toml")) as f:
            hosts = f.read()
    except (OSError, ValueError):
        return None
    for plugin in ("io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images"):
        configs = plugins.get(plugin, {}).get("registry", {}).get("configs", {})
        for registry, entry in configs.items():
            auth = entry.get("auth", {})
            mirrored = f'"https://{registry}"' in hosts or f'"https://{registry}/' in hosts
            if mirrored and auth.get("username"):
                return f"{auth['username']}:{auth.get('password', '')}"
    return None


def skip_metadata():
    """["--skip-metadata"] for a ctr that has it (2.x): like the CRI plugin, fetch the node's
    platform only, not every platform's manifest of an index (a bundle carries only its own)."""
    try:
        said = subprocess.run([CTR, "images", "pull", "--help"], capture_output=True, text=True).stdout
    except OSError:
        return []
    return ["--skip-metadata"] if "--skip-metadata" in said else []


def docker_images():
    """containerd's names of dockerd's images (`docker image ls`); none when docker fails."""
    try:
        out = subprocess.run([DOCKER, "image", "ls", "--digests", "--format",
                              "{{.Repository}}:{{.Tag}} {{.Repository}}@{{.Digest}}"], capture_output=True, text=True)
    except OSError:
        return []
    names = [n for n in out.stdout.split() if "<none>" not in n] if out.returncode == 0 else []
    return [normalize(n) for n in names]


def present_images(endpoint=DEFAULT_CRI):
    return set(docker_images() if through_docker(endpoint) else ctr_images())


def pull(image, endpoint=DEFAULT_CRI):
    """(ok, last line of the output): pulls image the way the runtime behind endpoint would:
    containerd's CRI plugin through containerd's hosts directory (with the credentials its config
    holds for the mirror), cri-dockerd through dockerd."""
    if through_docker(endpoint):
        try:
            out = subprocess.run([DOCKER, "pull", "--quiet", image], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        except OSError as e:
            return False, f"{DOCKER}: {e.strerror}"
        return out.returncode == 0, (out.stdout.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
    command = [CTR, "-n", "k8s.io", "images", "pull", *skip_metadata(), "--hosts-dir", P(HOSTS_DIR)]
    credentials = cri_credentials(image)
    if credentials:
        command += ["--user", credentials]
    try:
        out = subprocess.run(command + [image],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        return False, f"{CTR}: {e.strerror}"
    return out.returncode == 0, (out.stdout.strip().splitlines() or [f"exit status {out.returncode}"])[-1]


def containerd_version():
    """What `containerd --version` prints ("" when it does not run)."""
    try:
        return subprocess.run([CONTAINERD, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return ""

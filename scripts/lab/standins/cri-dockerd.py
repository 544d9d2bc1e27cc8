#!/usr/bin/env python3
''':'
exec python3 "$0" "$@"
'''
# kk lab stand-in for cri-dockerd; not the real program (scripts/lab/standins/README.md says what
# it checks). Like the real one it refuses flags it does not know, needs dockerd answering on its
# --docker-endpoint and, with `--container-runtime-endpoint fd://`, the socket systemd passes it;
# it then pulls its --pod-infra-container-image through the REAL dockerd (docker's API on its
# socket, which resolves through /etc/docker/certs.d) with the credentials the real one's keyring
# finds for the image (X-Registry-Auth, see keyring_lookup), tells systemd it is ready and holds
# the CRI socket, answering no CRI call. The lines above let `sh cri-dockerd ...` run it too.
# scripts/lab/catalog.py replaces VERSION when it writes the stand-in for a catalog, and the
# `from common import *` line with common.py (what the stand-ins share).

import base64
import fnmatch
import http.client
import json
import os
import socket
import sys
import urllib.parse

VERSION = "0.3.26"  # set by scripts/lab/catalog.py

sys.dont_write_bytecode = True  # run from the repo: no __pycache__ beside common.py
from common import *  # kk-standin: common

# cri-dockerd's flags (its `--help`), with their defaults where the stand-in reads them.
DOCKERD_VALUE_FLAGS = {"container-runtime-endpoint", "docker-endpoint", "pod-infra-container-image", "network-plugin",
                       "cni-bin-dir", "cni-conf-dir", "cni-cache-dir", "log-level", "pod-cidr", "runtime-cgroups",
                       "cri-dockerd-root-directory", "hairpin-mode", "image-pull-progress-deadline",
                       "streaming-bind-addr", "network-plugin-mtu", "cgroup-driver"}
DOCKERD_BOOL_FLAGS = {"version", "help", "h", "ipv6-dual-stack", "buildinfo", "info"}
DEFAULT_DOCKER = "unix:///var/run/docker.sock"
# cri-dockerd's default sandbox image (its config/options.go).
DEFAULT_PAUSE = "registry.k8s.io/pause:3.10"


class DockerSocket(http.client.HTTPConnection):
    """HTTP to dockerd over its unix socket."""

    def __init__(self, path, timeout=600):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def docker_call(endpoint, method, path, headers=None):
    """(status, body) of dockerd's API at endpoint, or a Fail naming the endpoint."""
    sock = P(endpoint.removeprefix("unix://"))
    try:
        conn = DockerSocket(sock)
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode(errors="replace")
    except OSError as e:
        raise Fail(f'level=fatal msg="Cannot connect to the Docker daemon at {endpoint}. Is the docker daemon '
                   f'running?: {e.strerror or e}"')


def config_files():
    """The files cri-dockerd's keyring reads, in its order (k8s.io/kubernetes
    pkg/credentialprovider/config.go, vendored by cri-dockerd, which sets no preferred path):
    `config.json` in the working directory, `$HOME/.docker` and `/.docker`, the first that reads
    and parses winning; only when none does, the legacy `.dockercfg` in the working directory,
    `$HOME` and `/`. As a systemd service without User= it has no $HOME (os.UserHomeDir fails:
    the relative `.docker` is the working directory's), and its working directory is `/`."""
    cwd = os.getcwd()
    home = os.environ.get("HOME", "")
    json_files = [os.path.join(cwd, "config.json"), os.path.join(cwd, home, ".docker", "config.json"),
                  "/.docker/config.json"]
    legacy = [os.path.join(cwd, ".dockercfg"), os.path.join(cwd, home, ".dockercfg"), "/.dockercfg"]
    return json_files, legacy


def read_docker_config():
    """{registry key: (username, password)} of the first config file that parses, as
    credentialprovider.ReadDockerConfigFile reads them (config.json's `auths`, or .dockercfg's
    top level)."""
    json_files, legacy = config_files()
    for files, unwrap in ((json_files, lambda c: c.get("auths")), (legacy, lambda c: c)):
        for path in files:
            try:
                entries = unwrap(json.loads(read(path)))
            except (OSError, ValueError, AttributeError):
                continue
            if not isinstance(entries, dict):
                continue
            creds = {}
            for key, entry in entries.items():
                user, password = entry.get("username", ""), entry.get("password", "")
                if entry.get("auth"):
                    user, _, password = base64.b64decode(entry["auth"]).decode().partition(":")
                creds[key] = (user, password)
            return creds
    return {}


def keyring_key(location):
    """The key credentialprovider's BasicDockerKeyring.Add files an entry under: host and path
    of the location as an https URL, `/v1/` or `/v2/` dropped."""
    parsed = urllib.parse.urlsplit(location if "://" in location else "https://" + location)
    path = parsed.path
    if path.startswith(("/v1/", "/v2/")):
        path = path[3:]
    return parsed.netloc + path if path not in ("", "/") else parsed.netloc


def key_matches(key, repo):
    """credentialprovider's URLsMatchStr: the same number of host labels, each a glob of the
    repository's, the same port, and the key's path a prefix of the repository's."""
    key_host, _, key_path = key.partition("/")
    repo_host, _, repo_path = repo.partition("/")
    key_host, _, key_port = key_host.partition(":")
    repo_host, _, repo_port = repo_host.partition(":")
    key_labels, repo_labels = key_host.split("."), repo_host.split(".")
    return (len(key_labels) == len(repo_labels) and key_port == repo_port
            and all(fnmatch.fnmatchcase(r, k) for k, r in zip(key_labels, repo_labels))
            and repo_path.startswith(key_path))


def keyring_lookup(image):
    """The credentials cri-dockerd's keyring finds for image's repository (its own name, e.g.
    registry.k8s.io/pause: never a mirror's), most specific key first; [] when none match."""
    repo = image.split("@", 1)[0]
    if ":" in repo.rsplit("/", 1)[-1]:
        repo = repo.rsplit(":", 1)[0]
    first = repo.split("/", 1)[0]
    if "/" not in repo or ("." not in first and ":" not in first and first != "localhost"):
        # Docker Hub's short names, as the keyring's default registry.
        repo = "index.docker.io/" + (repo if "/" in repo else "library/" + repo)
    keyring = {}
    for location, creds in read_docker_config().items():
        keyring.setdefault(keyring_key(location), []).append(creds)
    return [creds for key in sorted(keyring, reverse=True) if key_matches(key, repo) for creds in keyring[key]]


def registry_auth(username="", password=""):
    """X-Registry-Auth as cri-dockerd's docker client sends it: the AuthConfig as JSON in URL-safe
    base64; `{}` (no credentials) is sent too."""
    config = {"username": username, "password": password} if username or password else {}
    return base64.urlsafe_b64encode(json.dumps(config, separators=(",", ":")).encode()).decode()


def docker_pull(endpoint, image):
    """Pulls image as cri-dockerd's ensureSandboxImageExists does: with each credential its keyring
    finds until one works, else without; a Fail with dockerd's errors when no pull works."""
    creds = keyring_lookup(image)
    if not creds:
        print(logrus("info", f"Pulling the image without credentials. Image: {image}"), file=sys.stderr, flush=True)
        docker_pull_with(endpoint, image, registry_auth())
        return
    errors = []
    for username, password in creds:
        try:
            docker_pull_with(endpoint, image, registry_auth(username, password))
            return
        except Fail as e:
            errors.append(str(e))
    raise Fail("; ".join(errors))


def docker_pull_with(endpoint, image, auth):
    """Pulls image through dockerd (POST /images/create with X-Registry-Auth, as cri-dockerd's
    docker client does); a Fail with dockerd's error when it cannot."""
    status, body = docker_call(endpoint, "POST", "/images/create?" + urllib.parse.urlencode({"fromImage": image}),
                               {"X-Registry-Auth": auth})
    errors = []
    for line in body.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and (message.get("error") or message.get("message")) and \
                (message.get("error") or status >= 400):
            errors.append(message.get("error") or message.get("message"))
    if status >= 400 or errors:
        reason = errors[-1] if errors else body.strip()
        raise Fail(f'level=fatal msg="Failed to pull the sandbox image {image}: Error response from daemon: {reason}"')


def listening_socket(endpoint):
    """The CRI socket: fd 3 from systemd for `fd://`, else endpoint's path, made here."""
    if endpoint == "fd://":
        if os.environ.get("LISTEN_PID") != str(os.getpid()) or int(os.environ.get("LISTEN_FDS", "0")) < 1:
            raise Fail('level=fatal msg="listener failed: no sockets passed by systemd (LISTEN_FDS) for fd://"')
        return socket.socket(fileno=3)
    path = P(endpoint.removeprefix("unix://"))
    if os.path.exists(path):
        os.remove(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    return listener


def notify_ready():
    """sd_notify READY=1 (the unit is Type=notify)."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.connect(address)
        s.sendall(b"READY=1")


def main(argv):
    try:
        flags, positional, _ = parse_args(argv, DOCKERD_VALUE_FLAGS, DOCKERD_BOOL_FLAGS)
    except Fail as e:
        raise Fail(f"Error: {e}")  # cobra's words
    if flags.get("version"):
        print(f"cri-dockerd {VERSION} (kk stand-in)")
        return 0
    if positional:
        raise Fail(f'Error: unknown command "{positional[0]}" for "cri-dockerd"')
    if flags.get("network-plugin") not in (None, "", "cni", "kubenet"):
        raise Fail(f'level=fatal msg="network plugin {flags["network-plugin"]} not found"')
    docker = flags.get("docker-endpoint") or DEFAULT_DOCKER
    status, _ = docker_call(docker, "GET", "/_ping")
    if status != 200:
        raise Fail(f'level=fatal msg="Docker daemon at {docker} answers /_ping with {status}"')
    docker_pull(docker, flags.get("pod-infra-container-image") or DEFAULT_PAUSE)
    listener = listening_socket(flags.get("container-runtime-endpoint") or "unix:///var/run/cri-dockerd.sock")
    print(logrus("info", f"Start cri-dockerd grpc backend (kk stand-in {VERSION})"), file=sys.stderr, flush=True)
    notify_ready()
    while True:
        conn, _ = listener.accept()
        conn.close()


if __name__ == "__main__":
    sys.exit(run("cri-dockerd", main))

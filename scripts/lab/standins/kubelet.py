#!/usr/bin/env python3
''':'
exec python3 "$0" "$@"
'''
# kk lab stand-in for the kubelet; not the real program (scripts/lab/standins/README.md says what it
# checks and writes). Started by systemd like the real one, it fails to start for the reasons the
# real kubelet would on a node kk prepared (no config yet, no kubeconfig, swap, a cgroup driver
# that differs from the runtime's, no runtime socket), then pulls through containerd every image
# the static pods of its manifest directory need and reports that in a ready file. It runs no
# container. The lines above let `sh kubelet ...` run it too. scripts/lab/catalog.py replaces
# VERSION when it writes the stand-in for a catalog, and the `from common import *` line with
# common.py (what the stand-ins share).

import os
import re
import signal
import socket
import sys
import time

VERSION = "v1.33.0"  # set by scripts/lab/catalog.py

sys.dont_write_bytecode = True  # run from the repo: no __pycache__ beside common.py
from common import *  # kk-standin: common

CONTAINERD_CONFIG = "/etc/containerd/config.toml"
DOCKER_CONFIG = "/etc/docker/daemon.json"
VALUE_FLAGS = {"config", "kubeconfig", "bootstrap-kubeconfig", "container-runtime-endpoint",
               "pod-infra-container-image", "node-ip", "hostname-override", "v", "cgroup-driver",
               "fail-swap-on", "root-dir", "cert-dir", "runtime-request-timeout", "node-labels",
               "register-with-taints", "max-pods", "pod-manifest-path", "resolv-conf"}


def fail(message):
    klog("E", f'"command failed" err="{message}"')
    sys.exit(1)


def load_yaml(path, what):
    try:
        yaml = yaml_module("kubelet")
    except Fail as e:
        fail(str(e))
    try:
        text = read(path)
    except OSError as e:
        if what == "config":
            fail(f"failed to load kubelet config file, path: {path}, error: failed to load Kubelet config file "
                 f"{path}, error failed to read kubelet config file \"{path}\", error: open {path}: "
                 f"{e.strerror.lower()}")
        fail(f"invalid kubeconfig: open {path}: {e.strerror.lower()}")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        fail(f"failed to load kubelet config file, path: {path}, error: failed to decode: yaml: {e}")


def runtime_cgroup_driver(endpoint):
    """(driver, where it is set) of the container runtime behind endpoint."""
    if "cri-dockerd" in endpoint:
        try:
            import json
            opts = json.loads(read(DOCKER_CONFIG)).get("exec-opts") or []
        except (OSError, ValueError):
            opts = []
        for opt in opts:
            if opt.startswith("native.cgroupdriver="):
                return opt.split("=", 1)[1], f"exec-opts {opt} in {DOCKER_CONFIG}"
        return "cgroupfs", f"docker's default (no native.cgroupdriver in {DOCKER_CONFIG})"
    try:
        text = read(CONTAINERD_CONFIG)
    except OSError:
        return "cgroupfs", f"containerd's default (no {CONTAINERD_CONFIG})"
    values = re.findall(r"^\s*SystemdCgroup\s*=\s*(true|false)\b", text, re.M)
    if not values:
        return "cgroupfs", f"containerd's default (no SystemdCgroup in {CONTAINERD_CONFIG})"
    return ("systemd" if values[-1] == "true" else "cgroupfs"), f"SystemdCgroup = {values[-1]} in {CONTAINERD_CONFIG}"


def sandbox_image():
    """The pause image containerd's CRI plugin runs pod sandboxes with."""
    try:
        text = read(CONTAINERD_CONFIG)
    except OSError:
        text = ""
    # Config version 2 writes "…", version 3 (containerd 2.x) '…'.
    m = re.search(r'^\s*sandbox(?:_image)?\s*=\s*(["\'])([^"\']+)\1', text, re.M)
    if m:
        return m.group(2)
    m = re.search(r"\s v?(\d+)\.(\d+)", containerd_version())
    version = (int(m.group(1)), int(m.group(2))) if m else (1, 7)
    tag = "3.6" if version < (1, 7) else "3.8" if version < (2, 0) else "3.10"
    return f"registry.k8s.io/pause:{tag}"


def static_pods(directory):
    """(file, [(image, pullPolicy)]) for each manifest the kubelet would read (not dot files)."""
    import yaml
    pods = []
    path = P(directory)
    if not os.path.isdir(path):
        return pods
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if entry.startswith(".") or not os.path.isfile(full):
            continue
        try:
            with open(full) as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            klog("E", f'"Could not process manifest file" err="{e}" path="{directory}/{entry}"')
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "Pod" or not isinstance(doc.get("spec"), dict):
            klog("E", f'"Could not process manifest file" err="invalid pod: not a Pod" path="{directory}/{entry}"')
            continue
        containers = (doc["spec"].get("initContainers") or []) + (doc["spec"].get("containers") or [])
        images = [(c.get("image"), c.get("imagePullPolicy")) for c in containers if isinstance(c, dict)]
        if not images or any(not image for image, _ in images):
            klog("E", f'"Could not process manifest file" err="a container has no image" path="{directory}/{entry}"')
            continue
        pods.append((entry, images))
    return pods


def register(node, ready, control_plane):
    """This kubelet's status in the cluster's record of node (common.write_node_status), as the
    real kubelet registers its Node and posts its status; a failure is logged, as the real one's."""
    try:
        write_node_status(node, {"kubeletVersion": VERSION, "ready": ready, "controlPlane": control_plane})
    except OSError as e:
        klog("E", f'"Unable to register node with API server" err="{e}" node="{node}"')


def main(argv):
    flags, positional, _ = parse_args(argv, VALUE_FLAGS, true="true")
    if positional[:1] == ["version"] or flags.get("version") in ("true", "raw"):
        print(f"Kubernetes {VERSION}")
        return 0
    config = {}
    config_path = flags.get("config")
    if config_path:
        config = load_yaml(config_path, "config") or {}
        if not isinstance(config, dict) or config.get("kind") != "KubeletConfiguration":
            fail(f"failed to load kubelet config file, path: {config_path}, error: no kind "
                 f"\"{config.get('kind') if isinstance(config, dict) else ''}\" is registered for version "
                 f"\"{config.get('apiVersion') if isinstance(config, dict) else ''}\"")
        if config.get("apiVersion") != "kubelet.config.k8s.io/v1beta1":
            fail(f"failed to load kubelet config file, path: {config_path}, error: no kind \"KubeletConfiguration\" "
                 f"is registered for version \"{config.get('apiVersion')}\"")
    klog("I", f'"Kubelet version" kubeletVersion="{VERSION}" (kk lab stand-in)')

    kubeconfig = flags.get("kubeconfig")
    bootstrap = flags.get("bootstrap-kubeconfig")
    if kubeconfig:
        if os.path.isfile(P(kubeconfig)):
            doc = load_yaml(kubeconfig, "kubeconfig") or {}
            for user in (doc.get("users") or []) if isinstance(doc, dict) else []:
                for key in ("client-certificate", "client-key"):
                    ref = (user.get("user") or {}).get(key) if isinstance(user, dict) else None
                    if ref and not os.path.isfile(P(ref)):
                        fail(f"failed to run Kubelet: unable to load client CA file / client certificate: "
                             f"open {ref}: no such file or directory")
        elif bootstrap and os.path.isfile(P(bootstrap)):
            klog("I", f'"Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file" '
                      f'bootstrapKubeconfig="{bootstrap}"')
        elif bootstrap:
            fail(f"failed to run Kubelet: unable to load bootstrap kubeconfig: stat {bootstrap}: no such file or "
                 "directory")
        else:
            fail(f"failed to run Kubelet: invalid kubeconfig: stat {kubeconfig}: no such file or directory")

    fail_swap_on = flags.get("fail-swap-on", str(config.get("failSwapOn", True)).lower()) != "false"
    if fail_swap_on and swap_on():
        fail("failed to run Kubelet: running with swap on is not supported, please disable swap or set "
             "--fail-swap-on flag to false")

    endpoint = flags.get("container-runtime-endpoint") or config.get("containerRuntimeEndpoint") or DEFAULT_CRI
    driver = flags.get("cgroup-driver") or config.get("cgroupDriver") or "cgroupfs"
    runtime_driver, where = runtime_cgroup_driver(endpoint)
    if driver != runtime_driver:
        fail(f'failed to run Kubelet: misconfiguration: kubelet cgroup driver: "{driver}" (cgroupDriver in '
             f'{config_path or "its flags"}) is different from container runtime cgroup driver: '
             f'"{runtime_driver}" ({where})')
    if not is_socket(endpoint.removeprefix("unix://")):
        fail(f"failed to run Kubelet: {cri_dial_error(endpoint)}")

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    remove(READY)
    manifests = flags.get("pod-manifest-path") or config.get("staticPodPath")
    # The node as `kubectl get nodes` sees it: this kubelet's version, NotReady until its images are in.
    node = (flags.get("hostname-override") or socket.gethostname()).lower()
    control_plane = bool(manifests) and os.path.isfile(P(f"{manifests}/kube-apiserver.yaml"))
    register(node, False, control_plane)
    infra = flags.get("pod-infra-container-image")
    pulled, written = set(), None
    klog("I", f'"Started kubelet (kk lab stand-in)" staticPodPath="{manifests or ""}"')
    while not stop:
        wanted = []
        pods = static_pods(manifests) if manifests else []
        for _, images in pods:
            wanted += images
        # Behind cri-dockerd the sandbox image is cri-dockerd's own (its
        # --pod-infra-container-image, which its stand-in pulled when it started).
        if pods and not through_docker(endpoint):
            wanted.append((sandbox_image(), None))
        if infra:
            wanted.append((infra, None))
        present = None
        complete = True
        for image, policy in wanted:
            key = (normalize(image), policy)
            if key in pulled:
                continue
            if policy != "Always":
                present = present_images(endpoint) if present is None else present
                if normalize(image) in present:
                    pulled.add(key)
                    continue
            ok, output = pull(image, endpoint)
            if ok:
                klog("I", f'"Pulled image" image="{image}"')
                pulled.add(key)
            else:
                complete = False
                klog("E", f'"Failed to pull image" err="failed to pull and unpack image \\"{image}\\": {output}" '
                          f'image="{image}"')
                klog("E", f'"Back-off pulling image" image="{image}" (ImagePullBackOff)')
        if complete:
            names = sorted({image for image, _ in wanted})
            if names != written:
                write(READY, "".join(f"{i}\n" for i in names))
                written = names
                register(node, True, control_plane)
                klog("I", f'"kk stand-in: every image pulled" images="{",".join(names)}" readyFile="{READY}"')
        if KUBELET_ONCE:
            break
        deadline = time.monotonic() + KUBELET_INTERVAL
        while not stop and time.monotonic() < deadline:
            time.sleep(min(0.2, KUBELET_INTERVAL))
    klog("I", '"Shutting down"')
    return 0


if __name__ == "__main__":
    sys.exit(run("kubelet", main))

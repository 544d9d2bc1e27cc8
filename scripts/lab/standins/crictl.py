#!/usr/bin/env python3
''':'
exec python3 "$0" "$@"
'''
# kk lab stand-in for crictl; not the real program (scripts/lab/standins/README.md says what it
# checks). Like the real one it finds the runtime endpoint in its flags, /etc/crictl.yaml or the
# default sockets and fails when that socket does not exist; `version`, `info`, `ps`, `pods` and
# `images` then answer (images from containerd, through ctr), anything else fails. The lines above
# let `sh crictl ...` run it too. scripts/lab/catalog.py replaces VERSION when it writes the
# stand-in for a catalog, and the `from common import *` line with common.py (what the stand-ins share).

import hashlib
import json
import os
import re
import sys

VERSION = "v1.33.0"  # set by scripts/lab/catalog.py

sys.dont_write_bytecode = True  # run from the repo: no __pycache__ beside common.py
from common import *  # kk-standin: common

DEFAULTS = [DEFAULT_CRI, "unix:///run/crio/crio.sock", "unix:///var/run/cri-dockerd.sock"]
REAL_COMMANDS = {"attach", "create", "exec", "imagefsinfo", "inspect", "inspecti", "inspectp", "logs", "port-forward",
                 "pull", "rm", "rmi", "rmp", "runp", "start", "stats", "statsp", "stop", "stopp", "update", "config",
                 "checkpoint", "events", "completion", "update-runtime-config", "metricsp", "run"}
VALUE_FLAGS = {"runtime-endpoint", "r", "image-endpoint", "i", "timeout", "t", "config", "c", "o", "output",
               "name", "namespace", "label", "state", "pod", "image", "id"}


def fatal(message):
    print(logrus("fatal", message), file=sys.stderr)
    sys.exit(1)


def endpoint(flags):
    config = flags.get("config") or flags.get("c") or "/etc/crictl.yaml"
    chosen = flags.get("runtime-endpoint") or flags.get("r") or os.environ.get("CONTAINER_RUNTIME_ENDPOINT")
    if not chosen:
        try:
            with open(P(config)) as f:
                m = re.search(r"^runtime-endpoint:\s*['\"]?([^'\"\s]+)", f.read(), re.M)
                chosen = m.group(1) if m else None
        except OSError:
            pass
    candidates = [chosen] if chosen else DEFAULTS
    if not chosen:
        print(logrus("warning", f"runtime connect using default endpoints: {candidates}. As the default "
                                "settings are now deprecated, you should set the endpoint instead."), file=sys.stderr)
    for candidate in candidates:
        if is_socket(candidate.removeprefix("unix://")):
            return candidate
    fatal(cri_dial_error(candidates[-1], quote='\\"'))


def runtime_version():
    m = re.search(r"\s(v?\d+\.\d+\.\d+\S*)", containerd_version())
    return m.group(1) if m else "unknown"


def images():
    return [r for r in ctr_images() if not r.startswith("sha256:")]


def static_containers(flags):
    """One running container per static pod manifest in /etc/kubernetes/manifests (the kubelet
    stand-in runs none; this stands for the pods the kubelet would run from them): (id, name),
    the id new whenever the manifest changes, filtered by `--name` (a regex) and `--state`."""
    directory = P("/etc/kubernetes/manifests")
    if flags.get("state") not in (None, "running", "Running") or not os.path.isdir(directory):
        return []
    found = []
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".yaml"):
            continue
        name = entry[:-5]
        if flags.get("name") and not re.search(flags["name"], name):
            continue
        stamp = os.stat(os.path.join(directory, entry)).st_mtime_ns
        found.append((hashlib.sha256(f"{name} {stamp}".encode()).hexdigest()[:13], name))
    return found


def main(argv):
    flags, positional, _ = parse_args(argv, VALUE_FLAGS)
    if flags.get("version") or flags.get("v") is True:
        print(f"crictl version {VERSION}")
        return 0
    if not positional:
        print("NAME:\n   crictl - client for CRI (kk lab stand-in: version, info, ps, pods, images)")
        return 0
    command = positional[0]
    if command in ("version", "info", "ps", "pods", "images", "img"):
        where = endpoint(flags)
        if command == "version":
            name = "containerd" if "containerd" in where else "docker" if "dockerd" in where else "cri-o"
            print(f"Version:  0.1.0\nRuntimeName:  {name}\nRuntimeVersion:  {runtime_version()}\n"
                  "RuntimeApiVersion:  v1")
        elif command == "info":
            print(json.dumps({"status": {"conditions": [
                {"type": "RuntimeReady", "status": True, "reason": "", "message": ""},
                {"type": "NetworkReady", "status": False, "reason": "NetworkPluginNotReady",
                 "message": "Network plugin returns error: cni plugin not initialized"}]},
                "config": {"kk-standin": True, "endpoint": where}}, indent=2))
        elif command == "ps":
            quiet = flags.get("q") or flags.get("quiet")
            if not quiet:
                print("CONTAINER           IMAGE               CREATED             STATE               NAME"
                      "                ATTEMPT             POD ID              POD")
            for cid, name in static_containers(flags):
                print(cid if quiet else f"{cid:<20}{'-':<20}{'-':<20}{'Running':<20}{name:<20}{'0':<20}"
                                        f"{cid:<20}{name}")
        elif command == "pods":
            if not flags.get("q") and not flags.get("quiet"):
                print("POD ID              CREATED             STATE               NAME                NAMESPACE"
                      "           ATTEMPT             RUNTIME")
        else:
            refs = images()
            if flags.get("q") or flags.get("quiet"):
                print("\n".join(refs))
            else:
                print(f"{'IMAGE':<60}{'TAG':<20}{'IMAGE ID':<16}SIZE")
                for ref in refs:
                    repo, _, tag = ref.rpartition(":")
                    print(f"{repo:<60}{tag:<20}{'<unknown>':<16}0B")
        return 0
    if command in REAL_COMMANDS:
        print(f"crictl {command}: not implemented by the kk lab stand-in", file=sys.stderr)
    else:
        print(f"No help topic for '{command}'", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(run("crictl", main))

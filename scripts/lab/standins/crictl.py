#!/usr/bin/env python3
''':'
exec python3 "$0" "$@"
'''
# kk lab stand-in for crictl; not the real program (scripts/lab/standins/README.md says what it
# checks). Like the real one it finds the runtime endpoint in its flags, /etc/crictl.yaml or the
# default sockets and fails when that socket does not exist; `version`, `info`, `ps`, `pods` and
# `images` then answer (images from containerd, through ctr), anything else fails. The lines above
# let `sh crictl ...` run it too. scripts/lab/catalog.py replaces VERSION when it writes the
# stand-in for a catalog.

import json
import os
import re
import stat
import subprocess
import sys
import time

VERSION = "v1.33.0"  # set by scripts/lab/catalog.py

NAME = "crictl"
ROOT = os.environ.get("KK_STANDIN_ROOT", "")
CTR = os.environ.get("KK_STANDIN_CTR", "/usr/local/bin/ctr")
CONTAINERD = os.environ.get("KK_STANDIN_CONTAINERD", "/usr/local/bin/containerd")
DEFAULTS = ["unix:///run/containerd/containerd.sock", "unix:///run/crio/crio.sock",
            "unix:///var/run/cri-dockerd.sock"]
REAL_COMMANDS = {"attach", "create", "exec", "imagefsinfo", "inspect", "inspecti", "inspectp", "logs", "port-forward",
                 "pull", "rm", "rmi", "rmp", "runp", "start", "stats", "statsp", "stop", "stopp", "update", "config",
                 "checkpoint", "events", "completion", "update-runtime-config", "metricsp", "run"}
VALUE_FLAGS = {"runtime-endpoint", "r", "image-endpoint", "i", "timeout", "t", "config", "c", "o", "output",
               "name", "namespace", "label", "state", "pod", "image", "id"}


def P(path):
    return ROOT + path


def log_call():
    try:
        with open(os.environ.get("KK_STANDIN_LOG") or "/tmp/kk-standin.log", "a") as f:
            f.write(" ".join([NAME] + sys.argv[1:]) + "\n")
    except OSError:
        pass


def fatal(message):
    print(f'time="{time.strftime("%Y-%m-%dT%H:%M:%S")}Z" level=fatal msg="{message}"', file=sys.stderr)
    sys.exit(1)


def parse_args(argv):
    flags, positional = {}, []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            positional.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if not eq:
            if name in VALUE_FLAGS and i < len(argv):
                value = argv[i]
                i += 1
            else:
                value = True
        flags[name] = value
    return flags, positional


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
        print(f'time="{time.strftime("%Y-%m-%dT%H:%M:%S")}Z" level=warning msg="runtime connect using default '
              f'endpoints: {candidates}. As the default settings are now deprecated, you should set the endpoint '
              'instead."', file=sys.stderr)
    for candidate in candidates:
        sock = candidate.removeprefix("unix://")
        try:
            if stat.S_ISSOCK(os.stat(P(sock)).st_mode):
                return candidate
        except OSError:
            pass
    sock = candidates[-1].removeprefix("unix://")
    fatal(f'validate service connection: validate CRI v1 runtime API for endpoint \\"{candidates[-1]}\\": rpc error: '
          f'code = Unavailable desc = connection error: desc = \\"transport: Error while dialing: dial unix {sock}: '
          'connect: no such file or directory\\"')


def runtime_version():
    try:
        out = subprocess.run([CONTAINERD, "--version"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    m = re.search(r"\s(v?\d+\.\d+\.\d+\S*)", out)
    return m.group(1) if m else "unknown"


def images():
    try:
        out = subprocess.run([CTR, "-n", "k8s.io", "images", "ls", "-q"], capture_output=True, text=True)
    except OSError:
        return []
    return [r for r in out.stdout.split() if not r.startswith("sha256:")] if out.returncode == 0 else []


def main():
    log_call()
    flags, positional = parse_args(sys.argv[1:])
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
            if not flags.get("q") and not flags.get("quiet"):
                print("CONTAINER           IMAGE               CREATED             STATE               NAME"
                      "                ATTEMPT             POD ID              POD")
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
    sys.exit(main())

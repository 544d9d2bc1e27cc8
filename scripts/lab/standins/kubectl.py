#!/usr/bin/env python3
''':'
exec python3 "$0" "$@"
'''
# kk lab stand-in for kubectl; not the real program (scripts/lab/standins/README.md says what it
# checks and writes). There is no API server in the lab: this kubectl needs a kubeconfig as the
# real one does, validates what it is asked to apply the way client-side validation would, and
# keeps every applied file and object under /var/lib/kk-standin/kubectl so tests can see them;
# `get` and `wait` answer from that record. The lines above let `sh kubectl ...` run it too.
# scripts/lab/catalog.py replaces VERSION when it writes the stand-in for a catalog, and the
# `from common import *` line with common.py (what the stand-ins share).

import json
import os
import re
import shutil
import socket
import sys
import time

VERSION = "v1.33.0"  # set by scripts/lab/catalog.py

sys.dont_write_bytecode = True  # run from the repo: no __pycache__ beside common.py
from common import *  # kk-standin: common

RECORD = "/var/lib/kk-standin/kubectl"
BUILTIN = ["Namespace/default", "Namespace/kube-system", "Namespace/kube-public", "Namespace/kube-node-lease"]
VALUE_FLAGS = {"kubeconfig", "n", "namespace", "o", "output", "field-manager", "f", "filename", "for", "timeout",
               "context", "l", "selector", "dry-run", "validate", "server", "s", "token", "user", "cluster",
               "field-selector", "sort-by", "v", "request-timeout", "cascade", "grace-period", "template"}
ALIASES = {"ns": "namespace", "cm": "configmap", "svc": "service", "sa": "serviceaccount", "deploy": "deployment",
           "ds": "daemonset", "sts": "statefulset", "rs": "replicaset", "po": "pod", "no": "node",
           "crd": "customresourcedefinition", "crds": "customresourcedefinition", "pv": "persistentvolume",
           "pvc": "persistentvolumeclaim", "ing": "ingress", "netpol": "networkpolicy", "ep": "endpoints"}


def parse(argv):
    """(flags, positional); every -f/--filename is in flags["f"], a list."""
    flags, positional, given = parse_args(argv, VALUE_FLAGS, strict=True, prefix="error: ")
    files = [value for name, value in given if name in ("f", "filename")]
    flags.pop("filename", None)
    if files:
        flags["f"] = files
    return flags, positional


def kubeconfig(flags):
    """The kubeconfig kubectl would use; the refused connection of a kubectl without one."""
    candidates = []
    if flags.get("kubeconfig"):
        candidates = [flags["kubeconfig"]]
    elif os.environ.get("KUBECONFIG"):
        candidates = [p for p in os.environ["KUBECONFIG"].split(":") if p]
    else:
        candidates = [os.path.join(os.path.expanduser("~"), ".kube", "config")]
    for path in candidates:
        if os.path.isfile(P(path)):
            try:
                import yaml
                doc = yaml.safe_load(open(P(path)))
            except Exception as e:  # noqa: BLE001 - any parse error is kubectl's load error
                raise Fail(f'error: error loading config file "{path}": {e}')
            servers = [c.get("cluster", {}).get("server") for c in (doc or {}).get("clusters") or []
                       if isinstance(c, dict)]
            if not any(servers):
                break
            return path
        if flags.get("kubeconfig") or os.environ.get("KUBECONFIG"):
            print(f"W0000 00:00:00.000000 {os.getpid()} loader.go:223] Config not found: {path}", file=sys.stderr)
    raise Fail("The connection to the server localhost:8080 was refused - did you specify the right host or port?")


def records():
    try:
        with open(P(f"{RECORD}/objects")) as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        lines = []
    return BUILTIN + lines


def record(kind, name):
    os.makedirs(P(RECORD), exist_ok=True)
    with open(P(f"{RECORD}/objects"), "a") as f:
        f.write(f"{kind}/{name}\n")


def keep(path, text):
    """Copies an applied file into the record: NNNN-<basename>."""
    directory = P(RECORD)
    os.makedirs(directory, exist_ok=True)
    numbers = [int(e[:4]) for e in os.listdir(directory) if e[:4].isdigit() and e[4:5] == "-"]
    dest = os.path.join(directory, f"{max(numbers, default=0) + 1:04d}-{os.path.basename(path) or 'stdin'}")
    with open(dest, "w") as f:
        f.write(text)


def resource_name(kind, api_version):
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return f"{kind.lower()}.{group}" if group else kind.lower()


def kind_matches(arg, kind):
    arg = arg.lower().split(".", 1)[0]
    arg = ALIASES.get(arg, arg)
    kind = kind.lower()
    return arg in (kind, kind + "s", kind + "es") or (kind.endswith("y") and arg == kind[:-1] + "ies")


def plural(kind):
    kind = kind.lower()
    if kind.endswith("y"):
        return kind[:-1] + "ies"
    return kind + ("es" if kind.endswith(("s", "x")) else "s")


def files_of(paths, recursive):
    out = []
    for path in paths:
        if path == "-":
            out.append(("stdin", sys.stdin.read()))
        elif os.path.isdir(P(path)):
            for dirpath, dirs, names in os.walk(P(path)):
                dirs.sort()
                for name in sorted(names):
                    if name.endswith((".yaml", ".yml", ".json")):
                        full = os.path.join(dirpath, name)
                        out.append((full[len(ROOT):], open(full).read()))
                if not recursive:
                    break
        elif os.path.isfile(P(path)):
            out.append((path, open(P(path)).read()))
        else:
            raise Fail(f'error: the path "{path}" does not exist')
    return out


def objects_of(path, text):
    import yaml
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise Fail(f"error: error parsing {path}: error converting YAML to JSON: yaml: {where}"
                   f"{getattr(e, 'problem', None) or e}")
    out = []
    for doc in docs:
        if doc is None or doc == {}:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out += doc["items"]
        else:
            out.append(doc)
    problems = []
    for doc in out:
        if not isinstance(doc, dict):
            problems.append(f"error unmarshaling JSON: cannot unmarshal {type(doc).__name__} into Go value of type "
                            "map[string]interface {}")
            continue
        missing = [f"{key} not set" for key in ("apiVersion", "kind") if not doc.get(key)]
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            missing.append("metadata.name not set")
        if missing:
            problems.append(f"[{', '.join(missing)}]")
    if problems:
        raise Fail(f'error: error validating "{path}": error validating data: {"; ".join(problems)}; if you choose '
                   "to ignore these errors, turn validation off with --validate=false")
    return out


def cmd_apply(flags, positional):
    if positional:
        raise Fail(f'error: Unexpected args: {positional}\nSee \'kubectl apply -h\' for help and examples')
    if flags.get("k") or flags.get("kustomize"):
        raise Fail("error: the kk lab stand-in kubectl does not do kustomize (-k)")
    if not flags.get("f"):
        raise Fail("error: must specify one of -f and -k")
    kubeconfig(flags)
    server_side = flags.get("server-side") not in (None, False, "false")
    if flags.get("force-conflicts") and not server_side:
        raise Fail("error: --force-conflicts only works with --server-side")
    dry_run = flags.get("dry-run") not in (None, "none", False)
    batches = []
    for path, text in files_of(flags["f"], flags.get("R") or flags.get("recursive")):
        batches.append((path, text, objects_of(path, text)))
    if not any(objs for _, _, objs in batches):
        raise Fail("error: no objects passed to apply")
    known = set(records())
    for path, text, objs in batches:
        if not dry_run:
            keep(path, text)
        for obj in objs:
            key = f"{obj['kind']}/{obj['metadata']['name']}"
            if server_side:
                verb = "serverside-applied"
            else:
                verb = "configured" if key in known else "created"
            if dry_run:
                verb += " (server dry run)" if flags.get("dry-run") == "server" else " (dry run)"
            else:
                record(obj["kind"], obj["metadata"]["name"])
                known.add(key)
            print(f"{resource_name(obj['kind'], str(obj['apiVersion']))}/{obj['metadata']['name']} {verb}")


def targets(positional):
    """[(kind arg, name or None)] from `KIND NAME...` or `KIND/NAME...`."""
    if not positional:
        raise Fail("error: You must specify the type of resource to get. Use \"kubectl api-resources\" for a "
                   "complete list of supported resources.")
    if "/" in positional[0]:
        return [tuple(p.split("/", 1)) for p in positional]
    kinds = positional[0].split(",")
    names = positional[1:]
    return [(k, n) for k in kinds for n in (names or [None])]


def nodes():
    """{name: status} of the cluster's nodes (common.cluster_nodes: what each kubelet registered);
    without that record, the local node (Ready once the kubelet's ready file exists)."""
    found = cluster_nodes()
    if not found:
        local = socket.gethostname().lower()
        found[local] = {"ready": os.path.isfile(P(READY)), "kubeletVersion": "", "controlPlane": False,
                        "unschedulable": os.path.exists(f"{node_dir(local)}/unschedulable")}
    return found


def node_status(status):
    text = "Ready" if status["ready"] else "NotReady"
    return text + (",SchedulingDisabled" if status["unschedulable"] else "")


def node_json(name, status):
    """The fields of a Node object the stand-in knows."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "spec": {"unschedulable": True} if status["unschedulable"] else {},
            "status": {"conditions": [{"type": "Ready", "status": "True" if status["ready"] else "False"}],
                       "nodeInfo": {"kubeletVersion": status["kubeletVersion"]}}}


def get_nodes(name, errors):
    """Rows (kind, name, status, node status or None) of `get nodes [NAME]`."""
    known = nodes()
    if name and name not in known:
        errors.append(f'Error from server (NotFound): nodes "{name}" not found')
        return []
    return [("node", n, node_status(st), st) for n, st in known.items() if name in (None, n)]


def print_node_table(rows):
    print(f"{'NAME':<20}{'STATUS':<29}{'ROLES':<15}{'AGE':<6}VERSION")
    for _, name, status, st in rows:
        role = "control-plane" if st.get("controlPlane") else "<none>"
        print(f"{name:<20}{status:<29}{role:<15}{'1d':<6}{st['kubeletVersion']}")


def cmd_get(flags, positional):
    kubeconfig(flags)
    namespace = flags.get("n") or flags.get("namespace") or "default"
    rows, errors = [], []
    for kind_arg, name in targets(positional):
        if kind_matches(kind_arg, "node"):
            rows += get_nodes(name, errors)
            continue
        found = [r for r in records() if kind_matches(kind_arg, r.split("/", 1)[0])]
        found = list(dict.fromkeys(found))
        if name:
            match = [r for r in found if r.split("/", 1)[1] == name]
            if not match:
                errors.append(f'Error from server (NotFound): {plural(kind_arg.split(".")[0])} "{name}" not found')
            rows += [(r.split("/", 1)[0].lower(), r.split("/", 1)[1], "", None) for r in match]
        else:
            rows += [(r.split("/", 1)[0].lower(), r.split("/", 1)[1], "", None) for r in found]
    output = flags.get("o") or flags.get("output") or ""
    if output == "name":
        for kind, name, _, _ in rows:
            print(f"{kind}/{name}")
    elif output == "json":
        items = [node_json(n, st) if st else {"kind": k, "metadata": {"name": n}} for k, n, _, st in rows]
        print(json.dumps(items[0] if len(items) == 1 and len(positional) > 1 else {"kind": "List", "items": items},
                         indent=4))
    elif rows and all(st for _, _, _, st in rows):
        print_node_table(rows)
    elif rows:
        print("NAME" + " " * 30 + "STATUS")
        for _, name, status, _ in rows:
            print(f"{name:<34}{status}")
    elif not errors:
        print(f"No resources found in {namespace} namespace.", file=sys.stderr)
    if errors:
        raise Fail("\n".join(errors))


def seconds(duration):
    """A Go duration (`300s`, `5m`, `1h30m`, `0`) in seconds."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"([0-9.]+)(ns|us|µs|ms|s|m|h)", duration)
    if duration != "0" and "".join(n + u for n, u in parts) != duration:
        raise Fail(f'error: invalid argument "{duration}" for "--timeout" flag: time: invalid duration "{duration}"')
    return sum(float(n) * units[u] for n, u in parts)


def wait_nodes(name, condition, timeout, errors):
    """`wait --for=condition=Ready` of nodes: polls the kubelets' records until each is ready or
    the timeout passes, as kubectl watches the Node objects."""
    deadline = time.monotonic() + timeout
    while True:
        found = get_nodes(name, errors)
        waiting = [n for _, n, _, st in found if condition.lower().startswith("condition=ready") and not st["ready"]]
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    for _, n, _, _ in found:
        if n in waiting:
            errors.append(f"error: timed out waiting for the condition on nodes/{n}")
        else:
            print(f"node/{n} condition met")


def cmd_wait(flags, positional):
    kubeconfig(flags)
    condition = flags.get("for")
    if not condition:
        raise Fail("error: --for must be specified")
    pairs = targets(positional) if positional else []
    if not pairs:
        raise Fail("error: resource(s) were provided, but no name was specified")
    errors = []
    for kind_arg, name in pairs:
        if kind_matches(kind_arg, "node"):
            wait_nodes(name, condition, seconds(flags.get("timeout") or "30s"), errors)
            continue
        found = [r for r in dict.fromkeys(records()) if kind_matches(kind_arg, r.split("/", 1)[0])
                 and (name is None or r.split("/", 1)[1] == name)]
        if condition == "delete":
            if not found:
                continue
            errors.append(f"error: timed out waiting for the condition on {kind_arg}/{name}")
        elif not found:
            errors.append(f'Error from server (NotFound): {plural(kind_arg.split(".")[0])} "{name}" not found'
                          if name else "error: no matching resources found")
        for r in found if condition != "delete" else []:
            print(f"{r.split('/', 1)[0].lower()}/{r.split('/', 1)[1]} condition met")
    if errors:
        raise Fail("\n".join(errors))


def cmd_create(flags, positional):
    if not positional or positional[0] not in ("namespace", "ns") or len(positional) != 2:
        raise Fail(f'error: unknown command "{" ".join(positional[:1])}" for "kubectl create" (the kk lab stand-in '
                   "creates namespaces only)")
    name = positional[1]
    dry_run = flags.get("dry-run") not in (None, "none", False)
    if dry_run and (flags.get("o") or flags.get("output")) in ("yaml", "json"):
        doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {}, "status": {}}
        if (flags.get("o") or flags.get("output")) == "json":
            print(json.dumps(doc, indent=4))
        else:
            import yaml
            print(yaml.safe_dump(doc, sort_keys=False), end="")
        return
    kubeconfig(flags)
    if f"Namespace/{name}" in records():
        raise Fail(f'Error from server (AlreadyExists): namespaces "{name}" already exists')
    if not dry_run:
        record("Namespace", name)
    print(f"namespace/{name} created" + (" (dry run)" if dry_run else ""))


LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def cmd_label(flags, positional):
    """`label nodes NAME... KEY=VALUE... [--overwrite]`, kept in RECORD/labels (`node/NAME KEY=VALUE`).
    The lab has no API server: any node name is taken (kubeadm's stand-in registers none)."""
    kubeconfig(flags)
    if not positional or not kind_matches(positional[0], "node"):
        raise Fail("error: the kk lab stand-in kubectl labels nodes only")
    names = [p for p in positional[1:] if "=" not in p]
    pairs = [p for p in positional[1:] if "=" in p]
    if not names:
        raise Fail("error: resource(s) were provided, but no name was specified")
    if not pairs:
        raise Fail("error: at least one label update is required")
    for pair in pairs:
        key, _, value = pair.partition("=")
        if not LABEL_KEY.match(key) or not LABEL_VALUE.match(value):
            raise Fail(f"error: invalid label spec: {pair}")
    path = P(f"{RECORD}/labels")
    current = {}
    try:
        with open(path) as f:
            for line in f:
                target, _, pair = line.rstrip("\n").partition(" ")
                key, _, value = pair.partition("=")
                current[(target, key)] = value
    except OSError:
        pass
    overwrite = flags.get("overwrite") not in (None, False, "false")
    changed = []
    for name in names:
        updated = False
        for pair in pairs:
            key, _, value = pair.partition("=")
            old = current.get((f"node/{name}", key))
            if old is not None and old != value and not overwrite:
                raise Fail(f"error: '{key}' already has a value ({old}), and --overwrite is false")
            if old != value:
                current[(f"node/{name}", key)] = value
                updated = True
        changed.append((name, updated))
    os.makedirs(P(RECORD), exist_ok=True)
    with open(path, "w") as f:
        for (target, key), value in current.items():
            f.write(f"{target} {key}={value}\n")
    for name, updated in changed:
        print(f"node/{name} {'labeled' if updated else 'not labeled'}")


def cordon(name, on):
    """Marks node name (un)schedulable (CLUSTER/nodes/NAME/unschedulable); False when it was already."""
    mark = f"{node_dir(name)}/unschedulable"
    if os.path.exists(mark) == on:
        return False
    if on:
        os.makedirs(node_dir(name), exist_ok=True)
        open(mark, "w").close()
    else:
        os.remove(mark)
    return True


def one_node(verb, flags, positional):
    kubeconfig(flags)
    if len(positional) != 1:
        raise Fail(f"error: USAGE: {verb} NODE [flags]\nSee 'kubectl {verb} -h' for help and examples")
    name = positional[0].removeprefix("node/").removeprefix("nodes/")
    errors = []
    get_nodes(name, errors)
    if errors:
        raise Fail("\n".join(errors))
    return name


def cmd_cordon(flags, positional, verb="cordon"):
    name = one_node(verb, flags, positional)
    on = verb != "uncordon"
    print(f"node/{name} {'' if cordon(name, on) else 'already '}{'cordoned' if on else 'uncordoned'}")
    return name


def cmd_drain(flags, positional):
    """Cordons, then evicts: the lab runs no pods, but the DaemonSets kubectl applied have one on
    every node, which drain refuses to delete without --ignore-daemonsets (after cordoning, as
    kubectl does)."""
    name = cmd_cordon(flags, positional, "drain")
    daemonsets = [r.split("/", 1)[1] for r in records() if r.split("/", 1)[0] == "DaemonSet"]
    if daemonsets and flags.get("ignore-daemonsets") in (None, False, "false"):
        pods = ", ".join(f"{d}-{name}" for d in daemonsets)
        raise Fail(f'error: unable to drain node "{name}" due to error: cannot delete DaemonSet-managed Pods (use '
                   f"--ignore-daemonsets to ignore): {pods}, continuing command...\nThere are pending nodes to be "
                   f"drained:\n {name}\ncannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
                   f"{pods}")
    if daemonsets:
        print(f"Warning: ignoring DaemonSet-managed Pods: {', '.join(f'{d}-{name}' for d in daemonsets)}",
              file=sys.stderr)
    print(f"node/{name} drained")


def cmd_delete(flags, positional):
    """`delete node NAME...`: the Node objects go (the kubelet's record and cordon); a kubelet
    that starts again registers anew, as the real one does."""
    kubeconfig(flags)
    pairs = targets(positional)
    if not all(kind_matches(kind, "node") for kind, _ in pairs):
        raise Fail("error: the kk lab stand-in kubectl deletes nodes only")
    errors = []
    for _, name in pairs:
        if name is None:
            raise Fail("error: resource(s) were provided, but no name was specified")
        if name not in cluster_nodes():
            errors.append(f'Error from server (NotFound): nodes "{name}" not found')
            continue
        shutil.rmtree(node_dir(name), ignore_errors=True)
        print(f'node "{name}" deleted')
    if errors:
        raise Fail("\n".join(errors))


def cmd_version(flags, positional):
    client = flags.get("client") not in (None, False, "false")
    output = flags.get("o") or flags.get("output")
    info = {"major": VERSION[1:].split(".")[0], "minor": VERSION.split(".")[1], "gitVersion": VERSION,
            "platform": "linux/amd64"}
    server = None if client else kubeconfig(flags) and info
    if output == "json":
        doc = {"clientVersion": info, "kustomizeVersion": "v5.6.0"}
        if server:
            doc["serverVersion"] = server
        print(json.dumps(doc, indent=2))
        return
    print(f"Client Version: {VERSION}\nKustomize Version: v5.6.0")
    if server:
        print(f"Server Version: {VERSION} (kk lab stand-in: no API server runs)")


def main(argv):
    flags, positional = parse(argv)
    if not positional:
        raise Fail("error: the kk lab stand-in kubectl needs a command (version, apply, get, wait, create "
                   "namespace, label nodes, drain, cordon, uncordon, delete node)")
    verb, rest = positional[0], positional[1:]
    handlers = {"version": cmd_version, "apply": cmd_apply, "get": cmd_get, "wait": cmd_wait,
                "create": cmd_create, "label": cmd_label, "drain": cmd_drain, "cordon": cmd_cordon,
                "uncordon": lambda f, p: cmd_cordon(f, p, "uncordon"), "delete": cmd_delete}
    if verb not in handlers:
        raise Fail(f'error: unknown command "{verb}" for "kubectl" (the kk lab stand-in implements version, '
                   "apply, get, wait, create namespace, label nodes, drain, cordon, uncordon and delete node)")
    handlers[verb](flags, rest)


if __name__ == "__main__":
    sys.exit(run("kubectl", main))

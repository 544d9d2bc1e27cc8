#!/usr/bin/env python3
"""Creates the lab's release files for a catalog of binaries, and plans its images and charts.

    catalog.py --lab-dir DIR --lab-http URL --catalog FILE --plan OUT --record OUT
               [--platform linux/amd64 ...] [--helm PATH] [--force]

FILE has the shape of `kk-bundle catalog VERSION --output json` (see scripts/lab/seed-catalog.sh):
{"binaries": [{"name", "version", "url", "checksumUrl" | "sha256" | "trustOnFirstUse", "archNames"?}], "images": [ref], "charts":
[{"name", "version", "repo" | "oci"}]}; every key is optional. For each binary and platform the URL
template is expanded and mapped into DIR/http: a URL under --lab-http keeps its path below it;
`https://HOST/PATH` becomes `HOST/PATH` (the builder's manifest maps each download host to
`<lab-http>/HOST`). The file is made by binary name, shaped like the upstream artifact:

    etcd, containerd, runc, cni-plugins   Debian's real binaries (amd64; the arm64 files hold the
                                          same amd64 bytes: they only need to exist), chosen by
                                          version: containerd 1.7.x is trixie's (1.7.24), 2.x sid's
                                          (2.1.9), 1.6.x the host's bookworm one; etcd v3.5+ is
                                          trixie's (3.5.16), v3.4 the host's; runc is always the
                                          host's (trixie's and sid's need glibc 2.38). The file
                                          holds the suite's version whatever version the catalog
                                          names (suitedebs.sh)
    helm                                  the real helm (--helm)
    docker                                its static tarball's layout: Debian sid's real docker 28,
                                          trixie's containerd 1.7 and tini, bookworm's runc
    kubeadm, kubelet, kubectl, crictl,    scripts/lab/standins/NAME.py (Python 3 + PyYAML stand-ins
    cri-dockerd (in its release tarball)
                                          that fail where the real tool would; their README) with
                                          `VERSION = ...` set to the binary's version and, for
                                          kubeadm, `IMAGES = [...]` to the catalog's registry.k8s.io
                                          images `kubeadm config images list` prints; the text of
                                          standins/common.py in place of the line
                                          `from common import *  # kk-standin: common`, so that the
                                          file stands alone on a node
    multus                                a manifest of the shape of upstream's thin-plugin
                                          deployments/multus-daemonset.yml, written for the lab
                                          (MULTUS_MANIFEST): its CRD, service account and RBAC,
                                          and the DaemonSet whose `kube-multus` container and
                                          install init container name the `:snapshot` image at
                                          the tag, with the args kk edits
    anything else                         a stand-in shell script that logs its arguments to
                                          ${KK_STANDIN_LOG:-/tmp/kk-standin.log} and answers `version`

wrapped the upstream way when the URL names a `.tar.gz`/`.tgz`. Archives are deterministic (sorted,
mtime 0, owner 0, `gzip -n`), so seeding again gives the same sha256. Existing files are kept unless
--force or what they are made from changed (recorded in DIR/work/sources/), and the
kubeadm/kubelet/kubectl/crictl stand-ins are always written again. Then each `checksumUrl` file is written in the format its name implies: `*.sha256` = the
64 hex digits (dl.k8s.io), `NAME.sha256sum` beside NAME = `hex  NAME`, anything else (SHA256SUMS,
*checksums.txt, a shared *.sha256sum) = `hex  file` for every file of its directory.

Images and charts are not made here: one line per item goes to --plan (tab-separated) for
seed-catalog.sh, which pushes them with skopeo and helm:

    image       REF  REPO_PATH  TAG        (REF's path without its registry host)
    chart-repo  NAME VERSION    DIR        (DIR: the repo URL's mapped path below DIR/http)
    chart-oci   NAME VERSION    REPO_PATH  (the oci:// reference's path without host and name)

--record gets JSON describing everything seeded (paths relative to DIR/http, sha256 of files) and
the hosts that a manifest must map to the lab (`hosts.files`, `hosts.registries`).
"""

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

CHECKSUM_NAME = re.compile(r"(^SHA(256|512)SUMS|\.sha(256|512)(sum)?$|checksums?\.txt$|\.asc$|\.sig$|\.pem$)", re.I)

STANDIN = """#!/bin/sh
# kk lab stand-in for {name} {version} ({os}/{arch}); not the real program.
# It records each call and answers `version` so an installer's checks can run against it.
echo "{name} $*" >> "${{KK_STANDIN_LOG:-/tmp/kk-standin.log}}"
case "$1" in
  version|--version|-v|-version) echo "{name} version {version} (stand-in)" ;;
esac
exit 0
"""

# The lab's multus manifest: the objects and fields of upstream's thin-plugin manifest that kk
# reads or edits (the DaemonSet, container `kube-multus`, its image and args, the init container
# on the same image), no ConfigMap; written for the lab, not copied from upstream.
MULTUS_MANIFEST = """# kk lab stand-in for multus {version}'s deployments/multus-daemonset.yml; not upstream's file.
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: network-attachment-definitions.k8s.cni.cncf.io
spec:
  group: k8s.cni.cncf.io
  scope: Namespaced
  names: {{plural: network-attachment-definitions, singular: network-attachment-definition, kind: NetworkAttachmentDefinition, shortNames: [net-attach-def]}}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: multus, namespace: kube-system}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: multus}}
rules:
  - apiGroups: [k8s.cni.cncf.io]
    resources: ["*"]
    verbs: ["*"]
  - apiGroups: [""]
    resources: [pods, pods/status]
    verbs: [get, list, update, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: multus}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: multus}}
subjects:
  - {{kind: ServiceAccount, name: multus, namespace: kube-system}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: kube-multus-ds
  namespace: kube-system
  labels: {{app: multus}}
spec:
  selector: {{matchLabels: {{app: multus}}}}
  template:
    metadata: {{labels: {{app: multus}}}}
    spec:
      hostNetwork: true
      serviceAccountName: multus
      tolerations: [{{operator: Exists}}]
      containers:
        - name: kube-multus
          image: ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot
          command: [/thin_entrypoint]
          args:
            - "--multus-conf-file=auto"
            - "--multus-autoconfig-dir=/host/etc/cni/net.d"
            - "--cni-conf-dir=/host/etc/cni/net.d"
          securityContext: {{privileged: true}}
          volumeMounts:
            - {{name: cni, mountPath: /host/etc/cni/net.d}}
            - {{name: cnibin, mountPath: /host/opt/cni/bin}}
      initContainers:
        - name: install-multus-binary
          image: ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot
          command: [/install_multus]
          args: ["--type", "thin"]
          securityContext: {{privileged: true}}
          volumeMounts:
            - {{name: cnibin, mountPath: /host/opt/cni/bin}}
      volumes:
        - {{name: cni, hostPath: {{path: /etc/cni/net.d}}}}
        - {{name: cnibin, hostPath: {{path: /opt/cni/bin}}}}
"""

STANDINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "standins")
# The images `kubeadm config images list` prints, in its order (registry.k8s.io paths).
KUBEADM_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "coredns/coredns",
                  "pause", "etcd")
SMART_STANDINS = ("kubeadm", "kubelet", "kubectl", "crictl", "cri-dockerd")
# The line of each stand-in that imports standins/common.py; written out, common.py stands in its place.
COMMON_IMPORT = "from common import *  # kk-standin: common"


def warn(message):
    print(f"seed-catalog: warning: {message}", file=sys.stderr)


def die(message):
    sys.exit(f"seed-catalog: error: {message}")


def expand(template, version, os_name, arch):
    return template.replace("{version}", version).replace("{os}", os_name).replace("{arch}", arch)


def map_url(url, lab_http):
    """The path below DIR/http that serves url in the lab."""
    prefix = lab_http.rstrip("/") + "/"
    if url.startswith(prefix):
        rel = url[len(prefix):]
    else:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            die(f"not an http(s) URL: {url}")
        if parts.query:
            warn(f"{url}: the query is ignored in the lab")
        rel = parts.netloc + parts.path
    rel = urllib.parse.unquote(rel.split("?", 1)[0]).strip("/")
    pieces = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in pieces):
        die(f"{url}: cannot map to a lab path ({rel!r})")
    return rel


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def real(path, package):
    found = path if os.path.isfile(path) else shutil.which(os.path.basename(path))
    if not found:
        die(f"{path} is missing: install Debian's {package} (as root: bash scripts/setup.sh)")
    return found


def suite_file(suite, packages, path):
    """path inside Debian SUITE's (trixie, sid) packages, unpacked once by suitedebs.sh."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suitedebs.sh")
    run = subprocess.run(["bash", script, suite, *packages], stdout=subprocess.PIPE, text=True, check=False)
    if run.returncode != 0:
        die(f"suitedebs.sh {suite} {' '.join(packages)} failed (above)")
    found = os.path.join(run.stdout.strip().splitlines()[-1], path.lstrip("/"))
    if not os.path.isfile(found):
        die(f"{suite}'s {' '.join(packages)} have no {path}")
    return found


# trixie's packages the lab takes containerd 1.7 and etcd 3.5 from: one suitedebs.sh fetch for both.
TRIXIE_PACKAGES = ("containerd", "etcd-server", "etcd-client")
# containerd's programs in its release tarball's bin/, beside containerd itself; those of them a
# Debian package lacks are left out (2.x dropped the v1 shims).
CONTAINERD_PROGRAMS = ("containerd", "ctr", "containerd-shim-runc-v2", "containerd-shim", "containerd-shim-runc-v1",
                       "containerd-stress")


def version_tuple(version):
    """(major, minor) of `v1.7.30` or `3.5.12-0`; None when it does not start like a version."""
    found = re.match(r"v?(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def containerd_files(version):
    """{program: path} of the real containerd for a catalog version: 2.x from sid, 1.7 from trixie,
    older from the host."""
    number = version_tuple(version)
    if number is None:
        die(f"containerd version `{version}` is not a version")
    if number >= (2, 0):
        packages, suite = ("containerd",), "sid"
    elif number >= (1, 7):
        packages, suite = TRIXIE_PACKAGES, "trixie"
    else:
        files = {"containerd": real("/usr/bin/containerd", "containerd")}
        for program in CONTAINERD_PROGRAMS[1:]:
            if os.path.isfile(f"/usr/bin/{program}"):
                files[program] = f"/usr/bin/{program}"
        return files
    bin_dir = os.path.dirname(suite_file(suite, packages, "/usr/bin/containerd"))
    return {p: os.path.join(bin_dir, p) for p in CONTAINERD_PROGRAMS if os.path.isfile(os.path.join(bin_dir, p))}


def etcd_files(version):
    """(etcd, etcdctl) of the real etcd for a catalog version: v3.5+ from trixie, v3.4 from the host."""
    number = version_tuple(version)
    if number is None:
        die(f"etcd version `{version}` is not a version")
    if number >= (3, 5):
        return (suite_file("trixie", TRIXIE_PACKAGES, "/usr/bin/etcd"),
                suite_file("trixie", TRIXIE_PACKAGES, "/usr/bin/etcdctl"))
    return real("/usr/bin/etcd", "etcd-server"), real("/usr/bin/etcdctl", "etcd-client")


def archive_top(file_name):
    for ext in (".tar.gz", ".tgz"):
        if file_name.endswith(ext):
            return file_name[: -len(ext)]
    return None


def kubeadm_images(version, images):
    """The catalog's images kubeadm pulls, in `kubeadm config images list` order."""
    defaults = None
    out = []
    for path in KUBEADM_IMAGES:
        found = [ref for ref in images if ref.startswith(f"registry.k8s.io/{path}:")]
        if found:
            out.append(found[0])
        elif path.startswith("kube-"):
            out.append(f"registry.k8s.io/{path}:{version}")
        else:
            if defaults is None:
                with open(os.path.join(STANDINS, "kubeadm.py")) as f:
                    line = re.search(r"^IMAGES = (\[.*?\])", f.read(), re.M)
                defaults = ast.literal_eval(line.group(1))
            fallback = [ref for ref in defaults if ref.rpartition(":")[0] == f"registry.k8s.io/{path}"][0]
            warn(f"the catalog names no registry.k8s.io/{path} image: the kubeadm stand-in lists {fallback}")
            out.append(fallback)
    return out


def standin_source(key):
    """scripts/lab/standins/KEY.py with scripts/lab/standins/common.py in place of its COMMON_IMPORT
    line: one file that needs nothing beside it."""
    with open(os.path.join(STANDINS, f"{key}.py")) as f:
        lines = f.read().splitlines(keepends=True)
    marked = [i for i, line in enumerate(lines) if line.rstrip() == COMMON_IMPORT]
    if len(marked) != 1:
        die(f"{STANDINS}/{key}.py has {len(marked)} lines `{COMMON_IMPORT}`, not one: the stand-in would not "
            "stand alone on a node")
    with open(os.path.join(STANDINS, "common.py")) as f:
        common = f.read()
    i = marked[0]
    return ("".join(lines[:i]) + "# ---- scripts/lab/standins/common.py, put here by scripts/lab/catalog.py ----\n"
            + common.rstrip("\n") + "\n# ---- end of common.py ----\n" + "".join(lines[i + 1:]))


def smart_standin(key, version, images):
    """scripts/lab/standins/KEY.py, self-contained (standin_source), with its VERSION (and kubeadm's
    IMAGES) set."""
    text = standin_source(key)
    line = f"VERSION = {json.dumps(version)}  # set by scripts/lab/catalog.py"
    text, n = re.subn(r"^VERSION = .*$", lambda _: line, text, count=1, flags=re.M)
    if n != 1:
        die(f"{STANDINS}/{key}.py has no `VERSION = ...` line")
    if key == "kubeadm":
        line = f"IMAGES = {json.dumps(kubeadm_images(version, images))}  # set by scripts/lab/catalog.py"
        text, n = re.subn(r"^IMAGES = .*$", lambda _: line, text, count=1, flags=re.M)
        if n != 1:
            die(f"{STANDINS}/kubeadm.py has no `IMAGES = ...` line")
    return text


def content(name, version, os_name, arch, file_name, helm, images=()):
    """What to write: ("file", source_path | text) or ("archive", {member: source_path | text}, entries)."""
    top = archive_top(file_name)
    key = name.lower()
    if key in SMART_STANDINS:
        standin = smart_standin(key, version, images)
    else:
        standin = STANDIN.format(name=name, version=version, os=os_name, arch=arch)
    if key == "etcd":
        etcd, etcdctl = etcd_files(version)
        if top is None:
            return "file", etcd
        return "archive", {f"{top}/etcd": etcd, f"{top}/etcdctl": etcdctl}, [top]
    if key == "containerd":
        files = containerd_files(version)
        if top is None:
            return "file", files["containerd"]
        return "archive", {f"bin/{n}": path for n, path in files.items()}, ["bin"]
    if key == "runc":
        runc = real("/usr/sbin/runc", "runc")
        return ("file", runc) if top is None else ("archive", {"runc": runc}, ["runc"])
    if key in ("cni-plugins", "cni", "containernetworking-plugins") and top is not None:
        cni = "/usr/lib/cni"
        if not os.path.isdir(cni):
            die(f"{cni} is missing: install Debian's containernetworking-plugins (comes with containerd)")
        plugins = {f"./{p}": os.path.join(cni, p) for p in sorted(os.listdir(cni))
                   if os.path.isfile(os.path.join(cni, p))}
        return "archive", plugins, ["."]
    if key == "docker" and top is not None:
        # download.docker.com's static tarball, docker/ with the CLI, the daemon and their runtime:
        # Debian sid's real docker 28 (dockerd, docker-proxy, the CLI), trixie's static tini as
        # docker-init (Debian's docker-init is a link to it; sid's dynamic tini needs glibc 2.38),
        # trixie's real containerd 1.7 and this machine's bookworm runc (trixie's and sid's need
        # glibc 2.38). The tarball is named by the catalog's version; its programs say 28.
        sid = ("docker.io", "docker-cli")
        members = {"docker/dockerd": suite_file("sid", sid, "/usr/sbin/dockerd"),
                   "docker/docker-proxy": suite_file("sid", sid, "/usr/sbin/docker-proxy"),
                   "docker/docker": suite_file("sid", sid, "/usr/bin/docker"),
                   "docker/docker-init": suite_file("trixie", ("tini",), "/usr/bin/tini-static"),
                   "docker/runc": real("/usr/sbin/runc", "runc")}
        for program in ("containerd", "ctr", "containerd-shim-runc-v2"):
            members[f"docker/{program}"] = suite_file("trixie", ("containerd",), f"/usr/bin/{program}")
        return "archive", members, ["docker"]
    if key == "cri-dockerd" and top is not None:
        return "archive", {"cri-dockerd/cri-dockerd": ("text", standin)}, ["cri-dockerd"]
    if key == "multus":
        return "file", ("text", MULTUS_MANIFEST.format(version=version))
    if key == "helm":
        if not helm:
            die("binary helm needs --helm (scripts/lab/tools.sh helm)")
        return ("file", helm) if top is None else ("archive", {f"{os_name}-{arch}/helm": helm}, [f"{os_name}-{arch}"])
    if top is None:
        return "file", ("text", standin)
    return "archive", {name: ("text", standin)}, [name]


def place(source, dest):
    if isinstance(source, tuple):
        with open(dest, "w") as f:
            f.write(source[1])
    else:
        shutil.copyfile(source, dest)
    os.chmod(dest, 0o755)


# Archives already made in this run, by content: the arm64 archive of containerd has the same
# members and bytes as the amd64 one, so it is copied instead of compressed again.
BUILT = {}


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def source_stamp(kind):
    """What a file is made from, as text: each member's source (path, size and mtime; a text's
    sha256), so that a changed source makes the file again."""
    members = {"": kind[1]} if kind[0] == "file" else kind[1]
    described = {}
    for member, source in sorted(members.items()):
        if isinstance(source, tuple):
            described[member] = hashlib.sha256(source[1].encode()).hexdigest()
        else:
            info = os.stat(source)
            described[member] = [os.path.realpath(source), info.st_size, info.st_mtime_ns]
    return json.dumps({"kind": kind[0], "members": described, "entries": list(kind[2:])}, sort_keys=True)


def write_artifact(kind, dest, work):
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    key = None
    if kind[0] == "archive":
        key = (tuple(sorted((m, s if isinstance(s, str) else s[1]) for m, s in kind[1].items())), tuple(kind[2]))
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        out = os.path.join(tmp, "out")
        if kind[0] == "file":
            place(kind[1], out)
        elif key in BUILT and os.path.isfile(BUILT[key]):
            shutil.copyfile(BUILT[key], out)
        else:
            _, members, entries = kind
            stage = os.path.join(tmp, "stage")
            os.makedirs(stage)
            for member, source in members.items():
                path = os.path.normpath(os.path.join(stage, member))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                place(source, path)
            for dirpath, dirnames, _ in os.walk(stage):
                for d in dirnames:
                    os.chmod(os.path.join(dirpath, d), 0o755)
            os.chmod(stage, 0o755)
            # Deterministic: same inputs, same bytes. gzip -1 because these archives are made on
            # every fresh machine (CI) and only their existence and digests matter, not their size.
            tar = subprocess.Popen(
                ["tar", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
                 "--format=gnu", "-C", stage, "-cf", "-", *entries],
                stdout=subprocess.PIPE)
            with open(out, "wb") as f:
                gz = subprocess.run(["gzip", "-n", "-1"], stdin=tar.stdout, stdout=f, check=False)
            tar.stdout.close()
            if tar.wait() != 0 or gz.returncode != 0:
                die(f"creating {dest} failed (tar {tar.returncode}, gzip {gz.returncode})")
        os.replace(out, dest)
    if key is not None:
        BUILT[key] = dest


def checksum_listing(directory, extra):
    """`hex  name` lines for the non-checksum files of directory plus extra (rel names)."""
    names = set(extra)
    for entry in os.listdir(directory):
        if os.path.isfile(os.path.join(directory, entry)) and not CHECKSUM_NAME.search(entry):
            names.add(entry)
    return "".join(f"{sha256_file(os.path.join(directory, n))}  {n}\n" for n in sorted(names))


def write_checksums(http_root, pending):
    for crel, artifacts in sorted(pending.items()):
        cpath = os.path.join(http_root, crel)
        cdir, cname = os.path.split(cpath)
        os.makedirs(cdir, exist_ok=True)
        rels = sorted({os.path.relpath(os.path.join(http_root, a), cdir) for a in artifacts})
        own = [r for r in rels if cname in (r + ".sha256", r + ".sha256sum")]
        if cname.endswith(".sha256"):
            chosen = own[0] if own else rels[0]
            if len(rels) > 1 and not own:
                warn(f"{crel} is named by {len(rels)} files; it holds the digest of {chosen}")
            text = sha256_file(os.path.join(cdir, chosen)) + "\n"
        elif cname.endswith(".sha256sum") and own and len(rels) == 1:
            text = f"{sha256_file(os.path.join(cdir, own[0]))}  {own[0]}\n"
        else:
            text = checksum_listing(cdir, [r for r in rels if "/" in r])
        tmp = cpath + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, cpath)


def image_host(ref):
    """(registry host, path with tag or digest) of an image reference; Docker Hub when it names none."""
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return "docker.io", ref


def image_path(ref):
    """(repo path, tag) in the lab registry for ref, or None for a digest-pinned ref."""
    if "@" in ref:
        return None
    host, path = image_host(ref)
    name, _, tag = path.rpartition(":")
    if not name or "/" in tag:
        name, tag = path, "latest"
        warn(f"{ref} has no tag: seeded as :latest")
    if host == "docker.io" and "/" not in name:
        name = "library/" + name
    return name, tag


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lab-dir", required=True)
    parser.add_argument("--lab-http", required=True)
    parser.add_argument("--catalog", required=True)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--platform", action="append")
    parser.add_argument("--helm")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()

    with open(args.catalog) as f:
        catalog = json.load(f)
    if not isinstance(catalog, dict):
        die(f"{args.catalog}: not a JSON object")
    platforms = [p.split("/", 1) for p in (args.platform or ["linux/amd64", "linux/arm64"])]
    http_root = os.path.join(args.lab_dir, "http")
    work = os.path.join(args.lab_dir, "work")
    os.makedirs(work, exist_ok=True)

    record = {"binaries": [], "images": [], "charts": []}
    pending = {}
    for binary in catalog.get("binaries", []):
        name, version = binary["name"], binary["version"]
        # `archNames` (optional): the upstream's spelling of a Go architecture in {arch}.
        arch_names = binary.get("archNames") or {}
        for os_name, arch in platforms:
            url_arch = arch_names.get(arch, arch)
            url = expand(binary["url"], version, os_name, url_arch)
            rel = map_url(url, args.lab_http)
            dest = os.path.join(http_root, rel)
            # A file is made again when what it is made from changed (a stand-in's text, the
            # suite's binaries a version maps to): a lab seeded before must not serve the old one.
            kind = content(name, version, os_name, arch, os.path.basename(rel), args.helm, catalog.get("images", []))
            stamp = os.path.join(work, "sources", rel + ".json")
            if args.force or not os.path.isfile(dest) or read_text(stamp) != source_stamp(kind):
                write_artifact(kind, dest, work)
                os.makedirs(os.path.dirname(stamp), exist_ok=True)
                with open(stamp, "w") as f:
                    f.write(source_stamp(kind))
            entry = {"name": name, "version": version, "os": os_name, "arch": arch, "url": url,
                     "path": rel, "sha256": sha256_file(dest)}
            if binary.get("checksumUrl"):
                curl = expand(binary["checksumUrl"], version, os_name, url_arch)
                entry["checksumUrl"] = curl
                entry["checksumPath"] = map_url(curl, args.lab_http)
                pending.setdefault(entry["checksumPath"], []).append(rel)
            elif binary.get("sha256"):
                pinned = binary["sha256"]
                pinned = pinned.get(arch) if isinstance(pinned, dict) else pinned
                if pinned != entry["sha256"]:
                    warn(f"{name} {version} {os_name}/{arch} pins sha256 {pinned}; the lab's file has "
                         f"{entry['sha256']} (a build against the lab must override the pin)")
            record["binaries"].append(entry)
    write_checksums(http_root, pending)

    plan = []
    for ref in catalog.get("images", []):
        mapped = image_path(ref)
        if mapped is None:
            warn(f"{ref} is pinned by digest: a stand-in cannot have that digest, not seeded")
            record["images"].append({"ref": ref, "skipped": "digest-pinned"})
            continue
        plan.append(("image", ref, *mapped))
        record["images"].append({"ref": ref, "repository": mapped[0], "tag": mapped[1]})
    for chart in catalog.get("charts", []):
        name, version = chart["name"], chart["version"]
        if chart.get("repo"):
            rel = map_url(chart["repo"].rstrip("/") + "/index.yaml", args.lab_http).rsplit("/", 1)[0]
            plan.append(("chart-repo", name, version, rel))
            record["charts"].append({"name": name, "version": version, "repo": chart["repo"], "path": rel})
        elif chart.get("oci"):
            ref = chart["oci"].removeprefix("oci://")
            _, _, path = ref.partition("/")
            parent, _, last = path.rpartition("/")
            if last != name:
                die(f"chart {name}: oci reference {chart['oci']} must end with /{name} (helm push appends the name)")
            plan.append(("chart-oci", name, version, parent))
            record["charts"].append({"name": name, "version": version, "oci": chart["oci"], "repository": path})
        else:
            die(f"chart {name} has neither repo nor oci")

    # The hosts a manifest built from this catalog must map to the lab: `spec.fileMirrors`
    # (HOST -> <lab-http>/HOST) and `spec.registries` (HOST -> mirror: <lab-registry>).
    prefix = args.lab_http.rstrip("/") + "/"
    file_urls = [b["url"] for b in record["binaries"]] + [b.get("checksumUrl", "") for b in record["binaries"]]
    file_urls += [c["repo"] for c in record["charts"] if "repo" in c]
    record["hosts"] = {
        "files": sorted({urllib.parse.urlsplit(u).netloc for u in file_urls if u and not u.startswith(prefix)}),
        "registries": sorted(
            {image_host(i["ref"])[0] for i in record["images"] if "repository" in i}
            | {c["oci"].removeprefix("oci://").split("/", 1)[0] for c in record["charts"] if "oci" in c}
        ),
    }

    with open(args.plan, "w") as f:
        for line in plan:
            f.write("\t".join(line) + "\n")
    with open(args.record + ".tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(args.record + ".tmp", args.record)


if __name__ == "__main__":
    main()

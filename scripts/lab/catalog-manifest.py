#!/usr/bin/env python3
"""Prints a bundle manifest for a catalog version whose every download host and registry is the lab's.

    catalog-manifest.py CATALOG_JSON NAME LAB_HTTP LAB_REGISTRY
        [--packages URL SUITE KEYRING] [--kube-proxy-mode iptables|ipvs] [--storage nfs] [--cni CNI] [--multi-cni multus]
        [--component NAME=VERSION ...] [--runtime containerd|docker] [--pin-seeded RECORD]

CATALOG_JSON is `kk-bundle catalog VERSION --output json` (seeded into the lab by seed-catalog.sh).
The manifest asks for that Kubernetes version (containerd, calico unless --cni says otherwise) and
maps each download host of the catalog's binaries and charts to `LAB_HTTP/<host>`
(spec.fileMirrors) and each source registry to LAB_REGISTRY (spec.registries), as an operator with
an internal mirror would write it. The demo, the install benchmark and the end-to-end tests build
their Kubernetes bundles from it.

--packages adds `spec.osPackages` for debian-12 amd64 from the Debian repository at URL (suite
SUITE, component main) checked against KEYRING (the lab's: KK_LAB_DEBIAN_URL, KK_LAB_DEBIAN_SUITE,
KK_LAB_DEBIAN_KEYRING), asking for no package of its own: the catalog adds the cluster's.
--kube-proxy-mode and --storage set `spec.kubernetes.kubeProxyMode` and `spec.kubernetes.storage`,
--cni `spec.kubernetes.cni` (calico by default; the catalog must have been made with the same),
--multi-cni `spec.kubernetes.multiCni`;
--component (repeatable) sets `spec.kubernetes.components` (give `kk-bundle catalog` the same).
--runtime sets `spec.kubernetes.containerRuntime` (default containerd).
--pin-seeded adds a `spec.binaries` entry for every catalog binary that pins a `sha256`
(cri-dockerd: its upstream publishes no checksum file), pinning the lab's file from RECORD (the
record seed-catalog.sh wrote for CATALOG_JSON) instead: the lab's bytes are never upstream's, and
a manifest's entry overrides the catalog's of the same name. A `trustOnFirstUse` binary (docker)
needs no entry: the build pins whatever the lab serves in its lock.
"""

import argparse
import json

REGISTRIES = ("registry.k8s.io", "quay.io", "ghcr.io", "docker.io")


def arguments():
    parser = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1].strip())
    parser.add_argument("catalog")
    parser.add_argument("name")
    parser.add_argument("http")
    parser.add_argument("registry")
    parser.add_argument("--packages", nargs=3, metavar=("URL", "SUITE", "KEYRING"))
    parser.add_argument("--kube-proxy-mode", choices=("iptables", "ipvs"))
    parser.add_argument("--storage", action="append", choices=("nfs",), default=[])
    parser.add_argument("--cni", default="calico")
    parser.add_argument("--component", action="append", default=[], metavar="NAME=VERSION")
    parser.add_argument("--runtime", choices=("containerd", "docker"), default="containerd")
    parser.add_argument("--pin-seeded", metavar="RECORD")
    parser.add_argument("--multi-cni", choices=("multus",))
    return parser.parse_args()


def kubernetes(catalog, args):
    fields = [f"version: {catalog['kubernetes']}", f"containerRuntime: {args.runtime}", f"cni: {args.cni}"]
    if args.multi_cni:
        fields.append(f"multiCni: {args.multi_cni}")
    if args.kube_proxy_mode:
        fields.append(f"kubeProxyMode: {args.kube_proxy_mode}")
    if args.storage:
        fields.append(f"storage: [{', '.join(args.storage)}]")
    if args.component:
        pairs = [pair.split("=", 1) for pair in args.component]
        fields.append(f"components: {{{', '.join(f'{name}: {version}' for name, version in pairs)}}}")
    return f"  kubernetes: {{{', '.join(fields)}}}"


def os_packages(args):
    if not args.packages:
        return []
    url, suite, keyring = args.packages
    return [
        "  osPackages:",
        "    - distro: debian-12",
        "      arch: amd64",
        f'      repository: {{url: "{url}", suite: {suite}, components: [main], keyring: "{keyring}"}}',
        "      packages: []",
    ]


def seeded_pins(catalog, record_path):
    """`spec.binaries` lines: each pinned catalog binary with the sha256 of the lab's files."""
    with open(record_path) as f:
        record = json.load(f)
    lines = []
    for binary in catalog.get("binaries", []):
        if "sha256" not in binary:
            continue
        seeded = {entry["arch"]: entry["sha256"] for entry in record["binaries"]
                  if entry["name"] == binary["name"] and entry["version"] == binary["version"]}
        if not seeded:
            raise SystemExit(f"{record_path} has no {binary['name']} {binary['version']}: seed the catalog first")
        pins = ", ".join(f"{arch}: {digest}" for arch, digest in sorted(seeded.items()))
        arch_names = binary.get("archNames")
        names = f", archNames: {json.dumps(arch_names)}" if arch_names else ""
        lines.append(f'    - {{name: {binary["name"]}, version: "{binary["version"]}", url: "{binary["url"]}"'
                     f"{names}, sha256: {{{pins}}}}}")
    return ["  binaries:", *lines] if lines else []


def main():
    args = arguments()
    with open(args.catalog) as f:
        catalog = json.load(f)
    hosts = sorted({url.split("/")[2]
                    for entry in catalog.get("binaries", []) + catalog.get("charts", [])
                    for url in (entry.get("url"), entry.get("repo")) if url})
    lines = [
        "apiVersion: bundle.kk.io/v1alpha1",
        "kind: BundleManifest",
        f"metadata: {{name: {args.name}}}",
        "spec:",
        kubernetes(catalog, args),
        "  fileMirrors:",
    ]
    lines += [f'    {host}: "{args.http}/{host}"' for host in hosts]
    lines.append("  registries:")
    lines += [f'    {source}: {{mirror: "{args.registry}"}}' for source in REGISTRIES]
    lines.append(f'    "{args.registry}": {{plainHTTP: true}}')
    lines += os_packages(args)
    if args.pin_seeded:
        lines += seeded_pins(catalog, args.pin_seeded)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Prints a bundle manifest for a catalog version whose every download host and registry is the lab's.

    catalog-manifest.py CATALOG_JSON NAME LAB_HTTP LAB_REGISTRY
        [--packages URL SUITE KEYRING] [--kube-proxy-mode iptables|ipvs] [--storage nfs] [--cni CNI]
        [--component NAME=VERSION ...]

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
--cni `spec.kubernetes.cni` (calico by default; the catalog must have been made with the same);
--component (repeatable) sets `spec.kubernetes.components` (give `kk-bundle catalog` the same).
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
    return parser.parse_args()


def kubernetes(catalog, args):
    fields = [f"version: {catalog['kubernetes']}", "containerRuntime: containerd", f"cni: {args.cni}"]
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
    print("\n".join(lines))


if __name__ == "__main__":
    main()

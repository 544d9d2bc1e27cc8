#!/usr/bin/env python3
"""Prints a bundle manifest for a catalog version whose every download host and registry is the lab's.

    catalog-manifest.py CATALOG_JSON NAME LAB_HTTP LAB_REGISTRY

CATALOG_JSON is `kk-bundle catalog VERSION --output json` (seeded into the lab by seed-catalog.sh).
The manifest asks for that Kubernetes version (containerd, calico) and maps each download host of
the catalog's binaries and charts to `LAB_HTTP/<host>` (spec.fileMirrors) and each source registry
to LAB_REGISTRY (spec.registries), as an operator with an internal mirror would write it. The demo,
the install benchmark and the end-to-end tests build their Kubernetes bundles from it.
"""

import json
import sys

REGISTRIES = ("registry.k8s.io", "quay.io", "ghcr.io", "docker.io")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    catalog_path, name, http, registry = sys.argv[1:5]
    with open(catalog_path) as f:
        catalog = json.load(f)
    hosts = sorted({url.split("/")[2]
                    for entry in catalog.get("binaries", []) + catalog.get("charts", [])
                    for url in (entry.get("url"), entry.get("repo")) if url})
    lines = [
        "apiVersion: bundle.kk.io/v1alpha1",
        "kind: BundleManifest",
        f"metadata: {{name: {name}}}",
        "spec:",
        f"  kubernetes: {{version: {catalog['kubernetes']}, containerRuntime: containerd, cni: calico}}",
        "  fileMirrors:",
    ]
    lines += [f'    {host}: "{http}/{host}"' for host in hosts]
    lines.append("  registries:")
    lines += [f'    {source}: {{mirror: "{registry}"}}' for source in REGISTRIES]
    lines.append(f'    "{registry}": {{plainHTTP: true}}')
    print("\n".join(lines))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes an OCI image index into an OCI layout and tags it (skopeo 1.9 cannot make one).

    mkindex.py LAYOUT NAME TAG=ARCH [TAG=ARCH ...]

makes tag NAME point at a new index listing the manifests tagged TAG, each with platform linux/ARCH.
The index bytes depend only on the manifests, so rebuilding gives the same digest.
"""
import hashlib
import json
import os
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    layout, name, refs = sys.argv[1], sys.argv[2], sys.argv[3:]
    index_path = os.path.join(layout, "index.json")
    with open(index_path) as f:
        index = json.load(f)
    by_tag = {m.get("annotations", {}).get("org.opencontainers.image.ref.name"): m for m in index["manifests"]}
    entries = []
    for ref in refs:
        tag, _, arch = ref.partition("=")
        if tag not in by_tag or not arch:
            sys.exit(f"mkindex: {layout} has no tag {tag!r} (or no arch given in {ref!r})")
        entry = {k: v for k, v in by_tag[tag].items() if k != "annotations"}
        entry["platform"] = {"architecture": arch, "os": "linux"}
        entries.append(entry)
    blob = json.dumps(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries},
        separators=(",", ":"),
    ).encode()
    digest = hashlib.sha256(blob).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(blob)
    index["manifests"] = [
        m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != name
    ]
    index["manifests"].append({
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "digest": f"sha256:{digest}",
        "size": len(blob),
        "annotations": {"org.opencontainers.image.ref.name": name},
    })
    tmp = index_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(index, f)
    os.replace(tmp, index_path)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Asks containerd's CRI plugin for the status of images over its gRPC API, as kubelet does.

    cri-image-status.py SOCKET IMAGE...

Calls `runtime.v1.ImageService/ImageStatus` on the containerd socket SOCKET (for a lab node, from
the host: /proc/<node's PID 1>/root/run/containerd/containerd.sock) once per IMAGE and prints one
JSON object: {IMAGE: {"id": ..., "repo_tags": [...], "repo_digests": [...], "pinned": bool}, or
null when the CRI plugin does not know the image}.

The client is grpcio (Debian's python3-grpcio, installed by scripts/setup.sh); the two messages
are encoded and decoded here by hand from CRI's api.proto (k8s.io/cri-api, runtime/v1), which
keeps the script free of generated code:

    message ImageStatusRequest { ImageSpec image = 1; bool verbose = 2; }
    message ImageSpec { string image = 1; ... }
    message ImageStatusResponse { Image image = 1; map<string, string> info = 2; }
    message Image { string id = 1; repeated string repo_tags = 2; repeated string repo_digests = 3;
                    uint64 size = 4; Int64Value uid = 5; string username = 6; ImageSpec spec = 7;
                    bool pinned = 8; }
"""
import json
import sys

import grpc

METHOD = "/runtime.v1.ImageService/ImageStatus"


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def request(image):
    """ImageStatusRequest{image: ImageSpec{image: IMAGE}}."""
    return length_delimited(1, length_delimited(1, image.encode()))


def read_varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def fields(data):
    """(field number, value) of every field of a message: an int, or bytes when length-delimited."""
    at = 0
    while at < len(data):
        key, at = read_varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(data, at)
        elif wire == 2:
            size, at = read_varint(data, at)
            value, at = data[at:at + size], at + size
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire} of field {number} is not protobuf's")
        yield number, value


def image_status(response):
    """The Image of an ImageStatusResponse as a dict, or None when it holds none."""
    image = next((value for number, value in fields(response) if number == 1), None)
    if image is None:
        return None
    status = {"id": "", "repo_tags": [], "repo_digests": [], "pinned": False}
    for number, value in fields(image):
        if number == 1:
            status["id"] = value.decode()
        elif number == 2:
            status["repo_tags"].append(value.decode())
        elif number == 3:
            status["repo_digests"].append(value.decode())
        elif number == 8:
            status["pinned"] = bool(value)
    return status


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    socket, images = sys.argv[1], sys.argv[2:]
    with grpc.insecure_channel(f"unix://{socket}") as channel:
        # No serializers: the call sends and returns the bytes as they are.
        call = channel.unary_unary(METHOD)
        print(json.dumps({image: image_status(call(request(image), timeout=30)) for image in images}))


if __name__ == "__main__":
    main()

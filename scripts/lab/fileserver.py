#!/usr/bin/env python3
"""The upstream lab's static file server: release artifacts and Helm repositories on loopback.

    fileserver.py --root DIR --port N [--bind 127.0.0.1] [--faults FILE] [--access-log FILE]

Serves the regular files under DIR (no listings) for GET and HEAD with Content-Length, ETag and
Last-Modified, and honours one `Range: bytes=a-b`, `bytes=a-` or `bytes=-n` (206 + Content-Range;
416 + `Content-Range: bytes */size` when unsatisfiable; `If-Range` with the ETag or date).

Fault injection, read at every request from the --faults file (absent = no faults): a JSON object
mapping a URL path (decoded, without query) to a rule:

    {"mode": "cut", "after": 100, "times": 1}   headers announce the full length, then only
                                                `after` body bytes are sent and the connection closed
    {"mode": "status", "status": 500, "times": 2} answer with that status (429 and 503 carry
                                                `Retry-After: 0`) and no file
    {"mode": "corrupt", "times": 1, "at": 0}    flip one body byte (at offset `at` of the body sent,
                                                default the middle): same length, wrong digest
    {"mode": "delay", "seconds": 2, "times": 1}  wait, then serve normally

A rule applies to GET only unless it has `"methods": ["GET", "HEAD"]`. Each use decrements
`times` and the rule is dropped when it reaches 0 (the file is rewritten atomically, under a
lock shared with writers that flock FILE.lock); a rule without `times` applies to every request.

The access log gets one line per request, fields separated by one space:
    METHOD PATH RANGE STATUS BODY_BYTES_SENT FAULT UNIX_TIME
with `-` for no Range header and no fault; PATH is the raw request path.
"""

import argparse
import email.utils
import fcntl
import json
import mimetypes
import os
import posixpath
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 64 * 1024


class Faults:
    """The fault rules file: read, and consumed, at every request."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def take(self, method, path):
        if not self.path:
            return None
        with self.lock, open(self.path + ".lock", "a") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                with open(self.path) as f:
                    rules = json.load(f)
            except FileNotFoundError:
                return None
            except (OSError, ValueError) as err:
                print(f"fileserver: ignoring unreadable faults file {self.path}: {err}", file=sys.stderr)
                return None
            rule = rules.get(path) if isinstance(rules, dict) else None
            if not isinstance(rule, dict):
                return None
            if method not in rule.get("methods", ["GET"]):
                return None
            taken = dict(rule)
            if "times" in rule:
                left = int(rule["times"]) - 1
                if left <= 0:
                    del rules[path]
                else:
                    rule["times"] = left
                tmp = f"{self.path}.tmp.{os.getpid()}.{threading.get_ident()}"
                with open(tmp, "w") as f:
                    json.dump(rules, f, indent=1, sort_keys=True)
                os.replace(tmp, self.path)
            return taken


class AccessLog:
    def __init__(self, path):
        self.lock = threading.Lock()
        self.file = open(path, "a", buffering=1) if path else None  # line-buffered

    def write(self, *fields):
        if self.file is None:
            return
        line = " ".join(str(f) if f not in (None, "") else "-" for f in fields)
        with self.lock:
            self.file.write(line + "\n")


def parse_range(header, size):
    """(start, end) inclusive for one byte range; "unsatisfiable"; or None to ignore the header."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None  # a syntax we do not serve: RFC 9110 lets a server ignore Range
    spec = header[len("bytes="):].strip()
    first, sep, last = spec.partition("-")
    if not sep:
        return None
    try:
        if first == "":
            suffix = int(last)
            if suffix <= 0:
                return "unsatisfiable"
            return (max(0, size - suffix), size - 1) if size > 0 else "unsatisfiable"
        start = int(first)
        end = int(last) if last else size - 1
    except ValueError:
        return None
    if start >= size:
        return "unsatisfiable"
    if end < start:
        return None  # invalid: ignored like any other syntax error
    return start, min(end, size - 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kk-lab-fileserver/1"

    def do_GET(self):
        self.serve(send_body=True)

    def do_HEAD(self):
        self.serve(send_body=False)

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's signature)
        sys.stderr.write("%s %s\n" % (self.log_date_time_string(), format % args))

    def log_access(self, status, range_header, sent, fault):
        self.server.access_log.write(
            self.command, self.path, range_header, status, sent, fault, f"{time.time():.3f}"
        )

    def plain(self, status, text, extra_headers=(), range_header=None, fault=None):
        body = (text + "\n").encode() if self.command != "HEAD" else b""
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len((text + "\n").encode())))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.log_access(status, range_header, len(body), fault)

    def serve(self, send_body):
        range_header = self.headers.get("Range")
        url_path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        rule = self.server.faults.take(self.command, url_path)
        fault = rule.get("mode") if rule else None

        if fault == "delay":
            time.sleep(float(rule.get("seconds", 1)))
        elif fault == "status":
            status = int(rule.get("status", 500))
            extra = [("Retry-After", "0")] if status in (429, 503) else []
            self.plain(status, f"injected fault: status {status}", extra, range_header, "status")
            return

        file_path = self.resolve(url_path)
        if file_path is None:
            self.plain(404, "not found", range_header=range_header, fault=fault)
            return
        try:
            f = open(file_path, "rb")
        except OSError:
            self.plain(404, "not found", range_header=range_header, fault=fault)
            return
        with f:
            st = os.fstat(f.fileno())
            size = st.st_size
            etag = f'"{st.st_size:x}-{st.st_mtime_ns:x}"'
            last_modified = email.utils.formatdate(st.st_mtime, usegmt=True)

            byte_range = parse_range(range_header, size)
            if byte_range is not None and not self.if_range_matches(etag, st.st_mtime):
                byte_range = None  # the client's copy is of another version: send it all
            if byte_range == "unsatisfiable":
                self.plain(416, "range not satisfiable", [("Content-Range", f"bytes */{size}")], range_header, fault)
                return
            if byte_range is None:
                status, start, length = 200, 0, size
            else:
                status, start, length = 206, byte_range[0], byte_range[1] - byte_range[0] + 1

            self.send_response(status)
            ctype = mimetypes.guess_type(file_path)[0] or "application/octet-stream"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{start + length - 1}/{size}")
            self.end_headers()
            if not send_body:
                self.log_access(status, range_header, 0, fault)
                return

            limit = length
            if fault == "cut":
                limit = min(length, max(0, int(rule.get("after", 0))))
            flip_at = None
            if fault == "corrupt" and length > 0:
                flip_at = min(length - 1, max(0, int(rule.get("at", length // 2))))
            sent = 0
            f.seek(start)
            try:
                while sent < limit:
                    chunk = f.read(min(CHUNK, limit - sent))
                    if not chunk:
                        break
                    if flip_at is not None and sent <= flip_at < sent + len(chunk):
                        chunk = bytearray(chunk)
                        chunk[flip_at - sent] ^= 0xFF
                        chunk = bytes(chunk)
                    self.wfile.write(chunk)
                    sent += len(chunk)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            if sent < length:
                # A short body: the client must see the connection end, not wait for more.
                self.close_connection = True
            self.log_access(status, range_header, sent, fault)

    def if_range_matches(self, etag, mtime):
        if_range = self.headers.get("If-Range")
        if not if_range:
            return True
        if if_range.startswith('"') or if_range.startswith("W/"):
            return if_range == etag
        try:
            return email.utils.parsedate_to_datetime(if_range).timestamp() >= int(mtime)
        except (TypeError, ValueError):
            return False

    def resolve(self, url_path):
        """The regular file under the root for url_path, or None (also for any `..`)."""
        if "\0" in url_path or not url_path.startswith("/"):
            return None
        parts = [p for p in url_path.split("/") if p not in ("", ".")]
        if any(p == ".." for p in parts):
            return None
        path = os.path.join(self.server.root, *parts)
        real = os.path.realpath(path)
        if real != self.server.root and not real.startswith(self.server.root + os.sep):
            return None
        return path if os.path.isfile(path) else None


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--faults", help="fault rules file (JSON); default ROOT/../faults.json")
    parser.add_argument("--access-log", help="access log file (appended)")
    args = parser.parse_args()

    root = os.path.realpath(args.root)
    if not os.path.isdir(root):
        sys.exit(f"fileserver: root {root} is not a directory")
    server = Server((args.bind, args.port), Handler)
    server.root = root
    server.faults = Faults(args.faults or os.path.join(posixpath.dirname(root), "faults.json"))
    server.access_log = AccessLog(args.access_log)
    print(f"fileserver: serving {root} on http://{args.bind}:{server.server_address[1]}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A stand-in for Harbor in front of Debian's real docker-registry, for the lab.

Like Harbor (nginx terminating TLS in front of its core and distribution), it listens with TLS
on one address and serves:

- `GET /api/v2.0/projects/<name>` (200 or 404) and `POST /api/v2.0/projects` (201; 409 for an
  existing name; 400 for a name Harbor refuses, `^[a-z0-9]+(?:[._-][a-z0-9]+)*$`, at most 255),
  both needing credentials the registry accepts (401 otherwise), with Harbor's error body;
- `/v2/…` proxied to the real registry (TLS, basic auth passed through), except that a
  repository whose project (its first path component) does not exist is refused as Harbor
  refuses it: 404 `NOT_FOUND` "project … not found". So a push that did not create its
  projects fails here as it would on Harbor.

Usage: harbor-api.py LISTEN_HOST LISTEN_PORT CERT KEY BACKEND_URL BACKEND_CA
Projects live in memory; the test starts one per run and stops it by its PID.
"""

import http.client
import http.server
import json
import re
import socketserver
import ssl
import sys
import threading
import urllib.parse

NAME = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*$")
CHUNK = 256 * 1024
PROJECTS = {}
LOCK = threading.Lock()
# Hop-by-hop headers a proxy must not forward.
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
       "proxy-authorization", "proxy-authenticate"}


def error(code, message):
    return json.dumps({"errors": [{"code": code, "message": message}]}).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    backend = None
    backend_context = None

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=None):
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def json_reply(self, status, body):
        self.reply(status, body, {"Content-Type": "application/json"})

    def backend_connection(self):
        url = urllib.parse.urlsplit(self.backend)
        return http.client.HTTPSConnection(url.hostname, url.port, context=self.backend_context,
                                           timeout=120)

    def authorized(self):
        """Whether the registry accepts the request's credentials (Harbor's own users)."""
        auth = self.headers.get("Authorization")
        if not auth:
            return False
        connection = self.backend_connection()
        connection.request("GET", "/v2/", headers={"Authorization": auth})
        response = connection.getresponse()
        response.read()
        connection.close()
        return response.status == 200

    def api(self):
        if not self.authorized():
            return self.json_reply(401, error("UNAUTHORIZED", "unauthorized"))
        path = urllib.parse.urlsplit(self.path).path
        if self.command == "GET" and path.startswith("/api/v2.0/projects/"):
            name = urllib.parse.unquote(path[len("/api/v2.0/projects/"):])
            with LOCK:
                project = PROJECTS.get(name)
            if project is None:
                return self.json_reply(404, error("NOT_FOUND", f"project {name} not found"))
            return self.json_reply(200, json.dumps(project).encode())
        if self.command == "POST" and path == "/api/v2.0/projects":
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                name = body["project_name"]
            except (ValueError, KeyError, TypeError):
                return self.json_reply(400, error("BAD_REQUEST", "invalid request body"))
            if not isinstance(name, str) or len(name) > 255 or not NAME.match(name):
                return self.json_reply(400, error(
                    "BAD_REQUEST",
                    "project_name in body should match '^[a-z0-9]+(?:[._-][a-z0-9]+)*$'"))
            with LOCK:
                if name in PROJECTS:
                    return self.json_reply(409, error(
                        "CONFLICT", f"The project named {name} already exists"))
                PROJECTS[name] = {"project_id": len(PROJECTS) + 1, "name": name,
                                  "metadata": body.get("metadata", {})}
            return self.reply(201, headers={"Location": f"/api/v2.0/projects/{len(PROJECTS)}"})
        return self.json_reply(404, error("NOT_FOUND", "no such API"))

    def proxy(self):
        path = urllib.parse.urlsplit(self.path).path
        parts = path.split("/")
        # /v2/<project>/<repo…>/(manifests|blobs|tags)/…: the project must exist.
        if len(parts) > 4 and parts[2]:
            with LOCK:
                known = parts[2] in PROJECTS
            if not known:
                return self.json_reply(404, error("NOT_FOUND", f"project {parts[2]} not found"))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        connection = self.backend_connection()
        connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for key, value in headers.items():
            connection.putheader(key, value)
        connection.putheader("X-Forwarded-Proto", "https")
        if chunked:
            connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        if chunked:
            self.forward_chunks(connection)
        else:
            remaining = int(self.headers.get("Content-Length") or 0)
            while remaining > 0:
                chunk = self.rfile.read(min(CHUNK, remaining))
                if not chunk:
                    break
                connection.send(chunk)
                remaining -= len(chunk)
        response = connection.getresponse()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP and key.lower() != "content-length":
                self.send_header(key, value)
        body_length = response.getheader("Content-Length")
        if body_length is not None:
            self.send_header("Content-Length", body_length)
            self.end_headers()
            while self.command != "HEAD":
                chunk = response.read(CHUNK)
                if not chunk:
                    break
                self.wfile.write(chunk)
        else:
            body = response.read()
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        connection.close()

    def forward_chunks(self, connection):
        """A chunked request body, passed on chunk by chunk (streamed blob uploads)."""
        while True:
            size_line = self.rfile.readline()
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                # Trailers, up to the empty line.
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                connection.send(b"0\r\n\r\n")
                return
            data = self.rfile.read(size)
            self.rfile.readline()
            connection.send(b"%x\r\n" % len(data) + data + b"\r\n")

    def handle_any(self):
        if self.path.startswith("/api/"):
            return self.api()
        if self.path.startswith("/v2"):
            return self.proxy()
        return self.json_reply(404, error("NOT_FOUND", "not found"))

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    host, port, cert, key, backend, backend_ca = sys.argv[1:7]
    Handler.backend = backend
    Handler.backend_context = ssl.create_default_context(cafile=backend_ca)
    server = Server((host, int(port)), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

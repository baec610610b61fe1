"""The emulator's HTTPS proxy: answers ``CONNECT`` for the Google storage hosts itself (TLS with the throwaway CA) and
forwards each request to fake-gcs-server; relays other hosts unchanged or refuses them. Runs in a child process
(``python proxy.py _proxy CONFIG``, started by `tpu_helpers._infra.gcs_emulator.LocalGCS`): standard library only,
no import of the package, so it starts by path with ``python -I``.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

# Hosts the proxy answers itself (TLS terminated with the throwaway CA, forwarded to fake-gcs-server).
EMULATED_HOSTS = ("storage.googleapis.com", "www.googleapis.com", "storage-download.googleapis.com",
                  "oauth2.googleapis.com")



_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
               "transfer-encoding", "upgrade", "expect", "proxy-connection"}
_WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def write_target_bucket(method: str, host: str, path: str) -> str | None:
    """The bucket a GCS request would modify (None for reads): used to emulate read-only buckets."""
    if method.upper() not in _WRITE_METHODS:
        return None
    path = urllib.parse.urlsplit(path).path
    host = host.split(":")[0].lower()
    m = re.search(r"/(?:rewriteTo|copyTo)/b/([^/]+)/o/", path)
    if m:
        return urllib.parse.unquote(m.group(1))
    m = re.match(r"/(?:upload/)?storage/v1/b/([^/?]+)", path)
    if m:
        return urllib.parse.unquote(m.group(1))
    if host.endswith(".storage.googleapis.com"):
        return host[: -len(".storage.googleapis.com")]
    m = re.match(r"/([^/]+)/.+", path)
    if m and host in ("storage.googleapis.com", "storage-download.googleapis.com"):
        return urllib.parse.unquote(m.group(1))
    return None


class _ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, config: dict):
        super().__init__(("127.0.0.1", 0), _ConnectHandler)
        self.config = config
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(config["cert"], config["key"])
        self._policy_mtime = -1.0
        self._read_only: set[str] = set()

    def read_only(self) -> set[str]:
        try:
            mtime = os.stat(self.config["policy"]).st_mtime
            if mtime != self._policy_mtime:
                self._read_only = set(json.loads(Path(self.config["policy"]).read_text())["read_only"])
                self._policy_mtime = mtime
        except (OSError, ValueError, KeyError):
            pass
        return self._read_only


def _is_emulated(host: str) -> bool:
    return host in EMULATED_HOSTS or host.endswith(".storage.googleapis.com")


class _ConnectHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def setup(self) -> None:
        # Small writes (headers, then body) on loopback otherwise wait ~40 ms for delayed ACKs (Nagle).
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def log_message(self, fmt: str, *args: Any) -> None:  # keep the log short: errors only
        pass

    def do_CONNECT(self) -> None:
        host, _, port = self.path.rpartition(":")
        host = host.strip("[]").lower()
        if _is_emulated(host):
            self.send_response_only(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            try:
                tls = self.server.tls.wrap_socket(self.connection, server_side=True)
            except (ssl.SSLError, OSError) as e:
                sys.stderr.write(f"TLS handshake for {host} failed: {e}\n")
                self.close_connection = True
                return
            tls.settimeout(600)
            _GCSForwarder(tls, self.client_address, self.server, host)
            self.close_connection = True
            return
        if host.endswith(".googleapis.com") or host.endswith(".google.com") or not self.server.config["relay"]:
            self._refuse(host)
            return
        self._relay(host, int(port or 443))

    def _refuse(self, host: str) -> None:
        body = (f"tpu-course local GCS emulator: refusing to connect to {host}; only Google Cloud Storage is "
                "emulated and nothing else leaves this machine through this proxy.\n").encode()
        self.send_response_only(403, "Forbidden")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _relay(self, host: str, port: int) -> None:
        try:
            upstream = socket.create_connection((host, port), timeout=30)
        except OSError as e:
            body = f"cannot reach {host}:{port}: {e}\n".encode()
            self.send_response_only(502, "Bad Gateway")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return
        self.send_response_only(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        upstream.settimeout(None)
        self.connection.settimeout(None)

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        back = threading.Thread(target=pump, args=(upstream, self.connection), daemon=True)
        back.start()
        pump(self.connection, upstream)
        back.join()
        upstream.close()
        self.close_connection = True

    def do_GET(self) -> None:  # a plain-HTTP proxy request: not offered
        body = b"tpu-course local GCS emulator: this proxy only serves HTTPS (CONNECT)\n"
        self.send_response_only(405, "Method Not Allowed")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_GET


class _GCSForwarder(BaseHTTPRequestHandler):
    """HTTP/1.1 requests inside the decrypted tunnel, forwarded to fake-gcs-server (keep-alive both sides)."""

    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def __init__(self, request: Any, client_address: Any, server: _ProxyServer, host: str):
        self.tunnel_host = host
        self.upstream: http.client.HTTPConnection | None = None
        super().__init__(request, client_address, server)

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self.upstream is not None:
                self.upstream.close()

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json_error(self, status: int, reason: str, message: str) -> None:
        body = json.dumps({"error": {"code": status, "message": message,
                                     "errors": [{"message": message, "domain": "global", "reason": reason}]}}).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self) -> None:
        body = self._read_body()
        host = self.headers.get("Host") or self.tunnel_host
        bucket = write_target_bucket(self.command, host, self.path)
        if bucket is not None and bucket in self.server.read_only():
            self._send_json_error(403, "forbidden",
                                  f"tpu-course-learner@local does not have storage.objects.create access to the "
                                  f"Google Cloud Storage bucket {bucket} (read-only in the local emulator). "
                                  "Permission 'storage.objects.create' denied on resource (or it may not exist).")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"] = host.split(":")[0]
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        for attempt in (0, 1):
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection("127.0.0.1", self.server.config["upstream_port"],
                                                           timeout=600)
                self.upstream.connect()
                self.upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.upstream.request(self.command, self.path, body=body, headers=headers)
                resp = self.upstream.getresponse()
                break
            except (OSError, http.client.HTTPException):
                self.upstream.close()
                self.upstream = None
                if attempt:
                    self._send_json_error(503, "backendError", "the local fake-gcs-server is not answering")
                    return
        self.send_response_only(resp.status, resp.reason)
        length = resp.getheader("Content-Length")
        for key, value in resp.getheaders():
            if key.lower() == "location":
                # fake-gcs-server builds upload-session URLs from the Host header with "http://": send the
                # client back through this proxy over HTTPS, as with the real service.
                value = re.sub(r"^http://([^/]*googleapis\.com)/", r"https://\1/", value)
            if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                self.send_header(key, value)
        if self.command == "HEAD" or resp.status in (204, 304):
            if length is not None:
                self.send_header("Content-Length", length)
            self.end_headers()
            resp.read()
            return
        if length is None:
            data = resp.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Content-Length", length)
        self.end_headers()
        remaining = int(length)
        while remaining > 0:
            data = resp.read(min(remaining, 1 << 20))
            if not data:
                break
            self.wfile.write(data)
            remaining -= len(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward


def _run_proxy(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    server = _ProxyServer(config)
    parent = config.get("parent")

    def watch_parent() -> None:  # exit when the process that started us is gone (portable fallback)
        while True:
            time.sleep(1.0)
            if parent and os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.5)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "_proxy":
        raise SystemExit("usage: python proxy.py _proxy CONFIG.json (started by LocalGCS, not by hand)")
    _run_proxy(sys.argv[2])

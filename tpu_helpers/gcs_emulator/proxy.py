"""The emulator's HTTPS proxy (a child process, standard library only): GCS hosts answered with our CA and forwarded
to fake-gcs-server; other hosts relayed only when listed; loopback, link-local and metadata addresses never."""
from __future__ import annotations

import base64
import http.client
import ipaddress
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
import urllib.parse
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

EMULATED_HOSTS = ("storage.googleapis.com", "www.googleapis.com", "storage-download.googleapis.com",
                  "oauth2.googleapis.com")
# Relayed by default: what a notebook fetches while the emulator runs (Hub, pip, GitHub); ".x" = every subdomain.
DEFAULT_RELAY_HOSTS = ("huggingface.co", ".huggingface.co", ".hf.co", "pypi.org", "files.pythonhosted.org",
                       "github.com", "codeload.github.com", ".githubusercontent.com")
# Never relayed, whatever the list says: the cloud metadata servers hand out the VM's credentials.
METADATA_HOSTS = ("metadata.google.internal", "metadata", "metadata.goog", "instance-data")

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

    def read_only(self) -> set[str]:  # the buckets LocalGCS.create_bucket(..., read_only=True) listed
        try:
            return set(json.loads(Path(self.config["policy"]).read_text())["read_only"])
        except (OSError, ValueError, KeyError):
            return set()


def _private_address(ip: str) -> bool:
    """Loopback, link-local (169.254.169.254 is the metadata server), unspecified, multicast or reserved."""
    try:
        a = ipaddress.ip_address(ip.split("%")[0])
    except ValueError:
        return False
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        a = a.ipv4_mapped
    return a.is_loopback or a.is_link_local or a.is_unspecified or a.is_multicast or a.is_reserved


def relay_refusal(host: str, relay_hosts: list[str] | tuple[str, ...]) -> str | None:
    """Why a ``CONNECT`` to `host` (not an emulated one) is refused, or None when it may be relayed."""
    host = host.strip("[]").lower().rstrip(".")
    if host.endswith(".googleapis.com") or host.endswith(".google.com") or host == "google.com":
        return ("only Google Cloud Storage is emulated; no other Google host is reached through this proxy (so no "
                "request meant for the emulator, and no test token, ever reaches Google)")
    if host in METADATA_HOSTS or host.endswith(".internal") or _private_address(host) or host == "localhost":
        return "loopback, link-local and cloud-metadata addresses are never relayed"
    if not any(host == p or (p.startswith(".") and host.endswith(p)) for p in relay_hosts):
        listed = ", ".join(relay_hosts) or "none"
        return (f"it relays only the hosts on its list ({listed}); start it with "
                f"LocalGCS(relay_hosts=[..., {host!r}]) to add one, or stop the emulator")
    return None


class _ConnectHandler(BaseHTTPRequestHandler):  # CONNECT only: any other method gets http.server's 501
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def setup(self) -> None:
        # small writes on loopback otherwise wait ~40 ms for delayed ACKs (Nagle)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def log_message(self, fmt: str, *args: Any) -> None:  # errors only
        pass

    def do_CONNECT(self) -> None:
        host, _, port = self.path.rpartition(":")
        host = host.strip("[]").lower()
        if host in EMULATED_HOSTS or host.endswith(".storage.googleapis.com"):
            self._established()
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
        why = relay_refusal(host, self.server.config.get("relay_hosts", ()))
        if why:
            self._refuse(host, why)
            return
        self._relay(host, int(port or 443))

    def _established(self) -> None:
        self.send_response_only(200, "Connection established")
        self.end_headers()
        self.wfile.flush()

    def _refuse(self, host: str, why: str, status: int = 403) -> None:
        body = (f"tpu-course local GCS emulator: refusing to connect to {host}: {why}.\n" if status == 403
                else f"tpu-course local GCS emulator: {why}\n").encode()
        self.send_response_only(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def _open_direct(self, host: str, port: int) -> socket.socket:
        """Connect to `host` itself, checking every address it resolves to (no DNS trick reaches loopback)."""
        last: OSError | None = None
        for family, kind, proto, _, addr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            if _private_address(addr[0]):
                raise PermissionError(f"{host} resolves to {addr[0]}, a loopback/link-local address")
            try:
                sock = socket.socket(family, kind, proto)
                sock.settimeout(30)
                sock.connect(addr)
                return sock
            except OSError as e:
                last = e
        raise last or OSError(f"no address for {host}")

    def _open_through(self, proxy_url: str, host: str, port: int) -> socket.socket:
        """A tunnel to `host` through the proxy that was configured before the emulator started."""
        url = urllib.parse.urlsplit(proxy_url if "://" in proxy_url else "http://" + proxy_url)
        sock = socket.create_connection((url.hostname, url.port or 80), timeout=30)
        auth = ""
        if url.username:
            pair = f"{urllib.parse.unquote(url.username)}:{urllib.parse.unquote(url.password or '')}"
            auth = f"Proxy-Authorization: Basic {base64.b64encode(pair.encode()).decode()}\r\n"
        sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head and (data := sock.recv(4096)):
            head += data
        status = head.split(b"\r\n", 1)[0].decode(errors="replace")
        if status.split()[1:2] != ["200"]:
            sock.close()
            raise ConnectionRefusedError(f"the proxy {url.hostname}:{url.port or 80} answered {status!r}")
        return sock

    def _relay(self, host: str, port: int) -> None:
        next_proxy = self.server.config.get("next_proxy")
        try:
            upstream = (self._open_through(next_proxy, host, port) if next_proxy
                        else self._open_direct(host, port))
        except PermissionError as e:
            self._refuse(host, str(e))
            return
        except OSError as e:
            through = f" through {urllib.parse.urlsplit(next_proxy).hostname}" if next_proxy else ""
            self._refuse(host, f"cannot reach {host}:{port}{through}: {e}", 502)
            return
        self._established()
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
        data = resp.read()  # whole objects: a few MB in this course
        self.send_response_only(resp.status, resp.reason)
        for key, value in resp.getheaders():
            if key.lower() == "location":  # fake-gcs-server's upload URLs say http://: back through this proxy
                value = re.sub(r"^http://([^/]*googleapis\.com)/", r"https://\1/", value)
            if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                self.send_header(key, value)
        no_body = self.command == "HEAD" or resp.status in (204, 304)
        length = resp.getheader("Content-Length") if no_body else str(len(data))
        if length is not None:
            self.send_header("Content-Length", length)
        self.end_headers()
        if not no_body:
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward


def _run_proxy(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    server = _ProxyServer(config)
    parent = config.get("parent")

    def watch_parent() -> None:  # exit when the process that started us is gone
        while not parent or os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.5)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "_proxy":
        raise SystemExit("usage: python proxy.py _proxy CONFIG.json (started by LocalGCS, not by hand)")
    _run_proxy(sys.argv[2])

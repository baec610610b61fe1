"""The emulator's HTTPS proxy (a child process, standard library only): TLS for GCS hosts, fake-gcs-server behind."""
import http.client
import json
import re
import socket
import socketserver
import ssl
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler
from pathlib import Path

# TensorFlow's GCS hosts (xla/tsl/platform/cloud/gcs_file_system.cc) and its token host
EMULATED_HOSTS = ("storage.googleapis.com", "www.googleapis.com", "storage-download.googleapis.com",
                  "oauth2.googleapis.com")
# What a notebook fetches while the emulator runs (Hub, pip, GitHub): in NO_PROXY, never through this proxy.
DIRECT_HOSTS = ("huggingface.co", "hf.co", "pypi.org", "files.pythonhosted.org", "github.com",
                "githubusercontent.com")

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
               "transfer-encoding", "upgrade", "expect", "proxy-connection"}


def write_target_bucket(method: str, path: str) -> str | None:
    """The bucket a JSON-API request would modify (None for reads): used to emulate read-only buckets."""
    if method.upper() not in ("POST", "PUT", "PATCH", "DELETE"):
        return None
    path = urllib.parse.urlsplit(path).path
    m = re.search(r"/(?:rewriteTo|copyTo)/b/([^/]+)/o/", path) or re.match(r"/(?:upload/)?storage/v1/b/([^/?]+)", path)
    return urllib.parse.unquote(m.group(1)) if m else None


class _ProxyServer(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def __init__(self, config: dict):
        super().__init__(("127.0.0.1", 0), _ConnectHandler)
        self.config = config
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(config["cert"], config["key"])

    def read_only(self) -> list[str]:
        """The buckets `LocalGCS.create_bucket(..., read_only=True)` listed (the file is replaced, never half-written)."""
        return json.loads(Path(self.config["policy"]).read_text())["read_only"]


class _ConnectHandler(BaseHTTPRequestHandler):  # CONNECT to GCS only: any other method gets http.server's 501
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def setup(self) -> None:
        # small writes on loopback otherwise wait ~40 ms for delayed ACKs (Nagle)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def do_CONNECT(self) -> None:
        host = self.path.rpartition(":")[0].strip("[]").lower()
        self.close_connection = True
        if host not in EMULATED_HOSTS:
            body = (f"tpu-course local GCS emulator: refusing to connect to {host}: this proxy answers only Google "
                    "Cloud Storage (no test token reaches Google, no metadata server is reached). The Hub, PyPI and "
                    "GitHub go around it (NO_PROXY); stop the emulator (gcs.stop()) to reach other hosts.\n").encode()
            self.send_response_only(403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response_only(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        try:
            tls = self.server.tls.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError) as e:
            sys.stderr.write(f"TLS handshake for {host} failed: {e}\n")
            return
        tls.settimeout(600)
        _GCSForwarder(tls, self.client_address, self.server)


class _GCSForwarder(BaseHTTPRequestHandler):
    """HTTP/1.1 requests inside the decrypted tunnel (kept alive), each forwarded to fake-gcs-server."""

    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def _read_body(self) -> bytes:
        if "chunked" not in (self.headers.get("Transfer-Encoding") or "").lower():
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []  # TensorFlow's uploads come chunked
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return b"".join(chunks)

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
        bucket = write_target_bucket(self.command, self.path)
        if bucket is not None and bucket in self.server.read_only():
            self._send_json_error(403, "forbidden",
                                  f"tpu-course-learner@local does not have storage.objects.create access to the "
                                  f"Google Cloud Storage bucket {bucket} (read-only in the local emulator). "
                                  "Permission 'storage.objects.create' denied on resource (or it may not exist).")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"] = self.headers.get("Host", "storage.googleapis.com").split(":")[0]
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.config["upstream_port"], timeout=600)
        try:
            upstream.connect()
            upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream.request(self.command, self.path, body=body, headers=headers)
            resp = upstream.getresponse()
            data = resp.read()  # whole objects: a few MB in this course
        except (OSError, http.client.HTTPException):
            self._send_json_error(503, "backendError", "the local fake-gcs-server is not answering")
            return
        finally:
            upstream.close()
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


if __name__ == "__main__":  # started by LocalGCS: python proxy.py CONFIG.json; prints its port once it listens
    server = _ProxyServer(json.loads(Path(sys.argv[1]).read_text()))
    print(server.server_address[1], flush=True)
    server.serve_forever(poll_interval=0.5)

"""tpu_helpers.core.network: the one reachability rule of the Hub and GCS probes, on loopback only (no network)."""
from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from tpu_helpers.core import hub
from tpu_helpers.core.network import why_unreachable
from tpu_helpers.mlm import gcs


class _Server(http.server.BaseHTTPRequestHandler):
    status = 200
    seen: list[tuple[str, str]] = []

    def do_HEAD(self):  # noqa: N802  (http.server's name)
        type(self).seen.append((self.command, self.path))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server():
    """A loopback HTTP server answering HEAD with `_Server.status`; yields its URL."""
    _Server.seen = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed: connections are refused at once


@pytest.mark.parametrize("status", [200, 404, 503])
def test_any_http_answer_means_reachable(server, status, monkeypatch):
    monkeypatch.setattr(_Server, "status", status)
    assert why_unreachable(server, proxies={}) is None
    assert _Server.seen == [("HEAD", "/")]


def test_no_answer_says_why_at_once():
    start = time.monotonic()
    why = why_unreachable(f"http://127.0.0.1:{_closed_port()}/", timeout=2.0, proxies={})
    assert why is not None and why.startswith("ConnectionRefusedError") and time.monotonic() - start < 2
    assert why_unreachable("not a url").startswith("ValueError: unknown url type")


def test_the_request_goes_through_the_proxy_given(server):
    assert why_unreachable("http://storage.example.invalid/x", proxies={"http": server}) is None
    assert _Server.seen == [("HEAD", "http://storage.example.invalid/x")]  # the proxy got the absolute URL


def test_the_hub_probe_follows_the_rule(server, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", server)
    monkeypatch.setattr(_Server, "status", 404)
    assert hub.hub_reachable() is True
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    assert hub.hub_reachable() is False


def test_the_gcs_probe_follows_the_rule_through_the_proxy_its_environment_names(monkeypatch):
    closed = f"http://127.0.0.1:{_closed_port()}"
    why = gcs._gcs_unreachable({"HTTPS_PROXY": closed}, timeout=2.0)  # the proxy refuses: GCS is never asked
    assert why is not None and why.startswith("ConnectionRefusedError")
    asked = []
    monkeypatch.setattr(gcs, "why_unreachable", lambda url, **kw: asked.append((url, kw)))
    gcs._gcs_unreachable({"https_proxy": closed, "HTTPS_PROXY": "http://other"}, timeout=1.0)
    gcs._gcs_unreachable({}, timeout=1.0)
    assert asked == [(gcs.GCS_ENDPOINT, {"timeout": 1.0, "proxies": {"https": closed}}),
                     (gcs.GCS_ENDPOINT, {"timeout": 1.0, "proxies": {}})]  # no proxy named: none, not urllib's

"""The emulator's HTTPS proxy on its own (no TensorFlow): what it relays, what it refuses, and the proxy chain.

The proxy runs as the child process `LocalGCS` starts, from a config written here; a loopback socket stands in for
a corporate proxy that was configured before the emulator started.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tpu_helpers.gcs_emulator import proxy
from tpu_helpers.gcs_emulator.certs import make_certificates
from tpu_helpers.gcs_emulator.proxy import DEFAULT_RELAY_HOSTS, EMULATED_HOSTS, relay_refusal


@pytest.mark.parametrize("host", ["metadata.google.internal", "METADATA.google.internal.", "169.254.169.254",
                                  "127.0.0.1", "127.8.9.10", "::1", "[::1]", "::ffff:127.0.0.1", "localhost",
                                  "0.0.0.0", "fe80::1", "tpu.googleapis.com", "accounts.google.com",
                                  "example.org"])
def test_refused_hosts(host):
    assert relay_refusal(host, DEFAULT_RELAY_HOSTS) is not None


@pytest.mark.parametrize("host", ["huggingface.co", "cdn-lfs.huggingface.co", "cas-bridge.xethub.hf.co", "pypi.org",
                                  "files.pythonhosted.org", "github.com", "objects.githubusercontent.com"])
def test_relayed_hosts(host):
    assert relay_refusal(host, DEFAULT_RELAY_HOSTS) is None


def test_listed_internal_addresses_are_still_refused_and_the_message_says_how_to_add_a_host():
    assert "never relayed" in relay_refusal("169.254.169.254", ["169.254.169.254"])
    assert "never relayed" in relay_refusal("metadata.google.internal", ["metadata.google.internal"])
    assert relay_refusal("10.1.2.3", ["10.1.2.3"]) is None  # a private (corporate) address the learner listed
    assert "relay_hosts=[..., 'example.org']" in relay_refusal("example.org", DEFAULT_RELAY_HOSTS)
    assert "none" in relay_refusal("example.org", [])
    assert relay_refusal("evilhf.co", DEFAULT_RELAY_HOSTS) is not None  # ".hf.co" is a suffix, not a substring


def _start_proxy(tmp_path: Path, **config) -> tuple[subprocess.Popen, int]:
    _, cert, key = make_certificates(tmp_path, EMULATED_HOSTS)
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps({"cert": str(cert), "key": str(key), "upstream_port": 9,
                                "policy": str(tmp_path / "none.json"), "parent": os.getpid(), **config}))
    proc = subprocess.Popen([sys.executable, "-I", proxy.__file__, "_proxy", str(path)], stdout=subprocess.PIPE)
    return proc, int(proc.stdout.readline())


def _connect(port: int, target: str, then: bytes | None = None) -> tuple[bytes, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = s.recv(4096)
        if then is None:
            if not head.startswith(b"HTTP/1.1 200"):  # an error: read its body to the end
                while data := s.recv(4096):
                    head += data
            return head, b""
        s.sendall(then)
        return head, s.recv(100)


class _FakeCorporateProxy:
    """Answers one CONNECT with `status`, then echoes upper-cased bytes: records what it was asked."""

    def __init__(self, status: bytes = b"200 Connection established"):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.request = b""
        self.status = status
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            while b"\r\n\r\n" not in self.request:
                self.request += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 " + self.status + b"\r\n\r\n")
            if self.status.startswith(b"200"):
                conn.sendall(conn.recv(100).upper())


def test_relayed_connections_go_through_the_proxy_configured_before(tmp_path):
    corporate = _FakeCorporateProxy()
    proc, port = _start_proxy(tmp_path, relay_hosts=["example.test"],
                              next_proxy=f"http://me:s%40cret@127.0.0.1:{corporate.port}")
    try:
        head, echoed = _connect(port, "example.test:443", b"hello")
        assert head.startswith(b"HTTP/1.1 200") and echoed == b"HELLO"
        assert corporate.request.startswith(b"CONNECT example.test:443 HTTP/1.1\r\n")
        assert b"Proxy-Authorization: Basic bWU6c0BjcmV0" in corporate.request  # me:s@cret
        # refusals are decided before the chain: metadata never reaches the corporate proxy either
        assert _connect(port, "metadata.google.internal:80")[0].startswith(b"HTTP/1.1 403")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_a_refusing_corporate_proxy_is_named_in_a_502(tmp_path):
    corporate = _FakeCorporateProxy(b"407 Proxy Authentication Required")
    proc, port = _start_proxy(tmp_path, relay_hosts=["example.test"], next_proxy=f"127.0.0.1:{corporate.port}")
    try:
        head, _ = _connect(port, "example.test:443")
        assert head.startswith(b"HTTP/1.1 502") and b"407 Proxy Authentication Required" in head
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_without_relay_hosts_only_the_emulated_hosts_are_answered(tmp_path):
    proc, port = _start_proxy(tmp_path, relay_hosts=[])
    try:
        assert _connect(port, "huggingface.co:443")[0].startswith(b"HTTP/1.1 403")
        assert _connect(port, "storage.googleapis.com:443")[0].startswith(b"HTTP/1.1 200")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()

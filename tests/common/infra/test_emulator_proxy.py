"""The emulator's HTTPS proxy on its own (no TensorFlow): it answers the GCS hosts and refuses every other host.

The proxy runs as the child process `LocalGCS` starts, from a config written here.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from tpu_helpers.gcs_emulator import proxy
from tpu_helpers.gcs_emulator.certs import make_certificates
from tpu_helpers.gcs_emulator.proxy import EMULATED_HOSTS, write_target_bucket


@pytest.fixture(scope="module")
def proxy_port(tmp_path_factory):
    folder = tmp_path_factory.mktemp("proxy")
    _, cert, key = make_certificates(folder, EMULATED_HOSTS)
    config = folder / "proxy.json"
    config.write_text(json.dumps({"cert": str(cert), "key": str(key), "upstream_port": 9,
                                  "policy": str(folder / "none.json")}))
    proc = subprocess.Popen([sys.executable, "-I", proxy.__file__, str(config)], stdout=subprocess.PIPE)
    try:
        yield int(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def _connect(port: int, target: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        answer = s.recv(4096)
        while not answer.startswith(b"HTTP/1.1 200") and (more := s.recv(4096)):  # a refusal: read its body too
            answer += more
        return answer


@pytest.mark.parametrize("host", ["metadata.google.internal", "169.254.169.254", "127.0.0.1", "[::1]", "localhost",
                                  "tpu.googleapis.com", "accounts.google.com", "huggingface.co", "example.org"])
def test_every_other_host_is_refused(proxy_port, host):
    answer = _connect(proxy_port, f"{host}:443")
    assert answer.startswith(b"HTTP/1.1 403") and b"answers only Google Cloud Storage" in answer, answer


def test_the_gcs_hosts_are_answered(proxy_port):
    for host in EMULATED_HOSTS:
        assert _connect(proxy_port, f"{host}:443").startswith(b"HTTP/1.1 200")


def test_write_target_bucket():
    assert write_target_bucket("GET", "/storage/v1/b/a/o/x") is None
    assert write_target_bucket("POST", "/upload/storage/v1/b/a/o?uploadType=resumable") == "a"
    assert write_target_bucket("PUT", "/upload/storage/v1/b/a/o?uploadType=resumable&upload_id=1") == "a"
    assert write_target_bucket("POST", "/storage/v1/b/a/o/x/rewriteTo/b/b2/o/y") == "b2"
    assert write_target_bucket("DELETE", "/storage/v1/b/a/o/x%2Fy") == "a"

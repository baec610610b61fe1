"""Anything that starts with gs: is a Cloud Storage URL or a clear error: never a local folder named
``gs:``, never an invalid bucket name sent to Google."""
import os

import pytest

from tpu_helpers.core.runtime import Runtime
from tpu_helpers.mlm import gcs

CPU = Runtime("cpu", "local")


@pytest.mark.parametrize("url, message", [
    ("gs://", "no bucket"),
    ("gs:///x", "no bucket"),
    ("gs:/bucket/x", "write it as gs://bucket/x"),
    ("GS://bucket/x", "write it as gs://bucket/x"),
    ("gs:bucket", "write it as gs://bucket"),
    ("gs://My Bucket/x", "not a valid bucket name"),
    ("gs://ab/x", "not a valid bucket name"),  # under 3 characters
    ("gs://-bucket", "not a valid bucket name"),
    ("gs://a" + "b" * 63, "not a valid bucket name"),
    ("gs://two..dots", "not a valid bucket name"),
])
def test_bad_gcs_urls_are_refused_before_anything_is_created(tmp_path, monkeypatch, url, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        gcs.check_bucket(url, runtime=CPU)
    with pytest.raises(ValueError, match=message):  # ValueError is a ValueError too
        gcs.split_gcs_path(url)
    assert os.listdir(tmp_path) == []  # no local folder named "gs:" (or anything else)


def test_valid_bucket_names_split():
    assert gcs.split_gcs_path("gs://my-bucket_1.example.com/a/b/") == ("my-bucket_1.example.com", "a/b")


@pytest.mark.parametrize("proxy", ["closed-port", "refusing"])
def test_an_unreachable_gcs_is_one_clear_error_within_seconds(proxy, monkeypatch):
    """Offline (here: the proxy TensorFlow would use is closed, or refuses GCS): one 5 s probe, then
    RuntimeError naming the offline choices, instead of TensorFlow's retries and a libcurl message."""
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    if proxy == "closed-port":
        server.close()
    else:
        server.listen(1)

        def refuse() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        threading.Thread(target=refuse, daemon=True).start()
    monkeypatch.delenv("TPU_COURSE_LOCAL_GCS", raising=False)
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="cannot reach Google Cloud Storage.*local emulator"):
            gcs.check_bucket("gs://my-course-bucket/data", runtime=CPU)
    finally:
        server.close()
    assert time.monotonic() - start < 10

"""The local GCS emulator as TensorFlow sees it, and the bucket/credential checks of tpu_helpers.mlm.gcs.

TensorFlow is imported inside the tests (this file runs in the TensorFlow test process). The emulator is
started once for the module by the `local_gcs` fixture (tests/tf/conftest.py).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tpu_helpers import gcs_emulator
from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.core.runtime import Runtime
from tpu_helpers.gcs_emulator import LocalGCS
from tpu_helpers.mlm import gcs as gcsmod

NODE = Runtime("tpu-node", "colab", tpu_address="grpc://10.0.0.2:8470", devices=8)
CPU = Runtime("cpu", "local")


def test_start_is_idempotent_and_sets_the_environment(local_gcs):
    assert local_gcs.running
    again = LocalGCS().start()  # a re-run notebook cell
    assert again is local_gcs and gcs_emulator.active() is local_gcs
    env = local_gcs.env
    for key, value in env.items():
        assert os.environ[key] == value
    assert env["https_proxy"] == f"http://127.0.0.1:{local_gcs.proxy_port}"
    assert "STORAGE_EMULATOR_HOST" not in os.environ  # the Python client reaches it only via storage_client()
    assert "googleapis" not in env["NO_PROXY"] and "127.0.0.1" in env["NO_PROXY"]
    # the Hub, PyPI and GitHub go around the proxy, as requests (huggingface_hub, pip) decides from the variables
    requests = pytest.importorskip("requests")
    for url in ("https://huggingface.co/x", "https://cas-bridge.xethub.hf.co/x", "https://files.pythonhosted.org/x"):
        assert requests.utils.should_bypass_proxies(url, None), url
    for url in ("https://storage.googleapis.com/b/o", "https://www.googleapis.com/storage/v1/b", "https://evilhf.co"):
        assert not requests.utils.should_bypass_proxies(url, None), url
    gcsmod_saved = local_gcs._saved_env
    # CA bundles merged, never replaced: CURL_CA_BUNDLE = our CA + the bundle in force before; REQUESTS_CA_BUNDLE
    # is the one requests used before and does not trust our CA.
    curl_bundle = Path(env["CURL_CA_BUNDLE"]).read_text()
    assert curl_bundle.startswith(local_gcs.ca_cert.read_text())
    before = gcsmod_saved.get("CURL_CA_BUNDLE")
    if before:
        assert Path(before).read_text(errors="replace") in curl_bundle
    assert curl_bundle.count("BEGIN CERTIFICATE") > 1
    assert local_gcs.ca_cert.read_text() not in Path(env["REQUESTS_CA_BUNDLE"]).read_text()
    if gcsmod_saved.get("REQUESTS_CA_BUNDLE"):
        assert env["REQUESTS_CA_BUNDLE"] == gcsmod_saved["REQUESTS_CA_BUNDLE"]
    assert gcsmod.using_emulator()


def test_tensorflow_writes_lists_renames_and_reads_a_tfrecord_through_gs(local_gcs):
    tf = import_tensorflow()
    bucket = local_gcs.create_bucket("tf-emulator-test")
    assert local_gcs.create_bucket("tf-emulator-test") == bucket  # idempotent
    records = [f"record {i} ".encode() * (i + 1) for i in range(300)]
    partial = f"{bucket}/data/shard.tfrecord.partial"
    with tf.io.TFRecordWriter(partial) as writer:
        for r in records:
            writer.write(r)
    assert tf.io.gfile.glob(f"{bucket}/data/*.tfrecord") == []  # the temporary name is not a shard
    tf.io.gfile.rename(partial, f"{bucket}/data/shard.tfrecord", overwrite=True)  # GCS: copy + delete
    assert tf.io.gfile.glob(f"{bucket}/data/*") == [f"{bucket}/data/shard.tfrecord"]
    assert [r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(f"{bucket}/data/*.tfrecord"))] == records
    tf.io.gfile.makedirs(f"{bucket}/ckpt/run1")  # folder markers, as Keras checkpoints write them
    assert tf.io.gfile.isdir(f"{bucket}/ckpt/run1")
    assert not tf.io.gfile.exists("gs://no-such-bucket-here")


def test_large_object_round_trip(local_gcs):
    tf = import_tensorflow()
    bucket = local_gcs.create_bucket("tf-emulator-big")
    data = os.urandom(9 * 1024 * 1024 + 7)
    with tf.io.gfile.GFile(f"{bucket}/blob.bin", "wb") as f:
        f.write(data)
    assert tf.io.gfile.stat(f"{bucket}/blob.bin").length == len(data)
    with tf.io.gfile.GFile(f"{bucket}/blob.bin", "rb") as f:
        assert f.read() == data
    tf.io.gfile.remove(f"{bucket}/blob.bin")
    assert not tf.io.gfile.exists(f"{bucket}/blob.bin")


def storage_client(gcs: LocalGCS):
    """A ``google.cloud.storage.Client`` talking to fake-gcs-server directly (anonymous credentials)."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    return storage.Client(project="tpu-course-local", credentials=AnonymousCredentials(),
                          client_options={"api_endpoint": f"http://127.0.0.1:{gcs.http_port}"})


def test_python_client_and_child_processes_see_the_same_objects(local_gcs):
    tf = import_tensorflow()
    bucket = local_gcs.create_bucket("tf-emulator-clients")
    with tf.io.gfile.GFile(f"{bucket}/hello.txt", "w") as f:
        f.write("written by TensorFlow")

    client = storage_client(local_gcs)
    assert [b.name for b in client.list_blobs("tf-emulator-clients")] == ["hello.txt"]
    client.bucket("tf-emulator-clients").blob("py.txt").upload_from_string(b"written by google-cloud-storage")
    assert tf.io.gfile.GFile(f"{bucket}/py.txt").read() == "written by google-cloud-storage"
    # A child process gets the variables from gcs.env. One that reads gs:// the way TensorFlow does (libcurl:
    # https_proxy + CURL_CA_BUNDLE; here the curl command) reaches the emulator...
    url = "https://storage.googleapis.com/tf-emulator-clients/hello.txt"
    child_env = {**os.environ, **local_gcs.env}
    out = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer x", url], env=child_env, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout == "written by TensorFlow", out.stderr[-2000:]
    # ...while a Python requests call meant for the real storage.googleapis.com is not answered by the emulator:
    # REQUESTS_CA_BUNDLE does not trust our CA, so it fails its TLS check instead of reading emulated data.
    code = ("import requests\ntry:\n    requests.get(%r, timeout=20)\nexcept requests.exceptions.SSLError:\n"
            "    print('ssl-refused')\n" % url)
    out = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ssl-refused", out.stdout + out.stderr[-2000:]


def test_read_only_bucket_refuses_writes_like_gcs(local_gcs):
    tf = import_tensorflow()
    bucket = local_gcs.create_bucket("tf-emulator-readonly", read_only=True)
    with pytest.raises(tf.errors.PermissionDeniedError):
        with tf.io.gfile.GFile(f"{bucket}/x.txt", "w") as f:
            f.write("no")
    local_gcs.create_bucket("tf-emulator-readonly")  # writable again
    with tf.io.gfile.GFile(f"{bucket}/x.txt", "w") as f:
        f.write("yes")


def _connect(port: int, target: str) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        answer = s.recv(4096)
        while not answer.startswith(b"HTTP/1.1 200") and (more := s.recv(4096)):  # a refusal: read its body too
            answer += more
        return answer


def test_proxy_refuses_google_metadata_loopback_and_other_hosts(local_gcs):
    for target in ("tpu.googleapis.com:443", "metadata.google.internal:80", "169.254.169.254:80",
                   f"127.0.0.1:{local_gcs.http_port}", "localhost:22", "[::1]:443", "example.org:443"):
        answer = _connect(local_gcs.proxy_port, target)
        assert answer.startswith(b"HTTP/1.1 403"), (target, answer)
    assert b"stop the emulator" in _connect(local_gcs.proxy_port, "example.org:443")
    assert _connect(local_gcs.proxy_port, "storage.googleapis.com:443").startswith(b"HTTP/1.1 200")


# ------------------------------------------------------------------------------------ tpu_helpers.mlm.gcs
def test_check_bucket_passes_and_names_the_emulator(local_gcs):
    local_gcs.create_bucket("tf-check-ok")
    report = gcsmod.check_bucket("gs://tf-check-ok/mlm", runtime=CPU)
    assert report.writable and report.emulator and report.bucket == "tf-check-ok"
    assert "emulator" in report.credentials
    tf = import_tensorflow()
    assert tf.io.gfile.glob("gs://tf-check-ok/mlm/*") == []  # the probe object was removed


def test_check_bucket_missing_and_not_writable(local_gcs):
    with pytest.raises(RuntimeError, match="does not exist"):
        gcsmod.check_bucket("gs://tf-check-missing", runtime=CPU)
    local_gcs.create_bucket("tf-check-readonly", read_only=True)
    with pytest.raises(RuntimeError, match="objectAdmin"):
        gcsmod.check_bucket("gs://tf-check-readonly/data", runtime=CPU)
    assert not gcsmod.check_bucket("gs://tf-check-readonly/data", write=False, runtime=CPU).writable


def test_check_bucket_local_folder(tmp_path):
    report = gcsmod.check_bucket(tmp_path / "shards", runtime=CPU)
    assert report.bucket is None and (tmp_path / "shards").is_dir()


def test_tpu_node_needs_gs_and_cannot_use_the_emulator(local_gcs, tmp_path):
    with pytest.raises(ValueError, match="TPU Node"):
        gcsmod.require_gcs_path(str(tmp_path), NODE)
    with pytest.raises(ValueError):
        gcsmod.check_bucket(str(tmp_path), runtime=NODE)
    with pytest.raises(RuntimeError, match="127.0.0.1"):
        gcsmod.require_gcs_path("gs://tf-check-ok/x", NODE)
    assert gcsmod.require_gcs_path(str(tmp_path), CPU) == str(tmp_path)


def test_find_credentials_follows_tensorflows_order(tmp_path):
    home = tmp_path / "home"
    no_gce = {"NO_GCE_CHECK": "true"}
    with pytest.raises(RuntimeError, match="gcloud auth application-default login"):
        gcsmod.find_credentials(no_gce, home=home, runtime=CPU)
    with pytest.raises(RuntimeError, match="authenticate_user"):
        gcsmod.find_credentials(no_gce, home=home, runtime=Runtime("cpu", "colab"))
    with pytest.raises(RuntimeError, match="no such file"):
        gcsmod.find_credentials({**no_gce, "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "nope.json")},
                                home=home, runtime=CPU)
    adc = home / ".config" / "gcloud" / "application_default_credentials.json"
    adc.parent.mkdir(parents=True)
    adc.write_text("{}")
    assert "application-default" in gcsmod.find_credentials(no_gce, home=home, runtime=CPU)
    key = tmp_path / "sa.json"
    key.write_text("{}")
    assert str(key) in gcsmod.find_credentials({**no_gce, "GOOGLE_APPLICATION_CREDENTIALS": str(key)}, home=home,
                                               runtime=CPU)
    assert "GOOGLE_AUTH_TOKEN_FOR_TESTING" in gcsmod.find_credentials({"GOOGLE_AUTH_TOKEN_FOR_TESTING": "t"},
                                                                     home=home, runtime=CPU)


def test_gcs_paths():
    assert gcsmod.split_gcs_path("gs://bkt/a/c/") == ("bkt", "a/c")
    assert gcsmod.split_gcs_path("gs://my-bucket.example_1") == ("my-bucket.example_1", "")
    with pytest.raises(ValueError):
        gcsmod.split_gcs_path("/local/path")


def test_checkpoints_to_gs(local_gcs):
    tf = import_tensorflow()
    bucket = local_gcs.create_bucket("tf-emulator-ckpt")
    v = tf.Variable(tf.range(4.0))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), f"{bucket}/run/ckpt", max_to_keep=1)
    for _ in range(2):
        v.assign_add(tf.ones(4))
        manager.save()
    assert tf.train.latest_checkpoint(f"{bucket}/run/ckpt") == f"{bucket}/run/ckpt/ckpt-2"
    assert not tf.io.gfile.glob(f"{bucket}/run/ckpt/ckpt-1*")  # max_to_keep deleted the old one
    v.assign(tf.zeros(4))
    tf.train.Checkpoint(v=v).restore(manager.latest_checkpoint).assert_consumed()
    assert v.numpy().tolist() == [2.0, 3.0, 4.0, 5.0]


def test_stop_restores_the_environment_and_start_again(local_gcs):
    before_proxy = local_gcs.proxy_port
    server, proxy = local_gcs._server, local_gcs._proxy
    local_gcs.stop()
    local_gcs.stop()  # twice is harmless
    assert server.poll() is not None and proxy.poll() is not None
    assert os.environ.get("https_proxy") != f"http://127.0.0.1:{before_proxy}"
    assert "TPU_COURSE_LOCAL_GCS" not in os.environ and gcs_emulator.active() is None
    local_gcs.start()  # the fixture's teardown stops it again
    assert local_gcs.running and gcs_emulator.active() is local_gcs

"""pytest fixture for the local GCS emulator (a plugin module: import the fixture into a test module).

    from conftest_gcs import local_gcs  # noqa: F401  (pytest finds the fixture by name)

    def test_something(local_gcs):
        bucket = local_gcs.create_bucket("my-test-bucket")   # "gs://my-test-bucket"
        import tensorflow as tf
        tf.io.gfile.glob(bucket + "/*")

The emulator starts once per test module (about half a second) and is stopped, with the environment
restored, after the module's last test. It sets `https_proxy`, `CURL_CA_BUNDLE`, ... in `os.environ`, which
TensorFlow's GCS filesystem reads on every request, so TensorFlow may already be imported.
"""
from __future__ import annotations

import pytest

from tpu_helpers.gcs_emulator import LocalGCS


@pytest.fixture(scope="module")
def local_gcs():
    gcs = LocalGCS().start()
    try:
        yield gcs
    finally:
        gcs.stop()

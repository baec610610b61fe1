"""tests/tf: the TensorFlow lessons' packages (ready, xla_tf, tpu_tf, mlm) and the GCS emulator. torch_xla cannot be
imported here. Fixtures: ``tf`` (TensorFlow, quiet) and ``local_gcs`` (the emulator, once per module)."""
import os

import pytest
from course_testing import guard_frameworks

guard_frameworks("tf", "tf")


@pytest.fixture(scope="module")
def tf():
    """TensorFlow, imported by the tests that ask for it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    tf.get_logger().setLevel("ERROR")
    return tf


@pytest.fixture(scope="module")
def local_gcs():
    """The local GCS emulator, started once per test module (about half a second) and stopped after its last test,
    with the environment restored. ``local_gcs.create_bucket("my-bucket")`` returns ``"gs://my-bucket"``."""
    from tpu_helpers.gcs_emulator import LocalGCS

    gcs = LocalGCS().start()
    try:
        yield gcs
    finally:
        gcs.stop()

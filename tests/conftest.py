import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import os  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="module")
def tf():
    """TensorFlow, imported only by the tests that ask for it (TF and torch_xla never share a process)."""
    from tpu_helpers import frameworks

    frameworks.use_framework("tf")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    tf.get_logger().setLevel("ERROR")
    return tf

"""tests/torch: the PyTorch/XLA lessons' packages (xla_torch, banking77, xla_debug). TensorFlow cannot be imported
here. PyTorch/XLA runs on its CPU device (``PJRT_DEVICE=CPU``, set before any test imports torch_xla). Fixture:
``xla`` (torch, torch_xla and the XLA device)."""
import os

import pytest
from course_testing import guard_frameworks

os.environ.setdefault("PJRT_DEVICE", "CPU")
guard_frameworks("torch", "torch")


@pytest.fixture(scope="module")
def xla():
    torch = pytest.importorskip("torch")
    torch_xla = pytest.importorskip("torch_xla")
    return torch, torch_xla, torch_xla.device()

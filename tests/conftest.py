"""Shared test setup.

* The tests import the **installed** ``tpu_helpers`` (``./course`` installs the wheel built from this checkout), never
  the checkout's folder: under ``./course test`` a ``tpu_helpers`` imported from the source tree stops the run.
  ``tools/`` (the runner, the conventions, the install plans) is put on ``sys.path`` for the tests about it, and the
  checkout *after* site-packages for ``benchmarks/``.
* Under ``./course test`` (``TPU_COURSE_TEST_RUN=1``) or in CI, ``pytest.importorskip`` of a pinned framework that is
  missing or broken is a **failure**, not a skip: a broken install must not turn into a green run. A person running
  one file by hand without the framework still gets skips.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.append(str(ROOT))  # for `benchmarks` (not installed); after site-packages, so tpu_helpers is the wheel

# XLA's own records of the course's compilations (tpu_helpers.xla_tf counts them): on before anything compiles
from tpu_helpers.frameworks import record_xla_compilations  # noqa: E402

record_xla_compilations()

STRICT = bool(os.environ.get("TPU_COURSE_TEST_RUN") or os.environ.get("CI"))

if STRICT:
    _importorskip = pytest.importorskip

    def _import_or_fail(modname, *args, **kwargs):
        try:
            return _importorskip(modname, *args, **kwargs)
        except pytest.skip.Exception as e:
            pytest.fail(f"{modname} cannot be imported in the course environment ({e}); under ./course test a "
                        "missing framework is a failure, not a skip: rebuild the environment (./course setup)",
                        pytrace=False)

    pytest.importorskip = _import_or_fail


def pytest_configure(config):
    import tpu_helpers

    where = Path(tpu_helpers.__file__).resolve()
    if STRICT and ROOT in where.parents:
        raise pytest.UsageError(f"tpu_helpers was imported from the checkout ({where}), not from the installed "
                                "wheel: run the tests through ./course test (it installs the wheel)")


@pytest.fixture(scope="module")
def tf():
    """TensorFlow, imported only by the tests that ask for it (TF and torch_xla never share a process)."""
    from tpu_helpers import frameworks

    frameworks.use_framework("tf")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    tf = pytest.importorskip("tensorflow")
    tf.get_logger().setLevel("ERROR")
    return tf

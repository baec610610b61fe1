"""Float32 matmuls at full precision for the cells that compare XLA's numbers with eager PyTorch.

A TPU computes a float32 matmul in one bfloat16 pass by default (about 1e-2 from the CPU), "highest" in six; XLA:CPU
is float32 either way. Graphs are cached by IR, not precision: run a compared graph first inside the block. The
block drops torch_xla 2.9's "Setting mat mul precision multiple times" log line (tests/torch/xla_torch/test_precision.py).
"""
from __future__ import annotations

import contextlib
import logging
from typing import Iterator

from tpu_helpers.core.logs import DropMessages

__all__ = ["PRECISIONS", "mat_mul_precision"]

PRECISIONS = ("default", "high", "highest")  # torch_xla.backends: 1, 3 and 6 bfloat16 passes on a TPU


@contextlib.contextmanager
def mat_mul_precision(precision: str = "highest") -> Iterator[str]:
    """Set torch_xla's float32 matmul precision for the block, then restore the previous one."""
    if precision not in PRECISIONS:
        raise ValueError(f"mat_mul_precision takes one of {PRECISIONS}, not {precision!r}")
    from torch_xla import backends

    before = backends.get_mat_mul_precision()
    _set(backends, precision)
    try:
        yield before
    finally:
        _set(backends, before)


def _set(backends, precision: str) -> None:
    log = logging.getLogger("torch_xla.backends")
    quiet = DropMessages("Setting mat mul precision multiple times")
    log.addFilter(quiet)
    try:
        backends.set_mat_mul_precision(precision)
    finally:
        log.removeFilter(quiet)

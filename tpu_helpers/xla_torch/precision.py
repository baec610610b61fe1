"""The precision of float32 matrix multiplications on XLA, for the cells that compare numbers.

On a TPU, XLA computes a float32 matmul or convolution with one bfloat16 pass by default (torch_xla's
``set_mat_mul_precision('default')``; TensorFlow's default on TPU is the same): results agree with the CPU to about
1e-2, not 1e-4. A cell that compares XLA's float32 results with eager PyTorch at a float32 tolerance therefore runs
its XLA computation under ``mat_mul_precision("highest")`` (six bfloat16 passes: float32 accuracy), and says so. On
XLA:CPU the setting changes nothing (its matmuls are float32), so it costs nothing there.

Graphs are cached by their IR, not by precision: run the comparison's graph for the first time inside the block.

torch_xla 2.9 logs "Setting mat mul precision multiple times is not recommended ... please empirically verify" on
every ``set_mat_mul_precision`` (``torch_xla/backends/__init__.py``), and the block sets twice (set, restore). The
course verifies the setting empirically (``tests/torch/xla_torch/test_precision.py``), so the block drops exactly
that message of the ``torch_xla.backends`` logger while it sets the precision.
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
    """Set torch_xla's float32 matmul precision for the block and restore the previous one after it."""
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
    """``backends.set_mat_mul_precision`` without its "multiple times" warning (the module docstring says why)."""
    log = logging.getLogger("torch_xla.backends")
    quiet = DropMessages("Setting mat mul precision multiple times")
    log.addFilter(quiet)
    try:
        backends.set_mat_mul_precision(precision)
    finally:
        log.removeFilter(quiet)

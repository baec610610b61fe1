"""Float32 matmuls at full precision (a TPU's default is one bfloat16 pass); graphs are cached by IR, not precision."""
from __future__ import annotations

import contextlib
import logging
from typing import Iterator

from tpu_helpers.core.logs import DropMessages


@contextlib.contextmanager
def mat_mul_precision(precision: str = "highest") -> Iterator[str]:
    """Set torch_xla's float32 matmul precision ("default", "high", "highest") for the block, then restore it."""
    from torch_xla import backends

    before = backends.get_mat_mul_precision()
    log, quiet = logging.getLogger("torch_xla.backends"), DropMessages("Setting mat mul precision multiple times")
    log.addFilter(quiet)  # torch_xla 2.9 logs each set after the first
    try:
        backends.set_mat_mul_precision(precision)
        yield before
    finally:
        backends.set_mat_mul_precision(before)
        log.removeFilter(quiet)

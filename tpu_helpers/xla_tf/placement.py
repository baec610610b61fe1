"""Where the course's XLA calls run: the first TPU core when connected to a TPU (its build has no host XLA), else the host."""
from __future__ import annotations

import contextlib

from tpu_helpers.core.frameworks import import_tensorflow


def xla_device() -> str | None:
    """The first TPU core TensorFlow knows in this process (after ``initialize_tpu_system``), else None (the host)."""
    tf = import_tensorflow()
    tpus = tf.config.list_logical_devices("TPU")
    return tpus[0].name if tpus else None


def on_xla_device():
    """``tf.device(xla_device())`` on a TPU, else no scope; create an XLA function's variables inside it too."""
    name = xla_device()
    return import_tensorflow().device(name) if name else contextlib.nullcontext()

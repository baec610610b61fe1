"""Where the course's XLA calls run: on the first TPU core where TensorFlow is connected to a TPU, else on the host.

TensorFlow's TPU build (``tensorflow-tpu``) has no XLA backend for the host CPU: a ``jit_compile=True`` function
called with no device scope on a TPU runtime lands on the host and fails with "could not find registered transfer
manager for platform Host". So every XLA call the TensorFlow lessons make outside ``strategy.run`` goes through
`on_xla_device` (`tpu_helpers.xla_tf.counters.JitFunction`, `tpu_helpers.xla_tf.compiler` and the exercise checks
do it themselves); ``tests/tf/xla_tf/test_placement.py`` lists every such call and how it is placed.

TensorFlow is imported inside the functions, so importing this module is cheap and framework-neutral.
"""
from __future__ import annotations

import contextlib

from tpu_helpers.core.frameworks import import_tensorflow

__all__ = ["xla_device", "on_xla_device"]


def xla_device() -> str | None:
    """The first TPU core TensorFlow knows in this process (after ``initialize_tpu_system``), else None (the host)."""
    tf = import_tensorflow()
    tpus = tf.config.list_logical_devices("TPU")
    return tpus[0].name if tpus else None


def on_xla_device():
    """``tf.device`` of `xla_device` where TensorFlow is connected to a TPU; no scope elsewhere (the host's CPU).
    Create the variables an XLA function reads inside it too: an XLA cluster runs on one device only."""
    name = xla_device()
    return import_tensorflow().device(name) if name else contextlib.nullcontext()

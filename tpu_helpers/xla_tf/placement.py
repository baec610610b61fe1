"""Where the course's XLA calls run: the first TPU core where TensorFlow is connected to a TPU, else the host. The
TPU build has no XLA backend for the host ("could not find registered transfer manager for platform Host");
tests/tf/xla_tf/test_placement.py lists every XLA call of the TF lessons and how it is placed.
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

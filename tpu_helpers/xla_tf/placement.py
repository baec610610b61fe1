"""Where the course's XLA calls run: the first TPU core when connected to a TPU (its build has no host XLA), else the host."""
from __future__ import annotations

import contextlib

from tpu_helpers.core.frameworks import import_tensorflow


def on_xla_device():
    """``tf.device`` of the first TPU core TensorFlow knows (after ``initialize_tpu_system``), else no scope."""
    tf = import_tensorflow()
    tpus = tf.config.list_logical_devices("TPU")
    return tf.device(tpus[0].name) if tpus else contextlib.nullcontext()

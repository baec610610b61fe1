"""What notebook 04's training reads: the masked-accuracy metric, a fill-mask pipeline on the trained model, and
the step log (loss, wall time, compile steps, steady tokens/s)."""
from __future__ import annotations

import sys
import time
from typing import Any

from tpu_helpers.mlm.shards import _tf


def masked_accuracy(labels: Any, logits: Any, *, ignore_index: int = -100):
    """``(correct, counted)``: how many labelled positions the argmax of `logits` gets right, and how many
    positions are labelled (label != `ignore_index`). Static shapes (no boolean mask): XLA-friendly."""
    tf = _tf()
    labels = tf.convert_to_tensor(labels)
    mask = tf.cast(tf.not_equal(labels, ignore_index), tf.float32)
    predicted = tf.cast(tf.argmax(logits, axis=-1), labels.dtype)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32) * mask)
    return correct, tf.reduce_sum(mask)


def masked_accuracy_metric(name: str = "masked_accuracy", ignore_index: int = -100):
    """A Keras (tf-keras) metric: accuracy over the positions whose label is not `ignore_index`.

    The seed compiles with ``metrics=["accuracy"]``, which Keras resolves to sparse categorical accuracy over
    *every* position: the ~85 % labelled -100 count as wrong, so it reads about 0.15 x the real accuracy.
    """
    import tf_keras as keras

    class MaskedAccuracy(keras.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name=kwargs.pop("name", name), **kwargs)
            self.correct = self.add_weight(name="correct", initializer="zeros")
            self.counted = self.add_weight(name="counted", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            correct, counted = masked_accuracy(y_true, y_pred, ignore_index=ignore_index)
            self.correct.assign_add(correct)
            self.counted.assign_add(counted)

        def result(self):
            return _tf().math.divide_no_nan(self.correct, self.counted)

        def reset_state(self):
            self.correct.assign(0.0)
            self.counted.assign(0.0)

    return MaskedAccuracy()


def fill_mask_pipeline(model: Any, tokenizer: Any, *, top_k: int = 5):
    """transformers' ``fill-mask`` pipeline for a TensorFlow model, usable in a TensorFlow kernel.

    With the course's stack (transformers 4.57.6 and torch, torch_xla and accelerate installed beside
    TensorFlow), ``from transformers import pipeline`` in a TensorFlow process fails, checked on this stack:
    ``transformers/training_args.py`` (imported by ``pipelines/base.py`` through ``modelcard.py``) runs
    ``import torch_xla`` when the package is installed, which aborts a process that has TensorFlow loaded
    (``LLVM ERROR: ... registered more than once``); with ``USE_TORCH_XLA=0`` it imports accelerate instead and
    stops with ``NameError: name 'LRScheduler' is not defined`` (``USE_TF`` hides torch from transformers, not
    from accelerate). Neither package is needed by a TensorFlow pipeline, so in a TensorFlow process this hides
    both from transformers (its ``_torch_xla_available`` / ``_accelerate_available`` flags) before importing
    the pipelines, and passes ``dtype=None`` (``pipeline()``'s default ``"auto"`` looks the name up on ``torch``).
    """
    from tpu_helpers._compat import hide_torch_xla_and_accelerate_from_transformers

    if "tensorflow" in sys.modules and "torch_xla" not in sys.modules:
        hide_torch_xla_and_accelerate_from_transformers()
    from transformers import pipeline

    return pipeline("fill-mask", model=model, tokenizer=tokenizer, framework="tf", top_k=top_k, dtype=None)


def step_log_callback(tokens_per_step: int):
    """A Keras (tf-keras) callback that records every training step (the progress bar is tqdm's own
    ``tqdm.keras.TqdmCallback``, passed beside it).

    After ``model.fit(..., callbacks=[log])``: ``log.losses`` (the loss Keras reports after each step: the running
    mean of the epoch so far), ``log.seconds`` (wall time of each step, from the end of the previous one, input
    pipeline included), ``log.first_steps`` (indices of the first step of each ``fit`` call: tracing and XLA
    compilation happen there), ``log.epochs`` (the logs Keras reports at each epoch end, with ``epoch``), and
    ``log.tokens_per_second()``: tokens of the steady-state steps (first steps excluded) per second. One object
    can follow several ``fit`` calls (a resumed run).
    """
    import tf_keras as keras

    class StepLog(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.tokens_per_step = int(tokens_per_step)
            self.losses: list[float] = []
            self.seconds: list[float] = []
            self.first_steps: list[int] = []
            self.epochs: list[dict] = []
            self._last = 0.0

        def on_train_begin(self, logs=None):
            self.first_steps.append(len(self.losses))
            self._last = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            now = time.perf_counter()
            self.seconds.append(now - self._last)
            self._last = now
            loss = float((logs or {}).get("loss", float("nan")))
            self.losses.append(loss)

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append({"epoch": epoch + 1, **{k: float(v) for k, v in (logs or {}).items()}})

        def steady_seconds(self) -> list[float]:
            first = set(self.first_steps)
            return [s for i, s in enumerate(self.seconds) if i not in first]

        def tokens_per_second(self) -> float:
            steady = self.steady_seconds()
            return len(steady) * self.tokens_per_step / sum(steady) if steady and sum(steady) > 0 else float("nan")

    return StepLog()

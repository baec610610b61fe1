"""What notebook 04's training reads: the masked-accuracy metric, a fill-mask pipeline on the trained model, the
step log (loss, wall time, compile steps, steady tokens/s) and the training plan timed from the first steps."""
from __future__ import annotations

import dataclasses
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.core.logs import DropMessages


def masked_accuracy(labels: Any, logits: Any, *, ignore_index: int = -100):
    """``(correct, counted)``: how many labelled positions the argmax of `logits` gets right, and how many
    positions are labelled (label != `ignore_index`). Static shapes (no boolean mask): XLA-friendly."""
    tf = import_tensorflow()
    labels = tf.convert_to_tensor(labels)
    mask = tf.cast(tf.not_equal(labels, ignore_index), tf.float32)
    predicted = tf.cast(tf.argmax(logits, axis=-1), labels.dtype)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32) * mask)
    return correct, tf.reduce_sum(mask)


def masked_accuracy_metric(name: str = "masked_accuracy", ignore_index: int = -100):
    """A tf-keras metric: accuracy over the positions whose label is not `ignore_index` (the seed's
    ``metrics=["accuracy"]`` counts the ~85 % labelled -100 as wrong)."""
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
            return import_tensorflow().math.divide_no_nan(self.correct, self.counted)

        def reset_state(self):
            self.correct.assign(0.0)
            self.counted.assign(0.0)

    return MaskedAccuracy()


def fill_mask_pipeline(model: Any, tokenizer: Any, *, top_k: int = 5):
    """transformers' ``fill-mask`` pipeline for a TensorFlow model, in a TensorFlow kernel.

    On this stack ``from transformers import pipeline`` imports torch_xla (which aborts a process holding TensorFlow)
    or accelerate (a NameError): in a TensorFlow process both are hidden from transformers first (see _compat), and
    ``dtype=None`` avoids a lookup on torch. Two repeated log lines of the pipeline are dropped, by message.
    """
    from tpu_helpers._compat import hide_torch_xla_and_accelerate_from_transformers

    if "tensorflow" in sys.modules and "torch_xla" not in sys.modules:
        hide_torch_xla_and_accelerate_from_transformers()
    _quiet_pipeline_repeats()
    from transformers import pipeline

    return pipeline("fill-mask", model=model, tokenizer=tokenizer, framework="tf", top_k=top_k, dtype=None)


# transformers 4.57's deprecation of its TF classes: logged once per module logger, so a TF pipeline repeats what
# building the model said (notebook 04, section 6, explains it there)
TF_DEPRECATION = "TensorFlow and JAX classes are deprecated"


def _quiet_pipeline_repeats() -> None:
    """Drop ``Device set to use 0`` and the repeats of `TF_DEPRECATION` from the pipeline's loggers (idempotent)."""
    for name, prefixes in {"transformers.pipelines.base": ("Device set to use", TF_DEPRECATION),
                           "transformers.tokenization_utils_base": (TF_DEPRECATION,)}.items():
        log = logging.getLogger(name)
        if not any(isinstance(f, DropMessages) for f in log.filters):
            log.addFilter(DropMessages(*prefixes))


def step_log_callback(tokens_per_step: int, *, progress: bool = False):
    """A tf-keras callback recording every host round trip (``steps_per_execution`` steps): ``losses``, ``seconds``,
    ``steps``, ``step_ends``, ``first_steps`` (the first call of each ``fit``: trace + compile), ``epochs``; with
    ``seconds_per_step()`` and ``tokens_per_second()`` over the steady calls. A tqdm bar of steps when `progress`."""
    import tf_keras as keras

    class StepLog(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.tokens_per_step = int(tokens_per_step)
            self.losses: list[float] = []
            self.seconds: list[float] = []
            self.steps: list[int] = []
            self.step_ends: list[int] = []
            self.first_steps: list[int] = []
            self.epochs: list[dict] = []
            self._last = 0.0
            self._begin = 0
            self._bar = None

        def on_train_begin(self, logs=None):
            self.first_steps.append(len(self.losses))
            if progress:
                from tqdm.auto import tqdm

                steps = (self.params or {}).get("steps")
                epochs = (self.params or {}).get("epochs") or 1
                self._bar = tqdm(total=steps * epochs if steps else None, desc="training", unit="step")
            self._last = time.perf_counter()

        def on_train_end(self, logs=None):
            if self._bar is not None:
                self._bar.close()
                self._bar = None

        def on_train_batch_begin(self, batch, logs=None):
            self._begin = batch

        def on_train_batch_end(self, batch, logs=None):  # batch: the last step of this call (Keras' end_step)
            now = time.perf_counter()
            self.seconds.append(now - self._last)
            self._last = now
            self.steps.append(batch - self._begin + 1)
            self.step_ends.append((self.step_ends[-1] if self.step_ends else 0) + self.steps[-1])
            self.losses.append(float((logs or {}).get("loss", float("nan"))))
            if self._bar is not None:
                self._bar.update(self.steps[-1])
                self._bar.set_postfix(loss=f"{self.losses[-1]:.3f}", refresh=False)

        def on_epoch_end(self, epoch, logs=None):
            self.epochs.append({"epoch": epoch + 1, **{k: float(v) for k, v in (logs or {}).items()}})

        def _steady(self) -> list[int]:
            first = set(self.first_steps)
            return [i for i in range(len(self.seconds)) if i not in first]

        def steady_seconds(self) -> list[float]:
            return [self.seconds[i] for i in self._steady()]

        def seconds_per_step(self) -> float:
            steady = self._steady()
            steps = sum(self.steps[i] for i in steady)
            return sum(self.seconds[i] for i in steady) / steps if steps else float("nan")

        def tokens_per_second(self) -> float:
            per_step = self.seconds_per_step()
            return self.tokens_per_step / per_step if per_step > 0 else float("nan")

    return StepLog()


@dataclass(frozen=True)
class TrainingPlan:
    """A training run's steps, tokens, passes over the data and, once its first steps were timed (`measured`), how
    long the rest takes."""

    total_steps: int
    global_batch: int
    block_size: int
    steps_per_epoch: int
    steps_per_execution: int
    measured_steps: int = 0
    compile_seconds: float = float("nan")
    seconds_per_step: float = float("nan")

    @property
    def tokens(self) -> int:
        return self.total_steps * self.global_batch * self.block_size

    @property
    def epochs(self) -> float:
        return self.total_steps / self.steps_per_epoch

    @property
    def remaining_seconds(self) -> float:
        return (self.total_steps - self.measured_steps) * self.seconds_per_step

    def measured(self, log: Any) -> "TrainingPlan":
        """This plan with the timing of the steps `log` recorded (a first call to compile, then steady calls)."""
        if len(log.first_steps) != 1 or len(log.seconds) < 2:
            raise ValueError("measure one fit call of at least two host round trips (steps_per_execution each)")
        return dataclasses.replace(self, measured_steps=log.step_ends[-1], compile_seconds=log.seconds[0],
                                   seconds_per_step=log.seconds_per_step())

    def __str__(self) -> str:
        text = (f"plan: {self.total_steps:,} steps x {self.global_batch:,} blocks x {self.block_size} tokens = "
                f"{self.tokens:,} tokens ({self.epochs:.2f} passes over {self.steps_per_epoch:,} steps of data); "
                f"{self.steps_per_execution} steps per host round trip")
        if self.measured_steps:
            text += (f"\n  measured on this run: first call (trace + compile + {self.steps_per_execution} steps) "
                     f"{self.compile_seconds:.1f} s, then {self.seconds_per_step * 1e3:,.1f} ms/step; "
                     f"estimated time for the other {self.total_steps - self.measured_steps:,} steps: "
                     f"{_duration(self.remaining_seconds)}")
        return text


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def masked_sentences(texts: Any, *, count: int = 3, seed: int = 0, max_chars: int = 90,
                     mask: str = "<mask>", tokenizer: Any = None, max_tokens: int | None = None) -> list[str]:
    """`count` fill-mask probes from the corpus (`seed` picks the lines): a line's start with one word of 3+ letters
    masked (text without spaces: one character), shortened until it tokenizes to `max_tokens` ids when given."""
    import numpy as np

    def fits(words: list[str]) -> bool:
        if tokenizer is None or max_tokens is None:
            return True  # (verbose=False: measuring a probe that may be too long is the point, no warning about it)
        return len(tokenizer(" ".join(words), verbose=False)["input_ids"]) <= max_tokens

    rng = np.random.default_rng(seed)
    out: list[str] = []
    candidates = [t for t in texts if len(t.strip()) >= 20]
    for i in rng.permutation(len(candidates)):
        line = candidates[int(i)].strip()
        head = line[:max_chars].rsplit(" ", 1)[0] if " " in line[:max_chars] else line[:max_chars]
        words = head.split(" ")
        picks = [j for j, w in enumerate(words) if j > 0 and len(w) >= 3 and w.isalpha()]
        if picks:
            at = picks[int(rng.integers(len(picks)))]
            words[at] = mask
            while not fits(words) and len(words) > at + 1:
                words.pop()
            if fits(words):
                out.append(" ".join(words))
        elif " " not in head and len(head) >= 10:
            probe = head[: len(head) // 2] + mask + head[len(head) // 2 + 1:]
            if fits([probe]):
                out.append(probe)
        if len(out) == count:
            return out
    raise ValueError(f"found only {len(out)} lines with a word to mask (need {count}): is the corpus text?")

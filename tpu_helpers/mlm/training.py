"""The masked-accuracy metric notebook 04's training logs (its exercise asks for the same function)."""
from __future__ import annotations

from typing import Any

from tpu_helpers.core.frameworks import import_tensorflow


def masked_accuracy(labels: Any, logits: Any, *, ignore_index: int = -100):
    """``(correct, counted)`` over the labelled positions (label != `ignore_index`), static shapes."""
    tf = import_tensorflow()
    labels = tf.convert_to_tensor(labels)
    mask = tf.cast(tf.not_equal(labels, ignore_index), tf.float32)
    predicted = tf.cast(tf.argmax(logits, axis=-1), labels.dtype)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32) * mask)
    return correct, tf.reduce_sum(mask)


def masked_accuracy_metric(name: str = "masked_accuracy", ignore_index: int = -100):
    """A tf-keras metric: accuracy over the positions whose label is not `ignore_index`."""
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

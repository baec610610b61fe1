"""The masked-mean loss with static shapes, and the seeds' ``tf.boolean_mask`` version it replaces (notebook 01, rule 2).

TensorFlow is imported inside the functions, so importing this module is cheap and framework-neutral.
"""
from __future__ import annotations

__all__ = ["masked_sparse_categorical_crossentropy", "boolean_mask_sparse_categorical_crossentropy"]


def masked_sparse_categorical_crossentropy(labels, logits, ignore_index: int = -100):
    """Mean cross-entropy over the positions whose label is not ``ignore_index``, with static shapes.

    The XLA-friendly form of "select the labelled positions, then average": compute the loss everywhere,
    zero the ignored positions with a 0/1 mask, divide by the number of labelled positions (0 if there are
    none). The same rewrite as transformers' ``TFCausalLanguageModelingLoss.hf_compute_loss``.
    """
    import tensorflow as tf

    labels = tf.convert_to_tensor(labels)
    logits = tf.cast(tf.convert_to_tensor(logits), tf.float32)
    mask = tf.not_equal(labels, ignore_index)
    safe_labels = tf.where(mask, labels, tf.zeros_like(labels))  # any valid class; masked out below
    per_position = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=safe_labels, logits=logits)
    weights = tf.cast(mask, per_position.dtype)
    return tf.math.divide_no_nan(tf.reduce_sum(per_position * weights), tf.reduce_sum(weights))


def boolean_mask_sparse_categorical_crossentropy(labels, logits, ignore_index: int = -100):
    """The seeds' "before" version: select labelled positions with ``tf.boolean_mask`` (a data-dependent
    shape), then average. Kept for comparison with `masked_sparse_categorical_crossentropy`."""
    import tensorflow as tf

    labels = tf.convert_to_tensor(labels)
    logits = tf.cast(tf.convert_to_tensor(logits), tf.float32)
    mask = tf.not_equal(labels, ignore_index)
    kept_labels = tf.boolean_mask(labels, mask)
    kept_logits = tf.boolean_mask(logits, mask)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=kept_labels, logits=kept_logits))

"""Reference answers for notebook 04's exercises (a RoBERTa masked LM from scratch). Try first, then read.

A TensorFlow module: import it in a TensorFlow kernel or test only.
"""
from __future__ import annotations

import tensorflow as tf


def mask_batch(input_ids, spec):
    """BERT/RoBERTa masking of a whole batch with TF ops: ``(masked_ids, labels)``.

    Every position keeps its place (static shapes): ``tf.where`` picks the value. A non-special token is
    selected with probability 0.15; one more uniform draw ``u`` decides what a selected token becomes:
    ``u < 0.8`` ``<mask>``, ``0.8 <= u < 0.9`` a random *regular* token, otherwise itself. Labels hold the
    original id where selected and -100 elsewhere. ``tf.random.uniform`` draws new numbers on every call, so
    every epoch sees new masks. (`tpu_helpers.mlm.pipeline.mask_tokens` is the same with an optional seed.)
    """
    ids = tf.convert_to_tensor(input_ids)
    shape = tf.shape(ids)
    specials = tf.constant(spec.special_ids, ids.dtype)
    regular = tf.constant(spec.regular_ids, ids.dtype)
    is_special = tf.reduce_any(tf.equal(ids[..., tf.newaxis], specials), axis=-1)
    selected = (tf.random.uniform(shape) < 0.15) & ~is_special
    labels = tf.where(selected, ids, tf.constant(-100, ids.dtype))
    u = tf.random.uniform(shape)
    random_tokens = tf.gather(regular, tf.random.uniform(shape, maxval=tf.size(regular), dtype=tf.int32))
    masked = tf.where(selected & (u < 0.8), tf.constant(spec.mask_token_id, ids.dtype), ids)
    masked = tf.where(selected & (u >= 0.8) & (u < 0.9), random_tokens, masked)
    return masked, labels


def epoch_plan(manifest, global_batch: int):
    """``(total_records, steps_per_epoch)`` from a shard manifest: the records of every shard added up (the last
    shard is usually short, so shards x records_per_shard overcounts), and whole batches only, because the
    pipeline batches with ``drop_remainder=True``."""
    total = sum(shard.records for shard in manifest.shards)
    return total, total // global_batch


def masked_accuracy(labels, logits):
    """Accuracy over the positions whose label is not -100, with static shapes: a 0/1 weight per position,
    correct predictions weighted and summed, divided by the number of labelled positions (0.0 if none)."""
    labels = tf.convert_to_tensor(labels)
    weights = tf.cast(tf.not_equal(labels, -100), tf.float32)
    predicted = tf.cast(tf.argmax(logits, axis=-1), labels.dtype)
    correct = tf.cast(tf.equal(predicted, labels), tf.float32) * weights
    return tf.math.divide_no_nan(tf.reduce_sum(correct), tf.reduce_sum(weights))

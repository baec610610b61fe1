"""Reference answers for notebook 04's exercises (TensorFlow). Try first, then read."""
from __future__ import annotations

import tensorflow as tf


def mask_batch(input_ids, spec):
    """BERT/RoBERTa masking with TF ops and static shapes: 15% selected, then 80% / 10% / 10%."""
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
    """``(total_records, steps_per_epoch)``: every shard's records added up, whole batches only."""
    total = sum(shard.records for shard in manifest.shards)
    return total, total // global_batch


def masked_accuracy(labels, logits):
    """Accuracy over the positions labelled other than -100, with a 0/1 weight (static shapes)."""
    labels = tf.convert_to_tensor(labels)
    weights = tf.cast(tf.not_equal(labels, -100), tf.float32)
    predicted = tf.cast(tf.argmax(logits, axis=-1), labels.dtype)
    correct = tf.cast(tf.equal(predicted, labels), tf.float32) * weights
    return tf.math.divide_no_nan(tf.reduce_sum(correct), tf.reduce_sum(weights))

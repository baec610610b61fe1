"""Reference answers for notebook 01's exercises. Try first, then read."""
from __future__ import annotations

from typing import Sequence

import tensorflow as tf


def clip_without_if(gradient, max_norm: float):
    """Rule 1, an indicator variable: both terms are computed, ``tf.maximum`` keeps the unused one finite at norm 0."""
    norm = tf.norm(gradient)
    too_long = tf.cast(norm > max_norm, gradient.dtype)
    return gradient * (too_long * (max_norm / tf.maximum(norm, max_norm)) + (1.0 - too_long))


def masked_mean(per_token_loss, labels, ignore_index: int = -100):
    """Rule 2: a 0/1 mask and ``divide_no_nan`` (0.0 without labels), as transformers' TF losses do."""
    weights = tf.cast(tf.not_equal(labels, ignore_index), per_token_loss.dtype)
    return tf.math.divide_no_nan(tf.reduce_sum(per_token_loss * weights), tf.reduce_sum(weights))


def choose_boundaries(lengths: Sequence[int], max_buckets: int = 4) -> list[int]:
    """Rule 3: the cheapest set of at most ``max_buckets`` bounds (notebook 05's search, `shared.boundaries`)."""
    from tpu_helpers.shared.boundaries import choose_boundaries as search

    return list(search(lengths, int(max(lengths)), max_buckets=max_buckets, multiple=1))

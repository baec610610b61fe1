"""Reference answers for notebook 01's exercises. Try first, then read.
"""
from __future__ import annotations

from typing import Sequence

import tensorflow as tf


def clip_without_if(gradient, max_norm: float):
    """Rule 1: the indicator-variable rewrite of ``if norm > max_norm: gradient *= max_norm / norm``.

    ``too_long`` is 1.0 when the norm is above the limit and 0.0 otherwise, so the scale is ``max_norm / norm``
    or 1.0, with no branch in the compiled program. Both terms are always computed: ``tf.maximum(norm,
    max_norm)`` keeps the unused one finite for an all-zero gradient (``max_norm / 0`` would be inf, and
    ``0 * inf`` is NaN). ``tf.minimum(1.0, max_norm / norm)`` is another branch-free answer.
    """
    norm = tf.norm(gradient)
    too_long = tf.cast(norm > max_norm, gradient.dtype)
    return gradient * (too_long * (max_norm / tf.maximum(norm, max_norm)) + (1.0 - too_long))


def masked_mean(per_token_loss, labels, ignore_index: int = -100):
    """Rule 2: the mean of ``per_token_loss`` over the labelled positions, with static shapes.

    Every position stays; a 0/1 mask zeroes the ignored ones, and the sum is divided by the number of labelled
    positions (``divide_no_nan``: 0.0 for a batch without any). transformers' TF losses do the same
    (``TFCausalLanguageModelingLoss.hf_compute_loss``).
    """
    weights = tf.cast(tf.not_equal(labels, ignore_index), per_token_loss.dtype)
    return tf.math.divide_no_nan(tf.reduce_sum(per_token_loss * weights), tf.reduce_sum(weights))


def choose_boundaries(lengths: Sequence[int], max_buckets: int = 4) -> list[int]:
    """Rule 3: at most ``max_buckets`` bucket upper bounds that pad the fewest tokens for these lengths.

    A sample is padded to the smallest bound >= its length, so the tokens computed are, summed over samples,
    the bound of each sample's bucket. The course's own search (`tpu_helpers.shared.boundaries.choose_boundaries`,
    also what notebook 05 uses) tries every set of at most ``max_buckets`` bounds taken from the lengths that
    occur (``multiple=1``), the last one the longest length, and keeps the cheapest: read it there.
    """
    from tpu_helpers.shared.boundaries import choose_boundaries as search

    return list(search(lengths, int(max(lengths)), max_buckets=max_buckets, multiple=1))

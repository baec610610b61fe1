"""Exercise checks of notebook 01 (the XLA rules in TensorFlow): each passes on the reference answer and fails, naming the
problem, on a typical wrong answer. TensorFlow is imported in fixtures, never at module level
(see tools/run_tests.py)."""
import re

import numpy as np
import pytest
from course_testing import failed, skeleton  # noqa: F401

from tpu_helpers.shared.banking_queries import banking_queries
from tpu_helpers.xla_tf import exercise_checks as nb01


@pytest.fixture(scope="module")
def solution1(tf):
    from tpu_helpers.xla_tf import solutions as solution
    return solution




# ----------------------------------------------------------------------------- notebook 01, rule 1
def test_nb01_clip_passes_on_reference(solution1):
    result = nb01.check_clip_without_if(solution1.clip_without_if)
    assert result.passed, result.message
    assert "branch-free" in result.message


def test_nb01_clip_python_if_does_not_compile_without_autograph(tf):
    def clip_if_too_long(gradient, max_norm):  # the starting point itself
        norm = tf.norm(gradient)
        if norm > max_norm:
            gradient = gradient * (max_norm / norm)
        return gradient

    result = nb01.check_clip_without_if(clip_if_too_long)
    assert failed(result, "Python `if`", "OperatorNotAllowedInGraphError", "tf.cast(norm > max_norm")


def test_nb01_clip_tf_cond_still_branches(tf):
    def with_cond(gradient, max_norm):
        norm = tf.norm(gradient)
        return tf.cond(norm > max_norm, lambda: gradient * (max_norm / norm), lambda: gradient)

    result = nb01.check_clip_without_if(with_cond)
    assert failed(result, "still branches", "`conditional`")


def test_nb01_clip_wrong_numbers_and_nan(tf):
    def always_scales(gradient, max_norm):
        return gradient * (max_norm / tf.norm(gradient))

    result = nb01.check_clip_without_if(always_scales)
    assert failed(result, "norm 0.5 and max_norm=1", "the `if` version returns")

    def normalise_then_scale(gradient, max_norm):  # 0 / 0 for the all-zero gradient
        norm = tf.norm(gradient)
        return gradient / norm * tf.minimum(norm, max_norm)

    result = nb01.check_clip_without_if(normalise_then_scale)
    assert failed(result, "norm 0 and max_norm=1", "NaN")


def test_nb01_clip_skeleton_is_not_attempted():
    result = nb01.check_clip_without_if(skeleton)
    assert not result.passed and not result.attempted


# ----------------------------------------------------------------------------- notebook 01, rule 2
def test_nb01_masked_mean_passes_on_reference(solution1):
    result = nb01.check_masked_mean(solution1.masked_mean)
    assert result.passed, result.message
    assert "1 XLA compilation for all 5 batches" in result.message


@pytest.mark.parametrize("style", ["boolean_mask", "indexing", "where_gather"])
def test_nb01_masked_mean_boolean_selection_is_named(tf, style):
    def select(per_token_loss, labels):
        keep = labels != -100
        if style == "boolean_mask":
            kept = tf.boolean_mask(per_token_loss, keep)
        elif style == "indexing":
            kept = per_token_loss[keep]
        else:
            kept = tf.gather_nd(per_token_loss, tf.where(keep))
        return tf.reduce_mean(kept)

    result = nb01.check_masked_mean(select)
    assert failed(result, "still selects the labelled positions", "data-dependent shapes", "<=1024")


def test_nb01_masked_mean_wrong_denominators(tf):
    result = nb01.check_masked_mean(lambda loss, labels: tf.reduce_mean(loss))
    assert failed(result, "positions labelled your loss is", "divide by the mask's sum")
    result = nb01.check_masked_mean(lambda loss, labels: tf.reduce_mean(tf.where(labels != -100, loss, 0.0)))
    assert failed(result, "positions labelled your loss is", "divide by the mask's sum")


def test_nb01_masked_mean_nan_without_labels(tf):
    def no_guard(per_token_loss, labels):
        weights = tf.cast(labels != -100, per_token_loss.dtype)
        return tf.reduce_sum(per_token_loss * weights) / tf.reduce_sum(weights)

    result = nb01.check_masked_mean(no_guard)
    assert failed(result, "no labelled position", "NaN", "divide_no_nan")


def test_nb01_masked_mean_skeleton_is_not_attempted():
    result = nb01.check_masked_mean(skeleton)
    assert not result.passed and not result.attempted


# ----------------------------------------------------------------------------- notebook 01, rule 3
@pytest.fixture(scope="module")
def query_lengths():
    """Token counts of banking-style queries (words and punctuation + [CLS] and [SEP]): the notebook's shape of
    distribution without training a tokenizer."""
    queries = banking_queries(3000, seed=1)
    return np.array([len(re.findall(r"\w+|[^\w\s]", q)) + 2 for q in queries])


def test_nb01_bucket_boundaries_pass_on_reference(solution1, query_lengths):
    result = nb01.check_bucket_boundaries(solution1.choose_boundaries, query_lengths)
    assert result.passed, result.message
    assert "compilations (budget 4)" in result.message


def test_nb01_bucket_boundaries_powers_of_two_pad_too_much(query_lengths):
    result = nb01.check_bucket_boundaries(lambda lengths: [8, 16, 32, 64], query_lengths)
    assert failed(result, "over the budget of 25%", "put the bounds where the samples are")


def test_nb01_bucket_boundaries_too_many_buckets(query_lengths):
    result = nb01.check_bucket_boundaries(lambda lengths: list(range(4, 65, 4)), query_lengths)
    assert failed(result, "XLA compiles", "over the budget of 4", "fewer buckets")


def test_nb01_bucket_boundaries_last_bound_too_short(query_lengths):
    result = nb01.check_bucket_boundaries(lambda lengths: [12, 16, 24], query_lengths)
    assert failed(result, "longer than your last bound 24", "bucket of max_length=128")


def test_nb01_bucket_boundaries_invalid(query_lengths):
    assert failed(nb01.check_bucket_boundaries(lambda lengths: [200], query_lengths), "from 1 to max_length=128")
    assert failed(nb01.check_bucket_boundaries(lambda lengths: None, query_lengths), "return a list")
    assert failed(nb01.check_bucket_boundaries(lambda lengths: [12.5, 56], query_lengths), "whole numbers")
    result = nb01.check_bucket_boundaries(skeleton, query_lengths)
    assert not result.passed and not result.attempted

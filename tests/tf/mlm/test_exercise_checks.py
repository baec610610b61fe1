"""Exercise checks of notebook 04 (TensorFlow): each passes on the reference answer and fails, naming the problem,
on a typical wrong answer. TensorFlow is imported in fixtures, never at module level (see tools/run_tests.py)."""

import numpy as np
import pytest
from course_testing import failed, skeleton  # noqa: F401

from tpu_helpers.mlm import exercise_checks as nb04
from tpu_helpers.mlm.lesson_cells import mask_tokens


@pytest.fixture(scope="module")
def solution(tf):
    from tpu_helpers.mlm import solutions as solution
    return solution


# ----------------------------------------------------------------------------------------- mask_batch
def _masker(tf, *, exclude_specials=True, ignore=-100, shares=(0.8, 0.9), regular_only=True, seed=None,
            boolean_mask=False):
    """A configurable masking function: the defaults give a right answer; each switch makes a typical mistake."""

    def mask_batch(input_ids, spec):
        ids = tf.convert_to_tensor(input_ids)
        shape = tf.shape(ids)
        if seed is None:
            u_select, u = tf.random.uniform(shape), tf.random.uniform(shape)
        else:
            u_select = tf.random.stateless_uniform(shape, seed=[seed, 1])
            u = tf.random.stateless_uniform(shape, seed=[seed, 2])
        selected = u_select < 0.15
        if exclude_specials:
            selected &= ~tf.reduce_any(tf.equal(ids[..., None], tf.constant(spec.special_ids, ids.dtype)), -1)
        labels = tf.where(selected, ids, tf.constant(ignore, ids.dtype))
        pool = spec.regular_ids if regular_only else np.arange(spec.vocab_size, dtype=np.int32)
        pool = tf.constant(pool, ids.dtype)
        randoms = tf.gather(pool, tf.random.uniform(shape, maxval=tf.size(pool), dtype=tf.int32))
        masked = tf.where(selected & (u < shares[0]), tf.constant(spec.mask_token_id, ids.dtype), ids)
        masked = tf.where(selected & (u >= shares[0]) & (u < shares[1]), randoms, masked)
        if boolean_mask:
            labels = tf.boolean_mask(ids, selected)  # only the selected labels: a data-dependent shape
        return masked, labels

    return mask_batch


def test_mask_batch_passes_on_reference(solution):
    result = nb04.check_mask_batch(solution.mask_batch)
    assert result.passed, result.message
    assert "static shapes" in result.message and "80% / 10% / 10%" in result.message


def test_mask_batch_passes_on_the_course_helper(tf):
    result = nb04.check_mask_batch(lambda ids, spec: mask_tokens(ids, spec))
    assert result.passed, result.message


def test_mask_batch_skeleton_is_not_attempted():
    result = nb04.check_mask_batch(skeleton)
    assert not result.passed and not result.attempted


def test_mask_batch_masking_special_tokens(tf):
    result = nb04.check_mask_batch(_masker(tf, exclude_specials=False))
    assert failed(result, "BERT's recipe") and "; 0 special tokens touched" not in result.message


def test_mask_batch_labels_zero_instead_of_minus_100(tf):
    result = nb04.check_mask_batch(_masker(tf, ignore=0))
    assert failed(result, "BERT's recipe") and "; 0 labels neither -100" not in result.message


def test_mask_batch_everything_becomes_mask(tf):
    assert failed(nb04.check_mask_batch(_masker(tf, shares=(1.0, 1.0))), "80% / 10% / 10%")


def test_mask_batch_random_tokens_from_the_whole_vocabulary(tf):
    result = nb04.check_mask_batch(_masker(tf, regular_only=False))
    assert failed(result, "BERT's recipe") and " touched, 0 drawn as random" not in result.message


def test_mask_batch_same_masks_every_call(tf):
    assert failed(nb04.check_mask_batch(_masker(tf, seed=7)), "second call: True")


def test_mask_batch_boolean_mask_labels(tf):
    assert failed(nb04.check_mask_batch(_masker(tf, boolean_mask=True)), "static shape")


def test_mask_batch_numpy_inside(tf):
    def with_numpy(input_ids, spec):
        ids = np.asarray(input_ids)
        selected = np.random.random(ids.shape) < 0.15
        return np.where(selected, spec.mask_token_id, ids), np.where(selected, ids, -100)

    assert failed(nb04.check_mask_batch(with_numpy), "NumPy")


# ----------------------------------------------------------------------------------------- epoch_plan
def test_epoch_plan_passes_on_reference(solution):
    man = nb04._manifest([300, 300, 47], 300)
    result = nb04.check_epoch_plan(solution.epoch_plan, man, 32)
    assert result.passed, result.message
    assert "3 manifests" in result.message


def test_epoch_plan_assumes_full_shards():
    def full_shards(manifest, global_batch):
        total = len(manifest.shards) * manifest.records_per_shard
        return total, total // global_batch

    assert failed(nb04.check_epoch_plan(full_shards), "last one holds fewer")


def test_epoch_plan_rounds_up():
    def ceil_steps(manifest, global_batch):
        total = sum(s.records for s in manifest.shards)
        return total, -(-total // global_batch)

    assert failed(nb04.check_epoch_plan(ceil_steps), "drop_remainder=True")


def test_epoch_plan_skeleton_and_bad_return():
    assert not nb04.check_epoch_plan(skeleton).attempted
    assert failed(nb04.check_epoch_plan(lambda m, b: 3), "expected (")


# ----------------------------------------------------------------------------------------- masked_accuracy
def test_masked_accuracy_passes_on_reference(solution, tf):
    result = nb04.check_masked_accuracy(solution.masked_accuracy)
    assert result.passed, result.message


def test_masked_accuracy_counting_every_position(tf):
    def plain(labels, logits):  # the seed's metrics=["accuracy"]
        predicted = tf.cast(tf.argmax(logits, -1), labels.dtype)
        return tf.reduce_mean(tf.cast(tf.equal(predicted, labels), tf.float32))

    assert failed(nb04.check_masked_accuracy(plain), "also those labelled -100")


def test_masked_accuracy_boolean_mask(tf):
    def selecting(labels, logits):
        keep = tf.not_equal(labels, -100)
        predicted = tf.cast(tf.argmax(logits, -1), labels.dtype)
        hits = tf.cast(tf.equal(tf.boolean_mask(predicted, keep), tf.boolean_mask(labels, keep)), tf.float32)
        return tf.math.divide_no_nan(tf.reduce_sum(hits), tf.cast(tf.size(hits), tf.float32))

    assert failed(nb04.check_masked_accuracy(selecting), "data-dependent shapes")


def test_masked_accuracy_nan_without_labels(tf):
    def nan_on_empty(labels, logits):
        w = tf.cast(tf.not_equal(labels, -100), tf.float32)
        predicted = tf.cast(tf.argmax(logits, -1), labels.dtype)
        return tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32) * w) / tf.reduce_sum(w)

    assert failed(nb04.check_masked_accuracy(nan_on_empty), "divide_no_nan")


def test_masking_statistics_of_the_course_pipeline_masker(tf):
    ids = nb04._check_ids(nb04.CHECK_SPEC)
    masked, labels = (t.numpy() for t in mask_tokens(tf.constant(ids), nb04.CHECK_SPEC, seed=tf.constant([3, 4])))
    stats = nb04.masking_statistics(ids, masked, labels, nb04.CHECK_SPEC)
    assert abs(stats["selected"] - 0.15) < 0.01 and abs(stats["to_mask"] - 0.8) < 0.02
    assert stats["special_selected"] == stats["special_changed"] == stats["random_special"] == 0

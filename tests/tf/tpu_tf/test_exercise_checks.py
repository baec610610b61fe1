"""Exercise checks of notebook 03 (TensorFlow): each passes on the reference answer and fails, naming the problem,
on a typical wrong answer. TensorFlow is imported in fixtures, never at module level (see tools/run_tests.py)."""
import math

import pytest
from course_testing import failed, skeleton  # noqa: F401

from tpu_helpers.tpu_tf import exercise_checks as nb03

RIGHT_REPLICAS = {"v5e-1": 1, "v3-8": 8, "v5e-8": 8, "v3-32": 32}


@pytest.fixture(scope="module")
def solution(tf):
    from tpu_helpers.tpu_tf import solutions as solution
    return solution




def right_arithmetic(per_replica_batch, replicas, num_examples):
    return per_replica_batch * replicas, num_examples // (per_replica_batch * replicas)


# ----------------------------------------------------------------------------- exercise 1: batch arithmetic
def test_batch_arithmetic_passes_on_reference(solution):
    assert solution.SLICE_REPLICAS == RIGHT_REPLICAS
    result = nb03.check_global_batch_and_steps(solution.global_batch_and_steps, solution.SLICE_REPLICAS,
                                               this_runtime=(4, 8, 16 * 32 + 4))
    assert result.passed, result.message
    assert "global batch 1024, 9 steps for 10,000 examples" in result.message


def test_batch_arithmetic_chips_instead_of_cores_on_v3():
    chips = dict(RIGHT_REPLICAS, **{"v3-8": 4, "v3-32": 16})
    result = nb03.check_global_batch_and_steps(right_arithmetic, chips)
    assert failed(result, "SLICE_REPLICAS['v3-8'] = 4, but v3-8 has 4 chips and 8 replicas", "2 TensorCores",
                  "counts TensorCores")


def test_batch_arithmetic_other_replica_slips():
    result = nb03.check_global_batch_and_steps(right_arithmetic, dict(RIGHT_REPLICAS, **{"v3-32": 4}))
    assert failed(result, "v3-32 has 16 chips and 32 replicas")
    result = nb03.check_global_batch_and_steps(right_arithmetic, dict(RIGHT_REPLICAS, **{"v5e-8": 16}))
    assert failed(result, "v5e-8 has 8 chips and 8 replicas", "1 TensorCore,", "counts chips")


def test_batch_arithmetic_rounding_steps_up():
    def rounds_up(per_replica_batch, replicas, num_examples):
        global_batch = per_replica_batch * replicas
        return global_batch, math.ceil(num_examples / global_batch)

    result = nb03.check_global_batch_and_steps(rounds_up, RIGHT_REPLICAS)
    assert failed(result, "you rounded up", "drop_remainder=True", "10000 // 32 = 312")


def test_batch_arithmetic_per_replica_slips():
    result = nb03.check_global_batch_and_steps(
        lambda b, r, n: (b, n // (b * r)), RIGHT_REPLICAS)  # v5e-1 passes (1 replica); v3-8 does not
    assert failed(result, "returned (32, 39), expected (256, 39)", "per-replica batch x replicas")
    result = nb03.check_global_batch_and_steps(lambda b, r, n: (b * r, n // b), RIGHT_REPLICAS)
    assert failed(result, "each step consumes one global batch")
    result = nb03.check_global_batch_and_steps(lambda b, r, n: (b * r, n / (b * r)), RIGHT_REPLICAS)
    assert failed(result, "whole batches only (//)")
    result = nb03.check_global_batch_and_steps(lambda b, r, n: b * r, RIGHT_REPLICAS)
    assert failed(result, "returned 32, expected (32, 312)")


def test_batch_arithmetic_this_runtime_case_is_checked():
    def wrong_for_odd_sizes(per_replica_batch, replicas, num_examples):  # right on the fixed cases only
        global_batch, steps = right_arithmetic(per_replica_batch, replicas, num_examples)
        return global_batch, steps + (num_examples == 7)

    assert nb03.check_global_batch_and_steps(wrong_for_odd_sizes, RIGHT_REPLICAS).passed
    result = nb03.check_global_batch_and_steps(wrong_for_odd_sizes, RIGHT_REPLICAS, this_runtime=(1, 2, 7))
    assert failed(result, "global_batch_and_steps(1, 2, 7) returned 4 steps")


def test_batch_arithmetic_not_attempted():
    empty = dict.fromkeys(RIGHT_REPLICAS)
    result = nb03.check_global_batch_and_steps(skeleton, empty)
    assert not result.passed and not result.attempted
    result = nb03.check_global_batch_and_steps(right_arithmetic, empty)
    assert not result.passed and not result.attempted and "fill in SLICE_REPLICAS" in result.message


# ----------------------------------------------------------------------------- exercise 2: a Node-ready pipeline
def test_node_ready_passes_on_reference(solution):
    result = nb03.check_node_ready_dataset(solution.make_node_ready_dataset, batch_size=8)
    assert result.passed, result.message
    assert "3 batches of 8 (shuffled)" in result.message and "a TPU Node can run this" in result.message


def test_node_ready_in_order_is_fine(tf):
    def in_order(features, labels, batch_size):
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch_size, drop_remainder=True)

    result = nb03.check_node_ready_dataset(in_order, batch_size=4)
    assert result.passed, result.message
    assert "(in order)" in result.message


def test_node_ready_without_drop_remainder(tf):
    def ragged(features, labels, batch_size):
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch_size)

    result = nb03.check_node_ready_dataset(ragged)
    assert failed(result, "unknown dimension", "(None, 6)", "drop_remainder=True")


def test_node_ready_from_generator(tf):
    def generator_pipeline(features, labels, batch_size):
        signature = (tf.TensorSpec(features.shape[1:], tf.int32), tf.TensorSpec((), tf.int32))
        ds = tf.data.Dataset.from_generator(lambda: zip(features, labels), output_signature=signature)
        return ds.batch(batch_size, drop_remainder=True)

    result = nb03.check_node_ready_dataset(generator_pipeline)
    assert failed(result, "a TPU Node cannot run", "from_generator", "from_tensor_slices")


def test_node_ready_py_function(tf):
    def with_py_function(features, labels, batch_size):
        ds = tf.data.Dataset.from_tensor_slices((features, labels))
        ds = ds.map(lambda x, y: (tf.py_function(lambda t: t, [x], tf.int32), y))
        ds = ds.map(lambda x, y: (tf.ensure_shape(x, features.shape[1:]), y))
        return ds.batch(batch_size, drop_remainder=True)

    result = nb03.check_node_ready_dataset(with_py_function)
    assert failed(result, "a TPU Node cannot run", "py_function")


def test_node_ready_local_tfrecords(tf, tmp_path):
    def via_local_tfrecords(features, labels, batch_size):
        path = str(tmp_path / "data.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for x, y in zip(features, labels):
                feature = {"x": tf.train.Feature(int64_list=tf.train.Int64List(value=x)),
                           "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        spec = {"x": tf.io.FixedLenFeature([features.shape[1]], tf.int64), "y": tf.io.FixedLenFeature([], tf.int64)}
        ds = tf.data.TFRecordDataset([path]).batch(batch_size, drop_remainder=True)
        return ds.map(lambda b: tf.io.parse_example(b, spec)).map(lambda f: (f["x"], f["y"]))

    result = nb03.check_node_ready_dataset(via_local_tfrecords)
    assert failed(result, "local file", "data.tfrecord", "gs://")


def test_node_ready_labels_shuffled_separately(tf):
    def unpaired(features, labels, batch_size):
        xs = tf.data.Dataset.from_tensor_slices(features).shuffle(len(features), seed=1)
        ys = tf.data.Dataset.from_tensor_slices(labels).shuffle(len(labels), seed=2)
        return tf.data.Dataset.zip((xs, ys)).batch(batch_size, drop_remainder=True)

    result = nb03.check_node_ready_dataset(unpaired)
    assert failed(result, "have another example's label", "stay paired")


def test_node_ready_shape_and_structure_slips(tf):
    def unbatched(features, labels, batch_size):
        return tf.data.Dataset.from_tensor_slices((features, labels))

    assert failed(nb03.check_node_ready_dataset(unbatched), "(features, labels) pairs of batches", "(8, 6)")

    def wrong_batch(features, labels, batch_size):
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(2 * batch_size, drop_remainder=True)

    assert failed(nb03.check_node_ready_dataset(wrong_batch), "shapes (8, 6) and (8,)")

    def as_dict(features, labels, batch_size):
        ds = tf.data.Dataset.from_tensor_slices({"input_ids": features, "label": labels})
        return ds.batch(batch_size, drop_remainder=True)

    assert failed(nb03.check_node_ready_dataset(as_dict), "(features, labels) pair")
    assert failed(nb03.check_node_ready_dataset(lambda f, y, b: (f, y)), "return a tf.data.Dataset")


def test_node_ready_repeat(tf):
    def forever(features, labels, batch_size):
        return tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch_size, drop_remainder=True).repeat()

    assert failed(nb03.check_node_ready_dataset(forever), "one epoch gave 4+ batches", "no .repeat()")

    def twice(features, labels, batch_size):
        ds = tf.data.Dataset.from_tensor_slices((features, labels)).repeat(2)
        return ds.batch(batch_size, drop_remainder=True)

    assert failed(nb03.check_node_ready_dataset(twice), "one epoch gave 4+ batches")


def test_node_ready_not_attempted():
    result = nb03.check_node_ready_dataset(skeleton)
    assert not result.passed and not result.attempted

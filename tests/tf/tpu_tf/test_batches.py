"""Batch arithmetic of replicas and TPU slices: plain Python, no TensorFlow imported."""
import subprocess
import sys

import pytest
from course_testing import ROOT

from tpu_helpers.core.tables import format_table
from tpu_helpers.tpu_tf.batches import (
    DEFAULT_SLICES,
    BatchPlan,
    batch_table,
    plan_batches,
    split_batch,
)


@pytest.mark.parametrize("batch,replicas,expected", [
    (32, 8, [4] * 8), (4, 8, [1, 1, 1, 1, 0, 0, 0, 0]), (10, 8, [2, 2, 2, 2, 2, 0, 0, 0]),
    (16, 8, [2] * 8), (0, 8, [0] * 8), (7, 1, [7]), (9, 4, [3, 3, 3, 0]),
])
def test_split_batch_matches_tf_distribute(batch, replicas, expected):
    # expected values measured with MirroredStrategy over 8 logical CPUs on TF 2.20 (tests/tf/tpu_tf/test_strategy.py
    # re-measures the first three against the real strategy)
    got = split_batch(batch, replicas)
    assert got == expected and sum(got) == batch


def test_plan_with_drop_remainder():
    p = plan_batches(per_replica_batch=4, replicas=8, dataset_size=516)
    assert (p.global_batch, p.steps_per_epoch, p.remainder, p.dropped_examples) == (32, 16, 4, 4)
    assert p.batch_sizes == [32] and p.compilations == 1
    assert p.per_replica_split == [4] * 8 and p.last_batch_split is None


def test_plan_without_drop_remainder_has_a_second_shape():
    p = plan_batches(4, 8, 516, drop_remainder=False)
    assert (p.steps_per_epoch, p.dropped_examples) == (17, 0)
    assert p.batch_sizes == [32, 4] and p.compilations == 2
    assert p.last_batch_split == [1, 1, 1, 1, 0, 0, 0, 0]


def test_plan_exact_multiple_has_one_shape_either_way():
    for drop in (True, False):
        p = plan_batches(4, 8, 512, drop_remainder=drop)
        assert (p.steps_per_epoch, p.compilations, p.dropped_examples) == (16, 1, 0)


def test_plan_smaller_than_one_batch():
    assert plan_batches(4, 8, 10, drop_remainder=True).steps_per_epoch == 0
    p = plan_batches(4, 8, 10, drop_remainder=False)
    assert (p.steps_per_epoch, p.batch_sizes) == (1, [10])


def test_table_from_single_tpu_to_pod_slice():
    rows = {p.name: p for p in batch_table(32, 100_000, extra={"here": 8})}
    assert list(rows) == [*DEFAULT_SLICES, "here"]
    v38, v332, v5e1 = rows["v3-8"], rows["v3-32"], rows["v5e-1"]
    assert (v38.global_batch, v38.steps_per_epoch) == (256, 390)
    # a v3-32 is 4 v3-8 hosts: 4x the global batch, ~1/4 of the steps, each host feeds its 8 replicas 256
    assert (v332.replicas, v332.hosts, v332.global_batch, v332.per_host_batch) == (32, 4, 1024, 256)
    assert v332.steps_per_epoch == 100_000 // 1024
    assert v5e1.global_batch == 32 and rows["here"].global_batch == rows["v5e-8"].global_batch == 256


def test_format_table_has_every_row_and_column():
    text = format_table(batch_table(8, 1000))
    lines = text.splitlines()
    assert len(lines) == 2 + len(DEFAULT_SLICES)
    for col in ("per-replica batch", "global batch", "steps/epoch", "per-host batch"):
        assert col in lines[0]
    assert format_table([]) == "(empty)"
    assert "v3-32" in text and isinstance(batch_table(8, 1000)[0], BatchPlan)


def test_strategy_module_does_not_import_tensorflow():
    code = "import sys, tpu_helpers.tpu_tf.strategy; assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_numpy_integers_are_whole_numbers():
    import numpy as np

    assert plan_batches(np.int64(8), np.int32(8), np.int64(1000)).global_batch == 64

"""Property-based tests (hypothesis) of the bucket samplers and the evaluation's gather step, on the host.

For random sizes, length distributions, batch sizes, bucket sets and replica counts:
* training and evaluation plans use every row at most / exactly once, every batch has a planned shape, and every
  replica builds the same plan;
* sharded as ``accelerator.prepare`` shards them (accelerate's ``BatchSamplerShard``), gathered back step by step
  and cut with `rows_still_due`, the evaluation gives every test row exactly once, in the plan's order; and
  `check_evaluation_plan` agrees.
"""
import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")
hypothesis = pytest.importorskip("hypothesis")

from accelerate.data_loader import BatchSamplerShard  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from tpu_helpers.banking77.evaluation import check_evaluation_plan, rows_still_due  # noqa: E402
from tpu_helpers.banking77.lesson_cells import BucketBatchSampler  # noqa: E402


@st.composite
def bucket_cases(draw, shuffle: bool):
    bounds = sorted(draw(st.sets(st.integers(2, 96), min_size=1, max_size=4)))
    replicas = draw(st.integers(1, 8))
    batch = draw(st.integers(1, 24))
    n_min = batch * replicas if shuffle else 1
    lengths = draw(st.lists(st.integers(1, bounds[-1]), min_size=n_min, max_size=max(n_min, 400)))
    return lengths, batch, tuple(bounds), replicas, draw(st.integers(0, 2**16)), draw(st.integers(0, 3))


def gathered_steps(sampler, replicas):
    """What each replica's loader yields (BatchSamplerShard), put back together per step as a gather does."""
    shards = [list(BatchSamplerShard(sampler, num_processes=replicas, process_index=r)) if replicas > 1
              else list(sampler) for r in range(replicas)]
    assert len({len(s) for s in shards}) == 1, "every replica runs the same number of steps"
    return shards, [[i for piece in pieces for i in piece] for pieces in zip(*shards)]


@settings(max_examples=150, deadline=None)
@given(bucket_cases(shuffle=False))
def test_evaluation_plan_gives_every_row_once_in_order_on_any_replica_count(case):
    lengths, batch, bounds, replicas, seed, _ = case
    sampler = BucketBatchSampler(lengths, batch, bounds, num_replicas=replicas, shuffle=False, seed=seed)
    plan = sampler.plan(0)
    order = [int(i) for b in plan for i in b.indices[:b.real_rows]]
    assert sorted(order) == list(range(len(lengths)))
    for b in plan:
        assert len(b.indices) == sampler.global_batch_size and b.padded_length in bounds
        assert max(lengths[i] for i in b.indices) <= b.padded_length
    shards, steps = gathered_steps(sampler, replicas)
    for pieces in zip(*shards):
        assert len({L for piece in pieces for _, L in piece}) == 1, "one padded length per step on all replicas"
        assert {len(piece) for piece in pieces} == {batch}, "one batch shape on every replica"
    rows, seen = [], 0
    for step in steps:
        keep = rows_still_due(len(step), seen, len(lengths))
        rows += [i for i, _ in step[:keep]]
        seen += keep
    assert rows == order
    loader = DataLoader(range(len(lengths)), batch_sampler=sampler)
    assert check_evaluation_plan(loader, len(lengths), replicas, order) == len(plan)


@settings(max_examples=150, deadline=None)
@given(bucket_cases(shuffle=True))
def test_training_plan_same_on_every_replica_each_row_at_most_once(case):
    lengths, batch, bounds, replicas, seed, epoch = case
    plans = []
    for _ in range(2):  # two processes build the plan independently
        s = BucketBatchSampler(lengths, batch, bounds, num_replicas=replicas, shuffle=True, seed=seed)
        s.set_epoch(epoch)
        plans.append([(b.indices.tolist(), b.padded_length) for b in s.plan()])
    assert plans[0] == plans[1]
    used = [i for idx, _ in plans[0] for i in idx]
    assert len(used) == len(set(used)), "a row is trained on at most once per epoch"
    assert len(lengths) - len(used) < batch * replicas, "fewer than one global batch is skipped"
    assert all(len(idx) == batch * replicas and L in bounds for idx, L in plans[0])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 64), st.integers(1, 8))
def test_fixed_length_evaluation_with_even_batches_gives_every_row_once(n, batch, replicas):
    loader = DataLoader(range(n), batch_size=batch)
    _, steps = gathered_steps(loader.batch_sampler, replicas)
    rows, seen = [], 0
    for step in steps:
        keep = rows_still_due(len(step), seen, n)
        rows += step[:keep]
        seen += keep
    assert rows == list(range(n))
    assert check_evaluation_plan(loader, n, replicas) == len(steps)

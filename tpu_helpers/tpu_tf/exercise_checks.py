"""Checks of notebook 03's exercises (batch arithmetic, a TPU-Node-ready pipeline), naming the usual slips."""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Mapping

import numpy as np

from tpu_helpers.core.exercises import CheckResult, NotAttempted, answer_for, call_answer, run_check, short
from tpu_helpers.core.tpu_slices import tpu_slice
from tpu_helpers.tpu_tf.batches import plan_batches

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

SLICES = ("v5e-1", "v3-8", "v5e-8", "v3-32")
# (per-replica batch, examples): a remainder, an exact fit, fewer examples than one global batch of 8+ replicas
_BATCH_CASES = ((32, 10_000), (16, 4096), (8, 40), (64, 1_000_003))


def check_global_batch_and_steps(global_batch_and_steps: Callable, slice_replicas: Mapping[str, Any],
                                 this_runtime: tuple[int, int, int] | None = None) -> CheckResult:
    """Replicas per slice and ``global_batch_and_steps`` against `plan_batches` (and the notebook's own run)."""

    def body() -> str:
        call_answer(global_batch_and_steps, 8, 8, 100, what="global_batch_and_steps(8, 8, 100)")
        missing = [name for name in SLICES if slice_replicas.get(name) is None]
        if missing:
            raise NotAttempted(f"global_batch_and_steps is written; now fill in SLICE_REPLICAS for {', '.join(missing)}")
        for name in SLICES:
            info = tpu_slice(name)  # chips and replicas from core.tpu_slices, the one owner of the per-chip rule
            per_chip = info.replicas // info.chips
            assert slice_replicas[name] == info.replicas, (
                f"SLICE_REPLICAS[{name!r}] = {short(slice_replicas[name])}, but {name} has {info.chips} chips and "
                f"{info.replicas} replicas: a {info.generation} chip shows TensorFlow {per_chip} TensorCore"
                f"{'s' if per_chip > 1 else ''}, one replica each, and the number in a {info.generation} slice's "
                f"name counts {'TensorCores' if per_chip > 1 else 'chips'}.")
        cases = [(b, tpu_slice(name).replicas, n) for name in SLICES for b, n in _BATCH_CASES]
        cases += [tuple(int(v) for v in this_runtime)] if this_runtime is not None else []
        for per_replica, replicas, examples in cases:
            call = f"global_batch_and_steps({per_replica}, {replicas}, {examples})"
            got = call_answer(global_batch_and_steps, per_replica, replicas, examples, what=call)
            plan = plan_batches(per_replica, replicas, examples, drop_remainder=True)
            got = tuple(got) if isinstance(got, (tuple, list)) else got
            assert not plan.remainder or got != (plan.global_batch, math.ceil(examples / plan.global_batch)), (
                f"{call} returned {got[1]} steps: you rounded up. With drop_remainder=True the last, partial batch "
                f"({plan.remainder} examples) is dropped: {examples} // {plan.global_batch} = {plan.steps_per_epoch}")
            want = (plan.global_batch, plan.steps_per_epoch)
            assert got == want and all(isinstance(v, numbers.Integral) for v in got), (
                f"{call} returned {short(got)}, expected ({plan.global_batch}, {plan.steps_per_epoch}): the global "
                f"batch is per-replica batch x replicas (tf.distribute splits it), and each step consumes one global "
                "batch, whole batches only (//)")
        v3_32 = plan_batches(32, tpu_slice("v3-32").replicas, 10_000)
        return (f"replicas per slice {dict((n, tpu_slice(n).replicas) for n in SLICES)}, and global batch and "
                f"steps agree with plan_batches on {len(cases)} cases (e.g. 32 per replica on a v3-32: global batch "
                f"{v3_32.global_batch}, {v3_32.steps_per_epoch} steps for 10,000 examples)")

    return run_check(body)


def check_node_ready_dataset(make_node_ready_dataset: Callable, batch_size: int = 8) -> CheckResult:
    """A pure, static-shaped, one-epoch ``tf.data`` pipeline of paired ``(features, labels)`` batches."""

    def body() -> str:
        import tensorflow as tf

        from tpu_helpers.tpu_tf.purity import inspect_pipeline, unknown_dims

        rows = 3 * batch_size + batch_size // 2 + 1  # a ragged remainder, as real data has
        rng = np.random.default_rng(3)
        features = rng.integers(1, 1000, size=(rows, 6)).astype(np.int32)
        features[:, 0] = np.arange(rows)  # every example can be traced by its first column
        labels = rng.integers(0, 2, size=rows).astype(np.int32)
        what = f"make_node_ready_dataset(features, labels, {batch_size})"
        ds = call_answer(make_node_ready_dataset, features, labels, batch_size, what=what)
        assert isinstance(ds, tf.data.Dataset), f"{what} returned {short(ds)}: return a tf.data.Dataset"
        report = inspect_pipeline(ds)
        assert report.node_ready, (f"a TPU Node cannot run your pipeline: {report.explain()} Build it from the "
                                   "arrays with tf.data.Dataset.from_tensor_slices and tf ops only.")
        dims = unknown_dims(ds.element_spec)
        assert not dims, (
            f"element_spec has an unknown dimension ({'; '.join(dims)}): without drop_remainder=True the last batch "
            f"may be smaller, and XLA compiles again for it. Use .batch({batch_size}, drop_remainder=True)")
        spec, want = ds.element_spec, ((batch_size, 6), (batch_size,))
        shapes = tuple(tuple(s.shape) for s in spec) if isinstance(spec, tuple) and len(spec) == 2 else None
        steps = rows // batch_size
        seen = [(np.asarray(x), np.asarray(y)) for _, (x, y) in zip(range(steps + 1), ds)] if shapes == want else []
        assert shapes == want and len(seen) == steps, (
            f"one epoch should be {steps} (features, labels) pairs of batches with shapes {want[0]} and {want[1]} "
            f"(drop_remainder=True, no .repeat()); your element_spec is {short(spec, 200)}, and one epoch gave "
            f"{len(seen)}{'+' if len(seen) > steps else ''} batches")
        xs, ys = np.concatenate([x for x, _ in seen]), np.concatenate([y for _, y in seen])
        index = np.clip(xs[:, 0], 0, rows - 1)
        assert (ys == labels[index]).all(), (
            f"{int((ys != labels[index]).sum())} of {len(ys)} examples have another example's label: features and "
            "labels must stay paired. Slice them together, from_tensor_slices((features, labels)), and shuffle the "
            "pairs, not each array separately")
        shuffled = "shuffled" if (xs[:, 0] != np.arange(len(xs))).any() else "in order"
        return (f"pure tf.data, no local files, static batches {want[0]} / {want[1]}, {steps} batches of "
                f"{batch_size} ({shuffled}), every example with its own label: a TPU Node can run this")

    return run_check(body)

"""Checks of notebook 03's exercises (batch arithmetic, a TPU-Node-ready pipeline), naming the usual slips."""
from __future__ import annotations

import math
from numbers import Integral
from typing import Any, Callable, Mapping

import numpy as np

from tpu_helpers.core.exercises import CheckResult, NotAttempted, answer_for, call_answer, run_check, short
from tpu_helpers.tpu_tf.batches import plan_batches, slice_info

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

SLICES = ("v5e-1", "v3-8", "v5e-8", "v3-32")
# (per-replica batch, examples): a remainder, an exact fit, fewer examples than one global batch of 8+ replicas
_BATCH_CASES = ((32, 10_000), (16, 4096), (8, 40), (64, 1_000_003))


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


# ------------------------------------------------------------------------------------ batch arithmetic
def _replica_problem(name: str, value: Any) -> str | None:
    info = slice_info(name)  # chips and replicas from tpu_helpers.core.runtime, the one owner of the per-chip rule
    if not _is_int(value):
        return f"SLICE_REPLICAS[{name!r}] is {short(value)}: give a whole number of replicas"
    per_chip = info.replicas // info.chips
    return None if value == info.replicas else (
        f"SLICE_REPLICAS[{name!r}] = {value}, but {name} has {info.chips} chips and {info.replicas} replicas: a "
        f"{info.generation} chip shows TensorFlow {per_chip} TensorCore{'s' if per_chip > 1 else ''}, one replica "
        f"each, and the number in a {info.generation} slice's name counts {'TensorCores' if per_chip > 1 else 'chips'}.")


def _batch_problem(result: Any, per_replica: int, replicas: int, examples: int) -> str | None:
    call = f"global_batch_and_steps({per_replica}, {replicas}, {examples})"
    plan = plan_batches(per_replica, replicas, examples, drop_remainder=True)
    want = (plan.global_batch, plan.steps_per_epoch)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return f"{call} returned {short(result)}: return two numbers, (global_batch, steps_per_epoch)"
    global_batch, steps = result
    if not _is_int(global_batch) or not _is_int(steps):
        return (f"{call} returned {short(tuple(result))}: both must be whole numbers (int). Steps count whole "
                "batches: use integer division, examples // global_batch.")
    if global_batch != plan.global_batch:
        return (f"{call} returned global batch {global_batch}: the pipeline builds the global batch, which "
                f"tf.distribute splits over the replicas, so it is per-replica batch x replicas = {plan.global_batch}")
    if steps == want[1]:
        return None
    if steps == math.ceil(examples / plan.global_batch):
        return (f"{call} returned {steps} steps: you rounded up. With drop_remainder=True the last, partial batch "
                f"({plan.remainder} examples) is dropped, so steps = {examples} // {plan.global_batch} = {want[1]}")
    if steps in (examples // per_replica, math.ceil(examples / per_replica)):
        return (f"{call} returned {steps} steps: you divided by the per-replica batch. Each step consumes one "
                f"global batch ({plan.global_batch} examples over {replicas} replicas)")
    return f"{call} returned {steps} steps; with drop_remainder=True an epoch has examples // global batch steps"


def check_global_batch_and_steps(global_batch_and_steps: Callable, slice_replicas: Mapping[str, Any],
                                 this_runtime: tuple[int, int, int] | None = None) -> CheckResult:
    """Replicas per slice and ``global_batch_and_steps`` against `plan_batches` (and the notebook's own run)."""

    def body() -> str:
        call_answer(global_batch_and_steps, 8, 8, 100, what="global_batch_and_steps(8, 8, 100)")
        if not isinstance(slice_replicas, Mapping):
            raise AssertionError(f"SLICE_REPLICAS must be a dict {{slice name: replicas}}, not {short(slice_replicas)}")
        missing = [name for name in SLICES if slice_replicas.get(name) is None]
        if missing:
            raise NotAttempted(f"global_batch_and_steps is written; now fill in SLICE_REPLICAS for {', '.join(missing)}")
        for name in SLICES:
            problem = _replica_problem(name, slice_replicas[name])
            assert problem is None, problem
        cases = [(b, slice_info(name).replicas, n) for name in SLICES for b, n in _BATCH_CASES]
        if this_runtime is not None:
            cases.append(tuple(int(v) for v in this_runtime))
        for per_replica, replicas, examples in cases:
            result = call_answer(global_batch_and_steps, per_replica, replicas, examples,
                                 what=f"global_batch_and_steps({per_replica}, {replicas}, {examples})")
            problem = _batch_problem(result, per_replica, replicas, examples)
            assert problem is None, problem
        v3_32 = plan_batches(32, slice_info("v3-32").replicas, 10_000)
        return (f"replicas per slice {dict((n, slice_info(n).replicas) for n in SLICES)}, and global batch and "
                f"steps agree with plan_batches on {len(cases)} cases (e.g. 32 per replica on a v3-32: global batch "
                f"{v3_32.global_batch}, {v3_32.steps_per_epoch} steps for 10,000 examples)")

    return run_check(body)


# ------------------------------------------------------------------------------- a TPU-Node-ready pipeline
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
        assert isinstance(ds, tf.data.Dataset), (
            f"{what} returned {short(ds)}: return a tf.data.Dataset (tf.data.Dataset.from_tensor_slices(...)...)")
        report = inspect_pipeline(ds)
        assert report.is_pure, (f"your pipeline uses {', '.join(sorted(report.kinds))}, which a TPU Node cannot run: "
                                f"{report.findings[0].explanation if report.findings else ''} Build it from the "
                                "arrays with tf.data.Dataset.from_tensor_slices and tf ops only.")
        assert not report.local_files, (
            f"your pipeline reads {len(report.local_files)} file(s) from this machine's disk (e.g. "
            f"{report.local_files[0]}): a TPU Node cannot see them. Keep the arrays in memory or put the files on gs://.")
        dims = unknown_dims(ds.element_spec)
        assert not dims, (
            f"element_spec has an unknown dimension ({'; '.join(dims)}): without drop_remainder=True the last batch "
            f"may be smaller, and XLA compiles again for it. Use .batch({batch_size}, drop_remainder=True)")
        spec, want = ds.element_spec, ((batch_size, 6), (batch_size,))
        shapes = tuple(tuple(s.shape) for s in spec) if isinstance(spec, tuple) and len(spec) == 2 else None
        assert shapes == want, (f"each element should be a (features, labels) pair of batches with shapes {want[0]} "
                                f"and {want[1]}; your element_spec is {short(spec, 200)}")
        steps = rows // batch_size
        seen = [(np.asarray(x), np.asarray(y)) for _, (x, y) in zip(range(steps + 1), ds)]
        assert len(seen) == steps, (
            f"one epoch gave {len(seen)}{'+' if len(seen) > steps else ''} batches; {rows} examples in batches of "
            f"{batch_size} with drop_remainder=True make {steps} (no .repeat(): Keras' fit(epochs=...) repeats)")
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

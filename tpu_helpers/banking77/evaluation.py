"""The evaluation of notebook 05's training function: exactly one prediction per test row on XLA (gathered from
every replica, the last batch's repeats cut on the host), the plan checked before training, and weighted F1."""
from __future__ import annotations

from typing import Sequence

__all__ = ["rows_on_host", "rows_kept", "rows_still_due", "check_evaluation_plan", "weighted_f1"]


def weighted_f1(predictions: Sequence[int], references: Sequence[int]) -> float:
    """Support-weighted mean of per-class F1: scikit-learn's ``f1_score(average="weighted")`` (a class never
    predicted, or with no true samples, has F1 0). The seed's ``evaluate.load("f1")`` computes the same with
    scikit-learn, after downloading a metric script from the Hub."""
    from sklearn.metrics import f1_score

    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    if not len(references):
        return 0.0
    return float(f1_score(list(references), list(predictions), average="weighted", zero_division=0))


def rows_still_due(batch_rows: int, seen: int, n_rows: int) -> int:
    """How many rows of a gathered evaluation batch to keep: all of them until ``n_rows`` test rows are seen, then
    none. Only the last batch is ever cut: it carries the repeats that keep its shape (`BucketBatchSampler`'s top-up,
    or Accelerate's ``even_batches`` across replicas), and they come after its real rows."""
    return max(0, min(int(batch_rows), int(n_rows) - int(seen)))


def check_evaluation_plan(eval_dl, n_rows: int, num_replicas: int = 1, order: Sequence[int] | None = None) -> int:
    """Before training: replay the evaluation loader's batches on the host, as ``accelerator.prepare`` will shard
    them (accelerate's ``BatchSamplerShard``: batch ``k`` to replica ``k % num_replicas``) and as the gather puts
    them back together, and check that cutting each gathered batch with `rows_still_due` gives every test row
    exactly once, in ``order`` (the bucketed evaluation's order; None: the dataset's). Returns the number of
    gathered batches; raises a ValueError (before any training time is spent) when the plan is wrong.

    Only indices are read (the batch sampler), no row is loaded or padded.
    """
    from accelerate.data_loader import BatchSamplerShard

    sampler = eval_dl.batch_sampler
    if num_replicas > 1:
        shards = [list(BatchSamplerShard(sampler, num_processes=num_replicas, process_index=r, even_batches=True))
                  for r in range(num_replicas)]
        if len({len(s) for s in shards}) != 1:
            raise ValueError(f"the evaluation loader gives the {num_replicas} replicas different numbers of "
                             f"batches ({[len(s) for s in shards]}): the gather would hang or mix batches")
        steps = [[i for piece in pieces for i in piece] for pieces in zip(*shards)]
    else:
        steps = [list(b) for b in sampler]
    rows, seen = [], 0
    for step in steps:
        keep = rows_still_due(len(step), seen, n_rows)
        rows += [i[0] if isinstance(i, tuple) else i for i in step[:keep]]
        seen += keep
    want = list(range(n_rows)) if order is None else [int(i) for i in order]
    if [int(i) for i in rows] != want:
        missing = len(set(want) - set(rows))
        raise ValueError(f"the evaluation loader's plan gives {len(rows)} rows ({len(set(rows))} distinct, "
                         f"{missing} test rows missing) for {n_rows} test rows: check eval_batch_size, the "
                         "bucket boundaries (the largest must hold every test query) and drop_last=False")
    return len(steps)


def rows_kept(batches, n_rows: int):
    """The evaluation batches (tensors or arrays of one value per row, in order) as one NumPy array of exactly
    ``n_rows`` rows: each batch copied to the host once, the rows still due kept (`rows_still_due`: only the last
    batch's repeats are cut). Raises a ValueError when the batches hold fewer rows."""
    import numpy as np

    out, seen = [], 0
    for b in batches:
        keep = rows_still_due(len(b), seen, n_rows)
        out.append((b.cpu().numpy() if hasattr(b, "cpu") else np.asarray(b))[:keep])
        seen += keep
    if seen != n_rows:
        raise ValueError(f"the evaluation loader produced {seen} rows for {n_rows} test rows")
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def rows_on_host(gathered, n_rows: int):
    """``gathered``: the ``(predictions, labels)`` pairs ``accelerator.gather`` returned for each evaluation batch,
    in order. Returns two NumPy arrays of exactly ``n_rows`` rows (`rows_kept`). Each batch was computed when the
    loader synced at the next step, so the copy is a transfer, not a new graph; the cut happens on the host because
    a slice on the device would be one more graph to compile."""
    pairs = list(gathered)
    return rows_kept([p for p, _ in pairs], n_rows), rows_kept([r for _, r in pairs], n_rows)

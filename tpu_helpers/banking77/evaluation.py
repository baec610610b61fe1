"""Notebook 05's evaluation: one prediction per test row on XLA (repeats cut on the host), checked before training."""
from __future__ import annotations

from typing import Sequence


def rows_still_due(batch_rows: int, seen: int, n_rows: int) -> int:
    """Rows of a gathered batch to keep: only the last batch's repeats (after its real rows) are cut."""
    return max(0, min(int(batch_rows), int(n_rows) - int(seen)))


def check_evaluation_plan(eval_dl, n_rows: int, num_replicas: int = 1, order: Sequence[int] | None = None) -> int:
    """The number of gathered evaluation batches, after checking on the host that they hold every test row once."""
    from accelerate.data_loader import BatchSamplerShard

    sampler = eval_dl.batch_sampler
    if num_replicas > 1:
        shards = [list(BatchSamplerShard(sampler, num_processes=num_replicas, process_index=r, even_batches=True))
                  for r in range(num_replicas)]  # even_batches: every replica gets as many batches
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
        raise ValueError(f"the evaluation loader's plan gives {len(rows)} rows ({len(set(rows))} distinct, "
                         f"{len(set(want) - set(rows))} test rows missing) for {n_rows} test rows: check "
                         "eval_batch_size, the bucket boundaries (the largest must hold every test query) and "
                         "drop_last=False")
    return len(steps)


def rows_kept(batches, n_rows: int):
    """The batches as one NumPy array of exactly ``n_rows`` rows, cut on the host (ValueError if fewer)."""
    import numpy as np

    out, seen = [], 0
    for b in batches:
        keep = rows_still_due(len(b), seen, n_rows)
        out.append((b.cpu().numpy() if hasattr(b, "cpu") else np.asarray(b))[:keep])
        seen += keep
    if seen != n_rows:
        raise ValueError(f"the evaluation loader produced {seen} rows for {n_rows} test rows")
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

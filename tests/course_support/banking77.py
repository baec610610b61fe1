"""Notebook 05's test-only code: its launch run as the notebook runs it, fixture writers, the benchmarks' batches."""
from __future__ import annotations

import csv
import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence


def run_as_notebook(function: Callable[..., Any], args: Sequence[Any], plan=None):
    """Notebook 05's launch for tests and benchmarks: the plan's environment, then its cell tagged ``launch``
    (`lesson_cells.launch_training`, with the course's guards) runs ``function(*args, RunLog)``; the `TrainReport`
    the main replica wrote is read back (to ``args[3].report_path``, or a temporary file)."""
    from tpu_helpers.banking77.launch import launch_checked, plan_launch, prepare_environment

    plan = plan or plan_launch()
    prepare_environment(plan)
    from tpu_helpers.banking77.run_log import RunLog, TrainReport  # imports accelerate: after the environment

    args = list(args) + [None] * (5 - len(args))
    temporary = None
    report_path = getattr(args[3], "report_path", None)
    if report_path is None:
        temporary = tempfile.mkdtemp(prefix="tpu-course-report-")
        report_path = os.path.join(temporary, "report.json")
    args[5:] = [functools.partial(RunLog, report_path=report_path)]  # the training function's optional log
    try:
        launch_checked(function, tuple(args), plan)
        return TrainReport.load(report_path)
    finally:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)


def write_hub_layout(dataset, folder: str | os.PathLike[str]) -> Path:
    """Write a DatasetDict like the Hub's refs/convert/parquet branch: ``default/{split}/0000.parquet``."""
    folder = Path(folder)
    for split, ds in dataset.items():
        out = folder / "default" / split
        out.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(out / "0000.parquet"))
    return folder


def write_csv_dir(dataset, folder: str | os.PathLike[str]) -> Path:
    """Write a DatasetDict as BANKING77's original CSVs: ``{split}.csv`` with columns ``text,category``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for split, ds in dataset.items():
        names = ds.features["label"].names
        with open(folder / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "category"])
            for text, label in zip(ds["text"], ds["label"]):
                writer.writerow([text, names[label]])
    return folder


def epoch_batches(lengths: Sequence[int], strategy: str, *, batch_size: int, max_length: int, max_buckets: int = 3,
                  seed: int = 0) -> tuple[list[tuple[list[int], int]], list[int] | None]:
    """One training epoch as ``[(indices, padded_length)]`` for a padding ``strategy``, and the bucket boundaries
    (None but for ``"buckets"``: ``choose_boundaries``, then epoch 0 of notebook 05's `BucketBatchSampler`); any
    other name is a `tpu_helpers.shared.padding` strategy (shuffled with ``seed``, the last batch dropped)."""
    from tpu_helpers.shared import padding
    from tpu_helpers.shared.boundaries import choose_boundaries

    if strategy == "buckets":
        from tpu_helpers.banking77.lesson_cells import BucketBatchSampler

        bounds = choose_boundaries(lengths, max_length, max_buckets=max_buckets)
        plan = BucketBatchSampler(lengths, batch_size, bounds, seed=seed).plan(0)
        return [([int(i) for i in b.indices], b.padded_length) for b in plan], list(bounds)
    return [([int(i) for i in b.indices], b.padded_length)
            for b in padding.padded_batches(lengths, batch_size, strategy, max_length=max_length, seed=seed)], None


def padded_tensors(token_ids: Sequence[Sequence[int]], indices: Sequence[int], padded_length: int, *,
                   pad_token_id: int = 0) -> dict[str, Any]:
    """``input_ids`` and ``attention_mask`` (``len(indices) x padded_length``) of the rows ``indices``, padded on the
    right with ``pad_token_id`` (BERT's ``[PAD]`` is 0)."""
    import torch

    x = torch.full((len(indices), padded_length), pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(indices), padded_length, dtype=torch.long)
    for row, i in enumerate(indices):
        if len(token_ids[i]) > padded_length:
            raise ValueError(f"row {i} has {len(token_ids[i])} tokens, more than the padded length {padded_length}")
        x[row, :len(token_ids[i])] = torch.tensor(token_ids[i])
        mask[row, :len(token_ids[i])] = 1
    return {"input_ids": x, "attention_mask": mask}

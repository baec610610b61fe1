"""Reference answers for notebook 05's exercises (BANKING77 with Accelerate, length buckets). Try first, then read."""
from __future__ import annotations

from typing import Any, Callable, Sequence


def make_collate(tokenizer: Any) -> Callable[[Sequence[tuple[dict, int]]], dict]:
    """A collate that pads every batch to the length its bucket sampler chose: one shape per bucket."""
    from transformers import DataCollatorWithPadding

    def collate(items):
        rows = [row for row, _ in items]
        length = items[0][1]  # the sampler gives every row of a batch the same length
        return DataCollatorWithPadding(tokenizer, padding="max_length", max_length=length)(rows)

    return collate


def gather_step(accelerator: Any, preds: Any, labels: Any, seen: int, n_rows: int) -> tuple[list[int], list[int]]:
    """Gather the batch from every replica (not ``gather_for_metrics``), then cut the repeats on the host."""
    preds, labels = accelerator.gather((preds, labels))
    keep = max(0, min(len(preds), n_rows - seen))
    return preds.cpu()[:keep].tolist(), labels.cpu()[:keep].tolist()

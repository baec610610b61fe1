"""Reference answers for notebook 02's exercises (the three XLA rules in PyTorch/XLA). Try first, then read."""
from __future__ import annotations

from typing import Sequence

import torch


def clip_by_norm(update: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    """Rule 1: both branches are computed on the device and `torch.where` picks one; no host read.

    `torch.where` *selects*: for the all-zero update, ``update * (max_norm / norm)`` is 0 * inf = NaN, but that
    branch is not selected, so the NaN never reaches the result (blending with ``t * a + (1 - t) * b`` would
    keep it: 0 * NaN = NaN).
    """
    norm = update.norm()
    return torch.where(norm > max_norm, update * (max_norm / norm), update)


def token_accuracy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Rule 2: the share of labelled tokens predicted right, as a masked mean: every tensor keeps the batch's
    shape, so one graph serves any number of labelled tokens (0 when nothing is labelled)."""
    labelled = (labels != ignore_index).to(logits.dtype)
    correct = (logits.argmax(dim=-1) == labels).to(logits.dtype)
    return (correct * labelled).sum() / labelled.sum().clamp(min=1.0)


def pick_pad_multiple(lengths: Sequence[int], batch_size: int, max_graphs: int) -> int:
    """Rule 3: of the multiples of 8 up to the longest length, the one with the least padding whose batches have
    at most ``max_graphs`` distinct padded lengths (one compiled graph each)."""
    batches = [lengths[i:i + batch_size] for i in range(0, len(lengths), batch_size)]
    longest = max(lengths)
    best, best_tokens = None, None
    for multiple in range(8, -(-longest // 8) * 8 + 1, 8):  # past the longest length: still 1 shape, more padding
        padded = [-(-max(batch) // multiple) * multiple for batch in batches]
        if len(set(padded)) > max_graphs:
            continue
        tokens = sum(p * len(batch) for p, batch in zip(padded, batches))  # real tokens + padding
        if best_tokens is None or tokens < best_tokens:
            best, best_tokens = multiple, tokens
    return best

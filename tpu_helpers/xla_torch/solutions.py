"""Reference answers for notebook 02's exercises (the three XLA rules in PyTorch/XLA). Try first, then read."""
from __future__ import annotations

from typing import Sequence

import torch


def clip_by_norm(update: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    """Rule 1: both branches on the device; `torch.where` selects, so the zero update's unused NaN never shows."""
    norm = update.norm()
    return torch.where(norm > max_norm, update * (max_norm / norm), update)


def token_accuracy(logits: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Rule 2: a masked mean, every tensor the batch's shape: one graph for any number of labelled tokens."""
    labelled = (labels != ignore_index).to(logits.dtype)
    correct = (logits.argmax(dim=-1) == labels).to(logits.dtype)
    return (correct * labelled).sum() / labelled.sum().clamp(min=1.0)


def pick_pad_multiple(lengths: Sequence[int], batch_size: int, max_graphs: int) -> int:
    """Rule 3: of the multiples of 8 up to the longest length, the least padding within ``max_graphs`` lengths."""
    batches = [lengths[i:i + batch_size] for i in range(0, len(lengths), batch_size)]
    best, best_tokens = None, None
    for multiple in range(8, -(-max(lengths) // 8) * 8 + 1, 8):
        padded = [-(-max(batch) // multiple) * multiple for batch in batches]
        tokens = sum(p * len(batch) for p, batch in zip(padded, batches))  # real tokens + padding
        if len(set(padded)) <= max_graphs and (best_tokens is None or tokens < best_tokens):
            best, best_tokens = multiple, tokens
    return best

"""Notebook 05's training settings (`TrainConfig`) and the linear learning-rate scaling rule."""
from __future__ import annotations

from dataclasses import dataclass

PADDINGS = ("buckets", "max_length")


@dataclass
class TrainConfig:
    epochs: int = 3
    batch_size: int = 32  # per replica (the global batch is batch_size x replicas)
    eval_batch_size: int = 64  # per replica
    learning_rate: float = 3e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1  # share of all optimizer steps spent warming up linearly from 0
    mixed_precision: str = "no"  # or "bf16" (a TPU): autocast in the training function
    seed: int = 42
    progress: bool = True  # tqdm bars (main process only)
    report_path: str | None = None  # where the main process also writes the report (multi-process launches)
    padding: str = "max_length"  # "max_length": one fixed length; "buckets": length buckets (needs a tokenizer)
    boundaries: tuple[int, ...] | None = None  # bucket lengths for padding="buckets"; the largest = max_length
    max_length: int | None = None  # the fixed length when padding="max_length" pads per batch (a tokenizer given)
    replica_timeout_s: float = 300.0  # several CPU processes (gloo): how long a replica waits for the others


def scaled_learning_rate(base_lr: float, base_global_batch: int, global_batch: int) -> float:
    """``base_lr * global_batch / base_global_batch`` (Goyal et al. 2017, arXiv:1706.02677)."""
    return base_lr * global_batch / base_global_batch

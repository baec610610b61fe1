"""Batch arithmetic on TPU slices (notebook 03): replicas, how ``tf.distribute`` splits a batch, steps per epoch."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from tpu_helpers.core.tpu_slices import tpu_slice

DEFAULT_SLICES = ("v5e-1", "v2-8", "v3-8", "v5e-8", "v3-32")


def split_batch(batch: int, replicas: int) -> list[int]:
    """How ``tf.distribute`` splits a batch: ``ceil(batch / replicas)`` each until it runs out (TF 2.20)."""
    each = math.ceil(batch / replicas) if batch else 0
    return [max(0, min(each, batch - i * each)) for i in range(replicas)]


@dataclass
class BatchPlan:
    """Per-replica and global batch, steps per epoch, and the batch shapes one epoch produces."""

    per_replica_batch: int
    replicas: int
    dataset_size: int
    drop_remainder: bool = True
    hosts: int | None = 1  # TPU VMs; None when not known
    name: str = ""

    def __post_init__(self):
        self.global_batch = self.per_replica_batch * self.replicas
        self.per_host_batch = self.global_batch // self.hosts if self.hosts else None  # each host's pipeline makes it
        self.remainder = self.dataset_size % self.global_batch
        ragged = bool(self.remainder) and not self.drop_remainder  # a last, partial batch
        self.steps_per_epoch = self.dataset_size // self.global_batch + ragged
        self.dropped_examples = self.remainder if self.drop_remainder else 0  # seen in later epochs if shuffled
        # the distinct global batch sizes one epoch produces: each is one more XLA compilation
        self.batch_sizes = [self.global_batch] * int(self.dataset_size >= self.global_batch) + [self.remainder] * ragged
        self.compilations = len(self.batch_sizes)
        self.per_replica_split = split_batch(self.global_batch, self.replicas)
        self.last_batch_split = split_batch(self.remainder, self.replicas) if ragged else None

    def row(self) -> dict[str, Any]:
        return {"slice": self.name or f"{self.replicas} replicas", "hosts": self.hosts or "?",
                "replicas": self.replicas, "per-replica batch": self.per_replica_batch,
                "global batch": self.global_batch, "per-host batch": self.per_host_batch or "?",
                "steps/epoch": self.steps_per_epoch, "dropped/epoch": self.dropped_examples,
                "batch shapes": self.compilations}


plan_batches = BatchPlan  # the batch arithmetic of one configuration


def batch_table(per_replica_batch: int, dataset_size: int, slices: Iterable[str] = DEFAULT_SLICES,
                drop_remainder: bool = True, extra: Mapping[str, int] | None = None) -> list[BatchPlan]:
    """One `BatchPlan` per TPU slice (by name, e.g. "v3-8") plus `extra` rows ``{label: replicas}``."""
    rows = [(s.name, s.replicas, s.hosts) for s in map(tpu_slice, slices)]
    rows += [(label, replicas, 1) for label, replicas in (extra or {}).items()]
    return [BatchPlan(per_replica_batch, r, dataset_size, drop_remainder, hosts, name) for name, r, hosts in rows]

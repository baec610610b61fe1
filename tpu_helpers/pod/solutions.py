"""Reference answers for notebook 08's exercises (from one TPU host to a pod slice). Try first, then read."""
from __future__ import annotations

from tpu_helpers.pod.lesson_cells import shards_for_pipeline as shards_for_host  # noqa: F401 (the workers' own rule)


def slice_layout(accelerator_type):
    """``(chips, workers, replicas)``: v3/v4 names count TensorCores, v5e names chips; larger slices: 4-chip workers."""
    generation, _, number = accelerator_type.lower().partition("-")
    rules = {"v3": (2, 2, 4), "v4": (2, 1, 4), "v5litepod": (1, 1, 8), "v5e": (1, 1, 8)}
    if generation not in rules or not number.isdigit():
        raise ValueError(f"{accelerator_type!r}: expected v3-N, v4-N or v5litepod-N")
    cores_per_chip, replicas_per_chip, single_host_max = rules[generation]
    if int(number) % cores_per_chip:
        raise ValueError(f"{accelerator_type}: {number} TensorCores is not a whole number of chips")
    chips = int(number) // cores_per_chip
    workers = 1 if chips <= single_host_max else chips // 4
    return chips, workers, chips * replicas_per_chip

"""Multi-host TPU slices: chips, workers and replicas of a slice name, by the sources in `SOURCES`."""
from __future__ import annotations

from dataclasses import dataclass

from tpu_helpers.core.runtime import _DEVICES_PER_CHIP, parse_accelerator_type, slice_hosts

CHECKED = "2026-11"
SOURCES = {
    "v5e": "https://cloud.google.com/tpu/docs/v5e",
    "v6e": "https://cloud.google.com/tpu/docs/v6e",
    "v4": "https://cloud.google.com/tpu/docs/v4",
    "v3": "https://cloud.google.com/tpu/docs/v3",
    "architecture": "https://cloud.google.com/tpu/docs/system-architecture-tpu-vm",
    "pytorch on slices": "https://cloud.google.com/tpu/docs/pytorch-pods",
    "jax on slices (the same --worker=all pattern)": "https://cloud.google.com/tpu/docs/jax-pods",
    "queued resources": "https://cloud.google.com/tpu/docs/queued-resources",
    "runtime versions": "https://cloud.google.com/tpu/docs/runtimes",
    "pricing (per chip-hour, by version and region)": "https://cloud.google.com/tpu/pricing",
    "TensorFlow: TPUs and pod slices": "https://www.tensorflow.org/guide/tpu",
    "TensorFlow: distribute_datasets_from_function": "https://www.tensorflow.org/api_docs/python/tf/distribute/Strategy#distribute_datasets_from_function",
    "TensorFlow: multi-worker training (custom loop)": "https://www.tensorflow.org/tutorials/distribute/multi_worker_with_ctl",
    "torchrun": "https://docs.pytorch.org/docs/stable/elastic/run.html",
}


@dataclass(frozen=True)
class SliceLayout:
    accelerator_type: str
    chips: int
    workers: int  # TPU VMs: the hosts that each run the program and feed their own chips
    replicas: int  # data-parallel replicas (devices) in the whole slice
    source: str

    @property
    def replicas_per_worker(self) -> int:
        return self.replicas // self.workers

    def global_batch(self, per_replica: int) -> int:
        """Samples per step: per replica x replicas per worker x workers."""
        return per_replica * self.replicas_per_worker * self.workers

    def __str__(self) -> str:
        return (f"{self.accelerator_type}: {self.chips} chips on {self.workers} worker(s), "
                f"{self.replicas_per_worker} replica(s) per worker, {self.replicas} in all")


def slice_layout(accelerator_type: str) -> SliceLayout:
    """Chips, workers and replicas of a slice name (``v5litepod-16``, ``v4-16``, ``v3-32``), by `core.runtime`'s rules."""
    generation, chips, _cores = parse_accelerator_type(accelerator_type)
    return SliceLayout(str(accelerator_type), chips, slice_hosts(generation, chips),
                       chips * _DEVICES_PER_CHIP[generation], SOURCES.get(generation, SOURCES["architecture"]))


NAMED_SLICES = ("v5litepod-8", "v5litepod-16", "v5litepod-32", "v4-8", "v4-16", "v3-8", "v3-32")

"""TPU slice facts: chips, TensorCores, replicas and hosts per generation, the friendly names, how to restart."""
from __future__ import annotations

import re
from dataclasses import dataclass

CHECKED = "2026-11"
SOURCES = {
    "v5e": "https://cloud.google.com/tpu/docs/v5e",
    "v6e": "https://cloud.google.com/tpu/docs/v6e",
    "v5p": "https://cloud.google.com/tpu/docs/v5p",
    "v4": "https://cloud.google.com/tpu/docs/v4",
    "v3": "https://cloud.google.com/tpu/docs/v3",
    "v2": "https://cloud.google.com/tpu/docs/v2",
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

# Where to restart a notebook's kernel, in each place a learner runs one: every "restart the kernel" says it so.
RESTART_MENUS = "Colab: Runtime > Restart session; Kaggle: Run > Restart & clear cell outputs; Jupyter: Kernel > Restart Kernel"


@dataclass(frozen=True)
class Generation:
    """What one TPU chip of a generation is (cloud.google.com/tpu/docs, the pages in `SOURCES`)."""
    tensorcores_per_chip: int  # what "vX-N" counts where a chip has two (v2-v5p); v5e and v6e names count chips
    devices_per_chip: int  # XLA devices (data-parallel replicas): v2/v3 show both TensorCores; v4/v5p fuse them
    single_host_chips: int  # chips of the largest one-host slice; beyond it, TPU VMs of `CHIPS_PER_WORKER` chips


GENERATIONS = {"v2": Generation(2, 2, 4), "v3": Generation(2, 2, 4), "v4": Generation(2, 1, 4),
               "v5p": Generation(2, 1, 4), "v5e": Generation(1, 1, 8), "v6e": Generation(1, 1, 8)}
CHIPS_PER_WORKER = 4  # a multi-host slice is TPU VMs ("workers") of 4 chips each, on every generation here
GOOGLE_NAMES = {"v5e": "v5litepod"}  # the one rename: Google's accelerator types call a v5e "v5litepod"
EXPECTED = "expected e.g. 'v2-8', 'v3-32', 'v4-8', 'v5p-8', 'v5litepod-8' or 'v5e-8', 'v6e-8'"


def friendly_name(accelerator_type: str) -> str:
    """The name a learner reads: "v5e-8" for Google's accelerator type "v5litepod-8"; others unchanged."""
    text = str(accelerator_type).strip().lower()
    for friendly, google in GOOGLE_NAMES.items():
        text = re.sub(rf"^{google}-", f"{friendly}-", text)
    return text


def google_name(generation: str, number: int) -> str:
    """Google's accelerator type for `number` (TensorCores or chips, as the generation counts): ("v5e", 8) -> "v5litepod-8"."""
    return f"{GOOGLE_NAMES.get(generation, generation)}-{number}"


def parse_accelerator_type(accelerator_type: str) -> tuple[str, int, int]:
    """A Cloud TPU accelerator type as (generation, chips, tensorcores): "v3-8" is ('v3', 4, 8)."""
    m = re.fullmatch(r"(v\d[a-z]?)-(\d+)", friendly_name(accelerator_type))
    generation = m and m.group(1)
    if generation not in GENERATIONS:
        what = "unknown TPU generation in" if m else "not a TPU accelerator type:"
        raise ValueError(f"{what} {accelerator_type!r} ({EXPECTED})")
    n, per_chip = int(m.group(2)), GENERATIONS[generation].tensorcores_per_chip
    if n < 1 or n % per_chip:
        unit = "TensorCores (two per chip)" if per_chip > 1 else "chips"
        raise ValueError(f"{accelerator_type!r}: the number after the dash counts {unit} on {generation}, so it must be "
                         f"a positive multiple of {per_chip} ({EXPECTED})")
    return generation, n // per_chip, n


def slice_hosts(generation: str, chips: int) -> int:
    """The TPU VMs ("workers") of a slice of `chips` chips (ValueError when they are not whole VMs)."""
    if chips <= GENERATIONS[generation].single_host_chips:
        return 1
    if chips % CHIPS_PER_WORKER:
        raise ValueError(f"{generation} slice of {chips} chips: not whole TPU VMs of {CHIPS_PER_WORKER} chips")
    return chips // CHIPS_PER_WORKER


@dataclass(frozen=True)
class TpuSlice:
    """A TPU slice: its chips, TensorCores, replicas (XLA devices) and hosts (TPU VMs, "workers")."""
    name: str  # the friendly name, "v5e-8"
    generation: str
    chips: int
    tensorcores: int
    replicas: int  # data-parallel replicas: XLA devices in the whole slice
    hosts: int  # TPU VMs: each runs the program and feeds its own chips

    @property
    def accelerator_type(self) -> str:
        """Google's name, for `gcloud --accelerator-type`: "v5litepod-8"."""
        return google_name(self.generation, self.tensorcores)  # v5e and v6e have one TensorCore per chip

    @property
    def replicas_per_host(self) -> int:
        return self.replicas // self.hosts

    def global_batch(self, per_replica: int) -> int:
        """Samples per step: per replica x replicas per host x hosts."""
        return per_replica * self.replicas_per_host * self.hosts

    def __str__(self) -> str:
        return (f"{self.name}: {self.chips} chips on {self.hosts} TPU VM(s), "
                f"{self.replicas_per_host} replica(s) per VM, {self.replicas} in all")


def tpu_slice(accelerator_type: str) -> TpuSlice:
    """The slice an accelerator type names ("v3-32", "v5litepod-16" or "v5e-16"); ValueError for anything else."""
    generation, chips, tensorcores = parse_accelerator_type(accelerator_type)
    return TpuSlice(friendly_name(accelerator_type), generation, chips, tensorcores,
                    chips * GENERATIONS[generation].devices_per_chip, slice_hosts(generation, chips))

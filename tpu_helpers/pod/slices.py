"""Multi-host TPU slices: hosts, chips and replicas of the slices notebook 08 names, where each fact comes from, and
the commands that run one program on every worker (framework-free).

Checked against the pages in `SOURCES` in November 2026 (`CHECKED`). What the course relies on is the rule, not a
table: a slice's name counts TensorCores on v2, v3 and v4 and chips on v5e (``v5litepod-N``) and v6e; a multi-host
slice is made of TPU VMs ("workers") of 4 chips (the v5e page's shape table counts *physical hosts* of 8 chips
instead: a v5e-16 is 2 hosts but 4 workers, and the worker is what runs a program); a v2/v3 chip is 2 replicas (its 2 TensorCores), a v4 chip 1 (its
2 TensorCores act as one device, "megacore"), a v5e/v6e chip 1. The programs never hardcode any of it: TensorFlow
reports ``InputContext.num_input_pipelines`` (one per host) and ``num_replicas_in_sync``; ``torchrun`` /
``torch_xla`` set the world size; ``gcloud compute tpus tpu-vm describe NAME`` lists a slice's workers.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

__all__ = ["CHECKED", "SOURCES", "Generation", "GENERATIONS", "SliceLayout", "slice_layout", "create_command",
           "on_every_worker", "queued_resource_commands", "delete_commands", "NAMED_SLICES"]

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
class Generation:
    """What a slice name's number counts, and how chips become replicas and workers, for one TPU generation."""

    prefix: str  # the accelerator-type prefix gcloud takes: "v5litepod", "v4", "v3"
    name_counts: str  # "cores" (v2/v3/v4: the number is TensorCores) or "chips" (v5e/v6e)
    cores_per_chip: int
    replicas_per_chip: int  # devices a framework sees per chip (v4 megacore: 2 cores, 1 device)
    chips_per_worker: int  # chips of one TPU VM in a multi-host slice
    max_single_host_chips: int  # the largest slice that is one TPU VM
    source: str


GENERATIONS = {
    "v3": Generation("v3", "cores", 2, 2, 4, 4, SOURCES["v3"]),
    "v4": Generation("v4", "cores", 2, 1, 4, 4, SOURCES["v4"]),
    "v5e": Generation("v5litepod", "chips", 1, 1, 4, 8, SOURCES["v5e"]),
    "v6e": Generation("v6e", "chips", 1, 1, 4, 8, SOURCES["v6e"]),
}
_ALIASES = {"v5litepod": "v5e", "v5e": "v5e", "v6e": "v6e", "v4": "v4", "v3": "v3"}
_NAME = re.compile(r"^(?P<gen>v5litepod|v5e|v6e|v4|v3)-(?P<n>\d+)$")


@dataclass(frozen=True)
class SliceLayout:
    accelerator_type: str
    generation: str
    chips: int
    workers: int  # TPU VMs: the hosts that each run the program and feed their own chips
    replicas: int  # data-parallel replicas (devices) in the whole slice
    source: str

    @property
    def chips_per_worker(self) -> int:
        return self.chips // self.workers

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
    """Chips, workers and replicas of a slice name (``v5litepod-16``, ``v5e-16``, ``v4-16``, ``v3-32``)."""
    m = _NAME.match(str(accelerator_type).strip().lower())
    if not m:
        raise ValueError(f"{accelerator_type!r}: expected v3-N, v4-N, v5litepod-N (v5e-N) or v6e-N, e.g. v5litepod-16")
    gen = GENERATIONS[_ALIASES[m.group("gen")]]
    n = int(m.group("n"))
    chips, rest = divmod(n, gen.cores_per_chip) if gen.name_counts == "cores" else (n, 0)
    if rest or chips < 1:
        raise ValueError(f"{accelerator_type}: a {gen.prefix} name counts TensorCores, {gen.cores_per_chip} per chip; "
                         f"{n} is not a whole number of chips")
    if chips <= gen.max_single_host_chips:
        workers = 1
    elif chips % gen.chips_per_worker:
        raise ValueError(f"{accelerator_type}: {chips} chips do not fill whole TPU VMs of {gen.chips_per_worker}")
    else:
        workers = chips // gen.chips_per_worker
    return SliceLayout(accelerator_type, _ALIASES[m.group("gen")], chips, workers, chips * gen.replicas_per_chip,
                       gen.source)


NAMED_SLICES = ("v5litepod-8", "v5litepod-16", "v5litepod-32", "v4-8", "v4-16", "v3-8", "v3-32")


def create_command(name: str, zone: str, accelerator_type: str, version: str) -> str:
    """Create a slice (every worker of it, at once): billed from now until `delete_commands`."""
    return (f"gcloud compute tpus tpu-vm create {name} --zone={zone} --accelerator-type={accelerator_type} "
            f"--version={version}")


def on_every_worker(name: str, zone: str, command: str, worker: str = "all") -> str:
    """Run `command` on every worker of the slice at once (the same program on every host), or on one
    (``worker="0"``: TensorFlow's single client)."""
    return f"gcloud compute tpus tpu-vm ssh {name} --zone={zone} --worker={worker} --command={shlex.quote(command)}"


def queued_resource_commands(qr_id: str, name: str, zone: str, accelerator_type: str, version: str) -> list[str]:
    """Ask for a slice as a queued resource (it is created when capacity is free), then watch its state."""
    return [f"gcloud compute tpus queued-resources create {qr_id} --node-id={name} --zone={zone} "
            f"--accelerator-type={accelerator_type} --runtime-version={version}",
            f"gcloud compute tpus queued-resources describe {qr_id} --zone={zone}"]


def delete_commands(name: str, zone: str, qr_id: str | None = None) -> list[str]:
    """What stops the bill: delete the slice (and its queued resource, when it came from one)."""
    if qr_id:
        return [f"gcloud compute tpus queued-resources delete {qr_id} --zone={zone} --force"]
    return [f"gcloud compute tpus tpu-vm delete {name} --zone={zone}"]

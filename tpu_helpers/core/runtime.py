"""Where is this notebook running? `detect_runtime()`: a Colab/Kaggle/Cloud TPU VM, a legacy TPU Node, a GPU or a CPU,
with the slice's chips and devices, from environment variables (``TPU_ACCELERATOR_TYPE``, ``COLAB_TPU_ADDR``,
``TPU_NAME``, Colab's and Kaggle's own) and device files (``/dev/accel*``, ``/dev/vfio/*``, PCI vendor 0x1ae0), both
injectable for tests. The one owner of the TensorCores-per-chip rule (`parse_accelerator_type`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

__all__ = ["Runtime", "detect_runtime", "parse_accelerator_type", "TPU_PCI_DEVICE_IDS"]

GOOGLE_PCI_VENDOR = "0x1ae0"
# PCI device id -> TPU generation (torch_xla/_internal/tpu.py, jax/_src/hardware_utils.py).
TPU_PCI_DEVICE_IDS: dict[str, str] = {
    "0x0027": "v3",  # v2 and v3 share the id (v2 if subsystem id is 0x004e)
    "0x005e": "v4",
    "0x0062": "v5p",
    "0x0063": "v5e",
    "0x006f": "v6e",
}
# Cores that show up as separate devices per chip: v2/v3 have two TensorCores per chip that are two
# devices; v4/v5p fuse theirs ("megacore"), v5e/v6e have one.
_DEVICES_PER_CHIP = {"v2": 2, "v3": 2, "v4": 1, "v5p": 1, "v5e": 1, "v6e": 1}
# TensorCores per chip. In an accelerator type "vX-N", N counts TensorCores on every generation whose chip has two
# (v2, v3, v4 and v5p: a v4-8 and a v5p-8 are 4 chips), and chips on v5e/v6e, one TensorCore each. Google's pages:
# v3 and v4 "Each ... chip contains two TensorCores" (https://cloud.google.com/tpu/docs/v3, .../v4); v5p's table
# lists 2x2x1 as 8 cores, 4 chips, and its accelerator type counts the slice's TensorCores
# (https://cloud.google.com/tpu/docs/v5p-training); v5e/v6e: one TensorCore per chip (.../v5e, .../v6e).
_TENSORCORES_PER_CHIP = {"v2": 2, "v3": 2, "v4": 2, "v5p": 2, "v5e": 1, "v6e": 1}
# Chips per host of single-host slices and of pod slices, from Cloud TPU's system architecture pages:
# v2/v3/v4/v5p hosts have 4 chips; a v5e host has 8 (https://cloud.google.com/tpu/docs/v5e).
_CHIPS_PER_HOST = {"v2": 4, "v3": 4, "v4": 4, "v5p": 4, "v5e": 8, "v6e": 8}
# A multi-host slice is made of TPU VMs ("workers") of 4 chips on every generation (a v5e-16 is 4 workers, though the
# v5e page counts its physical hosts of 8 chips: the worker is what runs a program; notebook 08).
_CHIPS_PER_WORKER_MULTIHOST = 4


def slice_hosts(generation: str, chips: int) -> int:
    """The TPU VMs (hosts, "workers") of a slice of `chips` chips: one up to the largest single-host slice of its
    generation (`_CHIPS_PER_HOST`), beyond it VMs of 4 chips each; raises ValueError when they do not divide."""
    if chips <= _CHIPS_PER_HOST.get(generation, 4):
        return 1
    if chips % _CHIPS_PER_WORKER_MULTIHOST:
        raise ValueError(f"{generation} slice of {chips} chips: not whole TPU VMs of {_CHIPS_PER_WORKER_MULTIHOST} chips")
    return chips // _CHIPS_PER_WORKER_MULTIHOST


@dataclass(frozen=True)
class Runtime:
    """What `detect_runtime` found. `kind` is one of the values in `Runtime.KINDS`."""

    kind: str
    platform: str  # "colab", "kaggle" or "local" (anything else: Cloud TPU VM, laptop, CI)
    accelerator_type: str | None = None  # as Google names it, e.g. "v5litepod-8"
    generation: str | None = None  # "v2", "v3", "v4", "v5e", "v5p", "v6e"
    chips: int | None = None  # chips attached to this host
    devices: int | None = None  # XLA devices (= replicas) on this host
    tpu_address: str | None = None  # grpc://IP:8470 for a TPU Node
    gpus: int = 0

    KINDS = ("colab-tpu-vm", "kaggle-tpu-vm", "cloud-tpu-vm", "tpu-node", "gpu", "cpu")

    @property
    def is_tpu(self) -> bool:
        return self.kind.endswith("tpu-vm") or self.kind == "tpu-node"

    @property
    def is_tpu_vm(self) -> bool:
        return self.kind.endswith("tpu-vm")

    @property
    def is_tpu_node(self) -> bool:
        return self.kind == "tpu-node"

    @property
    def slice_name(self) -> str | None:
        """Friendly slice name: "v5e-8" for accelerator type "v5litepod-8"."""
        if not self.accelerator_type:
            return None
        return self.accelerator_type.replace("v5litepod", "v5e").replace("v6e-lite", "v6e")

    def describe(self) -> str:
        """One line for a learner: what this runtime is."""
        where = {"colab": "Colab", "kaggle": "Kaggle", "local": "Cloud"}[self.platform]
        if self.is_tpu_vm:
            size = self.slice_name or (f"{self.generation} TPU" if self.generation else "TPU (type unknown)")
            counts = []
            if self.chips is not None:
                counts.append(f"{self.chips} chip{'s' if self.chips != 1 else ''} on this host")
            if self.devices is not None:
                counts.append(f"{self.devices} device{'s' if self.devices != 1 else ''} (replicas)")
            extra = f", {', '.join(counts)}" if counts else ""
            return f"{where} TPU VM: {size}{extra}; the TPU is attached to this machine."
        if self.is_tpu_node:
            host = "Colab" if self.platform == "colab" else ("Kaggle" if self.platform == "kaggle" else "remote")
            return (f"Legacy TPU Node ({host}) at {self.tpu_address}: the TPU is another machine, reachable "
                    "only over gRPC; it can read data from memory or gs:// but not from this machine's disk.")
        place = {"colab": " on Colab", "kaggle": " on Kaggle", "local": ""}[self.platform]
        if self.kind == "gpu":
            return f"GPU runtime{place}: {self.gpus} NVIDIA GPU{'s' if self.gpus != 1 else ''}, no TPU."
        return f"CPU only{place}: no TPU or GPU found; XLA runs on the CPU (slow, but the same compiler rules)."


def parse_accelerator_type(accelerator_type: str) -> tuple[str, int, int]:
    """Parse a Cloud TPU accelerator type into (generation, chips, tensorcores).

    >>> parse_accelerator_type("v3-8")
    ('v3', 4, 8)
    >>> parse_accelerator_type("v5litepod-8")
    ('v5e', 8, 8)
    """
    text = str(accelerator_type).strip().lower()
    m = re.fullmatch(r"v(\d)([a-z-]*?)(?:pod)?-(\d+)", text)
    expected = "expected e.g. 'v2-8', 'v3-32', 'v4-8', 'v5p-8', 'v5litepod-8' (v5e) or 'v6e-8'"
    if not m:
        raise ValueError(f"not a TPU accelerator type: {accelerator_type!r} ({expected})")
    major, variant, n = m.group(1), m.group(2).rstrip("-"), int(m.group(3))
    generation = {("2", ""): "v2", ("3", ""): "v3", ("4", ""): "v4", ("5", "p"): "v5p", ("5", "lite"): "v5e",
                  ("5", "e"): "v5e", ("6", "e"): "v6e"}.get((major, variant))
    if generation is None:
        raise ValueError(f"unknown TPU generation in {accelerator_type!r} ({expected})")
    tc_per_chip = _TENSORCORES_PER_CHIP[generation]
    if n < 1 or n % tc_per_chip:
        unit = "TensorCores (two per chip)" if tc_per_chip > 1 else "chips"
        raise ValueError(f"{accelerator_type!r}: the number after the dash counts {unit} on {generation}, so it must be "
                         f"a positive multiple of {tc_per_chip} ({expected})")
    chips = n // tc_per_chip
    return generation, chips, chips * tc_per_chip


def _parse_env_type(acc_type: str) -> tuple[str, int, int]:
    try:
        return parse_accelerator_type(acc_type)
    except ValueError as e:
        raise ValueError(f"TPU_ACCELERATOR_TYPE={acc_type!r} is not a TPU accelerator type: {e}. The TPU runtime "
                         "sets it; if you set it yourself, fix or unset it.") from None


def _pci_tpu_chips(root: Path) -> tuple[int, str | None]:
    """Count Google TPU chips on the PCI bus; return (count, generation of the first)."""
    count, generation = 0, None
    base = root / "sys" / "bus" / "pci" / "devices"
    if not base.is_dir():
        return 0, None
    for dev in sorted(base.iterdir()):
        try:
            vendor = (dev / "vendor").read_text().strip().lower()
            device = (dev / "device").read_text().strip().lower()
        except OSError:
            continue
        if vendor == GOOGLE_PCI_VENDOR and device in TPU_PCI_DEVICE_IDS:
            count += 1
            if generation is None:
                generation = TPU_PCI_DEVICE_IDS[device]
                if generation == "v3":
                    try:
                        if (dev / "subsystem_device").read_text().strip().lower() == "0x004e":
                            generation = "v2"
                    except OSError:
                        pass
    return count, generation


def _device_file_chips(root: Path) -> int:
    """Count TPU device files: /dev/accel<N> (v2-v4) or numbered /dev/vfio/<N> groups (v5e+)."""
    dev = root / "dev"
    accel = [p for p in dev.glob("accel*") if re.fullmatch(r"accel\d+", p.name)] if dev.is_dir() else []
    if accel:
        return len(accel)
    vfio = dev / "vfio"
    if vfio.is_dir():
        return len([p for p in vfio.iterdir() if p.name.isdigit()])
    return 0


def _gpus(root: Path) -> int:
    dev = root / "dev"
    if not dev.is_dir():
        return 0
    return len([p for p in dev.glob("nvidia*") if re.fullmatch(r"nvidia\d+", p.name)])


def detect_runtime(env: Mapping[str, str] | None = None, root: str | os.PathLike[str] = "/") -> Runtime:
    """Detect the runtime from environment variables and device files.

    `env` defaults to `os.environ` and `root` to "/"; tests pass a dict and a temporary directory laid out
    like a real machine (``dev/accel0``, ``dev/vfio/0``, ``sys/bus/pci/devices/...``, ``dev/nvidia0``).
    """
    env = dict(os.environ if env is None else env)
    root = Path(root)
    if env.get("COLAB_RELEASE_TAG") or env.get("COLAB_GPU") is not None or env.get("COLAB_TPU_ADDR"):
        platform = "colab"
    elif env.get("KAGGLE_KERNEL_RUN_TYPE") or env.get("KAGGLE_URL_BASE"):
        platform = "kaggle"
    else:
        platform = "local"

    # Legacy TPU Node: a gRPC address, no TPU chips on this machine.
    node_addr = env.get("COLAB_TPU_ADDR")
    tpu_name = env.get("TPU_NAME", "")
    if node_addr:
        address = node_addr if node_addr.startswith("grpc://") else f"grpc://{node_addr}"
    elif tpu_name.startswith("grpc://"):
        address = tpu_name
    else:
        address = None

    pci_chips, pci_generation = _pci_tpu_chips(root)
    file_chips = _device_file_chips(root)
    chips = pci_chips or file_chips
    acc_type = env.get("TPU_ACCELERATOR_TYPE") or None

    if chips or (acc_type and env.get("ISTPUVM") == "1"):
        generation, type_chips = pci_generation, None
        if acc_type:
            generation, type_chips, _ = _parse_env_type(acc_type)
        # A pod slice spans hosts: the accelerator type counts all of them, device files only this host.
        host_chips = chips or type_chips
        devices = host_chips * _DEVICES_PER_CHIP.get(generation or "", 1) if host_chips else None
        if not acc_type and generation and host_chips:
            n = host_chips * _TENSORCORES_PER_CHIP[generation]
            acc_type = f"{generation}-{n}" if generation != "v5e" else f"v5litepod-{n}"
        kind = {"colab": "colab-tpu-vm", "kaggle": "kaggle-tpu-vm"}.get(platform, "cloud-tpu-vm")
        return Runtime(kind, platform, acc_type, generation, host_chips, devices, None, _gpus(root))

    if address:
        generation = None
        chips_n = devices_n = None
        if acc_type:
            generation, chips_n, _ = _parse_env_type(acc_type)
            devices_n = chips_n * _DEVICES_PER_CHIP.get(generation, 1)
        else:
            # Colab and Kaggle Nodes were always a v2-8 / v3-8: 8 cores. Say so only for those.
            devices_n = 8 if platform in ("colab", "kaggle") else None
        return Runtime("tpu-node", platform, acc_type, generation, chips_n, devices_n, address, _gpus(root))

    gpus = _gpus(root)
    if gpus:
        return Runtime("gpu", platform, gpus=gpus)
    return Runtime("cpu", platform)

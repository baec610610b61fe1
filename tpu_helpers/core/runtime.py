"""Where is this notebook running? `detect_runtime()`: TPU VM, legacy TPU Node, GPU or CPU, from env and device files."""
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from tpu_helpers.core.tpu_slices import GENERATIONS, friendly_name, google_name, parse_accelerator_type

GOOGLE_PCI_VENDOR = "0x1ae0"
# PCI device id -> TPU generation (torch_xla/_internal/tpu.py, jax/_src/hardware_utils.py); v2 is 0x0027 too.
TPU_PCI_DEVICE_IDS = {"0x0027": "v3", "0x005e": "v4", "0x0062": "v5p", "0x0063": "v5e", "0x006f": "v6e"}
ROOT = Path("/")  # where the device files are read (/dev, /sys/bus/pci)


@dataclass(frozen=True)
class Runtime:
    """What `detect_runtime` found: `kind` is colab-, kaggle- or cloud-tpu-vm, tpu-node, gpu or cpu."""
    kind: str
    platform: str  # "colab", "kaggle" or "local" (anything else: Cloud TPU VM, laptop, CI)
    accelerator_type: str | None = None  # as Google names it, e.g. "v5litepod-8"
    generation: str | None = None  # "v2", "v3", "v4", "v5e", "v5p", "v6e"
    chips: int | None = None  # chips attached to this host
    devices: int | None = None  # XLA devices (= replicas) on this host
    tpu_address: str | None = None  # grpc://IP:8470 for a TPU Node
    gpus: int = 0

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
        return self.accelerator_type and friendly_name(self.accelerator_type)

    def describe(self) -> str:
        """One line for a learner: what this runtime is."""
        where = {"colab": "Colab", "kaggle": "Kaggle"}.get(self.platform)
        if self.is_tpu_vm:
            size = self.slice_name or (f"{self.generation} TPU" if self.generation else "TPU (type unknown)")
            extra = "".join(f", {n} {what}{'s' if n != 1 else ''} {tail}" for n, what, tail in
                            ((self.chips, "chip", "on this host"), (self.devices, "device", "(replicas)")) if n is not None)
            return f"{where or 'Cloud'} TPU VM: {size}{extra}; the TPU is attached to this machine."
        if self.is_tpu_node:
            return (f"Legacy TPU Node ({where or 'remote'}) at {self.tpu_address}: the TPU is another machine, "
                    "reachable only over gRPC; it can read data from memory or gs:// but not from this machine's disk.")
        place = f" on {where}" if where else ""
        if self.kind == "gpu":
            return f"GPU runtime{place}: {self.gpus} NVIDIA GPU{'s' if self.gpus != 1 else ''}, no TPU."
        return f"CPU only{place}: no TPU or GPU found; XLA runs on the CPU (slow, but the same compiler rules)."


def _parse_env_type(acc_type: str) -> tuple[str, int, int]:
    try:
        return parse_accelerator_type(acc_type)
    except ValueError as e:
        raise ValueError(f"TPU_ACCELERATOR_TYPE={acc_type!r} is not a TPU accelerator type: {e}. The TPU runtime "
                         "sets it; if you set it yourself, fix or unset it.") from None


def _pci_tpu_chips() -> tuple[int, str | None]:
    """Google TPU chips on the PCI bus: (count, generation of the first)."""
    found = []
    for dev in sorted((ROOT / "sys" / "bus" / "pci" / "devices").glob("*")):
        try:
            if (dev / "vendor").read_text().strip().lower() == GOOGLE_PCI_VENDOR:
                generation = TPU_PCI_DEVICE_IDS.get((dev / "device").read_text().strip().lower())
                found += [(dev, generation)] if generation else []
        except OSError:
            continue
    if not found:
        return 0, None
    dev, generation = found[0]
    sub = dev / "subsystem_device"  # v2 shares v3's device id; its subsystem id is 0x004e
    if generation == "v3" and sub.is_file() and sub.read_text().strip().lower() == "0x004e":
        generation = "v2"
    return len(found), generation


def _count(folder: Path, pattern: str) -> int:
    return len([p for p in folder.glob("*") if re.fullmatch(pattern, p.name)]) if folder.is_dir() else 0


def detect_runtime(env: Mapping[str, str] | None = None) -> Runtime:
    """The runtime, from environment variables (`env`, default `os.environ`) and device files under `ROOT`."""
    env = dict(os.environ if env is None else env)
    colab = env.get("COLAB_RELEASE_TAG") or env.get("COLAB_GPU") is not None or env.get("COLAB_TPU_ADDR")
    kaggle = env.get("KAGGLE_KERNEL_RUN_TYPE") or env.get("KAGGLE_URL_BASE")
    platform = "colab" if colab else "kaggle" if kaggle else "local"

    # a legacy TPU Node: a gRPC address, no TPU chips on this machine
    node, tpu_name = env.get("COLAB_TPU_ADDR", ""), env.get("TPU_NAME", "")
    address = ("grpc://" + node.removeprefix("grpc://")) if node else (tpu_name if tpu_name.startswith("grpc://")
                                                                        else None)

    pci_chips, pci_generation = _pci_tpu_chips()
    # TPU device files: /dev/accel<N> (v2-v4) or numbered /dev/vfio/<N> groups (v5e+)
    chips = pci_chips or _count(ROOT / "dev", r"accel\d+") or _count(ROOT / "dev" / "vfio", r"\d+")
    gpus = _count(ROOT / "dev", r"nvidia\d+")
    acc_type = env.get("TPU_ACCELERATOR_TYPE") or None

    if chips or (acc_type and env.get("ISTPUVM") == "1"):
        generation, type_chips = pci_generation, None
        if acc_type:
            generation, type_chips, _ = _parse_env_type(acc_type)
        # A pod slice spans hosts: the accelerator type counts all of them, device files only this host.
        host_chips = chips or type_chips
        devices = host_chips * GENERATIONS[generation].devices_per_chip if host_chips and generation else None
        if not acc_type and generation and host_chips:
            acc_type = google_name(generation, host_chips * GENERATIONS[generation].tensorcores_per_chip)
        kind = {"colab": "colab-tpu-vm", "kaggle": "kaggle-tpu-vm"}.get(platform, "cloud-tpu-vm")
        return Runtime(kind, platform, acc_type, generation, host_chips, devices, None, gpus)

    if address:
        if acc_type:
            generation, chips_n, _ = _parse_env_type(acc_type)
            return Runtime("tpu-node", platform, acc_type, generation, chips_n,
                           chips_n * GENERATIONS[generation].devices_per_chip, address, gpus)
        # Colab's and Kaggle's Nodes were always a v2-8 / v3-8: 8 cores; say so only for those
        return Runtime("tpu-node", platform, tpu_address=address, gpus=gpus,
                       devices=8 if platform in ("colab", "kaggle") else None)
    return Runtime("gpu", platform, gpus=gpus) if gpus else Runtime("cpu", platform)

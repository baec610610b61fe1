"""Notebook 07's replicas: the layout, the plan check before each epoch, each process's record for the claims."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from lightning.pytorch.callbacks import Callback

from tpu_helpers.banking77.replicas import ReplicaMismatchError, batch_plan, gather_plans, plan_problems


@dataclass(frozen=True)
class ReplicaLayout:
    """Section 2's replicas: ``kind`` "xla" (one device), "tpu" (XLAStrategy) or "cpu-ddp" (the gloo rehearsal)."""

    kind: str
    devices: int
    per_replica: int
    global_batch: int

    def trainer_kwargs(self, accelerator) -> dict[str, Any]:
        """``L.Trainer``'s accelerator/devices/strategy; `accelerator` is the one-device choice."""
        if self.kind == "cpu-ddp":
            return {"accelerator": "cpu", "devices": self.devices, "strategy": "ddp_notebook"}
        return {"accelerator": accelerator, "devices": self.devices}


def plan_replicas(is_tpu: bool, replicas: int, batch_size: int, tpu_devices: Callable[[], int]) -> ReplicaLayout:
    """A TPU: every device (asked only there) trains ``batch_size`` rows; else ``replicas`` CPU processes split it."""
    if is_tpu:
        devices = int(tpu_devices())
        return ReplicaLayout("tpu" if devices > 1 else "xla", devices, batch_size, batch_size * devices)
    if batch_size % replicas:
        raise ValueError(f"REPLICAS={replicas} must divide the global batch {batch_size}")
    return ReplicaLayout("cpu-ddp" if replicas > 1 else "xla", replicas, batch_size // replicas, batch_size)


class SamePlanOnEveryReplica(Callback):
    """Before each epoch, raise `ReplicaMismatchError` everywhere unless all replicas plan the same steps and shapes."""

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        sampler = trainer.train_dataloader.batch_sampler
        sampler.set_epoch(trainer.current_epoch)  # what the module does before the loader is iterated
        batches = list(sampler)[:len(sampler)]  # Lightning takes len(loader) batches per epoch, at most
        problems = plan_problems(gather_plans(batch_plan(batches), trainer.strategy.all_gather))
        if problems:
            raise ReplicaMismatchError(f"epoch {trainer.current_epoch + 1}, process of replica {trainer.global_rank}: "
                                       "the replicas do not plan the same steps: " + "; ".join(problems))


class ReplicaLog(Callback):
    """Each process writes what it trained on and predicted to ``folder``; `read` loads them in rank order."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _save(self, trainer, stage: str, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        record.update(rank=trainer.global_rank, world_size=trainer.world_size)
        torch.save(record, self.folder / f"{stage}-rank{trainer.global_rank}.pt")

    @staticmethod
    def _given(loader) -> list[int]:
        return [int(it[0]) for b in getattr(getattr(loader, "batch_sampler", None), "yielded", []) for it in b]

    def on_train_start(self, trainer, pl_module) -> None:
        self.steps, self.indices = [], []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.steps.append([])

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        ids = batch["input_ids"] if isinstance(batch, Mapping) else batch[0]  # a dict or BatchEncoding; a tuple
        self.steps[-1].append(tuple(int(s) for s in ids.shape[:2]))

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.indices.append(self._given(trainer.train_dataloader))

    def on_train_end(self, trainer, pl_module) -> None:
        weights = {k: v.detach().cpu().clone() for k, v in pl_module.state_dict().items()}
        self._save(trainer, "train", {"steps": self.steps, "indices": self.indices, "weights": weights})

    def on_test_end(self, trainer, pl_module) -> None:
        predictions, gathered = pl_module.predictions, getattr(pl_module, "gathered", None)
        self._save(trainer, "test", {"indices": self._given(trainer.test_dataloaders),
                                     "predictions": torch.cat(predictions).cpu() if predictions else None,
                                     "gathered": None if gathered is None else gathered.cpu()})

    def read(self, stage: str) -> list[dict[str, Any]]:
        """The records of ``stage`` ("train" or "test"), one per rank, in rank order."""
        files = sorted(self.folder.glob(f"{stage}-rank*.pt"), key=lambda p: int(p.stem.split("rank")[1]))
        records = [torch.load(f, weights_only=False) for f in files]
        if not records or [r["rank"] for r in records] != list(range(records[0]["world_size"])):
            raise FileNotFoundError(f"{stage}: records of ranks {[r['rank'] for r in records]} in {self.folder}, "
                                    "not one per replica: did the run finish?")
        return records


def check_fork_safe(module: torch.nn.Module) -> None:
    """Refuse a module with a tensor off the CPU before a fork (a forked process cannot use the device runtime)."""
    off = sorted({str(t.device) for t in [*module.parameters(), *module.buffers()] if t.device.type != "cpu"})
    if off:
        raise RuntimeError(f"the module has tensors on {', '.join(off)}: a forked process cannot use the kernel's "
                           "device runtime. Keep the model on the CPU until the DDP processes take it")

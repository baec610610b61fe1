"""Notebook 07's replicas: Lightning's CPU DDP rehearsal (``strategy="ddp_notebook"``, gloo) fed by bucket batches."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import torch
from lightning.pytorch.callbacks import Callback

from tpu_helpers.banking77.replicas import ReplicaMismatchError, batch_plan, gather_plans, plan_problems


def _dist_rank() -> int:
    """torch.distributed's rank, else torch_xla's ordinal in a process it spawned (Lightning's XLAStrategy), else 0."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    if "PJRT_LOCAL_PROCESS_RANK" in os.environ:  # set by torch_xla's spawn in each replica's process
        import torch_xla.runtime as xr

        return xr.global_ordinal()
    return 0


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


class ReplicaShard:
    """The iterating process's batches of a sampler cut for ``num_replicas`` (batch k to replica k % num_replicas)."""

    def __init__(self, batch_sampler: Iterable, num_replicas: int):
        planned = getattr(batch_sampler, "num_replicas", num_replicas)
        if planned != num_replicas:
            raise ValueError(f"num_replicas={num_replicas}, but the batch sampler cuts its global batches for "
                             f"{planned} replica(s): build it with num_replicas={num_replicas}")
        self.batch_sampler, self.num_replicas, self.yielded = batch_sampler, num_replicas, []

    @property
    def rank(self) -> int:
        return _dist_rank()

    @property
    def batch_size(self) -> int | None:  # per replica
        return getattr(self.batch_sampler, "batch_size", None)

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.batch_sampler, "set_epoch"):
            self.batch_sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list]:
        batches = list(self.batch_sampler)  # indices only: cheap, and the step count is known before step 1
        if len(batches) % self.num_replicas:
            raise ReplicaMismatchError(f"{len(batches)} batches are not a multiple of {self.num_replicas} replicas: "
                                       "the last step would leave replicas without a batch while the others wait")
        self.yielded = batches[self.rank::self.num_replicas]
        return iter(self.yielded)

    def __len__(self) -> int:
        return len(self.batch_sampler) // self.num_replicas


class SamePlanOnEveryReplica(Callback):
    """Before each epoch, raise `ReplicaMismatchError` everywhere unless all replicas plan the same steps and shapes."""

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        sampler = trainer.train_dataloader.batch_sampler
        if hasattr(sampler, "set_epoch"):
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
        record: dict[str, Any] = {"indices": self._given(trainer.test_dataloaders)}
        for name in ("predictions", "gathered"):
            value = getattr(pl_module, name, None)
            if isinstance(value, (list, tuple)):
                value = torch.cat([v.detach().cpu() for v in value]) if value else None
            record[name] = value.detach().cpu() if isinstance(value, torch.Tensor) else value
        self._save(trainer, "test", record)

    def read(self, stage: str) -> list[dict[str, Any]]:
        """The records of ``stage`` ("train" or "test"), one per rank, in rank order."""
        files = sorted(self.folder.glob(f"{stage}-rank*.pt"), key=lambda p: int(p.stem.split("rank")[1]))
        records = [torch.load(f, weights_only=False) for f in files]
        if not records or [r["rank"] for r in records] != list(range(records[0]["world_size"])):
            raise FileNotFoundError(f"{stage}: records of ranks {[r['rank'] for r in records]} in {self.folder}, "
                                    "not one per replica: did the run finish?")
        return records


def shard_loader(loader, num_replicas: int):
    """``loader`` with its batch sampler wrapped in `ReplicaShard` (``use_distributed_sampler=False``)."""
    from torch.utils.data import DataLoader

    return DataLoader(loader.dataset, batch_sampler=ReplicaShard(loader.batch_sampler, num_replicas),
                      collate_fn=loader.collate_fn)


def interleave(gathered: torch.Tensor, rows: int) -> torch.Tensor:
    """``all_gather``'s ``[replicas, steps * rows, ...]`` -> the global batches' order (the inverse of `ReplicaShard`)."""
    replicas, total, *rest = gathered.shape
    return gathered.reshape(replicas, total // rows, rows, *rest).transpose(0, 1).reshape(-1, *rest)


def check_fork_safe(module: torch.nn.Module) -> None:
    """Refuse a module with a tensor off the CPU before a fork (a forked process cannot use the device runtime)."""
    off = sorted({str(t.device) for t in [*module.parameters(), *module.buffers()] if t.device.type != "cpu"})
    if off:
        raise RuntimeError(f"the module has tensors on {', '.join(off)}: a forked process cannot use the kernel's "
                           "device runtime. Keep the model on the CPU until the DDP processes take it")

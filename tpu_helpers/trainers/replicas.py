"""Several replicas without a TPU: Lightning's CPU DDP (``strategy="ddp_notebook"``) fed by the course's buckets.

Several PyTorch/XLA processes on XLA:CPU stop in their first all-reduce, so notebook 07's ``REPLICAS=N`` rehearsal
forks N plain-CPU processes joined by gloo. `ReplicaShard` gives each process every N-th batch of a bucket sampler
cut for N replicas (``use_distributed_sampler=False``); `SamePlanOnEveryReplica` compares the replicas' planned steps
and shapes before each epoch (one replica with a step more would hang in an all-reduce); `ReplicaLog` writes what
each process saw to a file (a forked process hands nothing back); `interleave` undoes the gather's order. A forked
child has none of the kernel's threads: the model stays on the CPU (`check_fork_safe`) and no backward pass may
have run on XLA in the kernel before the fork.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch
from lightning.pytorch.callbacks import Callback

from tpu_helpers.banking77.replicas import ReplicaMismatchError, batch_plan, gather_plans, plan_problems

__all__ = ["ReplicaLayout", "plan_replicas", "ReplicaShard", "shard_loader", "SamePlanOnEveryReplica", "ReplicaLog", "interleave", "check_fork_safe"]


def _dist_rank() -> int:
    """This process's replica: torch.distributed's rank (CPU DDP), else torch_xla's global ordinal in a process that
    PyTorch/XLA spawned (Lightning's ``XLAStrategy`` makes no torch.distributed group), else 0."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    if "PJRT_LOCAL_PROCESS_RANK" in os.environ:  # set by torch_xla's spawn in each replica's process
        import torch_xla.runtime as xr

        return xr.global_ordinal()
    return 0


@dataclass(frozen=True)
class ReplicaLayout:
    """How section 2 of notebook 07 trains: ``devices`` Lightning devices (replicas), each taking ``per_replica``
    rows of a global batch of ``global_batch``; ``kind`` is "xla" (one XLA device), "tpu" (every device of a TPU:
    Lightning's ``XLAStrategy``) or "cpu-ddp" (CPU processes over gloo, the rehearsal)."""

    kind: str
    devices: int
    per_replica: int
    global_batch: int

    def trainer_kwargs(self, accelerator) -> dict[str, Any]:
        """``accelerator``/``devices``/``strategy`` for ``L.Trainer``: `accelerator` is the one-device choice
        (`tpu_helpers.trainers.xla_cpu.lightning_accelerator`)."""
        if self.kind == "cpu-ddp":
            return {"accelerator": "cpu", "devices": self.devices, "strategy": "ddp_notebook"}
        return {"accelerator": accelerator, "devices": self.devices}


def plan_replicas(is_tpu: bool, replicas: int, batch_size: int, tpu_devices: Callable[[], int]) -> ReplicaLayout:
    """Section 2's layout. On a TPU every device trains (``tpu_devices()``: Lightning's
    ``XLAAccelerator.auto_device_count``, 8 on a v5e-8), ``batch_size`` rows each, as notebook 05 (``replicas``
    is ignored); elsewhere ``replicas`` CPU processes share a global batch of ``batch_size`` (1: one XLA device)."""
    if is_tpu:
        devices = int(tpu_devices())
        if devices < 1:
            raise ValueError(f"the TPU reports {devices} devices")
        return ReplicaLayout("tpu" if devices > 1 else "xla", devices, batch_size, batch_size * devices)
    replicas = int(replicas)
    if replicas < 1 or batch_size % replicas:
        raise ValueError(f"REPLICAS={replicas} must be at least 1 and divide the global batch {batch_size}")
    return ReplicaLayout("cpu-ddp" if replicas > 1 else "xla", replicas, batch_size // replicas, batch_size)


def _index(item: Any) -> int:
    return int(item[0]) if isinstance(item, (tuple, list)) else int(item)


class ReplicaShard:
    """Replica ``rank``'s batches of ``batch_sampler``: batch ``k`` goes to replica ``k % num_replicas``.

    ``batch_sampler`` yields each step's ``num_replicas`` per-replica batches one after another (a
    ``BucketBatchSampler(..., num_replicas=N)``, whose ``num_replicas`` must agree). ``rank=None`` reads the rank
    of the process that iterates (``torch.distributed``, or torch_xla's ordinal in a process it spawned; else 0).
    ``set_epoch`` goes to the wrapped sampler. ``yielded`` holds the batches of the last pass: what this replica was given.
    """

    def __init__(self, batch_sampler: Iterable, num_replicas: int, rank: int | None = None):
        planned = getattr(batch_sampler, "num_replicas", num_replicas)
        if num_replicas < 1 or planned != num_replicas:
            raise ValueError(f"num_replicas={num_replicas}, but the batch sampler cuts its global batches for "
                             f"{planned} replica(s): build it with num_replicas={num_replicas}")
        if rank is not None and not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is not one of the {num_replicas} replicas")
        self.batch_sampler = batch_sampler
        self.num_replicas = int(num_replicas)
        self._rank = rank
        self.yielded: list = []

    @property
    def rank(self) -> int:
        return self._rank if self._rank is not None else _dist_rank()

    @property
    def batch_size(self) -> int | None:  # per replica
        return getattr(self.batch_sampler, "batch_size", None)

    @property
    def epoch(self) -> int | None:
        return getattr(self.batch_sampler, "epoch", None)

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.batch_sampler, "set_epoch"):
            self.batch_sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list]:
        batches = list(self.batch_sampler)  # indices only: cheap, and the step count is known before step 1
        if len(batches) % self.num_replicas:
            raise ReplicaMismatchError(f"the batch sampler gave {len(batches)} batches, not a multiple of "
                                    f"{self.num_replicas} replicas: the last step would leave replica(s) "
                                    f"{list(range(len(batches) % self.num_replicas, self.num_replicas))} without a "
                                    "batch while the others wait for them")
        self.yielded = batches[self.rank::self.num_replicas]
        return iter(self.yielded)

    def __len__(self) -> int:
        return len(self.batch_sampler) // self.num_replicas


class SamePlanOnEveryReplica(Callback):
    """Before each training epoch, every replica checks that all replicas plan the same number of steps with the
    same batch shapes (one round of `gather_plans`); if not, every process raises `ReplicaMismatchError` naming the
    replica, before its first step, instead of one of them hanging in an all-reduce."""

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        sampler = trainer.train_dataloader.batch_sampler
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(trainer.current_epoch)  # what the module does before the loader is iterated
        batches = list(sampler)
        if hasattr(sampler, "__len__"):  # Lightning takes len(loader) batches per epoch, at most
            batches = batches[:len(sampler)]
        plans = gather_plans(batch_plan(batches), trainer.strategy.all_gather)
        problems = plan_problems(plans)
        if problems:
            raise ReplicaMismatchError(f"epoch {trainer.current_epoch + 1}, process of replica "
                                    f"{trainer.global_rank}: the replicas do not plan the same steps: "
                                    + "; ".join(problems))


def _shape(batch: Any) -> tuple[int, int]:
    if isinstance(batch, Mapping):  # a dict, or transformers' BatchEncoding
        t = batch["input_ids"] if "input_ids" in batch else next(v for v in batch.values() if torch.is_tensor(v))
    else:
        t = next(v for v in batch if torch.is_tensor(v))
    return tuple(int(s) for s in t.shape[:2])


class ReplicaLog(Callback):
    """Each process writes what it saw to ``folder``: ``train-rank{r}.pt`` after fitting, ``test-rank{r}.pt``
    after testing (``trainer.test``); `read` loads them in rank order.

    train: ``steps`` (per epoch, each step's ``input_ids`` shape), ``indices`` (per epoch, the sample indices
    this replica was given, from a `ReplicaShard`), ``weights`` (its state_dict after training, on the CPU).
    test: ``indices``, and each module attribute named in ``attributes`` (tensors, or lists of tensors
    concatenated), e.g. the module's own predictions and the gathered ones.
    """

    def __init__(self, folder: str | Path, attributes: Sequence[str] = ("predictions", "gathered")):
        self.folder = Path(folder)
        self.attributes = tuple(attributes)
        self.steps: list[list[tuple[int, int]]] = []
        self.indices: list[list[int]] = []

    def _save(self, trainer, stage: str, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        record.update(rank=trainer.global_rank, world_size=trainer.world_size)
        torch.save(record, self.folder / f"{stage}-rank{trainer.global_rank}.pt")

    @staticmethod
    def _given(loader) -> list[int]:
        return [_index(it) for b in getattr(getattr(loader, "batch_sampler", None), "yielded", []) for it in b]

    def on_train_start(self, trainer, pl_module) -> None:
        self.steps, self.indices = [], []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.steps.append([])

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.steps[-1].append(_shape(batch))

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.indices.append(self._given(trainer.train_dataloader))

    def on_train_end(self, trainer, pl_module) -> None:
        weights = {k: v.detach().cpu().clone() for k, v in pl_module.state_dict().items()}
        self._save(trainer, "train", {"steps": self.steps, "indices": self.indices, "weights": weights})

    def on_test_end(self, trainer, pl_module) -> None:
        record: dict[str, Any] = {"indices": self._given(trainer.test_dataloaders)}
        for name in self.attributes:
            value = getattr(pl_module, name, None)
            if isinstance(value, (list, tuple)):
                value = torch.cat([v.detach().cpu() for v in value]) if value else None
            record[name] = value.detach().cpu() if isinstance(value, torch.Tensor) else value
        self._save(trainer, "test", record)

    def read(self, stage: str) -> list[dict[str, Any]]:
        """The records of ``stage`` ("train" or "test"), one per rank, in rank order."""
        files = sorted(self.folder.glob(f"{stage}-rank*.pt"), key=lambda p: int(p.stem.split("rank")[1]))
        records = [torch.load(f, weights_only=False) for f in files]
        if not records:
            raise FileNotFoundError(f"no {stage}-rank*.pt in {self.folder}: did the run finish?")
        world = records[0]["world_size"]
        if [r["rank"] for r in records] != list(range(world)):
            raise FileNotFoundError(f"{stage}: records of ranks {[r['rank'] for r in records]}, expected "
                                    f"0..{world - 1}")
        return records


def shard_loader(loader, num_replicas: int):
    """``loader`` (a DataLoader with a batch sampler cut for ``num_replicas``, e.g. `make_loaders`'s) with its batch
    sampler wrapped in `ReplicaShard`: the same dataset and collate, each DDP process taking its share (with
    ``use_distributed_sampler=False`` Lightning leaves the sharding to us)."""
    from torch.utils.data import DataLoader

    return DataLoader(loader.dataset, batch_sampler=ReplicaShard(loader.batch_sampler, num_replicas),
                      collate_fn=loader.collate_fn)


def interleave(gathered: torch.Tensor, rows: int) -> torch.Tensor:
    """``[replicas, steps * rows, ...]`` (each replica's batches, as ``all_gather`` returns them) -> the global
    batches' order: step 0's replica 0, 1, ..., then step 1's (the inverse of `ReplicaShard`)."""
    replicas, total = gathered.shape[:2]
    if total % rows:
        raise ValueError(f"{total} rows per replica are not whole batches of {rows}")
    rest = tuple(gathered.shape[2:])
    return gathered.reshape(replicas, total // rows, rows, *rest).transpose(0, 1).reshape(-1, *rest)


def check_fork_safe(module: torch.nn.Module) -> None:
    """Refuse a module with a parameter or buffer off the CPU before a fork: the forked processes could not read
    it (they have none of the kernel's device runtime threads). Build the model on the CPU; Lightning's CPU DDP
    keeps it there. (What it cannot see: whether this process already ran a backward pass on XLA, after which a
    forked child cannot run backward; see the module docstring.)"""
    off = sorted({str(t.device) for t in [*module.parameters(), *module.buffers()] if t.device.type != "cpu"})
    if off:
        raise RuntimeError(f"the module has tensors on {', '.join(off)}: a forked process cannot use the kernel's "
                           "device runtime. Keep the model on the CPU until the DDP processes take it")

"""Notebook 05's optional bookkeeping around the training function (`RunLog`) and what it reports (`TrainReport`)."""
from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tpu_helpers.core.files import write_json_atomic
from tpu_helpers.core.tables import format_table
from tpu_helpers.xla_torch.counters import XlaCounters, snapshot  # reads torch_xla's metrics only when called


@dataclass
class EpochStats:
    epoch: int
    loss: float  # mean training loss of the epoch (all replicas)
    f1: float  # weighted F1 on the evaluation split (scikit-learn's f1_score(average="weighted"))
    train_samples: int  # samples trained on this epoch, all replicas together
    train_seconds: float
    samples_per_second: float
    train_xla: dict[str, Any] | None  # XlaCounters of the training loop (None off XLA)
    eval_xla: dict[str, Any] | None
    train_tokens: dict[str, Any] = field(default_factory=dict)  # real_tokens, computed_tokens, shapes (this replica)
    eval_tokens: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_real_token(self) -> float:  # padding included
        t = self.train_tokens
        return t["computed_tokens"] / t["real_tokens"] if t.get("real_tokens") else float("nan")


@dataclass
class TrainReport:
    epochs: list[EpochStats]
    device: str
    distributed_type: str
    num_processes: int
    mixed_precision: str
    batch_size: int  # per replica
    global_batch_size: int
    steps_per_epoch: int
    eval_samples: int
    pid: int  # the process that trained and wrote this report (the main replica)
    compilations: int | None  # graphs compiled by the whole run, training and evaluation (None off XLA)
    predictions: list[int] = field(default_factory=list)  # last epoch, gathered from all replicas, dataset order
    references: list[int] = field(default_factory=list)
    padding: str = "max_length"
    boundaries: list[int] | None = None
    # several replicas: what each one did, gathered at the end (one entry per replica, replica 0 first)
    replica_weights: list[int] = field(default_factory=list)  # `replicas.torch_weights_digest` of its model after training
    replica_steps: list[list[list[int]]] = field(default_factory=list)  # [rows, padded length] of each training step

    @property
    def tokens_per_real_token(self) -> float:
        """Training tokens computed (padding included) per real token, over all epochs."""
        real = sum(e.train_tokens.get("real_tokens", 0) for e in self.epochs)
        computed = sum(e.train_tokens.get("computed_tokens", 0) for e in self.epochs)
        return computed / real if real else float("nan")

    def shapes(self, split: str = "train") -> list[str]:
        """The distinct batch shapes ("rows x length") of one split, over all epochs."""
        key = "train_tokens" if split == "train" else "eval_tokens"
        return sorted({s for e in self.epochs for s in getattr(e, key).get("shapes", {})},
                      key=lambda s: tuple(int(x) for x in s.split("x")))

    def save(self, path: str | os.PathLike[str]) -> Path:  # by the main replica, atomically (a killed run leaves none)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, asdict(self))
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "TrainReport":
        data = json.loads(Path(path).read_text())
        data["epochs"] = [EpochStats(**e) for e in data["epochs"]]
        return cls(**data)

    def table(self) -> str:
        """One line per epoch: loss, F1, samples/s, and what XLA did."""
        rows = []
        for e in self.epochs:
            tx, ex = e.train_xla or {}, e.eval_xla or {}
            rows.append({
                "epoch": e.epoch, "loss": f"{e.loss:.4f}", "F1": f"{e.f1:.3f}",
                "samples/s": f"{e.samples_per_second:.1f}", "train s": f"{e.train_seconds:.2f}",
                "tok/real": f"{e.tokens_per_real_token:.2f}",
                "compiles": (tx.get("compilations", 0) + ex.get("compilations", 0)) if e.train_xla is not None else "-",
                "syncs": tx.get("syncs", "-"), "fallbacks": tx.get("fallbacks", {}) or "{}"})
        return format_table(rows)


class CountingCollate:
    """Wraps a collate function: counts the real and computed tokens and the shape of each batch, on the host."""

    def __init__(self, collate):
        self.collate = collate
        self.reset()

    def reset(self) -> None:
        self.real_tokens = self.computed_tokens = 0
        self.sequence: list[tuple[int, int]] = []  # (rows, padded length) of each batch since reset(), in order

    def stats(self) -> dict[str, Any]:
        shapes = sorted(Counter(self.sequence).items())
        return {"real_tokens": self.real_tokens, "computed_tokens": self.computed_tokens,
                "shapes": {f"{rows}x{length}": n for (rows, length), n in shapes}}

    def __call__(self, items):
        batch = self.collate(items)
        rows, length = (int(n) for n in batch["input_ids"].shape)
        self.real_tokens += int(batch["attention_mask"].sum())
        self.computed_tokens += rows * length
        self.sequence.append((rows, length))
        return batch


def evaluation_order(eval_dl) -> list[int] | None:
    """The test-set index of each prediction of a bucketed evaluation (None: the dataset's own order)."""
    plan = getattr(eval_dl.batch_sampler, "plan", None)
    return None if plan is None else [int(i) for b in plan(0) for i in b.indices[:b.real_rows]]


class RunLog:
    """The training function's optional bookkeeping: counters, timers, the loss read once per epoch, the report.
    Made before `accelerator.prepare`: it wraps the loaders' collate functions to count tokens and shapes."""

    def __init__(self, accelerator, config, train_dl, eval_dl, *, report_path: str | None = None,
                 timeout_s: float | None = None):
        from accelerate.utils import DistributedType

        from tpu_helpers.banking77.evaluation import check_evaluation_plan

        self.accelerator, self.config = accelerator, config
        self.report_path = report_path or getattr(config, "report_path", None)
        self.progress = getattr(config, "progress", True)
        self.timeout_s = timeout_s or getattr(config, "replica_timeout_s", 300.0)  # gloo: a replica waits that long
        self.n_proc, self.main = accelerator.num_processes, accelerator.is_main_process
        self.steps_per_epoch = len(train_dl) // self.n_proc  # each replica's share of the batches
        self.on_xla = accelerator.distributed_type == DistributedType.XLA
        self.eval_order = evaluation_order(eval_dl)
        # on the host, before any training: the evaluation gives every test row exactly once
        check_evaluation_plan(eval_dl, len(eval_dl.dataset), self.n_proc, self.eval_order)
        self.train_collate = train_dl.collate_fn = CountingCollate(train_dl.collate_fn)
        self.eval_collate = eval_dl.collate_fn = CountingCollate(eval_dl.collate_fn)
        if self.n_proc > 1:  # before the first step: do all replicas plan the same batches? (`replicas`)
            from tpu_helpers.banking77.replicas import check_plans_agree, planned_steps

            mine = planned_steps(train_dl.batch_sampler, config.epochs, self.steps_per_epoch)
            check_plans_agree(accelerator, mine, self.timeout_s)
        self.compilations_before = self._compilations()
        self.step_shapes: list[list[int]] = []  # [rows, padded length] of each training step of this replica
        self.epochs: list[EpochStats] = []
        self.predictions, self.references, self._loss_read, self.epoch = [], [], 0.0, 1
        self._counters = self._start_counters()

    def _compilations(self) -> int | None:  # UncachedCompile so far (None off XLA)
        return snapshot().counter("UncachedCompile") if self.on_xla else None

    def _start_counters(self):  # XLA counters (None off XLA), then the timer
        counters = XlaCounters().__enter__() if self.on_xla else None
        self._start = time.perf_counter()
        return counters

    def end_training(self, loss_sum) -> None:
        """After the epoch's last step: read the summed loss (once), then time the evaluation apart."""
        if self.n_proc > 1:  # gloo: a replica still busy with a step the others do not take is named, not waited for
            from tpu_helpers.banking77.replicas import wait_for_all

            wait_for_all(self.accelerator, f"the end of epoch {self.epoch}'s training", self.timeout_s)
        total = float((self.accelerator.reduce(loss_sum, reduction="sum") if self.n_proc > 1 else loss_sum).item())
        self._mean_loss = (total - self._loss_read) / (self.steps_per_epoch * self.n_proc)
        self._loss_read = total
        self._train_seconds = time.perf_counter() - self._start
        self._train_xla = self._counters.update().as_dict() if self._counters else None
        self._train_tokens = self.train_collate.stats()
        self.step_shapes += [list(shape) for shape in self.train_collate.sequence]
        self.eval_collate.reset()
        self._counters = self._start_counters()

    def end_epoch(self, predictions, labels) -> EpochStats:
        """After the evaluation: score the predictions in the test set's order; start the next epoch."""
        import numpy as np
        from sklearn.metrics import f1_score

        preds, refs = np.asarray(predictions), np.asarray(labels)
        if self.eval_order is not None:  # bucketed evaluation runs in length order: back to the test order
            back = np.argsort(np.asarray(self.eval_order))
            preds, refs = preds[back], refs[back]
        self.predictions, self.references = preds.tolist(), refs.tolist()
        samples = self.steps_per_epoch * self.config.batch_size * self.n_proc
        f1 = float(f1_score(refs, preds, average="weighted", zero_division=0))  # what the training function prints
        stats = EpochStats(
            epoch=self.epoch, loss=self._mean_loss, f1=f1,
            train_samples=samples, train_seconds=self._train_seconds, samples_per_second=samples / self._train_seconds,
            train_xla=self._train_xla, eval_xla=self._counters.update().as_dict() if self._counters else None,
            train_tokens=self._train_tokens, eval_tokens=self.eval_collate.stats())
        self.epochs.append(stats)
        if self.main and self.progress:
            print(f"epoch {stats.epoch}: loss {stats.loss:.4f}  {stats.samples_per_second:.1f} samples/s  "
                  f"{stats.tokens_per_real_token:.2f} tokens per real token  ({stats.train_seconds:.1f} s training)")
        self.epoch += 1
        self.train_collate.reset()
        self._counters = self._start_counters()
        return stats

    def report(self, model=None) -> TrainReport | None:
        """The report on the main process (also saved to ``config.report_path``), else None; every replica calls it."""
        from tpu_helpers.banking77.replicas import gather_plans, torch_weights_digest

        acc, config = self.accelerator, self.config
        after = self._compilations()  # the report's own gathers below are not the training's graphs
        compilations = None if after is None else after - self.compilations_before
        gather = (lambda t: acc.gather(t.to(acc.device)).cpu()) if self.n_proc > 1 else (lambda t: t)
        replica_steps = [[list(s) for s in rows] for rows in gather_plans(self.step_shapes, gather)]
        digest = [[torch_weights_digest(acc.unwrap_model(model))]] if model is not None else []
        replica_weights = [rows[0][0] for rows in gather_plans(digest, gather, 1) if rows]
        if not self.main:
            return None
        report = TrainReport(
            epochs=self.epochs, device=str(acc.device), distributed_type=str(acc.distributed_type.value),
            num_processes=self.n_proc, mixed_precision=config.mixed_precision, batch_size=config.batch_size,
            global_batch_size=config.batch_size * self.n_proc, steps_per_epoch=self.steps_per_epoch,
            eval_samples=len(self.references), pid=os.getpid(), compilations=compilations,
            predictions=self.predictions, references=self.references, padding=config.padding,
            boundaries=list(config.boundaries) if config.boundaries else None,
            replica_weights=replica_weights, replica_steps=replica_steps)
        if self.report_path:
            report.save(self.report_path)
        return report

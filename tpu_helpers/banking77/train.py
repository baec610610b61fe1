"""The BANKING77 training function of notebook 05: Accelerate inside, one copy per replica.

    from tpu_helpers.banking77.train import TrainConfig, training_function
    report = training_function(model, train_ds, eval_ds, TrainConfig(epochs=3, mixed_precision="bf16"))
    report = training_function(model, unpadded_train, unpadded_eval,
                               TrainConfig(padding="buckets", boundaries=(16, 24, 48), max_length=128), tokenizer)
    # ...normally launched on every replica by tpu_helpers.banking77.launch (notebook_launcher / torch_xla.launch)

What it does, and why (the seed is the tutorial "Getting started with Transformers and TPU using PyTorch"):

* **It lives in a module, not in a notebook cell.** A launcher that *spawns* processes starts fresh interpreters
  that unpickle the function by reference (module + name); a function defined in a notebook lives in
  ``__main__`` of the kernel, which a spawned child cannot import. The seed therefore wrote the function to a
  file with ``%%writefile`` and imported it. *Fork* (what ``notebook_launcher`` uses on TPU) copies the parent's
  memory and does not need that, but an importable, unit-tested module works with both start methods.
* **The model comes from outside** (built once in the notebook): with fork, the replicas share the parent's
  copy of the weights in host RAM instead of each loading its own (the seed's advice for 8 TPU cores on one
  host). **The ``Accelerator`` is created inside**, in each replica, after the launcher has set the replica up.
* **Mixed precision is passed to ``Accelerator(...)``**: ``notebook_launcher(..., mixed_precision=...)`` does not
  reach the ``Accelerator`` in accelerate 1.15 (the TPU and single-process branches ignore it; the multi-process
  branch exports it as ``MIXED_PRECISION`` while ``AcceleratorState`` reads ``ACCELERATE_MIXED_PRECISION``):
  https://github.com/huggingface/accelerate/blob/v1.15.0/src/accelerate/launchers.py (``patched_env``) and
  .../src/accelerate/state.py (``parse_choice_from_env("ACCELERATE_MIXED_PRECISION", "no")``).
* **Static shapes** (`make_loaders`): with ``padding="buckets"`` (notebook 05's default) the batches come from
  `tpu_helpers.banking77.buckets.BucketBatchSampler`: queries of similar length, padded by the tokenizer to one of a few
  fixed lengths, the same on every replica at every step, new batches every epoch (``set_epoch``). With
  ``padding="max_length"`` (the seed's way) every query is padded to one length and the training loader drops the
  last incomplete batch (one batch shape); its evaluation loader keeps every sample (``drop_last=False``), so its
  last, smaller batch is one more graph. The run compiles one graph per batch shape plus AdamW's first step.
* **Exactly one prediction per test query** (`evaluate_predictions`): the last evaluation batch may carry
  repeated rows (topped up to keep its shape). They are cut on the host, by count, after ``accelerator.gather``;
  not by ``gather_for_metrics``, which on XLA loses real rows (see `evaluate_predictions` for why). Before training,
  `check_evaluation_plan` replays the evaluation loader's plan on the host and stops at once if it would not give
  every test row exactly once.
* **No host syncs inside the steps**: the loss is summed on the device and read once per epoch (the sum starts
  from the first loss, not ``torch.zeros``, one tiny graph less; it is all-reduced only with several replicas); the
  tqdm bar (main process only) counts steps by hand: wrapping the loader in ``tqdm.auto`` would call ``iter()`` on
  it once more, which on XLA starts a ``MpDeviceLoader`` thread that prefetches batches for nothing.
* **Linear warmup then linear decay** (``get_linear_schedule_with_warmup``), built before ``prepare`` from the
  unsharded loader length and prepared with the rest, as in Accelerate's ``examples/nlp_example.py``.
* **Weighted F1 each epoch** on predictions gathered from all replicas, with scikit-learn
  (`tpu_helpers.banking77.evaluation.weighted_f1`; the seed's ``evaluate.load("f1")`` wraps the same function but
  downloads a script from the Hub first).
* **Per epoch**: mean loss, F1, train samples/s, the tokens computed and real and the batch shapes (counted by the
  collate function on the host), and the XLA counters of the train loop and of the evaluation
  (`tpu_helpers.xla_torch.counters.XlaCounters`), read in the process that trains.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tpu_helpers.core.tables import format_table

__all__ = ["TrainConfig", "EpochStats", "TrainReport", "TrainingError", "training_function", "make_loaders", "PADDINGS"]

PADDINGS = ("buckets", "max_length")


class TrainingError(ValueError):
    """The training setup cannot work as given; the message says how to fix it."""


@dataclass
class TrainConfig:
    epochs: int = 3
    batch_size: int = 32  # per replica (the global batch is batch_size x replicas)
    eval_batch_size: int = 64  # per replica
    learning_rate: float = 3e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1  # share of all optimizer steps spent warming up linearly from 0
    max_grad_norm: float | None = None  # clip the global gradient norm (None: no clipping, as the seed)
    mixed_precision: str = "no"  # "bf16" on TPU; passed to Accelerator(...)
    seed: int = 42
    progress: bool = True  # tqdm bars (main process only)
    report_path: str | None = None  # where the main process also writes the report (multi-process launches)
    padding: str = "max_length"  # "max_length": one fixed length; "buckets": length buckets (needs a tokenizer)
    boundaries: tuple[int, ...] | None = None  # bucket lengths for padding="buckets"; the largest = max_length
    max_length: int | None = None  # the fixed length when padding="max_length" pads per batch (a tokenizer given)


@dataclass
class EpochStats:
    epoch: int
    loss: float  # mean training loss of the epoch (all replicas)
    f1: float  # weighted F1 on the evaluation split (scikit-learn's f1_score(average="weighted"))
    accuracy: float
    train_samples: int  # samples trained on this epoch, all replicas together
    train_seconds: float
    samples_per_second: float
    eval_seconds: float
    train_xla: dict[str, Any] | None  # XlaCounters of the training loop (None off XLA)
    eval_xla: dict[str, Any] | None
    compilations_total: int | None  # UncachedCompile counter after this epoch (this process, cumulative)
    train_tokens: dict[str, Any] = field(default_factory=dict)  # real_tokens, computed_tokens, shapes (this replica)
    eval_tokens: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_real_token(self) -> float:
        """Training tokens computed (padding included) per real token, this epoch."""
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
    compilations_before: int | None  # UncachedCompile counter when training started
    predictions: list[int] = field(default_factory=list)  # last epoch, gathered from all replicas, dataset order
    references: list[int] = field(default_factory=list)
    padding: str = "max_length"
    boundaries: list[int] | None = None
    compilations_after: int | None = None  # UncachedCompile counter when training and evaluation were done

    @property
    def compilations(self) -> int | None:
        """Graphs compiled by the whole run, training and evaluation of every epoch (None off XLA)."""
        if self.compilations_before is None or self.compilations_after is None:
            return None
        return self.compilations_after - self.compilations_before

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict()))
        return path

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
                "total": "-" if e.compilations_total is None else e.compilations_total,
                "syncs": tx.get("syncs", "-"), "fallbacks": tx.get("fallbacks", {}) or "{}"})
        return format_table(rows)


# --------------------------------------------------------------------------------------------- data loaders

class _CountingCollate:
    """torch's default collate for rows that are already padded, counting real and computed tokens on the host."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.real_tokens = 0
        self.computed_tokens = 0
        self.shapes: dict[tuple[int, int], int] = {}

    def stats(self) -> dict[str, Any]:
        return {"real_tokens": self.real_tokens, "computed_tokens": self.computed_tokens,
                "shapes": {f"{r}x{L}": n for (r, L), n in sorted(self.shapes.items())}}

    def __call__(self, rows):
        from torch.utils.data import default_collate

        batch = default_collate(rows)
        rows_n, length = batch["input_ids"].shape
        self.real_tokens += int(batch["attention_mask"].sum()) if "attention_mask" in batch else rows_n * length
        self.computed_tokens += rows_n * length
        self.shapes[(rows_n, length)] = self.shapes.get((rows_n, length), 0) + 1
        return batch


def make_loaders(train_dataset, eval_dataset, config: TrainConfig, tokenizer=None, num_replicas: int = 1):
    """The training and evaluation DataLoaders for ``config.padding`` (before ``accelerator.prepare``).

    Returns ``(train_dl, eval_dl, train_collate, eval_collate, eval_order)``: the collate functions count tokens
    and shapes; ``eval_order`` is the dataset index of each gathered prediction (None: dataset order).

    * ``"buckets"``: unpadded datasets (`tpu_helpers.banking77.dataset.tokenize(..., padding="none")`) and a tokenizer;
      `tpu_helpers.banking77.buckets.BucketBatchSampler` makes global batches of similar lengths padded to
      ``config.boundaries``, split across ``num_replicas`` (same shape on every replica at every step). Evaluation
      may also pad to ``config.max_length``, for a test query longer than every training query.
    * ``"max_length"`` with a tokenizer: unpadded datasets, shuffled batches padded to ``config.max_length``.
    * ``"max_length"`` without a tokenizer: datasets already padded to one length (torch format).
    """
    from torch.utils.data import DataLoader

    from tpu_helpers.banking77.buckets import BucketBatchSampler, BucketCollator, BucketedDataset
    from tpu_helpers.shared.boundaries import validate_boundaries

    if config.padding not in PADDINGS:
        raise TrainingError(f"padding={config.padding!r}: choose one of {', '.join(PADDINGS)}")
    if config.padding == "buckets":
        if tokenizer is None or not config.boundaries:
            raise TrainingError("padding='buckets' needs the tokenizer (it pads each batch) and config.boundaries "
                                "(e.g. tpu_helpers.shared.boundaries.choose_boundaries(lengths, max_length))")
        bounds = validate_boundaries(config.boundaries, config.max_length)
        # a test query longer than every training query (rare) still fits: evaluation may also pad to max_length
        eval_bounds = tuple(sorted(set(bounds) | ({config.max_length} if config.max_length else set())))
        g = config.batch_size * num_replicas
        if len(train_dataset) < g:
            raise TrainingError(f"the training set ({len(train_dataset)} rows) is smaller than one global batch "
                                f"({g}); lower BATCH_SIZE or use more data.")
        train_lengths = [len(x) for x in train_dataset["input_ids"]]
        eval_lengths = [len(x) for x in eval_dataset["input_ids"]]
        train_sampler = BucketBatchSampler(train_lengths, config.batch_size, bounds, num_replicas=num_replicas,
                                           shuffle=True, seed=config.seed)
        eval_sampler = BucketBatchSampler(eval_lengths, config.eval_batch_size, eval_bounds, num_replicas=num_replicas,
                                          shuffle=False)
        train_collate, eval_collate = BucketCollator(tokenizer), BucketCollator(tokenizer)
        train_dl = DataLoader(BucketedDataset(train_dataset), batch_sampler=train_sampler, collate_fn=train_collate)
        eval_dl = DataLoader(BucketedDataset(eval_dataset), batch_sampler=eval_sampler, collate_fn=eval_collate)
        order = [int(i) for b in eval_sampler.plan(0) for i in b.indices[:b.real_rows]]
        return train_dl, eval_dl, train_collate, eval_collate, order
    if len(train_dataset) < config.batch_size:
        raise TrainingError(f"the training set ({len(train_dataset)} rows) is smaller than one batch "
                            f"({config.batch_size}); with drop_last=True there would be no step. Lower BATCH_SIZE "
                            "or use more data.")
    if tokenizer is not None:
        if not config.max_length:
            raise TrainingError("padding='max_length' with a tokenizer needs config.max_length")
        train_collate = BucketCollator(tokenizer, fixed_length=config.max_length)
        eval_collate = BucketCollator(tokenizer, fixed_length=config.max_length)
    else:
        train_collate, eval_collate = _CountingCollate(), _CountingCollate()
    train_dl = DataLoader(train_dataset, batch_size=config.batch_size, shuffle=True, drop_last=True,
                          collate_fn=train_collate)
    eval_dl = DataLoader(eval_dataset, batch_size=config.eval_batch_size, shuffle=False, drop_last=False,
                         collate_fn=eval_collate)
    return train_dl, eval_dl, train_collate, eval_collate, None


# --------------------------------------------------------------------------------------------- the function

def training_function(model, train_dataset, eval_dataset, config: TrainConfig | None = None,
                      tokenizer=None) -> TrainReport | None:
    """Train ``model`` (built outside) on every replica; return the report on the main process, else None.

    With ``config.padding="max_length"`` and no tokenizer, ``train_dataset``/``eval_dataset`` yield dicts of
    fixed-length tensors (`tpu_helpers.banking77.dataset.tokenize`'s default output). With a tokenizer they hold unpadded
    token lists (``tokenize(..., padding="none")``) and each batch is padded by the tokenizer: to
    ``config.max_length``, or, with ``padding="buckets"``, to one of ``config.boundaries`` (`make_loaders`).
    With ``config.report_path`` set the main process also writes the report there (a multi-process launch cannot
    return it to the notebook).
    """
    import numpy as np
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedType, set_seed
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    config = config or TrainConfig()
    if config.epochs < 1:
        raise TrainingError("epochs must be at least 1")
    if config.padding not in PADDINGS:
        raise TrainingError(f"padding={config.padding!r}: choose one of {', '.join(PADDINGS)}")
    if config.padding == "max_length" and tokenizer is None and len(train_dataset) < config.batch_size:
        raise TrainingError(f"the training set ({len(train_dataset)} rows) is smaller than one batch "
                            f"({config.batch_size}); with drop_last=True there would be no step. Lower BATCH_SIZE "
                            "or use more data.")

    accelerator = Accelerator(mixed_precision=config.mixed_precision)
    set_seed(config.seed)
    on_xla = accelerator.distributed_type == DistributedType.XLA
    if on_xla:
        from tpu_helpers.xla_torch.counters import XlaCounters, snapshot
    from tpu_helpers.banking77.evaluation import check_evaluation_plan, evaluate_predictions, weighted_f1
    main = accelerator.is_main_process
    n_proc = accelerator.num_processes

    train_dl, eval_dl, train_collate, eval_collate, eval_order = make_loaders(
        train_dataset, eval_dataset, config, tokenizer, num_replicas=n_proc)
    check_evaluation_plan(eval_dl, len(eval_dataset), n_proc, eval_order)  # before any training time is spent
    train_sampler = train_dl.batch_sampler if config.padding == "buckets" else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    total_steps = config.epochs * len(train_dl)  # unsharded length: the prepared scheduler steps once per replica
    scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)
    model, optimizer, train_dl, eval_dl, scheduler = accelerator.prepare(
        model, optimizer, train_dl, eval_dl, scheduler)

    steps_per_epoch = len(train_dl)
    global_batch = config.batch_size * n_proc
    compilations_before = snapshot().counter("UncachedCompile") if on_xla else None
    epochs: list[EpochStats] = []
    preds_list: list[int] = []
    refs_list: list[int] = []
    # The loss is summed on the device over the whole run and read once per epoch. It starts as the first step's
    # loss (not torch.zeros, which would be one more tiny graph to compile), and it is reduced across replicas only
    # where there are several (accelerator.reduce compiles an all-reduce graph even for one).
    loss_total = None
    loss_read = 0.0

    for epoch in range(1, config.epochs + 1):
        # ---- train: no host sync inside the loop; one read of the summed loss at the end
        model.train()
        train_collate.reset()
        train_counters = XlaCounters().__enter__() if on_xla else None
        start = time.perf_counter()
        if train_sampler is not None:
            train_sampler.set_epoch(epoch - 1)  # new batches every epoch, the same plan in every process
        # A bar with a total, updated by hand: tqdm.auto's bar calls iter() on the loader it wraps when it is
        # created, and on XLA every iter() of the prepared loader starts a MpDeviceLoader thread that prefetches
        # batches, thrown away when the loop calls iter() again.
        bar = tqdm(total=steps_per_epoch, desc=f"epoch {epoch}/{config.epochs}",
                   disable=not (main and config.progress), leave=False, mininterval=2.0)
        for batch in train_dl:
            bar.update(1)
            loss = model(**batch).loss
            accelerator.backward(loss)
            if config.max_grad_norm:
                accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            loss_total = loss.detach() if loss_total is None else loss_total + loss.detach()
        summed = accelerator.reduce(loss_total, reduction="sum") if n_proc > 1 else loss_total
        total_now = float(summed.item())
        mean_loss = (total_now - loss_read) / (steps_per_epoch * n_proc)
        loss_read = total_now
        train_seconds = time.perf_counter() - start
        bar.close()
        if train_counters is not None:
            train_counters.update()
        train_tokens = train_collate.stats()

        # ---- evaluate: predictions from every replica, repeats removed, moved to the host once per batch
        model.eval()
        eval_collate.reset()
        eval_counters = XlaCounters().__enter__() if on_xla else None
        start = time.perf_counter()
        preds_np, refs_np = evaluate_predictions(accelerator, model, eval_dl, len(eval_dataset))
        if eval_order is not None:  # bucketed evaluation runs in length order: back to the dataset's order
            if len(eval_order) != len(preds_np):
                raise TrainingError(f"{len(preds_np)} predictions for {len(eval_order)} test rows")
            order = np.asarray(eval_order)
            preds_np, refs_np = preds_np[np.argsort(order)], refs_np[np.argsort(order)]
        preds_list, refs_list = preds_np.tolist(), refs_np.tolist()
        eval_seconds = time.perf_counter() - start
        if eval_counters is not None:
            eval_counters.update()

        f1 = weighted_f1(preds_list, refs_list) if main else float("nan")
        stats = EpochStats(
            epoch=epoch, loss=mean_loss, f1=f1,
            accuracy=sum(p == r for p, r in zip(preds_list, refs_list)) / max(1, len(refs_list)),
            train_samples=steps_per_epoch * global_batch, train_seconds=train_seconds,
            samples_per_second=steps_per_epoch * global_batch / train_seconds, eval_seconds=eval_seconds,
            train_xla=train_counters.as_dict() if train_counters else None,
            eval_xla=eval_counters.as_dict() if eval_counters else None,
            compilations_total=snapshot().counter("UncachedCompile") if on_xla else None,
            train_tokens=train_tokens, eval_tokens=eval_collate.stats())
        epochs.append(stats)
        if main and config.progress:
            accelerator.print(f"epoch {epoch}: loss {mean_loss:.4f}  F1 {f1:.3f}  "
                              f"{stats.samples_per_second:.1f} samples/s  "
                              f"{stats.tokens_per_real_token:.2f} tokens per real token")

    # No accelerator.wait_for_everyone() here: the last evaluation's gather already brought the replicas together,
    # and on XLA the barrier is one more graph to compile (xm.rendezvous).
    if not main:
        return None
    report = TrainReport(
        epochs=epochs, device=str(accelerator.device), distributed_type=str(accelerator.distributed_type.value),
        num_processes=n_proc, mixed_precision=str(accelerator.mixed_precision),
        batch_size=config.batch_size, global_batch_size=global_batch, steps_per_epoch=steps_per_epoch,
        eval_samples=len(refs_list), pid=os.getpid(), compilations_before=compilations_before,
        predictions=preds_list, references=refs_list, padding=config.padding,
        boundaries=list(config.boundaries) if config.boundaries else None,
        compilations_after=snapshot().counter("UncachedCompile") if on_xla else None)
    if config.report_path:
        report.save(config.report_path)
    return report

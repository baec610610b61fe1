"""The BANKING77 training function of notebook 05: Accelerate inside, one copy per replica.

    from tpu_helpers.train_accelerate import TrainConfig, training_function
    report = training_function(model, train_ds, eval_ds, TrainConfig(epochs=3, mixed_precision="bf16"))
    # ...normally launched on every replica by tpu_helpers.launch (notebook_launcher / torch_xla.launch)

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
* **Static shapes**: the training loader drops the last incomplete batch (``drop_last=True``: one batch shape,
  one training graph; the dropped samples change every epoch because the order is reshuffled). The evaluation
  loader keeps every sample (``drop_last=False``), so its last, smaller batch is a second eval graph, compiled
  once and cached from then on; ``gather_for_metrics`` removes the duplicates Accelerate adds to even out the
  replicas' shares.
* **No host syncs inside the steps**: the loss is summed on the device and read once per epoch; the tqdm bar
  (main process only) counts steps without printing tensors.
* **Linear warmup then linear decay** (``get_linear_schedule_with_warmup``), built before ``prepare`` from the
  unsharded loader length and prepared with the rest, as in Accelerate's ``examples/nlp_example.py``.
* **Weighted F1 each epoch** on predictions gathered from all replicas, through ``evaluate`` when its ``f1``
  metric can be loaded (it downloads a metric script from the Hub) and otherwise through `weighted_f1_numpy`,
  which matches scikit-learn's ``f1_score(average="weighted")`` (the report carries both to compare).
* **Per epoch**: mean loss, F1, train samples/s and the XLA counters of the train loop and of the evaluation
  (`tpu_helpers.xla_torch.XlaCounters`), read in the process that trains.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

__all__ = ["TrainConfig", "EpochStats", "TrainReport", "TrainingError", "training_function", "weighted_f1",
           "weighted_f1_numpy", "load_f1_metric"]


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


@dataclass
class EpochStats:
    epoch: int
    loss: float  # mean training loss of the epoch (all replicas)
    f1: float  # weighted F1 on the evaluation split (via `f1_backend`)
    f1_sklearn: float | None  # scikit-learn's f1_score(average="weighted") on the same predictions
    accuracy: float
    train_samples: int  # samples trained on this epoch, all replicas together
    train_seconds: float
    samples_per_second: float
    eval_seconds: float
    train_xla: dict[str, Any] | None  # XlaCounters of the training loop (None off XLA)
    eval_xla: dict[str, Any] | None
    compilations_total: int | None  # UncachedCompile counter after this epoch (this process, cumulative)


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
    f1_backend: str
    pid: int  # the process that trained and wrote this report (the main replica)
    compilations_before: int | None  # UncachedCompile counter when training started
    predictions: list[int] = field(default_factory=list)  # last epoch, gathered from all replicas
    references: list[int] = field(default_factory=list)

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
        rows = [f"{'epoch':>5} {'loss':>8} {'F1':>6} {'samples/s':>10} {'train s':>8} "
                f"{'compiles':>8} {'total':>6} {'syncs':>5} fallbacks"]
        for e in self.epochs:
            tx, ex = e.train_xla or {}, e.eval_xla or {}
            comp = (tx.get("compilations", 0) + ex.get("compilations", 0)) if e.train_xla is not None else "-"
            total = "-" if e.compilations_total is None else e.compilations_total
            rows.append(f"{e.epoch:>5} {e.loss:>8.4f} {e.f1:>6.3f} {e.samples_per_second:>10.1f} "
                        f"{e.train_seconds:>8.2f} {comp!s:>8} {total!s:>6} "
                        f"{tx.get('syncs', '-')!s:>5} {tx.get('fallbacks', {}) or '{}'}")
        return "\n".join(rows)


# ------------------------------------------------------------------------------------------------------ F1

def weighted_f1_numpy(predictions: Sequence[int], references: Sequence[int]) -> float:
    """Support-weighted mean of per-class F1, as scikit-learn's ``f1_score(average="weighted")`` computes it.

    Classes are those seen in either sequence; a class never predicted (or with no true samples) has F1 0
    (scikit-learn's ``zero_division`` default), and the weights are the true counts.
    """
    import numpy as np

    y_pred = np.asarray(predictions, dtype=np.int64)
    y_true = np.asarray(references, dtype=np.int64)
    if y_pred.shape != y_true.shape or y_true.ndim != 1:
        raise TrainingError(f"predictions {y_pred.shape} and references {y_true.shape} must be 1-D and equal length")
    if y_true.size == 0:
        return 0.0
    labels = np.union1d(y_true, y_pred)
    tp = np.array([np.sum((y_pred == c) & (y_true == c)) for c in labels], dtype=np.float64)
    pred_n = np.array([np.sum(y_pred == c) for c in labels], dtype=np.float64)
    true_n = np.array([np.sum(y_true == c) for c in labels], dtype=np.float64)
    denom = pred_n + true_n  # F1 = 2 TP / (predicted + true)
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return float(np.sum(f1 * true_n) / true_n.sum())


_F1_METRIC: Any = None
_F1_BACKEND: str | None = None


def load_f1_metric() -> tuple[Any, str]:
    """``evaluate.load("f1")`` once per process; offline it falls back to `weighted_f1_numpy`."""
    global _F1_METRIC, _F1_BACKEND
    if _F1_BACKEND is None:
        try:
            import evaluate

            _F1_METRIC, _F1_BACKEND = evaluate.load("f1"), "evaluate"
        except Exception as e:  # offline: the metric script lives on the Hub
            _F1_METRIC = None
            _F1_BACKEND = f"numpy fallback (evaluate.load('f1') failed: {type(e).__name__})"
    return _F1_METRIC, _F1_BACKEND


def weighted_f1(predictions: Sequence[int], references: Sequence[int]) -> tuple[float, str]:
    """Weighted F1 through ``evaluate`` when it loads, else the NumPy fallback; returns (value, backend)."""
    metric, backend = load_f1_metric()
    if metric is not None:
        return float(metric.compute(predictions=list(predictions), references=list(references),
                                    average="weighted")["f1"]), backend
    return weighted_f1_numpy(predictions, references), backend


def _sklearn_f1(predictions: Sequence[int], references: Sequence[int]) -> float | None:
    try:
        from sklearn.metrics import f1_score
    except ImportError:
        return None
    return float(f1_score(list(references), list(predictions), average="weighted", zero_division=0))


# --------------------------------------------------------------------------------------------- the function

def training_function(model, train_dataset, eval_dataset, config: TrainConfig | None = None) -> TrainReport | None:
    """Train ``model`` (built outside) on every replica; return the report on the main process, else None.

    ``train_dataset``/``eval_dataset`` yield dicts of fixed-length tensors (``input_ids``, ``attention_mask``,
    ..., ``labels``), e.g. `tpu_helpers.banking77.tokenize`'s output. With ``config.report_path`` set the main
    process also writes the report there (a multi-process launch cannot return it to the notebook).
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedType, set_seed
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    config = config or TrainConfig()
    if config.epochs < 1:
        raise TrainingError("epochs must be at least 1")
    if len(train_dataset) < config.batch_size:
        raise TrainingError(f"the training set ({len(train_dataset)} rows) is smaller than one batch "
                            f"({config.batch_size}); with drop_last=True there would be no step. Lower BATCH_SIZE "
                            "or use more data.")

    accelerator = Accelerator(mixed_precision=config.mixed_precision)
    set_seed(config.seed)
    on_xla = accelerator.distributed_type == DistributedType.XLA
    if on_xla:
        from .xla_torch import XlaCounters, snapshot
    main = accelerator.is_main_process

    train_dl = DataLoader(train_dataset, batch_size=config.batch_size, shuffle=True, drop_last=True)
    eval_dl = DataLoader(eval_dataset, batch_size=config.eval_batch_size, shuffle=False, drop_last=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    total_steps = config.epochs * len(train_dl)  # unsharded length: the prepared scheduler steps once per replica
    scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)
    model, optimizer, train_dl, eval_dl, scheduler = accelerator.prepare(
        model, optimizer, train_dl, eval_dl, scheduler)

    steps_per_epoch = len(train_dl)
    global_batch = config.batch_size * accelerator.num_processes
    compilations_before = snapshot().counter("UncachedCompile") if on_xla else None
    epochs: list[EpochStats] = []
    preds_list: list[int] = []
    refs_list: list[int] = []
    backend = ""

    for epoch in range(1, config.epochs + 1):
        # ---- train: no host sync inside the loop; one read of the summed loss at the end
        model.train()
        train_counters = XlaCounters().__enter__() if on_xla else None
        start = time.perf_counter()
        loss_sum = torch.zeros((), device=accelerator.device)
        bar = tqdm(train_dl, desc=f"epoch {epoch}/{config.epochs}", disable=not (main and config.progress),
                   leave=False, mininterval=2.0)
        for batch in bar:
            loss = model(**batch).loss
            accelerator.backward(loss)
            if config.max_grad_norm:
                accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            loss_sum += loss.detach()
        mean_loss = float(accelerator.reduce(loss_sum, reduction="mean").item()) / steps_per_epoch
        train_seconds = time.perf_counter() - start
        bar.close()
        if train_counters is not None:
            train_counters.update()

        # ---- evaluate: predictions from every replica, duplicates removed, one transfer to the host
        model.eval()
        eval_counters = XlaCounters().__enter__() if on_xla else None
        start = time.perf_counter()
        chunks_p, chunks_r = [], []
        for batch in eval_dl:
            with torch.no_grad():
                logits = model(**batch).logits
            preds, refs = accelerator.gather_for_metrics((logits.argmax(dim=-1), batch["labels"]))
            chunks_p.append(preds)
            chunks_r.append(refs)
        preds_list = torch.cat(chunks_p).cpu().tolist()
        refs_list = torch.cat(chunks_r).cpu().tolist()
        eval_seconds = time.perf_counter() - start
        if eval_counters is not None:
            eval_counters.update()

        f1, backend = weighted_f1(preds_list, refs_list) if main else (float("nan"), "")
        stats = EpochStats(
            epoch=epoch, loss=mean_loss, f1=f1, f1_sklearn=_sklearn_f1(preds_list, refs_list) if main else None,
            accuracy=sum(p == r for p, r in zip(preds_list, refs_list)) / max(1, len(refs_list)),
            train_samples=steps_per_epoch * global_batch, train_seconds=train_seconds,
            samples_per_second=steps_per_epoch * global_batch / train_seconds, eval_seconds=eval_seconds,
            train_xla=train_counters.as_dict() if train_counters else None,
            eval_xla=eval_counters.as_dict() if eval_counters else None,
            compilations_total=snapshot().counter("UncachedCompile") if on_xla else None)
        epochs.append(stats)
        if main and config.progress:
            accelerator.print(f"epoch {epoch}: loss {mean_loss:.4f}  F1 {f1:.3f}  "
                              f"{stats.samples_per_second:.1f} samples/s")

    accelerator.wait_for_everyone()
    if not main:
        return None
    report = TrainReport(
        epochs=epochs, device=str(accelerator.device), distributed_type=str(accelerator.distributed_type.value),
        num_processes=accelerator.num_processes, mixed_precision=str(accelerator.mixed_precision),
        batch_size=config.batch_size, global_batch_size=global_batch, steps_per_epoch=steps_per_epoch,
        eval_samples=len(refs_list), f1_backend=backend, pid=os.getpid(), compilations_before=compilations_before,
        predictions=preds_list, references=refs_list)
    if config.report_path:
        report.save(config.report_path)
    return report

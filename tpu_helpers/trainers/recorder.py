"""Notebook 06's slow-run detective as callbacks: `SlowRunDetective` (Lightning), `HFStepDetective` (HF Trainer)."""
from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import Callback
from transformers import TrainerCallback

from tpu_helpers.xla_debug.diagnose import SlowRunReport, StepRecorder, diagnose_slow_run, shape_signature
from tpu_helpers.xla_torch.counters import XlaSnapshot, between, snapshot

__all__ = ["SlowRunDetective", "HFStepDetective"]


class SlowRunDetective(Callback):
    """Records each training step (`StepRecorder`) and each epoch's XLA counters; `report()` diagnoses the run."""

    def __init__(self) -> None:
        self.recorder = StepRecorder()
        self.epochs: list[dict[str, Any]] = []
        self.epoch_of_step: list[int] = []
        self._epoch_start: XlaSnapshot | None = None
        self._shapes: set = set()

    @property
    def steps(self):
        return self.recorder.steps

    def on_train_start(self, trainer, pl_module) -> None:
        self.recorder.__enter__()
        self.epochs, self.epoch_of_step = [], []

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._epoch_start = snapshot()
        self._shapes = set()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.recorder.step(batch)
        self.epoch_of_step.append(len(self.epochs) + 1)
        self._shapes.add(tuple(sorted(shape_signature(batch).items())))

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        stats = between(self._epoch_start, snapshot())
        stats["epoch"] = len(self.epochs) + 1
        stats["shapes"] = sorted({dict(s).get("input_ids") for s in self._shapes} - {None})
        self.epochs.append(stats)

    def on_train_end(self, trainer, pl_module) -> None:
        self.recorder.__exit__(None, None, None)

    def report(self, *, warmup_steps: int = 2) -> SlowRunReport:
        """`diagnose_slow_run` on every recorded step, the first ``warmup_steps`` of them the warm-up."""
        return diagnose_slow_run(self.recorder, warmup_steps=warmup_steps)

    def steps_inside_epochs(self, from_epoch: int = 2) -> list:
        """The steps of epochs >= ``from_epoch`` but each epoch's first (which traces the last epoch's logged mean)."""
        starts = {self.epoch_of_step.index(e) for e in set(self.epoch_of_step)}
        return [s for k, (s, e) in enumerate(zip(self.recorder.steps, self.epoch_of_step))
                if e >= from_epoch and k not in starts]


class HFStepDetective(TrainerCallback):
    """The detective for the Hugging Face ``Trainer``: one recorded step per optimizer step (``on_step_begin``)."""

    def __init__(self) -> None:
        self.recorder = StepRecorder()

    @property
    def steps(self):
        return self.recorder.steps

    def on_train_begin(self, args, state, control, **kwargs):
        self.recorder.__enter__()

    def on_step_begin(self, args, state, control, **kwargs):
        self.recorder.step()

    def on_train_end(self, args, state, control, **kwargs):
        self.recorder.__exit__(None, None, None)

    def report(self, *, warmup_steps: int = 2) -> SlowRunReport:
        """`diagnose_slow_run` on every recorded step, the first ``warmup_steps`` of them the warm-up."""
        return diagnose_slow_run(self.recorder, warmup_steps=warmup_steps)

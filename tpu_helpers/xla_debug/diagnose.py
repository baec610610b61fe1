"""`StepRecorder`: torch_xla's counters step by step, for the slow-run detective (notebook 06's `diagnose_slow_run`)."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, Mapping

from tpu_helpers.xla_debug.lesson_cells import SlowRunReport, diagnose_slow_run
from tpu_helpers.xla_torch.counters import between, snapshot


def shape_signature(batch: Any) -> dict[str, tuple[int, ...]]:
    """The shapes of a batch's tensors by name (a dict or a BatchEncoding; anything else has none)."""
    items = batch.items() if isinstance(batch, Mapping) else ()
    return {str(k): tuple(v.shape) for k, v in items if hasattr(v, "shape")}


class StepStats(SimpleNamespace):
    """One training step: ``index``, input ``shapes``, ``wall_seconds`` and `between`'s counts over it."""


class StepRecorder:
    """torch_xla's counters step by step: call `step(batch)` as each step starts (waits for the device at the end)."""

    def __init__(self) -> None:
        self.__enter__()

    def __enter__(self) -> "StepRecorder":
        self.steps: list[StepStats] = []
        self._open, self._t0, self.wall_seconds = None, time.perf_counter(), 0.0
        return self

    def step(self, batch: Any = None, *, last: bool = False) -> None:
        """Close the previous step and open one; ``batch`` gives the step's input shapes."""
        snap, now = snapshot(wait=last), time.perf_counter()
        if self._open is not None:
            index, shapes, a, t = self._open
            self.steps.append(StepStats(index=index, shapes=shapes, wall_seconds=now - t, **between(a, snap)))
        self._open = None if last else (len(self.steps), shape_signature(batch), snap, now)

    def __exit__(self, *exc) -> None:
        self.step(last=True)
        self.wall_seconds = time.perf_counter() - self._t0

    def report(self, *, warmup_steps: int = 2) -> SlowRunReport:
        """`diagnose_slow_run` on every recorded step, the first ``warmup_steps`` of them the warm-up."""
        return diagnose_slow_run(self, warmup_steps=warmup_steps)

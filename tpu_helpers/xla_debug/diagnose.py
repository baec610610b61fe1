"""The slow-run detective: `StepRecorder` records a loop, `diagnose_slow_run` names what makes it slow."""
# the problems and fixes follow https://docs.pytorch.org/xla/release/r2.7/learn/troubleshoot.html
from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

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

    def report(self, *, warmup_steps: int = 2) -> "SlowRunReport":
        """`diagnose_slow_run` on every recorded step, the first ``warmup_steps`` of them the warm-up."""
        return diagnose_slow_run(self, warmup_steps=warmup_steps)


@dataclass(frozen=True)
class Problem:
    """One thing that makes the run slow: its kind, the evidence of this run, the fix."""

    kind: str
    title: str
    evidence: str
    fix: str

    def __str__(self) -> str:
        return f"{self.title}\n   evidence: {self.evidence}\n   fix: {self.fix}"


@dataclass
class SlowRunReport:
    """The detective's answer: the problems, most costly first, and a one-line summary of the run."""

    problems: list[Problem]
    summary: str

    @property
    def kinds(self) -> list[str]:
        return [p.kind for p in self.problems]

    def __contains__(self, kind: str) -> bool:
        return kind in self.kinds

    def __str__(self) -> str:
        head = f"Slow-run detective: {self.summary}"
        if not self.problems:
            return head + "\nNo problem found: static shapes, no host syncs, no CPU fallbacks. This loop is healthy."
        return "\n".join([head] + [f"{i}. {p}" for i, p in enumerate(self.problems, 1)])


def diagnose_slow_run(run: StepRecorder | Sequence[StepStats], *, warmup_steps: int = 2) -> SlowRunReport:
    """The problems of a recorded run, most costly first; the first ``warmup_steps`` recorded steps may compile."""
    steps = list(getattr(run, "steps", run))
    wall = getattr(run, "wall_seconds", 0) or sum(s.wall_seconds for s in steps)
    compile_s, graphs = sum(s.compile_seconds for s in steps), sum(s.compilations for s in steps)
    summary = (f"{len(steps)} steps in {wall:.2f} s, {graphs} graph(s) compiled ({compile_s:.2f} s), "
               f"{sum(s.cache_hits for s in steps)} cache hits, {sum(s.syncs for s in steps)} host transfers")
    if not steps:
        return SlowRunReport([], summary + " (nothing recorded: call run.step(batch) in the loop)")
    problems: list[Problem] = []
    fallback_ops = sum((Counter(s.fallbacks) for s in steps), Counter())
    if fallback_ops:
        problems.append(Problem(
            "cpu_fallback", f"CPU fallback: {len(fallback_ops)} op(s) with no XLA lowering ran on the CPU",
            ", ".join(f"{op} x{n}" for op, n in fallback_ops.most_common())
            + f" in {sum(1 for s in steps if s.fallbacks)} of {len(steps)} steps; each copies tensors to the host "
            "and back and cuts the graph.",
            "rewrite the op with static-shape tensor ops (`x[mask]` or `nonzero`: a masked mean, as notebook 02's "
            "masked_cross_entropy; `unique`/`median`: move them out of the training step), or call it less often."))

    late = [s for s in steps[warmup_steps:] if s.compilations]
    if late:
        seen: dict[str, dict] = {}  # each input's shapes, in order
        for s in steps:
            for name, shape in s.shapes.items():
                seen.setdefault(name, {})[shape] = None
        changes = "; ".join(f"{name} took {len(shapes)} shapes: " + ", ".join(map(str, list(shapes)[:5]))
                            + (", ..." if len(shapes) > 5 else "") for name, shapes in seen.items() if len(shapes) > 1)
        cause = f"input shapes changed: {changes}" if changes else (
            "input shapes did not change, so the graph did: a CPU fallback above, a branch on a tensor or a Python "
            "number that changes per step (PT_XLA_DEBUG_LEVEL=1 prints each compilation's cause)")
        fix = ("give every batch the same shapes: pad to a fixed length (padding='max_length') or to few lengths "
               "(pad_to_multiple_of=64 or length buckets), and keep the batch size fixed (drop_last=True)."
               if changes else "make the step trace the same graph every time (torch.where, not a Python if).")
        shown = ", ".join(str(s.index) for s in late[:8]) + (", ..." if len(late) > 8 else "")
        problems.append(Problem(
            "recompilation", f"Recompilation: {sum(s.compilations for s in late)} graph(s) compiled after "
            f"{f'the first {warmup_steps} steps' if warmup_steps else 'warm-up'} "
            f"({sum(s.compile_seconds for s in late):.2f} s compiling)", f"new graphs in steps {shown}; {cause}", fix))

    sync_steps = [s for s in steps if s.scalar_reads or (s.syncs and not s.fallbacks)]  # fallbacks' own: above
    if len(sync_steps) > 0.25 * len(steps):  # a log line every few steps is fine
        transfers = sum(s.scalar_reads if s.fallbacks else s.syncs for s in sync_steps)
        problems.append(Problem(
            "host_sync", f"Device-to-host syncs in {len(sync_steps)} of {len(steps)} steps",
            f"{transfers} transfers ({sum(s.scalar_reads for s in sync_steps)} scalar reads: `.item()`, `float(t)`, "
            "`if tensor:`; the others `print(tensor)`, `.cpu()`): each makes the host wait for the device.",
            "keep values on the device: accumulate the loss in a tensor and read it every N steps (or in "
            "xm.add_step_closure), replace `if tensor:` with torch.where, don't print tensors in the loop."))

    if wall > 0 and compile_s > 0.5 * wall:
        problems.append(Problem(
            "compile_time", f"Compilation dominates: {compile_s:.2f} s of the {wall:.2f} s recorded "
            f"({compile_s / wall:.0%})", f"{graphs} graph(s) compiled in {len(steps)} steps; XLA compiles each new "
            "graph once, then reuses it.",
            "judge speed only after the first steps and fix any recompilation above. The persistent cache "
            "(torch_xla.runtime.initialize_cache) cannot load graphs back in torch_xla 2.9 (pytorch/xla#9094)."))

    sizes = [n for s in steps if (n := next((shape[0] for shape in s.shapes.values() if shape), None))]
    if sizes and (typical := statistics.median_high(sizes)) < 8:
        problems.append(Problem(
            "small_batch", f"Small batches: {typical} samples per device per step",
            "below 8: a TPU core computes in 8 x 128 tiles, so most of it idles and each step's fixed cost dominates.",
            "raise the per-device batch (a multiple of 8, as large as memory allows; bf16 halves activation memory), "
            "or accumulate gradients over several micro-batches."))
    return SlowRunReport(problems, summary)

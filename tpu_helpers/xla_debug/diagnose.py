"""The slow-run detective: why is my PyTorch/XLA training loop slow?

Record a stretch of training with `StepRecorder`, then ask `diagnose_slow_run` what went wrong::

    with StepRecorder() as run:
        for batch in loader:
            run.step(batch)              # marks a step boundary and notes the batch's input shapes
            train_step(batch)            # ... ending with torch_xla.sync() (or MpDeviceLoader doing it)
    report = diagnose_slow_run(run)
    print(report)                        # a short ranked list of problems, each with its fix
    assert report.kinds == []            # a healthy loop has nothing to report

It reads torch_xla's own counters and metrics at every step boundary (`tpu_helpers.xla_torch.counters.snapshot`), so
each problem comes with evidence from *this* run. The problems are those of Lightning's TPU guide ("why is my
TPU slower than expected") and the PyTorch/XLA troubleshooting guide
(https://docs.pytorch.org/xla/release/r2.7/learn/troubleshoot.html), ranked by how much they usually cost
on a TPU:

1. ``cpu_fallback``: ``aten::*`` counters, ops with no XLA lowering that ran on the CPU (each one copies
   tensors to the host and back, cuts the graph, and often has a data-dependent output shape).
2. ``recompilation``: graphs compiled after the warm-up steps; the report names the inputs whose shapes changed.
3. ``host_sync``: device-to-host transfers in many steps (``.item()``, ``print(tensor)``, ``if tensor:``):
   each one stops the host until the device has caught up, so host and device no longer overlap.
4. ``compile_time``: compilation takes most of the recorded time (a run too short to judge its speed).
5. ``small_batch``: fewer samples per device than a TPU core can keep busy.

Thresholds are parameters of `diagnose_slow_run`; the defaults are documented there.
"""
from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tpu_helpers.xla_torch.counters import SCALAR_READ, XlaSnapshot, fallbacks_between, snapshot

__all__ = ["StepStats", "StepRecorder", "Problem", "SlowRunReport", "diagnose_slow_run", "shape_signature", "shapes_from_an_earlier_run",
           "PROBLEM_KINDS", "run_in_fresh_process"]

PROBLEM_KINDS = ("cpu_fallback", "recompilation", "host_sync", "compile_time", "small_batch")
_SCALAR_READ = SCALAR_READ


def shape_signature(batch: Any) -> dict[str, tuple[int, ...]]:
    """The shapes of the tensors in a batch, by name: a dict/`BatchEncoding`, a tuple/list, or one tensor.

    >>> import torch
    >>> shape_signature({"input_ids": torch.zeros(2, 7, dtype=torch.long)})
    {'input_ids': (2, 7)}
    """
    if hasattr(batch, "shape") and not isinstance(batch, (dict, list, tuple)):
        return {"input": tuple(batch.shape)}
    if isinstance(batch, Mapping):
        items = batch.items()
    elif isinstance(batch, (list, tuple)):
        items = ((f"input[{i}]", v) for i, v in enumerate(batch))
    else:
        return {}
    return {str(k): tuple(v.shape) for k, v in items if hasattr(v, "shape")}


@dataclass
class StepStats:
    """What one training step did, from torch_xla's counters (differences over the step)."""

    index: int
    shapes: dict[str, tuple[int, ...]]
    compilations: int = 0
    cache_hits: int = 0
    executions: int = 0
    syncs: int = 0  # TransferFromDeviceTime samples: device-to-host transfers
    scalar_reads: int = 0  # aten::_local_scalar_dense: .item(), float(t), bool(t)
    fallbacks: dict[str, int] = field(default_factory=dict)
    compile_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def batch_size(self) -> int | None:
        for shape in self.shapes.values():
            if shape:
                return shape[0]
        return None


def _delta(a: XlaSnapshot, b: XlaSnapshot, index: int, shapes: dict, wall: float) -> StepStats:
    fallbacks = fallbacks_between(a, b)
    return StepStats(
        index=index, shapes=shapes,
        compilations=b.counter("UncachedCompile") - a.counter("UncachedCompile"),
        cache_hits=b.counter("CachedCompile") - a.counter("CachedCompile"),
        executions=b.counter("ExecuteComputation") - a.counter("ExecuteComputation"),
        syncs=b.metric("TransferFromDeviceTime")[0] - a.metric("TransferFromDeviceTime")[0],
        scalar_reads=b.counter(_SCALAR_READ) - a.counter(_SCALAR_READ),
        fallbacks=fallbacks,
        compile_seconds=(b.metric("CompileTime")[1] - a.metric("CompileTime")[1]) / 1e9,
        wall_seconds=wall)


class StepRecorder:
    """Context manager that records torch_xla's counters step by step; call `step(batch)` as each step starts.

    Work done after the last `step()` call and before the ``with`` block ends belongs to the last step. The
    device is waited for only at the end (``xm.wait_device_ops()``), so recording does not change how host and
    device overlap during the run.
    """

    def __init__(self) -> None:
        self.steps: list[StepStats] = []
        self._open: tuple[int, dict, XlaSnapshot, float] | None = None
        self.wall_seconds = 0.0
        self._t0 = 0.0

    def __enter__(self) -> "StepRecorder":
        self.steps = []
        self._open = None
        self._t0 = time.perf_counter()
        return self

    def step(self, batch: Any = None) -> None:
        """Start a new step (closing the previous one); ``batch`` is what the step trains on, for its shapes."""
        now = time.perf_counter()
        snap = snapshot(wait=False)
        self._close(snap, now)
        self._open = (len(self.steps), shape_signature(batch), snap, now)

    def _close(self, snap: XlaSnapshot, now: float) -> None:
        if self._open is not None:
            index, shapes, start, t = self._open
            self.steps.append(_delta(start, snap, index, shapes, now - t))
            self._open = None

    def __exit__(self, *exc) -> None:
        snap = snapshot(wait=True)
        now = time.perf_counter()
        self._close(snap, now)
        self.wall_seconds = now - self._t0


@dataclass(frozen=True)
class Problem:
    """One thing that makes the run slow: what, the evidence from this run, and the fix."""

    kind: str  # one of PROBLEM_KINDS
    title: str
    evidence: str
    fix: str

    def __str__(self) -> str:
        return f"{self.title}\n   evidence: {self.evidence}\n   fix: {self.fix}"


@dataclass
class SlowRunReport:
    """The detective's answer: the problems (most costly first) and a one-line summary of the run."""

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
        lines = [head] + [f"{i}. {p}" for i, p in enumerate(self.problems, 1)]
        return "\n".join(lines)


def _shape_changes(steps: Sequence[StepStats], limit: int = 5) -> str:
    seen: dict[str, list[tuple[int, ...]]] = {}
    for s in steps:
        for name, shape in s.shapes.items():
            shapes = seen.setdefault(name, [])
            if shape not in shapes:
                shapes.append(shape)
    changed = {k: v for k, v in seen.items() if len(v) > 1}
    if not changed:
        return ""
    parts = []
    for name, shapes in changed.items():
        shown = ", ".join(str(s) for s in shapes[:limit]) + (", ..." if len(shapes) > limit else "")
        parts.append(f"{name} took {len(shapes)} shapes: {shown}")
    return "; ".join(parts)


def _steps_list(indices: Sequence[int], limit: int = 8) -> str:
    shown = ", ".join(str(i) for i in indices[:limit])
    return shown + (", ..." if len(indices) > limit else "")


def diagnose_slow_run(run: StepRecorder | Sequence[StepStats], *, warmup_steps: int = 2,
                      max_sync_step_share: float = 0.25, max_compile_share: float = 0.5,
                      min_batch_per_device: int = 8) -> SlowRunReport:
    """Read a recorded run and return the problems that slow it down, most costly first, each with its fix.

    * ``warmup_steps``: the run's **warm-up**, the course's one meaning of the word: the first recorded steps, where
      compiling is expected (the first step compiles the training graph; optimizers like AdamW create their state
      in step 1, so step 2 compiles once more). Graphs compiled after them are recompilations. The warm-up steps
      stay in the report: their host syncs, fallbacks and batch sizes are judged like any step's, and their
      compile time counts in the recorded wall time (a short recording that is mostly warm-up is the
      ``compile_time`` problem). Steps run before the recording started (a benchmark's untimed warm-up) are not
      in it: pass the warm-up steps that remain, often 0. Every detective in the course takes this parameter.
    * ``max_sync_step_share``: host syncs are reported when more than this share of the steps read values on
      the host (logging the loss every 10 steps is fine; every step is not).
    * ``max_compile_share``: compile time is reported when it exceeds this share of the recorded wall time.
    * ``min_batch_per_device``: a batch (first dimension of the first input) smaller than this is reported.
      Each TPU core processes matrix multiplications in 8 x 128 vector registers, and Google's advice is the
      largest batch that fits in memory, divisible by 8 or 128 (https://cloud.google.com/tpu/docs/performance-guide).
    """
    steps = list(run.steps if isinstance(run, StepRecorder) else run)
    wall = (run.wall_seconds if isinstance(run, StepRecorder) and run.wall_seconds else
            sum(s.wall_seconds for s in steps))
    compile_s = sum(s.compile_seconds for s in steps)
    graphs = sum(s.compilations for s in steps)
    summary = (f"{len(steps)} steps in {wall:.2f} s, {graphs} graph(s) compiled ({compile_s:.2f} s), "
               f"{sum(s.cache_hits for s in steps)} cache hits, {sum(s.syncs for s in steps)} host transfers")
    problems: list[Problem] = []
    if not steps:
        return SlowRunReport([], summary + " (nothing recorded: call run.step(batch) in the loop)")

    # 1. CPU fallbacks
    fallback_ops: Counter = Counter()
    for s in steps:
        fallback_ops.update(s.fallbacks)
    if fallback_ops:
        ops = ", ".join(f"{op} x{n}" for op, n in fallback_ops.most_common())
        in_steps = [s.index for s in steps if s.fallbacks]
        problems.append(Problem(
            "cpu_fallback", f"CPU fallback: {len(fallback_ops)} op(s) with no XLA lowering ran on the CPU",
            f"{ops} in {len(in_steps)} of {len(steps)} steps; each copies tensors to the host and back and cuts "
            "the graph.",
            "rewrite the op with static-shape tensor ops (a boolean mask `x[mask]` or `nonzero`: a masked mean, "
            "see tpu_helpers.xla_torch.losses.masked_cross_entropy; `unique`/`median`/`histc`: move them out of the "
            "training step, e.g. into data preparation), or call it less often."))

    # 2. Recompilations after warm-up
    late = [s for s in steps[warmup_steps:] if s.compilations]
    if late:
        n = sum(s.compilations for s in late)
        secs = sum(s.compile_seconds for s in late)
        changes = _shape_changes(steps)
        if changes:
            cause = f"input shapes changed: {changes}"
            fix = ("give every batch the same shapes: pad to a fixed length (padding='max_length') or to few "
                   "lengths (pad_to_multiple_of=64 or length buckets), and keep the batch size fixed "
                   "(DataLoader(drop_last=True)).")
        else:
            cause = "input shapes did not change, so the graph itself changed between steps"
            cause += (": the CPU fallback above (an op whose output shape depends on the data) is the likely cause."
                      if fallback_ops else
                      ": look for Python values that differ per step inside the step (a branch on a tensor, a "
                      "Python number that changes), or run with PT_XLA_DEBUG_LEVEL=1 to print each compilation's "
                      "cause.")
            fix = "make the step trace the same graph every time (torch.where instead of a Python if; no " \
                  "data-dependent shapes)."
        problems.append(Problem(
            "recompilation",
            f"Recompilation: {n} graph(s) compiled after "
            f"{f'the first {warmup_steps} steps' if warmup_steps else 'warm-up'} ({secs:.2f} s compiling)",
            f"new graphs in steps {_steps_list([s.index for s in late])}; {cause}", fix))

    # 3. Host syncs (the transfers of fallback steps are the fallbacks' own, reported above)
    sync_steps = [s for s in steps if s.scalar_reads or (s.syncs and not s.fallbacks)]
    if sync_steps and len(sync_steps) > max_sync_step_share * len(steps):
        reads = sum(s.scalar_reads for s in sync_steps)
        transfers = sum(s.scalar_reads if s.fallbacks else s.syncs for s in sync_steps)
        problems.append(Problem(
            "host_sync",
            f"Device-to-host syncs in {len(sync_steps)} of {len(steps)} steps",
            f"{transfers} transfers ({reads} scalar reads, aten::_local_scalar_dense: `.item()`, `float(t)`, "
            "`if tensor:`; the others `print(tensor)`, `.cpu()`, `.tolist()`): each one makes the host wait for "
            "the device, so they stop overlapping.",
            "keep values on the device: accumulate the loss in a tensor and read it every N steps (or in "
            "xm.add_step_closure), replace `if tensor:` with torch.where, don't print tensors in the loop."))

    # 4. Compile time dominating
    if wall > 0 and compile_s > max_compile_share * wall:
        problems.append(Problem(
            "compile_time",
            f"Compilation dominates: {compile_s:.2f} s of the {wall:.2f} s recorded ({compile_s / wall:.0%})",
            f"{graphs} graph(s) compiled in {len(steps)} steps; XLA compiles each new graph once, then reuses it.",
            "judge speed only after the first steps (a longer run amortises the warm-up) and fix any "
            "recompilation above. The persistent cache, torch_xla.runtime.initialize_cache(path), is meant to keep "
            "graphs across runs, but torch_xla 2.9 cannot load them back yet (pytorch/xla#9094)."))

    # 5. Too-small batches
    sizes = [s.batch_size for s in steps if s.batch_size]
    if sizes:
        typical = statistics.median_high(sizes)
        if typical < min_batch_per_device:
            problems.append(Problem(
                "small_batch",
                f"Small batches: {typical} samples per device per step",
                f"below {min_batch_per_device}: a TPU core computes in 8 x 128 tiles, so most of it idles and the "
                "fixed cost of each step (launch, input transfer) dominates.",
                "raise the per-device batch (a multiple of 8; as large as memory allows, bf16 halves activation "
                "memory), or accumulate gradients over several micro-batches."))

    return SlowRunReport(problems, summary)


def shapes_from_an_earlier_run(steps: Sequence[StepStats], *, warmup_steps: int = 2) -> list[StepStats]:
    """The steps after the warm-up whose input shapes are new in this run, when every one of them was found in the
    compile cache without compiling (an earlier run in this process compiled them, e.g. a notebook cell run
    twice); else []. A fresh process would compile each of them: the recompilations the detective reports."""
    new, seen = [], set()
    for k, s in enumerate(steps):
        key = tuple(sorted(s.shapes.items()))
        if k >= warmup_steps and key not in seen:
            new.append(s)
        seen.add(key)
    return new if new and all(s.cache_hits and not s.compilations for s in new) else []


def run_in_fresh_process(code: str, env: Mapping[str, str] | None = None,
                         timeout: float = 300) -> "subprocess.CompletedProcess[str]":  # noqa: F821
    """Run a Python snippet in a new process on XLA's CPU backend and return its output (stdout + stderr).

    For the tools that act when a process *starts* (``PT_XLA_DEBUG_LEVEL``, ``xr.initialize_cache``): they
    cannot be switched on in a kernel that has already run XLA computations. The child always uses
    ``PJRT_DEVICE=CPU``, because on a TPU VM the notebook's own process holds the chips. ``env`` adds variables.
    """
    import os
    import subprocess
    import sys

    child_env = {**os.environ, "PJRT_DEVICE": "CPU", **(env or {})}  # the same Python: tpu_helpers is installed
    return subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True,
                          timeout=timeout)

"""Small benchmark harness: candidates side by side in one process, repeated, median and spread, ratios.

A benchmark module defines ``run(quick: bool) -> Benchmark``; the suite (`python -m benchmarks`) runs each module
in its own process (TensorFlow and PyTorch/XLA never share one), collects the JSON and writes docs/benchmarks.md.
"""
from __future__ import annotations

import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

__all__ = ["Candidate", "Benchmark", "time_calls", "summarize", "machine_info", "render_markdown"]


@dataclass
class Candidate:
    name: str
    values: list[float]  # one value per repeat
    unit: str  # e.g. "samples/s", "s/step", "tokens per real token"
    higher_is_better: bool = True
    extra: dict = field(default_factory=dict)  # fixed figures (compilations, ...) that do not vary per repeat

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))


@dataclass
class Benchmark:
    name: str
    title: str
    candidates: list[Candidate]
    baseline: str  # candidate name the ratios are relative to
    notes: str = ""

    def ratios(self) -> dict[str, float]:
        """How many times better than the baseline each candidate is (>1 = better), by medians."""
        base = next(c for c in self.candidates if c.name == self.baseline)
        out = {}
        for c in self.candidates:
            if c.median == 0 or base.median == 0:
                out[c.name] = float("nan")
            elif c.higher_is_better:
                out[c.name] = c.median / base.median
            else:
                out[c.name] = base.median / c.median
        return out

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Benchmark":
        d = json.loads(text)
        d["candidates"] = [Candidate(**c) for c in d["candidates"]]
        return cls(**d)


def time_calls(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Seconds per call of `fn`, `repeats` times, after `warmup` untimed calls (compilation happens there)."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def summarize(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{statistics.median(values):.4g} ({lo:.4g}–{hi:.4g}, n={len(values)})"


def machine_info() -> str:
    import os
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores ({cpu}), Python {platform.python_version()}"


def render_markdown(bench: Benchmark) -> str:
    ratios = bench.ratios()
    extra_keys = sorted({k for c in bench.candidates for k in c.extra})
    head = ["candidate", "median (min–max, n)", "unit", f"× vs {bench.baseline}", *extra_keys]
    lines = [f"### {bench.title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in bench.candidates:
        row = [c.name, summarize(c.values), c.unit, f"{ratios[c.name]:.2f}",
               *[str(c.extra.get(k, "")) for k in extra_keys]]
        lines.append("| " + " | ".join(row) + " |")
    if bench.notes:
        lines += ["", bench.notes]
    return "\n".join(lines) + "\n"


def cli(run: Callable[[bool], Benchmark]) -> None:
    """Entry point of a benchmark module: ``python -m benchmarks.bench_x [--quick] [--json OUT]``."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    bench = run(args.quick)
    if args.json:
        with open(args.json, "w") as f:
            f.write(bench.to_json())
    print(render_markdown(bench))

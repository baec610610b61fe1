"""Small benchmark harness: candidates side by side in one process, repeated, median and spread, ratios.

A benchmark module defines ``run(quick: bool) -> Benchmark``; the suite (`python -m benchmarks`) runs each module
in its own process (TensorFlow and PyTorch/XLA never share one), collects the JSON and writes docs/benchmarks.md.
"""
from __future__ import annotations

import platform
import statistics
from typing import Callable

from tpu_helpers.core.timing import Benchmark, Candidate, time_calls  # the owner (notebooks use it too)

__all__ = ["Candidate", "Benchmark", "time_calls", "summarize", "machine_info", "render_markdown"]


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

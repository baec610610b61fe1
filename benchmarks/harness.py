"""Small benchmark harness: candidates repeated, median and spread, ratios against a baseline.

A benchmark module defines ``run(quick: bool) -> Benchmark`` (or a list of them, one table each); the suite
(`python -m benchmarks`) runs each module in its own process (TensorFlow and PyTorch/XLA never share one), collects
the JSON and writes docs/benchmarks.md. A module whose candidates must not share a process (eager vs XLA: importing
torch_xla alone changes eager PyTorch's speed, and compile caches live as long as the process) also defines
``worker(spec: dict) -> dict`` and runs each candidate with `run_isolated`, a fresh process of the same Python.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from tpu_helpers.core.timing import Benchmark, Candidate, time_calls  # the owner (notebooks use it too)

__all__ = ["Candidate", "Benchmark", "time_calls", "summarize", "machine_info", "load_average", "load_warning", "render_markdown",
           "run_isolated", "benchmarks_to_json", "benchmarks_from_json"]

ROOT = Path(__file__).resolve().parents[1]


def course_support_module(name: str):
    """tests/course_support/<name>.py, loaded by path: a TensorFlow benchmark keeps tests/ off sys.path (its folder
    tests/torch would pass for `torch` where torch is not installed)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"course_support_{name}", ROOT / "tests" / "course_support" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def load_average() -> str:
    """The 1-minute load average now, for the stamp beside the figures (timings on a loaded machine stretch)."""
    try:
        return f"load average {os.getloadavg()[0]:.2f}"
    except OSError:
        return "load average unknown"


def load_warning(loads: list[float], limit: float = 1.5) -> str:
    """A sentence for the notes when a candidate started on a busy machine (1-minute load average above ``limit``)."""
    worst = max(loads, default=0.0)
    if worst <= limit:
        return ""
    return (f" Measured on a busy machine (1-minute load average up to {worst:.1f} when a candidate started, "
            f"{os.cpu_count()} cores): the timings are stretched unevenly; re-run on an idle machine before quoting them.")


def benchmarks_to_json(result: Benchmark | list[Benchmark]) -> str:
    items = result if isinstance(result, list) else [result]
    return json.dumps([dataclasses.asdict(b) for b in items])


def benchmarks_from_json(text: str) -> list[Benchmark]:
    data = json.loads(text)
    items = data if isinstance(data, list) else [data]
    return [Benchmark(**{**d, "candidates": [Candidate(**c) for c in d["candidates"]]}) for d in items]


def run_isolated(module: str, spec: dict, timeout: float = 1200) -> dict:
    """Run one candidate alone: ``python -m MODULE --worker SPEC`` in a fresh process, and return the dict its
    ``worker(spec)`` returned. A failing worker raises RuntimeError with the end of its stderr."""
    with tempfile.TemporaryDirectory(prefix="tpu-course-bench-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", module, "--worker", json.dumps(spec), "--worker-out", str(out)]
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path, TF_CPP_MIN_LOG_LEVEL="3")
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{module} worker {spec} ran past {timeout:.0f} s and was stopped") from None
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join(proc.stderr.splitlines()[-12:])
            raise RuntimeError(f"{module} worker {spec} failed (exit {proc.returncode}):\n{tail}")
        return json.loads(out.read_text())


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


def cli(run: Callable[[bool], Benchmark | list[Benchmark]], worker: Callable[[dict], dict] | None = None) -> None:
    """Entry point of a benchmark module: ``python -m benchmarks.bench_x [--quick] [--json OUT]``; with ``worker``
    also ``--worker SPEC --worker-out OUT`` (one candidate, run by `run_isolated`)."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        if worker is None:
            ap.error("this benchmark has no worker")
        result = worker(json.loads(args.worker))
        Path(args.worker_out).write_text(json.dumps(result))
        return
    result = run(args.quick)
    if args.json:
        Path(args.json).write_text(benchmarks_to_json(result))
    for bench in result if isinstance(result, list) else [result]:
        print(render_markdown(bench))

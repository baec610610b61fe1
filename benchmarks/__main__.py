"""Run the benchmark suite: ``./course python -m benchmarks [NAME ...] [--quick] [--no-write]``.

Each ``benchmarks/bench_*.py`` module runs in its own process, with its framework's environment's interpreter
(TensorFlow and PyTorch/XLA cannot share one; ``./course`` names both);
its candidates run side by side in that process, repeated, and the medians, spreads and ratios are written to
docs/benchmarks.md (between the suite markers), with the machine they came from and the command.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import Benchmark, benchmarks_from_json, load_average, machine_info, render_markdown

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"


def discover() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py"))


def framework_of(name: str) -> str:
    """The framework whose environment runs a benchmark: TensorFlow or JAX where its module declares it, else
    PyTorch/XLA."""
    text = (ROOT / "benchmarks" / f"bench_{name}.py").read_text()
    return "tf" if 'use_framework("tf")' in text else "jax" if 'use_framework("jax")' in text else "torch"


def run_module(name: str, quick: bool) -> list[Benchmark] | str:
    from tpu_helpers.core.frameworks import framework_python

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [framework_python(framework_of(name)), "-m", f"benchmarks.bench_{name}", "--json", out] + (["--quick"] if quick else [])
    # tests/ too: the benchmarks share the tests' support code (tests/course_support, not in the learner's wheel)
    # (the PyTorch/XLA ones only: in the TensorFlow environment, without torch, tests/torch would pass for `torch`)
    path = [str(ROOT), str(ROOT / "tests")] if framework_of(name) == "torch" else [str(ROOT)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    try:
        if proc.returncode != 0:
            return f"{name}: FAILED (exit {proc.returncode})\n" + "\n".join(proc.stderr.splitlines()[-8:])
        return benchmarks_from_json(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)


def write_doc(parts: dict[str, str], header: str) -> None:
    """Replace the suite header and each benchmark's own block; blocks of benchmarks not run are kept."""
    text = DOC.read_text() if DOC.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    blocks = dict(re.findall(r"<!-- bench:(\w+) -->\n(.*?)<!-- /bench:\1 -->\n", body, flags=re.S))
    blocks.update(parts)
    section = header + "".join(f"<!-- bench:{k} -->\n{v}<!-- /bench:{k} -->\n" for k, v in sorted(blocks.items()))
    DOC.write_text(head + BEGIN + "\n" + section + END + tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {discover()})")
    ap.add_argument("--quick", action="store_true", help="fewer repeats and smaller inputs (a smoke run)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = ap.parse_args(argv)
    names = args.names or discover()
    parts, failed = {}, []
    for name in names:
        print(f"running {name} ...", flush=True)
        load = load_average()
        res = run_module(name, args.quick)
        if isinstance(res, str):
            print(res, file=sys.stderr)
            failed.append(name)
            continue
        stamp = f"*{datetime.date.today().isoformat()}, {machine_info()}, {load} at the start; " \
            f"`./course python -m benchmarks {name}" + (" --quick" if args.quick else "") + "`*\n\n"
        mds = [render_markdown(b) for b in res]
        print("\n".join(mds))
        parts[name] = "\n".join(md.replace("\n\n", "\n\n" + stamp, 1) for md in mds)
    header = ("Each block below says when, on which machine and with which command it was measured; "
              "`./course python -m benchmarks NAME` re-measures one block and keeps the others.\n\n")
    if not args.no_write and parts:
        write_doc(parts, header)
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

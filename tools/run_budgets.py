"""Time budgets and cell profiles for ``./course run``: the closing table with each notebook's budget, and the slowest
cells of each executed notebook (papermill records every cell's duration in ``metadata.papermill.duration``).

Budgets (on the 2-core reference machine): each notebook <= 180 s and the whole run <= 12 minutes, on the
``cpu`` and ``ci`` profiles. The ``tpu`` profile runs the seeds' real sizes and has no budget. A run over budget is
flagged, not failed: wall time on a shared machine is not a claim the course can assert.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["NOTEBOOK_BUDGET_S", "TOTAL_BUDGET_S", "HOSTED_BUDGET_S", "REHEARSALS_BUDGET_S", "BUDGETED_PROFILES", "Budget", "budget_for", "results_table",
           "CellTime", "cell_times", "slowest_cells_report"]

NOTEBOOK_BUDGET_S = 180.0
TOTAL_BUDGET_S = 12 * 60.0
# ./course test (lint, unit tests, every notebook at ci) stays within TOTAL_BUDGET_S too (a contributor's
# loop in minutes). ./course rehearse gets the next two budgets.
# ./course rehearse rehearses the hosted runtimes (tests/hosted), with its environments cached: the TPU images
# about 5 minutes; Colab's CPU and GPU images 7.5 minutes more (measured on the loaded 2-core machine: the CPU image's
# PyTorch/XLA notebooks 02, 05, 07 with their install cell 213 s, its TensorFlow notebooks 01, 04 112 s, the GPU
# image's install cells and imports 49 s, Kaggle's CPU/GPU plans resolved 75 s): 14 minutes; JAX adds its install
# cell and imports on the four images, Kaggle's CPU/GPU JAX plans resolved, and notebook 09 at ci on Colab's CPU image
# (91 s in the course's own environment under a load average of 5; not yet measured in the rehearsal): 17 minutes
HOSTED_BUDGET_S = 17 * 60.0
# ./course rehearse also runs the multi-replica and multi-host rehearsals (notebook 04 on 8 replicas, notebooks 05 and 07
# in several processes, notebook 08's local hosts in its unit tests), notebook 04 at the cpu profile on real text (its
# context claims, about 150 s) and runs notebooks 00, 02, 03, 05, 06, 07, 08 and 09 twice in one kernel: about 10
# minutes more (notebook 08's rerun alone: 101 s; 09's 158 s under a load average of 5-8)
REHEARSALS_BUDGET_S = 10 * 60.0
BUDGETED_PROFILES = ("cpu", "ci")


@dataclass(frozen=True)
class Budget:
    notebook_s: float | None  # None: no budget (the tpu profile)
    total_s: float | None


def budget_for(profile: str) -> Budget:
    """The budgets of a size profile: 180 s a notebook and 12 minutes in all for cpu/ci, none for tpu."""
    if profile in BUDGETED_PROFILES:
        return Budget(NOTEBOOK_BUDGET_S, TOTAL_BUDGET_S)
    return Budget(None, None)


def budget_flag(seconds: float, budget: float | None) -> str:
    """'ok', 'OVER +N s', or '' without a budget: the one wording of ./course run and ./course test."""
    if budget is None:
        return ""
    return f"OVER +{seconds - budget:.0f} s" if seconds > budget else "ok"


def results_table(rows: Sequence[tuple[str, str, float, str]], budget: Budget) -> tuple[str, list[str]]:
    """The closing table of ``./course run`` and the names of the notebooks over their budget.

    ``rows`` are (notebook, status, seconds, key figures); a row's status is "ok" or "FAILED: ...". The last
    line adds up the seconds and compares them with the whole run's budget; a partial run (some notebooks only)
    is compared too, since its total can only grow.
    """
    w = max([len("notebook"), len("total")] + [len(r[0]) for r in rows])
    has_budget = budget.notebook_s is not None
    head = f"{'notebook'.ljust(w)}  {'status':<8}  {'seconds':>7}"
    if has_budget:
        head += f"  {'budget':>6}  {'':<12}"
    lines = [head + "  key figures"]
    over = []
    for name, status, seconds, figs in rows:
        line = f"{name.ljust(w)}  {status.split(':')[0]:<8}  {seconds:7.0f}"
        if has_budget:
            flag = budget_flag(seconds, budget.notebook_s)
            line += f"  {budget.notebook_s:6.0f}  {flag:<12}"
            if flag.startswith("OVER"):
                over.append(name)
        lines.append(line + "  " + figs)
    total = sum(r[2] for r in rows)
    line = f"{'total'.ljust(w)}  {'':<8}  {total:7.0f}"
    if budget.total_s is not None:
        flag = budget_flag(total, budget.total_s)
        line += f"  {budget.total_s:6.0f}  {flag:<12}"
        if flag.startswith("OVER"):
            over.append("total")
    lines.append(line.rstrip())
    if has_budget:
        lines.append(f"budgets: each notebook <= {budget.notebook_s:.0f} s, the whole run <= {budget.total_s / 60:.0f} min "
                     "(2-core reference machine); " + (f"over: {', '.join(over)}" if over else "all within"))
    return "\n".join(lines), over


@dataclass(frozen=True)
class CellTime:
    index: int  # position among the notebook's cells
    execution_count: int | None
    seconds: float
    first_line: str


def cell_times(executed: Path) -> list[CellTime]:
    """Each code cell's duration as papermill recorded it in an executed notebook (cells it never ran are left out)."""
    nb = json.loads(Path(executed).read_text(encoding="utf-8"))
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        duration = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
        if duration is None:
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        first = next((s.strip() for s in source.splitlines() if s.strip() and not s.strip().startswith("#")), "")
        out.append(CellTime(i, cell.get("execution_count"), float(duration), first))
    return out


def slowest_cells_report(executed: Path, n: int, notebook_seconds: float | None = None) -> str:
    """The ``n`` slowest cells of an executed notebook, and how much of the notebook's time the cells account for
    (the rest is the kernel's start and papermill's own work)."""
    name = Path(executed).name
    if not Path(executed).exists():
        return f"{name}: no executed notebook to profile"
    cells = cell_times(executed)
    if not cells:
        return f"{name}: no cell durations recorded"
    in_cells = sum(c.seconds for c in cells)
    head = f"{name}: {len(cells)} cells ran, {in_cells:.1f} s in cells"
    if notebook_seconds is not None:
        head += f" of {notebook_seconds:.1f} s ({max(notebook_seconds - in_cells, 0.0):.1f} s kernel start and papermill)"
    lines = [head]
    for c in sorted(cells, key=lambda c: c.seconds, reverse=True)[:n]:
        share = 100 * c.seconds / in_cells if in_cells else 0.0
        label = f"cell {c.index}" + (f" [{c.execution_count}]" if c.execution_count is not None else "")
        text = c.first_line if len(c.first_line) <= 70 else c.first_line[:67] + "..."
        lines.append(f"  {c.seconds:7.1f} s  {share:4.0f} %  {label:<14}  {text}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``./course python tools/run_budgets.py [--top N] build/*.ipynb``: the slowest cells of notebooks already run."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("executed", nargs="+", help="executed notebooks (./course run writes them to build/)")
    ap.add_argument("--top", type=int, default=5, help="cells per notebook (default 5)")
    args = ap.parse_args(argv)
    for path in args.executed:
        print(slowest_cells_report(Path(path), args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

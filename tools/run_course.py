"""Run the whole course headless (./course run) and print what each notebook measured.

Every notebook in notebooks/ is executed in order with papermill (a fresh kernel each), on the profile chosen
the usual way (``--profile`` or ``TPU_COURSE_PROFILE``, else ``cpu`` off-TPU). Executed notebooks and their
HTML go to build/ (git-ignored). The closing table lists notebook, status, seconds and the key figures each
notebook recorded with `tpu_helpers.core.summary.record`. Exit status 1 if any notebook failed.

    ./course run                          # all notebooks, default profile
    ./course run --profile ci 00 01       # the smallest sizes, notebooks 00 and 01 only
    ./course run -p PROFILE cpu           # set a notebook parameter (papermill -p)
    ./course run --profile ci --seeds 5   # every notebook with SEED = 0..4: min / max of each figure over seeds
    ./course run --profile-cells 5        # also the 5 slowest cells of each notebook (papermill's cell times)

On the cpu and ci profiles the table shows each notebook's time budget (180 s) and the whole run's (12 min) and
flags the ones over it (`tools/run_budgets.py`); over budget is reported, not a failure. After the table, the stderr
lines of the executed notebooks that `tools/known_stderr.py` does not explain (what a learner would see in red with
no explanation; `tools/stderr_check.py`) are listed, notebook and cell; they are reported, not a failure (under
``./course test`` they fail their cell).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from run_budgets import budget_for, results_table, slowest_cells_report  # noqa: E402  (tools/ is on sys.path)
from stderr_check import unexplained_in_notebook  # noqa: E402

from tpu_helpers.core.profiles import choose_profile  # noqa: E402  (the installed package: ./course installs the wheel)
from tpu_helpers.core.summary import FIGURES_ENV  # noqa: E402


def _records(path: Path) -> dict[str, tuple]:
    """{figure name: (value, unit)} recorded by a notebook's `tpu_helpers.core.summary.record` calls."""
    items = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line cut off by a killed kernel: keep the rest
                continue
            if not isinstance(rec, dict) or "name" not in rec or "value" not in rec:
                continue  # not a figure (a partial write that still parsed): skip it, keep the run going
            items[str(rec["name"])] = (rec["value"], rec.get("unit") or "")
    return items


def _figures(path: Path) -> str:
    return "; ".join(f"{k}={v}{(' ' + u) if u else ''}" for k, (v, u) in _records(path).items())


def seeds_table(results: dict[str, list[tuple[int, str, dict]]]) -> str:
    """Per notebook: runs passed over seeds, and each numeric figure's min / max over the seeds."""
    lines = []
    for name, runs in results.items():
        ok = sum(status == "ok" for _, status, _ in runs)
        lines.append(f"\n{name}: {ok}/{len(runs)} seeds passed"
                     + "".join(f"\n  seed {seed}: {status}" for seed, status, _ in runs if status != "ok"))
        names = [k for _, _, recs in runs for k in recs]
        for fig in dict.fromkeys(names):
            values = [recs[fig][0] for _, _, recs in runs if fig in recs]
            nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if nums and len(nums) == len(values):
                unit = next(recs[fig][1] for _, _, recs in runs if fig in recs)
                lines.append(f"  {fig}: min {min(nums):g} / max {max(nums):g} {unit}".rstrip())
    return "\n".join(lines)


def stderr_flags(executed: list[Path]) -> str:
    """The unexplained stderr lines of executed notebooks, one line each (notebook, nbval's cell number, the line)."""
    found = [f for path in executed if path.exists() for f in unexplained_in_notebook(path)]
    if not found:
        return "stderr (red output): every line explained (tools/known_stderr.py)"
    lines = [f"stderr (red output) not explained in tools/known_stderr.py: {len(found)} line(s); fix each at its "
             "cause or list it with its reason"]
    lines += [f"  {f.notebook} Cell {f.cell}: {f.line if len(f.line) <= 160 else f.line[:157] + '...'}" for f in found]
    return "\n".join(lines)


def ipc_kernel_config(folder: str):
    """nbclient config for a kernel reached through Unix sockets in `folder` instead of TCP ports on 127.0.0.1.

    A TCP kernel logs "Kernel is running over TCP without encryption" at every start; an IPC one has nothing to
    warn about (only this user can open the sockets), and its sockets live in a private folder, not the cwd.
    """
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "kernel")}})


def run_one(nb: Path, out_dir: Path, params: dict, html: bool, timeout: int) -> tuple[str, float, str]:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    executed = out_dir / nb.name
    figures = out_dir / (nb.stem + ".figures.jsonl")
    figures.unlink(missing_ok=True)
    os.environ[FIGURES_ENV] = str(figures)
    start = time.perf_counter()
    status = "ok"
    try:
        with tempfile.TemporaryDirectory(prefix="tpu-course-kernel-") as sockets:
            papermill.execute_notebook(str(nb), str(executed), parameters=params, kernel_name=None,  # the notebook's
                                       cwd=str(nb.parent), progress_bar=False, log_output=False,
                                       execution_timeout=timeout, config=ipc_kernel_config(sockets))
    except PapermillExecutionError as e:
        status = f"FAILED: {e.ename}: {str(e.evalue).splitlines()[0][:120] if e.evalue else ''}"
    except Exception as e:  # kernel died, timeout...
        status = f"FAILED: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    seconds = time.perf_counter() - start
    if html and executed.exists():
        import nbconvert
        body, _ = nbconvert.HTMLExporter().from_filename(str(executed))
        (out_dir / (nb.stem + ".html")).write_text(body, encoding="utf-8")
    return status, seconds, _figures(figures)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="notebook numbers or name prefixes to run (default: all)")
    ap.add_argument("--profile", choices=("tpu", "cpu", "ci"), help="size profile (sets TPU_COURSE_PROFILE)")
    ap.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                    help="notebook parameter (papermill convention); VALUE is parsed as JSON if it can be")
    ap.add_argument("--out", default=str(ROOT / "build"), help="output folder (default: build/)")
    ap.add_argument("--no-html", action="store_true", help="skip the HTML export")
    ap.add_argument("--timeout", type=int, default=1800, help="per-cell timeout in seconds")
    ap.add_argument("--seeds", type=int, default=0,
                    help="run every notebook with SEED = 0..N-1 and report each figure's min / max over the seeds")
    ap.add_argument("--profile-cells", type=int, default=0, metavar="N",
                    help="after the table, print the N slowest cells of each notebook (papermill's recorded times)")
    args = ap.parse_args(argv)
    if args.profile:
        os.environ["TPU_COURSE_PROFILE"] = args.profile
    # A headless run has no learner to fill in the exercises: use the reference answers (override with =0).
    os.environ.setdefault("TPU_COURSE_SOLUTIONS", "1")
    params = {}
    for name, value in args.p:
        try:
            params[name] = json.loads(value)
        except json.JSONDecodeError:
            params[name] = value
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.only:
        notebooks = [nb for nb in notebooks if any(nb.name.startswith(o) for o in args.only)]
        if not notebooks:
            print(f"no notebook matches {args.only}", file=sys.stderr)
            return 2
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    profile = os.environ.get("TPU_COURSE_PROFILE", "(auto)")
    print(f"Running {len(notebooks)} notebook(s), profile {profile}, outputs in {out_dir}")
    if args.seeds:
        results: dict[str, list] = {}
        for nb in notebooks:
            for seed in range(args.seeds):
                seed_dir = out_dir / f"seed-{seed}"
                seed_dir.mkdir(exist_ok=True)
                status, seconds, _ = run_one(nb, seed_dir, {**params, "SEED": seed}, False, args.timeout)
                print(f"  {nb.name} SEED={seed}: {status} in {seconds:.0f} s", flush=True)
                results.setdefault(nb.name, []).append(
                    (seed, status, _records(seed_dir / (nb.stem + ".figures.jsonl"))))
        print(seeds_table(results))
        (out_dir / "seeds.txt").write_text(seeds_table(results) + "\n")
        return 0 if all(st == "ok" for runs in results.values() for _, st, _ in runs) else 1
    rows = []
    for nb in notebooks:
        print(f"  {nb.name} ...", flush=True)
        status, seconds, figs = run_one(nb, out_dir, params, not args.no_html, args.timeout)
        print(f"  {nb.name}: {status} in {seconds:.0f} s", flush=True)
        rows.append((nb.name, status, seconds, figs))
    table, _ = results_table(rows, budget_for(str(params.get("PROFILE") or choose_profile().name)))
    print()
    print(table)
    print(stderr_flags([out_dir / name for name, *_ in rows]))
    if args.profile_cells:
        print(f"\nslowest cells (up to {args.profile_cells} per notebook):")
        for name, _, seconds, _ in rows:
            print(slowest_cells_report(out_dir / name, args.profile_cells, seconds))
    failed = [r for r in rows if r[1] != "ok"]
    for name, status, _, _ in failed:
        print(f"\n{name}: {status}\n  see {out_dir / name}")
    summary = out_dir / "summary.json"
    summary.write_text(json.dumps([{"notebook": n, "status": s, "seconds": round(t, 1), "figures": f,
                                    "unexplained_stderr": [{"cell": u.cell, "line": u.line}
                                                           for u in unexplained_in_notebook(out_dir / n)]
                                    if (out_dir / n).exists() else []}
                                   for n, s, t, f in rows], indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

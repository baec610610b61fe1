"""The test suite in two commands, each a series of separate pytest processes.

    ./course test                      # a contributor's loop: lint, unit tests, nbval over every notebook (minutes)
    ./course rehearse                  # the rehearsals: hosted images, several replicas or hosts, reruns (CI: both)
    ./course pytest tests/tf/mlm/test_x.py    # some paths only (one framework per process, same options)

* **Lint first**: ``ruff check`` (pinned; rules in pyproject.toml) over the helpers, tests, tools, benchmarks and the
  notebooks (ruff reads ``.ipynb`` itself).
* **One framework per process, each in its own environment.** TensorFlow and torch_xla abort a process that imports
  both, and each has its own pinned environment (``./course``: ``TPU_COURSE_PYTHON_TF`` / ``TPU_COURSE_PYTHON_TORCH``).
  ``tests/common`` (no framework) and ``tests/tf`` run in the TensorFlow environment's pytest, ``tests/torch`` in the
  PyTorch/XLA one's, ``tests/jax`` in the JAX one's, as separate processes; the notebooks in one nbval process per
  framework, each notebook with the pytest of the environment its kernel names (``tpu-course-tf``,
  ``tpu-course-torch`` or ``tpu-course-jax`` in its metadata). Each folder's
  conftest declares its framework, so a test importing the other one fails with a message instead of aborting.
* **Unit tests or rehearsals.** ``tests/conftest.py`` lists the rehearsals (``REHEARSALS``: whole notebooks rerun,
  several replicas or hosts, the hosted images) and marks them ``rehearsal``; ``./course test`` deselects them
  (``-m "not rehearsal"``), ``./course rehearse`` runs only them, then ``tests/hosted``.
* **The notebooks run the way Colab opens them** (``./course test``): each one copied alone into an empty folder
  outside the repository and executed there by nbval, against the installed ``tpu-course`` wheel (``./course``
  builds it from this checkout); nothing of the repository is importable, so a notebook that reads a repository
  file or needs a helper missing from the wheel fails.
* **No unexplained red output.** nbval runs with the ``nbval_stderr`` plugin (``tools/nbval_stderr.py``): a cell
  whose stderr holds a line that ``tools/known_stderr.py`` does not explain fails, naming the notebook, the cell and
  the line; after the notebooks, one line says which listed lines still appeared.
* **A crash is a failure.** A pytest process killed by a signal (negative exit code: an abort, an out-of-memory
  kill, a segfault) or one that wrote no junit report fails the run, whatever it had counted.

* **Side by side.** ``./course test`` and ``./course rehearse`` run their pytest processes two at a time on a machine
  with two cores or more, the longest expected first (``TPU_COURSE_TEST_JOBS`` sets how many; 1 streams each
  process's output as it comes). Each group's output is printed whole when it ends, so the lines of two groups never
  mix. ``./course pytest`` runs one group at a time. The claims hold on a loaded machine, so a neighbour's load is no
  excuse for a failure.

Extra arguments go to every pytest process (``./course test --durations=15`` lists the 15 slowest tests and
notebook cells). The closing lines add up all groups and compare the command's time with its budget
(`tools/run_budgets.py`: 12 minutes for ``./course test``, 27 for ``./course rehearse`` on the 2-core machine).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRINTING = threading.Lock()  # one group's closing lines at a time

from run_budgets import HOSTED_BUDGET_S, REHEARSALS_BUDGET_S, TOTAL_BUDGET_S, budget_flag  # noqa: E402  (tools/ is on sys.path)
from stderr_check import pytest_command as stderr_checked_pytest  # noqa: E402
from stderr_check import stderr_summary  # noqa: E402

NBVAL = ["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=1500",
         "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg")]


def env_python(framework: str) -> str:
    """The interpreter of a framework's environment ("tf", "torch", "jax"): what ``./course`` exported, else this one."""
    return os.environ.get(f"TPU_COURSE_PYTHON_{framework.upper()}") or sys.executable


def pytest_command(framework: str = "tf") -> list[str]:
    """pytest's console script of a framework's environment: unlike ``python -m pytest`` it does not put the current
    folder (the checkout) on sys.path, so ``import tpu_helpers`` finds the installed wheel."""
    python = env_python(framework)
    script = Path(python).with_name("pytest")
    return [str(script)] if script.exists() else [python, "-P", "-m", "pytest"]


FOLDERS = {"common": "framework-free unit tests", "tf": "TensorFlow unit tests", "torch": "PyTorch/XLA unit tests",
           "jax": "JAX unit tests",
           "hosted": "hosted runtimes rehearsed (Colab TPU/CPU/GPU, Kaggle TPU: tools/rehearse_hosted.py)"}
ENVIRONMENT = {"common": "tf", "tf": "tf", "torch": "torch", "jax": "jax", "hosted": "tf"}  # which environment runs each folder
LINT_PATHS = ["tpu_helpers", "tests", "tools", "benchmarks", "notebooks"]
NOTEBOOKS = {"tf": "TensorFlow notebooks, each alone in an empty folder (nbval)",
             "torch": "PyTorch/XLA notebooks, each alone in an empty folder (nbval)",
             "jax": "JAX notebooks, each alone in an empty folder (nbval)"}


def notebook_framework(path: str) -> str:
    """The framework whose environment runs a notebook: the kernel its metadata names (tpu-course-tf/-torch/-jax)."""
    name = json.loads((ROOT / path).read_text()).get("metadata", {}).get("kernelspec", {}).get("name", "")
    return {"tpu-course-torch": "torch", "tpu-course-jax": "jax"}.get(name, "tf")


def notebook_groups(paths: list[str]) -> list[tuple[str, list[str], list[str], str]]:
    """The nbval groups of some notebooks: one per framework that has any, in that framework's environment."""
    out = []
    for fw in ("tf", "torch", "jax"):
        mine = [p for p in paths if notebook_framework(p) == fw]
        if mine:
            out.append((NOTEBOOKS[fw], mine, [], fw))
    return out


def framework_of(path: str) -> str:
    """The test folder (common, tf, torch, jax) a path under tests/ belongs to; "" for anything else."""
    parts = Path(os.path.abspath(ROOT / path.split("::")[0])).relative_to(ROOT).parts
    return parts[1] if len(parts) > 1 and parts[0] == "tests" and parts[1] in FOLDERS else ""


UNIT, REHEARSAL = ["-m", "not rehearsal"], ["-m", "rehearsal"]  # the marker tests/conftest.py sets


def groups(rehearsals: bool = False) -> list[tuple[str, list[str], list[str], str]]:
    """(name, paths, marker selection, environment) of each pytest process of ``./course test``, or of
    ``./course rehearse``."""
    folders = [f for f in FOLDERS if f != "hosted"]
    if rehearsals:
        out = [(f"{FOLDERS[f]}: rehearsals", [f"tests/{f}"], REHEARSAL, ENVIRONMENT[f]) for f in folders]
        return out + [(FOLDERS["hosted"], ["tests/hosted"], [], ENVIRONMENT["hosted"])]
    out = [(FOLDERS[f], [f"tests/{f}"], UNIT, ENVIRONMENT[f]) for f in folders]
    return out + notebook_groups([str(p.relative_to(ROOT)) for p in sorted((ROOT / "notebooks").glob("*.ipynb"))])


def lint() -> tuple[str, int, dict[str, int] | None]:
    """``ruff check`` over the code (a failed lint counts as one failed test)."""
    ruff = Path(sys.executable).with_name("ruff")
    print(f"\n=== lint: ruff check {' '.join(LINT_PATHS)}", flush=True)
    rc = subprocess.call([str(ruff) if ruff.exists() else "ruff", "check", *LINT_PATHS], cwd=ROOT)
    return "lint (ruff)", rc, {"tests": 1, "failures": int(rc != 0), "errors": 0, "skipped": 0}


def isolate_notebooks(paths: list[str], tmp: Path) -> list[str]:
    """Copy each notebook alone into its own empty folder; return the copies' paths."""
    out = []
    for p in paths:
        src = (ROOT / p) if not Path(p).is_absolute() else Path(p)
        folder = tmp / src.stem
        folder.mkdir(parents=True)
        out.append(str(shutil.copy2(src, folder / src.name)))
    return out


def run_group(name: str, paths: list[str], argv: list[str], tmp: Path, i: int,
              framework: str = "tf", buffered: bool = False) -> tuple[int, dict[str, int] | None]:
    """Run one pytest process; ``buffered`` (groups running side by side): its output is printed in one piece at its
    end, so two groups' lines never interleave."""
    junit = tmp / f"group{i}.xml"
    notebooks = [p for p in paths if p.endswith(".ipynb")]
    if notebooks:
        copies = isolate_notebooks(notebooks, tmp / f"notebooks{i}")
        cwd = tmp / f"notebooks{i}"
        stderr_report = tmp / f"group{i}-stderr.json"
        # rootdir and config from the empty folder: no conftest or pytest.ini of the checkout takes part
        cmd = [*stderr_checked_pytest(env_python(framework)), *NBVAL, "--rootdir", str(cwd), "-c", os.devnull, "-p", "no:cacheprovider",
               *copies, f"--junitxml={junit}", f"--stderr-report={stderr_report}", *argv]
    else:
        cwd = ROOT
        cmd = [*pytest_command(framework), *NBVAL, *paths, f"--junitxml={junit}", *argv]
    header = f"\n=== {name}: {' '.join(Path(p).name for p in paths) if len(paths) < 12 else f'{len(paths)} files'}"
    print(header if not buffered else f"=== started: {name}", flush=True)
    start = time.perf_counter()
    if buffered:
        log = tmp / f"group{i}.log"
        with open(log, "w") as out:
            rc = subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        lines = [header, log.read_text(errors="replace").rstrip()]
    else:
        rc, lines = subprocess.call(cmd, cwd=cwd), []
    lines.append(f"=== {name}: exit {rc} in {time.perf_counter() - start:.0f} s")
    if notebooks and stderr_report.exists():
        lines.append(stderr_summary(json.loads(stderr_report.read_text())))
    with PRINTING:
        print("\n".join(lines), flush=True)
    if not junit.exists():
        return rc, None
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in ET.parse(junit).getroot().iter("testsuite"):
        for key in totals:
            totals[key] += int(suite.get(key, 0))
    return rc, totals


# seconds each group took, two at a time on the 2-core machine (2026-11-29; the hosted rehearsal: alone, the day
# before): the longest start first
EXPECTED_S = {"hosted runtimes rehearsed": 1911, "PyTorch/XLA notebooks": 398, "PyTorch/XLA unit tests": 290,
              "TensorFlow notebooks": 266, "TensorFlow unit tests": 134, "framework-free unit tests": 100,
              "JAX unit tests": 50, "JAX notebooks": 48}


def parallel_jobs(env: dict[str, str] | None = None) -> int:
    """How many pytest processes ``./course test`` runs side by side: TPU_COURSE_TEST_JOBS, else one per core up to
    2 (one framework per process either way; two fill the 2-core reference machine)."""
    value = (os.environ if env is None else env).get("TPU_COURSE_TEST_JOBS", "")
    if value and not (value.isdigit() and int(value) >= 1):
        raise SystemExit(f"course: TPU_COURSE_TEST_JOBS={value!r}: give a whole number of processes, 1 or more")
    return int(value) if value else max(1, min(2, os.cpu_count() or 1))


def run_plan(plan: list[tuple[str, list[str], list[str], str]], argv: list[str], tmp: Path,
             jobs: int) -> list[tuple[str, int, dict[str, int] | None, float]]:
    """Run every group, ``jobs`` at a time (the longest expected first); (name, exit code, totals, seconds) in plan
    order."""
    def one(i: int) -> tuple[str, int, dict[str, int] | None, float]:
        name, paths, select, framework = plan[i]
        t = time.perf_counter()
        rc, totals = run_group(name, paths, [*select, *argv], tmp, i, framework, buffered=jobs > 1)
        return name, rc, totals, time.perf_counter() - t

    if jobs <= 1:
        return [one(i) for i in range(len(plan))]
    order = sorted(range(len(plan)), key=lambda i: -EXPECTED_S.get(plan[i][0].split(",")[0].split(" (")[0], 0))
    with ThreadPoolExecutor(jobs) as pool:
        done = dict(zip(order, pool.map(one, order)))
    return [done[i] for i in range(len(plan))]


def verdict(results: list[tuple[str, int, dict[str, int] | None]]) -> tuple[int, str]:
    """The suite's exit code and closing line from each group's (name, exit code, junit totals)."""
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    crashed = []
    worst = 0
    for name, rc, t in results:
        if rc < 0 or t is None:  # killed by a signal, or died before writing its report: never a pass
            crashed.append(f"{name} (exit {rc}{', no report' if t is None else ''})")
            worst = worst or 1
            continue
        for key in totals:
            totals[key] += t[key]
        if rc not in (0, 5):  # 5: this group collected no test
            worst = worst or rc
    failed = totals["failures"] + totals["errors"] + len(crashed)
    passed = totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"]
    line = f"{passed} passed, {failed} failed, {totals['skipped']} skipped"
    if crashed:
        line += "\ncrashed (counted as failed): " + "; ".join(crashed)
    if passed == 0 and not worst:
        return 5, line
    return worst or (1 if failed else 0), line


def time_line(times: list[tuple[str, float]], budget: float | None, wall: float | None = None, jobs: int = 1) -> str:
    """Where a run's time went, per group, and (for a whole run) the total against the budget: the wall time when
    groups ran side by side (``jobs`` > 1), else their sum."""
    total = sum(seconds for _, seconds in times) if wall is None else wall
    line = "time: " + ", ".join(f"{name.split(',')[0].split(' (')[0]} {seconds:.0f} s" for name, seconds in times)
    line += f"; total {total:.0f} s"
    if jobs > 1:
        line += f" (wall clock, {jobs} groups at a time)"
    if budget is not None:
        line += f" (budget {budget:.0f} s: {budget_flag(total, budget)})"
    return line


def main(argv: list[str]) -> int:
    os.environ.setdefault("TPU_COURSE_PROFILE", "ci")
    os.environ.setdefault("TPU_COURSE_SOLUTIONS", "1")  # exercises run with the reference answers: every check must pass
    os.environ["TPU_COURSE_TEST_RUN"] = "1"  # tests/conftest.py: a missing framework fails instead of skipping
    # Tests run as a learner's runtime does, which sets no CI: with CI set, transformers lets its logs reach the root
    # logger (transformers/utils/logging.py), torch_xla gives that logger a handler at import, and every warning
    # prints twice (once as "WARNING:transformers...")
    os.environ.pop("CI", None)
    os.environ["PYTHONSAFEPATH"] = "1"  # no `python -c` child of a test puts the checkout (its cwd) on sys.path
    t, jobs = time.perf_counter(), 1
    if argv[:1] == ["--paths"]:
        # paths are what exists (or a test id, path::name); everything else, option values included, goes to pytest
        paths = [a for a in argv[1:] if not a.startswith("-") and ((ROOT / a.split("::")[0]).exists()
                                                                   or Path(a.split("::")[0]).exists())]
        extra = [a for a in argv[1:] if a not in paths]
        tests = [p for p in paths if not p.endswith(".ipynb")]
        kinds = {framework_of(p) for p in tests}
        if "" in kinds or len(kinds) > 1:
            print("course: give test paths from one of tests/common, tests/tf, tests/torch, tests/jax at a time (each "
                  "runs in its own pytest process: TensorFlow and torch_xla cannot share one), or notebooks")
            return 2
        plan = [(FOLDERS[k], tests, [], ENVIRONMENT[k]) for k in kinds if tests]
        plan += notebook_groups([p for p in paths if p.endswith(".ipynb")])
        argv = extra
        results, times, budget = [], [], None
    elif argv[:1] == ["--rehearsals"]:
        argv = argv[1:]
        plan = groups(rehearsals=True)
        budget = HOSTED_BUDGET_S + REHEARSALS_BUDGET_S
        results, times = [], []
        jobs = parallel_jobs()  # the hosted rehearsal (the longest) beside the others
    else:
        plan = groups()
        budget = TOTAL_BUDGET_S  # ./course test; some paths only: none
        jobs = parallel_jobs()  # the unit tests and notebooks side by side
        results = [lint()]
        times = [("lint", time.perf_counter() - t)]
    with tempfile.TemporaryDirectory(prefix="tpu-course-tests-") as tmp:
        for name, rc, totals, seconds in run_plan(plan, argv, Path(tmp), jobs):
            times.append((name, seconds))
            results.append((name, rc, totals))
    code, line = verdict(results)
    print("\n" + line)
    print(time_line(times, budget, time.perf_counter() - t if jobs > 1 else None, jobs))
    return code



if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

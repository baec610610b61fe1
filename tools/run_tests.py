"""The whole test suite (./course test): unit tests and nbval over every notebook, in separate pytest processes.

TensorFlow and torch_xla abort a process that imports both, and pytest imports every test module into one
process. So the suite runs as three pytest processes: TensorFlow unit tests (tests/test_tf_*.py), PyTorch/XLA
unit tests (tests/test_torch_*.py), then everything else plus the notebooks (each notebook runs in its own
kernel). Extra arguments go to every pytest process. The closing line adds up all three.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBVAL = ["--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=1500",
         "--nbval-sanitize-with", "tests/nbval_sanitize.cfg"]


def groups() -> list[tuple[str, list[str]]]:
    tf = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_tf_*.py"))
    torch = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_torch_*.py"))
    rest = ["tests", "notebooks", "--ignore-glob=tests/test_tf_*.py", "--ignore-glob=tests/test_torch_*.py"]
    out = []
    if tf:
        out.append(("TensorFlow unit tests", tf))
    if torch:
        out.append(("PyTorch/XLA unit tests", torch))
    out.append(("other unit tests + notebooks (nbval)", rest))
    return out


def main(argv: list[str]) -> int:
    os.environ.setdefault("TPU_COURSE_PROFILE", "ci")
    os.environ.setdefault("TPU_COURSE_SOLUTIONS", "1")  # exercises run with the reference answers: every check must pass
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    worst = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, paths) in enumerate(groups()):
            junit = Path(tmp) / f"group{i}.xml"
            cmd = [sys.executable, "-m", "pytest", *NBVAL, *paths, f"--junitxml={junit}", *argv]
            print(f"\n=== {name}: {' '.join(paths)}", flush=True)
            start = time.perf_counter()
            rc = subprocess.call(cmd, cwd=ROOT)
            print(f"=== {name}: exit {rc} in {time.perf_counter() - start:.0f} s", flush=True)
            if rc not in (0, 5):  # 5: this group collected no test
                worst = max(worst, rc)
            if junit.exists():
                for suite in ET.parse(junit).getroot().iter("testsuite"):
                    for key in totals:
                        totals[key] += int(suite.get(key, 0))
    failed = totals["failures"] + totals["errors"]
    passed = totals["tests"] - failed - totals["skipped"]
    print(f"\n{passed} passed, {failed} failed, {totals['skipped']} skipped")
    if passed == 0 and not worst:
        return 5
    return worst or (1 if failed else 0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

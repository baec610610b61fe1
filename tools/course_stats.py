"""The figures of issue 37, counted the same way every time: ``./course python tools/course_stats.py``.

* package: lines of every ``.py`` file under tpu_helpers/ (what the learner's wheel holds), of them the lines
  generated from notebook cells tagged ``save`` (``lesson_cells.py``), and the exception classes defined;
* per notebook: code lines (install cell excluded) split into lesson (every other code cell), parameters, check
  (tagged ``check``) and exercise (``exercise`` / ``exercise-check``) cells; the lesson share is lesson lines over
  lesson + check + exercise lines; ``assert`` lines outside check cells; prose words before the closing detours
  (markdown before the first ``## Why?`` heading).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
DETOURS = re.compile(r"^## Why\?", re.M)


def package_figures(root: Path = ROOT) -> dict[str, int]:
    files = sorted((root / "tpu_helpers").rglob("*.py"))
    lines = {f: len(f.read_text(encoding="utf-8").splitlines()) for f in files}
    errors = sum(isinstance(n, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")).endswith(("Error", "Exception", "Failed"))
                                                     for b in n.bases)
                 for f in files for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))))
    return {"files": len(files), "lines": sum(lines.values()),
            "generated": sum(n for f, n in lines.items() if f.name == "lesson_cells.py"), "exception classes": errors}


def notebook_figures(path: Path) -> dict[str, int]:
    nb = nbformat.read(path, as_version=4)
    out = {"lesson": 0, "parameters": 0, "check": 0, "exercise": 0, "asserts outside checks": 0, "prose words": 0}
    prose_open = True
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell.cell_type == "markdown":
            if DETOURS.search(cell.source):
                prose_open = False
            if prose_open and "colab-badge.svg" not in cell.source:
                out["prose words"] += len(cell.source.split())
            continue
        if cell.cell_type != "code" or "install" in tags:
            continue
        n = len([line for line in cell.source.splitlines() if line.strip()])
        kind = ("parameters" if "parameters" in tags else "check" if "check" in tags
                else "exercise" if tags & {"exercise", "exercise-check"} else "lesson")
        out[kind] += n
        if kind != "check":
            out["asserts outside checks"] += len(re.findall(r"^\s*assert\b", cell.source, re.M))
    return out


def main() -> int:
    pkg = package_figures()
    print(f"tpu_helpers: {pkg['lines']:,} lines in {pkg['files']} files, {pkg['generated']:,} generated from "
          f"'save' cells, {pkg['exception classes']} exception classes")
    print(f"{'notebook':34s} {'lesson':>6s} {'check':>6s} {'exerc':>6s} {'share':>6s} {'asserts*':>8s} {'words':>6s}")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        f = notebook_figures(path)
        total = f["lesson"] + f["check"] + f["exercise"]
        print(f"{path.stem[:34]:34s} {f['lesson']:6d} {f['check']:6d} {f['exercise']:6d} "
              f"{f['lesson'] / max(total, 1):6.0%} {f['asserts outside checks']:8d} {f['prose words']:6d}")
    print("(*: assert lines outside cells tagged 'check'; exercise-check cells count among them)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

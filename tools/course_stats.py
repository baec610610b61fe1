"""The course's figures, counted the same way every time: ``./course python tools/course_stats.py``.

* package: lines of every ``.py`` file under tpu_helpers/ (what the learner's wheel holds), of them the lines
  generated from notebook cells tagged ``save`` (``lesson_cells.py``), and the exception classes defined;
* per notebook, code lines (install and parameters cells excluded): lesson (every other code cell), check (tagged
  ``check`` or ``measure``) and exercise (``exercise`` / ``exercise-check``); the lesson share is lesson lines over
  lesson + check + exercise lines;
* untagged measurement cells (`measurement_cells`): a code cell tagged none of `KINDS`, whose names later cells read only in
  cells tagged ``check`` or ``measure``: tag it ``measure`` (a cell tagged ``lesson`` is counted as lesson on
  purpose, and listed);
* save-cell imports of course internals (tools/lesson_cells.py, `internal_imports`);
* prose before the closing detours (markdown before the first ``## Why?`` heading, the badge cell excluded; `prose`):
  words, sentences, the mean sentence length and the share of sentences of at most 40 words.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import lesson_cells
import nbformat

ROOT = Path(__file__).resolve().parents[1]
DETOURS = re.compile(r"^## Why\?", re.M)
CHECKS = {"check", "measure"}
NOT_COUNTED = {"install", "parameters"}
KINDS = {"save", "script", "exercise", "exercise-check"} | CHECKS | NOT_COUNTED  # a cell with none of these is lesson by default
LONG_SENTENCE = 40
# what prose counting leaves out: fenced code, tables, list items, headings, images, HTML comments
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
SKIPPED_LINE = re.compile(r"^\s*(\||[-*+] |\d+\. |#)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(*_])")


def package_figures(root: Path = ROOT) -> dict[str, int]:
    files = sorted((root / "tpu_helpers").rglob("*.py"))
    lines = {f: len(f.read_text(encoding="utf-8").splitlines()) for f in files}
    errors = sum(isinstance(n, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")).endswith(("Error", "Exception", "Failed"))
                                                     for b in n.bases)
                 for f in files for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))))
    return {"files": len(files), "lines": sum(lines.values()),
            "generated": sum(n for f, n in lines.items() if f.name == "lesson_cells.py"), "exception classes": errors}


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _tree(source: str) -> ast.Module | None:
    """The cell's code without IPython magics and shell lines; None when it still does not parse."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def defined(tree: ast.Module) -> set[str]:
    """The names a cell binds at its top level (not inside its functions and classes)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
            return  # their variables stay inside them
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    return names


def read(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def measurement_cells(nb: nbformat.NotebookNode, include_lesson_tag: bool = False) -> list[int]:
    """Indexes of untagged code cells whose names later cells read only in check or measure cells (with
    ``include_lesson_tag``: also the cells tagged ``lesson`` that would be such cells)."""
    code = [(i, c, _tree(c.source)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    found = []
    for k, (i, cell, tree) in enumerate(code):
        tags = _tags(cell)
        if tree is None or tags & KINDS or ("lesson" in tags and not include_lesson_tag):
            continue
        names = defined(tree)
        readers = [c for _, c, t in code[k + 1:] if t is not None and read(t) & names]
        if readers and all(_tags(c) & CHECKS for c in readers):
            found.append(i)
    return found


def prose(nb: nbformat.NotebookNode) -> dict[str, float]:
    """Words and sentences of the markdown before ``## Why?`` (badges, code, tables, lists, headings left out)."""
    lengths = []
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "colab-badge.svg" in cell.source:
            continue
        if DETOURS.search(cell.source):
            break
        text = LINK.sub(r"\1", IMAGE.sub("", COMMENT.sub("", FENCE.sub("", cell.source))))
        kept = ["" if SKIPPED_LINE.match(line) else line for line in text.splitlines()]
        for paragraph in re.split(r"\n\s*\n", "\n".join(kept)):
            for sentence in SENTENCE_END.split(" ".join(paragraph.split())):
                if sentence.split():
                    lengths.append(len(sentence.split()))
    n = max(len(lengths), 1)
    return {"words": sum(lengths), "sentences": len(lengths), "mean": sum(lengths) / n,
            "short share": sum(x <= LONG_SENTENCE for x in lengths) / n}


def notebook_figures(path: Path, paths: list[Path] | None = None) -> dict[str, float]:
    nb = nbformat.read(path, as_version=4)
    out = {"lesson": 0, "check": 0, "exercise": 0, "asserts outside checks": 0}
    for cell in nb.cells:
        tags = _tags(cell)
        if cell.cell_type != "code" or tags & NOT_COUNTED:
            continue
        n = len([line for line in cell.source.splitlines() if line.strip()])
        kind = ("check" if tags & CHECKS else "exercise" if tags & {"exercise", "exercise-check"} else "lesson")
        out[kind] += n
        if "check" not in tags:
            out["asserts outside checks"] += len(re.findall(r"^\s*assert\b", cell.source, re.M))
    out["share"] = out["lesson"] / max(out["lesson"] + out["check"] + out["exercise"], 1)
    out["untagged measurement"] = len(measurement_cells(nb))
    out["lesson-tagged measurement"] = len(measurement_cells(nb, include_lesson_tag=True)) - out["untagged measurement"]
    earlier = lesson_cells.earlier_packages(paths or sorted(path.parent.glob("*.ipynb")), path)
    out["internal imports"] = len(lesson_cells.internal_imports(nb, set(earlier)))
    out.update(prose(nb))
    return out


def main() -> int:
    pkg = package_figures()
    print(f"tpu_helpers: {pkg['lines']:,} lines in {pkg['files']} files, {pkg['generated']:,} generated from "
          f"'save' cells, {pkg['exception classes']} exception classes")
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'notebook':32s} {'lesson':>6s} {'check':>6s} {'exerc':>5s} {'share':>5s} {'meas?':>5s} {'les*':>4s} "
          f"{'intern':>6s} {'words':>5s} {'sent':>4s} {'mean':>5s} {'<=40':>5s}")
    for path in paths:
        f = notebook_figures(path, paths)
        print(f"{path.stem[:32]:32s} {f['lesson']:6d} {f['check']:6d} {f['exercise']:5d} {f['share']:5.0%} "
              f"{f['untagged measurement']:5d} {f['lesson-tagged measurement']:4d} {f['internal imports']:6d} "
              f"{f['words']:5d} {f['sentences']:4d} {f['mean']:5.1f} {f['short share']:5.0%}")
    print("check: lines tagged check or measure; meas?: untagged cells whose names only checks read (tag them "
          "'measure');\nles*: such cells tagged 'lesson' on purpose; intern: save-cell imports of course internals; "
          "words/sent/mean/<=40:\nprose before 'Why?' (goal: mean <= 22 words, <=40 at least 90 %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

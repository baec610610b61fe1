"""One source for the code a lesson shows: cells tagged ``save`` become the lesson package's ``lesson_cells.py``.

A notebook cell tagged ``save`` holds definitions the learner reads and edits in the notebook (the training
function, the launch, a LightningModule) and that tests and benchmarks also need. ``./course links`` writes every
such cell of a notebook, in order, into ``tpu_helpers/<its lesson package>/lesson_cells.py``, a generated module that
names the cell each definition comes from; ``./course links --check`` (a test) fails while the module and the cells
differ. Tests and benchmarks import the definitions from there: nothing holds a hand copy (d2l's ``#@save`` and
nbdev's "File to edit" do the same). A saved cell must define things only (imports, functions, classes,
constants), so importing the module runs nothing.

A saved cell imports public libraries and earlier lessons' ``lesson_cells`` only (`internal_imports`), so a learner
can take it home. A notebook whose metadata names an ``example`` is also written to ``examples/<example>.py``: the
same cells as a script a learner runs on a TPU VM, where an earlier lesson's ``lesson_cells`` import becomes that
lesson's script beside it (a lesson that nothing imports, its metadata saying ``"lesson_module": false``, goes home
as its script only: it has no ``lesson_cells.py``). Its ``main()`` stands in a cell tagged ``script``: a saved cell that goes into the script
only (an entry point has no place in the wheel's module; nothing imports it).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SAVE_TAG = "save"
SCRIPT_TAG = "script"  # a saved cell for the example script only: its main()
MODULE = "lesson_cells.py"
EXAMPLES = ROOT / "examples"
NUMBER = re.compile(r"^(\d+)_")
ALLOWED = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr)


class LessonCellError(ValueError):
    """A cell tagged ``save`` cannot become module code; the message says why."""


def saved_cells(nb: nbformat.NotebookNode, script: bool = False) -> list[tuple[int, nbformat.NotebookNode]]:
    """(index, cell) of every code cell tagged ``save`` (with ``script``: or ``script``), in notebook order."""
    tags = {SAVE_TAG, SCRIPT_TAG} if script else {SAVE_TAG}
    return [(i, c) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and tags & set(c.get("metadata", {}).get("tags", []))]


def definitions(source: str) -> list[str]:
    """The top-level function and class names a saved cell defines; raises `LessonCellError` when the cell does
    anything else than define (a call, a loop, a ``with``: importing the module would run it)."""
    names = []
    for node in ast.parse(source).body:
        if not isinstance(node, ALLOWED) or (isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant)):
            raise LessonCellError(f"line {node.lineno}: a cell tagged '{SAVE_TAG}' may only import and define "
                                  f"(found {type(node).__name__}); move the rest into a cell of its own")
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
    return names


def module_path(nb: nbformat.NotebookNode, root: Path = ROOT) -> Path:
    package = nb.metadata["tpu_course"]["package"]  # e.g. tpu_helpers.banking77
    return root.joinpath(*package.split(".")) / MODULE


def section_of(nb: nbformat.NotebookNode, index: int) -> str:
    """The heading of the notebook section that holds cell ``index`` (the last ``#`` heading above it)."""
    for cell in reversed(nb.cells[:index]):
        if cell.cell_type == "markdown":
            heading = [ln.lstrip("#").strip() for ln in cell.source.splitlines() if ln.startswith("#")]
            if heading:
                return heading[-1]
    return ""


def _cell_parts(nb: nbformat.NotebookNode, notebook_name: str, script: bool = False) -> list[str]:
    parts = []
    for index, cell in saved_cells(nb, script):
        try:
            names = definitions(cell.source)
        except (LessonCellError, SyntaxError) as error:
            raise LessonCellError(f"{notebook_name}, cell {index}: {error}") from None
        tags = ", ".join(t for t in cell.metadata.get("tags", []) if t != SAVE_TAG)
        section = section_of(nb, index)
        parts.append(f"\n\n# ---- notebooks/{notebook_name}, cell {index}" + (f" (tagged {tags})" if tags else "")
                     + (f": {', '.join(names)}" if names else "") + "\n"
                     + (f"# in the section \"{section}\"\n" if section else "") + cell.source.rstrip() + "\n")
    return parts


def render(nb: nbformat.NotebookNode, notebook_name: str) -> str | None:
    """The text of the notebook's ``lesson_cells.py``, or None when no cell is tagged ``save`` or the notebook's
    metadata says ``"lesson_module": false`` (its lesson goes home as its example script, and nothing imports it)."""
    if not saved_cells(nb) or nb.metadata.get("tpu_course", {}).get("lesson_module") is False:
        return None
    return "".join([f'''"""Code that notebook {notebook_name} shows in its cells tagged ``{SAVE_TAG}``, for tests, benchmarks and scripts.

GENERATED by ./course links from notebooks/{notebook_name}: do not edit.
Edit the cells in the notebook, then run ./course links (a test fails while this file and the cells differ).
"""
# ruff: noqa: E402, F401, F811, I001  (the cells' own imports, cell by cell, as the learner reads them)
''', *_cell_parts(nb, notebook_name)])


def internal_imports(nb: nbformat.NotebookNode, earlier: set[str]) -> list[str]:
    """The imports of ``tpu_helpers`` in saved cells other than an earlier lesson's ``lesson_cells`` (``earlier``:
    the packages of the notebooks before this one), as "cell N: module"."""
    found = []
    for index, cell in saved_cells(nb, script=True):
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for module in modules:
                if module.split(".")[0] == "tpu_helpers" and not (
                        isinstance(node, ast.ImportFrom) and module.endswith(".lesson_cells")
                        and module.rsplit(".", 1)[0] in earlier):
                    found.append(f"cell {index}: {module}")
    return found


def earlier_packages(paths: list[Path], path: Path) -> dict[str, str]:
    """{package: example name or ""} of the notebooks numbered before ``path``."""
    number = int(NUMBER.match(path.name).group(1))
    out = {}
    for p in paths:
        if int(NUMBER.match(p.name).group(1)) < number:
            course = nbformat.read(p, as_version=4).metadata.get("tpu_course", {})
            if course.get("package"):
                out[course["package"]] = course.get("example", "")
    return out


def render_example(nb: nbformat.NotebookNode, notebook_name: str, earlier: dict[str, str]) -> str | None:
    """The text of ``examples/<example>.py``, or None when the notebook names no example."""
    name = nb.metadata.get("tpu_course", {}).get("example")
    if not name:
        return None
    parts = _cell_parts(nb, notebook_name, script=True)
    if not any("main" in definitions(c.source) for _, c in saved_cells(nb, script=True)):
        raise LessonCellError(f"{notebook_name} names the example {name!r} but no cell tagged '{SCRIPT_TAG}' defines "
                              "main(argv=None): add one (argparse, the sizes as flags)")
    problems = internal_imports(nb, set(earlier))
    if problems:
        raise LessonCellError(f"{notebook_name}: a saved cell imports course internals ({'; '.join(problems)}): the "
                              "script must run without tpu_helpers")

    def local(match: re.Match) -> str:
        example = earlier[match.group(1)]
        if not example:
            raise LessonCellError(f"{notebook_name} imports {match.group(1)}.lesson_cells, whose notebook names no "
                                  "example: give it one (metadata tpu_course.example)")
        return f"from {example} import"
    body = re.sub(r"from (tpu_helpers(?:\.\w+)+)\.lesson_cells import", local, "".join(parts))
    title = next((ln.lstrip("# ").strip() for c in nb.cells if c.cell_type == "markdown"
                  for ln in c.source.splitlines() if ln.startswith("# ")), notebook_name)
    return (f'''"""{title}: notebook {notebook_name}'s lesson as a script.

    python {name}.py --help

GENERATED by ./course links from the cells tagged ``{SAVE_TAG}`` or ``{SCRIPT_TAG}`` in notebooks/{notebook_name}: do not edit.
It needs the notebook's public libraries only (not tpu_helpers); an earlier lesson it builds on is its script here.
"""
# ruff: noqa: E402, F401, F811, I001  (the cells' own imports, cell by cell, as the learner reads them)
''' + body + '\n\nif __name__ == "__main__":\n    main()\n')


def stale_modules(paths: list[Path], write: bool, root: Path = ROOT) -> list[str]:
    """The generated modules and examples that differ from their notebooks' cells (rewritten when ``write``)."""
    stale = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        targets = [(module_path(nb, root), render(nb, path.name))]
        name = nb.metadata.get("tpu_course", {}).get("example")
        if name:
            targets.append((root / "examples" / f"{name}.py",
                            render_example(nb, path.name, earlier_packages(paths, path))))
        for target, text in targets:
            if text is None:
                if target.name == MODULE and target.exists():  # a module this tool generated, no longer wanted
                    stale.append(str(target.relative_to(root)))
                    if write:
                        target.unlink()
                continue
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(str(target.relative_to(root)))
                if write:
                    target.parent.mkdir(exist_ok=True)
                    tmp = target.with_name(f".{target.name}.tmp")
                    tmp.write_text(text, encoding="utf-8")
                    tmp.replace(target)  # atomic
    return stale

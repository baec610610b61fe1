"""One source for the code lessons show (tools/lesson_cells.py): cells tagged ``save`` are generated into their lesson
package's ``lesson_cells.py``, and no test, benchmark or package module holds a hand copy of a notebook cell's code.
"""
import ast
import difflib
from pathlib import Path

import lesson_cells  # tools/ is on sys.path (tests/conftest.py)
import nbformat
import pytest
from course_testing import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CODE_FOLDERS = ("tpu_helpers", "tests", "benchmarks")


def defined_names(source: str) -> dict[str, str]:
    """Every function and class defined anywhere in ``source`` (nested too): name -> its source text."""
    tree = ast.parse(source)
    return {n.name: ast.get_source_segment(source, n) or "" for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def notebook_definitions() -> dict[str, tuple[str, str]]:
    """name -> (notebook, source) of the functions and classes the notebooks' cells define (exercise skeletons,
    whose reference answers live in solutions.py by design, left out)."""
    out = {}
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or "exercise" in cell.metadata.get("tags", []):
                continue
            try:
                found = defined_names(cell.source)
            except SyntaxError:  # IPython magics: not Python, no definitions to copy
                continue
            out.update({name: (path.name, src) for name, src in found.items()})
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_generated_module_is_the_notebooks_saved_cells(path):
    nb = nbformat.read(path, as_version=4)
    text = lesson_cells.render(nb, path.name)
    if text is None:
        assert not lesson_cells.module_path(nb).exists(), "a lesson_cells.py whose notebook saves no cell"
        return
    assert lesson_cells.module_path(nb).read_text(encoding="utf-8") == text, "run ./course links"


def test_a_saved_cell_may_only_define():
    assert lesson_cells.definitions("import os\nX = 1\n\n\ndef f():\n    return os\n") == ["f"]
    with pytest.raises(lesson_cells.LessonCellError, match="may only import and define"):
        lesson_cells.definitions("def f():\n    pass\n\n\nf()\n")


def code_lines(source: str) -> list[str]:
    """The lines that carry code: stripped, without blank lines, comments and docstring lines."""
    quotes = ('"' * 3, "'" * 3)
    return [s for s in (line.strip() for line in source.splitlines())
            if s and not s.startswith(("#",) + quotes) and not s.endswith(quotes)]


def copied_share(cell_def: str, candidate: str) -> float:
    """The share of a cell definition's code lines that appear, in order, in ``candidate``."""
    a, b = code_lines(cell_def), code_lines(candidate)
    matched = sum(m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return matched / len(a) if a else 0.0


def hand_copies(files: list[Path], cells: dict[str, tuple[str, str]], threshold: float = 0.7) -> list[str]:
    """Definitions in ``files`` that hold most of a notebook cell's definition (one of 5 code lines or more)."""
    found = []
    for path in files:
        for name, src in defined_names(path.read_text(encoding="utf-8")).items():
            for cell_name, (notebook, cell_src) in cells.items():
                if len(code_lines(cell_src)) >= 5 and copied_share(cell_src, src) >= threshold:
                    found.append(f"{path.relative_to(ROOT)}: {name} copies {cell_name} of {notebook}")
    return found


def test_no_test_benchmark_or_package_module_holds_a_copy_of_a_notebook_cells_code():
    files = [p for folder in CODE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))
             if p.name not in (lesson_cells.MODULE, "solutions.py")]  # generated; exercise answers
    copies = hand_copies(files, notebook_definitions())
    assert not copies, ("hand copies of notebook code (tag the cell 'save' and import it from the lesson package's "
                        "lesson_cells.py instead):\n" + "\n".join(copies))


def test_the_copy_finder_finds_a_renamed_copy_with_comments(tmp_path):
    cells = notebook_definitions()
    _, source = cells["evaluate"]
    probe = ROOT / "tests" / "common" / "tools" / "_copy_probe_tmp.py"
    probe.write_text(source.replace("def evaluate(", "def my_eval(").replace(
        "    model.eval()", "    # a comment\n    model.eval()"), encoding="utf-8")
    try:
        assert any("my_eval copies evaluate" in c for c in hand_copies([probe], cells))
    finally:
        probe.unlink()


def test_nothing_outside_tools_reads_a_notebook_cell_to_run_it():
    readers = []
    for folder in CODE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "exec(compile(" in text and ".cells" in text:
                readers.append(str(path.relative_to(ROOT)))
    allowed = {
        "tests/common/tools/test_lesson_cells.py",  # this file (it names the pattern)
        "tests/common/tools/test_install_plans.py",  # runs the generated install cells as Colab would
        "tests/torch/trainers/test_replicas.py",  # notebook 07's claims cell, run on what a test's DDP processes wrote
    }
    assert set(readers) <= allowed, sorted(set(readers) - allowed)


def test_save_cells_import_only_public_libraries_and_earlier_lessons():
    found = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        earlier = lesson_cells.earlier_packages(NOTEBOOKS, path)
        found += [f"{path.name}, {p}" for p in lesson_cells.internal_imports(nb, set(earlier))]
    assert not found, ("cells tagged 'save' import course internals (a learner's copy would fail without the course): "
                       "pass course-only behaviour in from outside or move it to a check cell\n" + "\n".join(found))


def test_an_internal_import_is_found_and_an_earlier_lesson_is_allowed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from tpu_helpers.banking77.lesson_cells import evaluate\nfrom tpu_helpers.core import claims\n"
        "import tpu_helpers.shared.boundaries\n", metadata={"tags": ["save"]})])
    assert lesson_cells.internal_imports(nb, {"tpu_helpers.banking77"}) == [
        "cell 0: tpu_helpers.core", "cell 0: tpu_helpers.shared.boundaries"]
    assert len(lesson_cells.internal_imports(nb, set())) == 3


def test_an_example_runs_the_earlier_lessons_script_and_its_main_stays_out_of_the_module():
    saved = nbformat.v4.new_code_cell("from tpu_helpers.a.lesson_cells import f\n\n\ndef g():\n    f()\n",
                                      metadata={"tags": ["save"]})
    entry = nbformat.v4.new_code_cell("def main(argv=None):\n    g()\n", metadata={"tags": ["script"]})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# B"), saved, entry],
                                  metadata={"tpu_course": {"package": "tpu_helpers.b", "example": "b_script"}})
    text = lesson_cells.render_example(nb, "02_b.ipynb", {"tpu_helpers.a": "a_script"})
    assert "from a_script import f" in text and "from tpu_helpers" not in text and text.endswith("    main()\n")
    assert "def g()" in text and "def main(" in text
    module = lesson_cells.render(nb, "02_b.ipynb")
    assert "def g()" in module and "def main(" not in module  # an entry point has no place in the wheel
    with pytest.raises(lesson_cells.LessonCellError, match="names no example"):
        lesson_cells.render_example(nb, "02_b.ipynb", {"tpu_helpers.a": ""})
    entry.source = "import os\n"
    with pytest.raises(lesson_cells.LessonCellError, match="defines main"):
        lesson_cells.render_example(nb, "02_b.ipynb", {"tpu_helpers.a": "a_script"})

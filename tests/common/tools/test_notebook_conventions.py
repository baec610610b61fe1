"""Every notebook follows the course's conventions, and colab_links.md is current."""
import os
import re
import subprocess
import sys

import nbformat
import notebook_conventions as nc
import pytest
from course_testing import ROOT

NOTEBOOKS = nc.notebook_paths()


def test_there_are_notebooks_numbered_without_gaps():
    assert NOTEBOOKS, "notebooks/ is empty"
    assert nc.numbering_problems(NOTEBOOKS) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_conventions(path):
    assert nc.problems(path) == []


def test_conventions_catch_violations(tmp_path):
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", text="hi")] if nb.cells[2].cell_type == "code" else []
    for c in nb.cells:
        c.metadata.pop("tags", None) if "parameters" in c.metadata.get("tags", []) else None
    nb.metadata["widgets"] = {}
    bad = tmp_path / "7_Bad.ipynb"
    nbformat.write(nb, bad)
    found = " | ".join(nc.problems(bad))
    for expected in ("NN_slug", "parameters", "metadata keys", "badge"):
        assert expected in found, found
    assert nc.numbering_problems([tmp_path / "00_a.ipynb", tmp_path / "02_b.ipynb"])


def test_links_file_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "make_links.py"), "--check"],  # as ./course runs it
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONSAFEPATH=""))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (ROOT / "colab_links.md").read_text()
    for path in NOTEBOOKS:
        assert nc.colab_url(path.name) in text and nc.kaggle_url(path.name) in text


def test_install_cell_pins_match_requirements():
    """Each framework's install cell carries that framework's pins (TensorFlow: transformers 4.57; torch: 5)."""
    from install_plan import read_pins
    tf, torch = read_pins("tf"), read_pins("torch")
    tf_cell, torch_cell = nc.install_source("tf"), nc.install_source("torch")
    assert f"tensorflow-tpu=={tf['tensorflow-cpu']}" in tf_cell and f"transformers=={tf['transformers']}" in tf_cell
    assert f"torch_xla[tpu]=={torch['torch-xla']}" in torch_cell and f"accelerate=={torch['accelerate']}" in torch_cell
    assert f"transformers=={torch['transformers']}" in torch_cell and tf["transformers"] != torch["transformers"]


def test_readme_maps_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert path.name in readme, f"README.md's notebook map misses {path.name}"


def test_core_and_shared_import_no_framework():
    assert nc.framework_free_problems() == []


def test_package_link_catches_a_broken_package(tmp_path):
    pkg = tmp_path / "tpu_helpers" / "lesson"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('FRAMEWORK = "tf"\nNOTEBOOK = "09_other"\n')
    (pkg / "exercise_checks.py").write_text("def check(): import torch_xla\n")  # a lazy import counts too
    found = " | ".join(nc.package_problems("tpu_helpers.lesson", "torch", "09_lesson", "import os", root=tmp_path))
    for expected in ("FRAMEWORK is 'tf'", "NOTEBOOK is '09_other'", "no solutions.py", "import its exercise checks"):
        assert expected in found, found
    found = " | ".join(nc.package_problems("tpu_helpers.lesson", "tf", "09_other",
                                           "from tpu_helpers.lesson import exercise_checks as c", root=tmp_path))
    assert "imports torch_xla: a tf package must not" in found, found
    assert nc.package_problems("tpu_helpers.nowhere", "tf", "x", "", root=tmp_path)[0].endswith("not a package of tpu_helpers/")
    assert "must name" in nc.package_problems(None, "tf", "x", "")[0]


def test_every_lesson_package_belongs_to_one_notebook():
    named = [nbformat.read(p, as_version=4).metadata["tpu_course"]["package"] for p in NOTEBOOKS]
    assert len(set(named)) == len(named), named
    lessons = {f"tpu_helpers.{p.name}" for p in (ROOT / "tpu_helpers").iterdir()
               if (p / "exercise_checks.py").exists() or (p / "solutions.py").exists()}
    assert lessons == set(named), lessons ^ set(named)


def test_learner_cells_link_repository_files_on_github_not_by_relative_path():
    """A notebook opened on Colab has no checkout: files of the course are linked at the notebook's tag, and a
    fork's `./course links` re-points them."""
    for path in nc.notebook_paths():
        for cell in nbformat.read(path, as_version=4).cells:
            assert "](../" not in cell.source, (path.name, cell.source[:80])
            for m in re.finditer(r"https://github\.com/([\w.-]+/[\w.-]+)/blob/(v[\w.]+)/(tpu_helpers|tests|docs)/",
                                 cell.source):
                assert (m.group(1), m.group(2)) == (nc.GITHUB_REPO, nc.REVISION), (path.name, m.group(0))
    assert nc.retag_repo_links("[x](https://github.com/a/b/blob/v0.1.0/tests/t.py)", "me/fork") == \
        f"[x](https://github.com/me/fork/blob/{nc.REVISION}/tests/t.py)"


def test_readme_and_notebook_03_give_one_tpu_vm_recipe():
    """One source (notebook_conventions.tpu_vm_recipe): README's block and notebook 03's are the same commands,
    with `./course setup --tpu` (one environment per framework), never a second TensorFlow in one environment."""
    recipe = nc.tpu_vm_recipe()
    readme = (ROOT / "README.md").read_text()
    nb03 = next(p for p in nc.notebook_paths() if p.name.startswith("03_"))
    cell = next(c for c in nbformat.read(nb03, as_version=4).cells if nc.RECIPE_TAG in c.metadata.get("tags", []))
    assert f"```bash\n{recipe}\n```" in readme and f"```bash\n{recipe}\n```" in cell.source
    assert "./course setup --tpu" in recipe and "pip install tensorflow-tpu" not in recipe
    assert f"git checkout {nc.REVISION}" in recipe and "tpu-vm delete" in recipe


def test_lesson_problems_find_asserts_outside_checks_and_or_defaults_in_code_only():
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("BATCH_SIZE = None  # per device; None: per profile")
    params.metadata["tags"] = ["parameters"]
    lesson = nbformat.v4.new_code_cell("batch = BATCH_SIZE or 32\nassert batch > 0")
    message = nbformat.v4.new_code_cell('raise ValueError("lower BATCH_SIZE or use more data")  # BATCH_SIZE or not')
    check = nbformat.v4.new_code_cell("with Claims('1') as claim:\n    assert True")
    check.metadata["tags"] = ["check"]
    asserted = nbformat.v4.new_code_cell("#@title Check\nwith Claims('2') as c:\n    c('x', 1)\nassert c.passed, c.why")
    asserted.metadata["tags"] = ["check"]
    nb.cells = [params, lesson, message, check, asserted]
    found = nc.lesson_problems(nb)
    assert found == ["cell 1 asserts but is not tagged 'check' or 'exercise-check': fold the claim into the section's "
                     "check cell",
                     "cell 1 resolves BATCH_SIZE with 'or': use profiles.param(...) (None is the default, anything "
                     "else is checked)",
                     "cell 3 is tagged 'check' but does not start with a '#@title ...' line",
                     "cell 3: the 'with Claims(...) as claim:' block is not followed by "
                     "'assert claim.passed, claim.why'"]

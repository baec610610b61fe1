"""Every notebook follows the course's conventions, and colab_links.md is current."""
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT
import notebook_conventions as nc

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
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "make_links.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (ROOT / "colab_links.md").read_text()
    for path in NOTEBOOKS:
        assert nc.colab_url(path.name) in text and nc.kaggle_url(path.name) in text


def test_install_cell_pins_match_requirements():
    from install_plan import read_pins
    pins = read_pins(ROOT / "requirements.txt")
    tf_cell, torch_cell = nc.install_source("tf"), nc.install_source("torch")
    assert f"tensorflow-tpu=={pins['tensorflow']}" in tf_cell and f"transformers=={pins['transformers']}" in tf_cell
    assert f"torch_xla[tpu]=={pins['torch-xla']}" in torch_cell and f"accelerate=={pins['accelerate']}" in torch_cell


def test_readme_maps_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in NOTEBOOKS:
        assert path.name in readme, f"README.md's notebook map misses {path.name}"

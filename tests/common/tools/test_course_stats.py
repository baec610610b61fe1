"""The figures the course holds itself to (tools/course_stats.py): measurement folded with its checks, at least half
of every notebook's code is lesson, and the prose before "Why?" reads in one pass."""

import course_stats  # tools/ is on sys.path (tests/conftest.py)
import nbformat
import pytest
from course_testing import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def cell(source: str, *tags: str):
    return nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {})


def test_a_cell_whose_names_only_checks_read_is_a_measurement_cell():
    nb = nbformat.v4.new_notebook(cells=[
        cell("model = make()"), cell("seconds = time_it(model)"), cell("import json\nfit(model)"),
        cell("assert seconds < 1", "check"), cell("%time fit(model)"), cell("ms = 1", "lesson"),
        cell("print(ms)", "check")])
    assert course_stats.measurement_cells(nb) == [1]
    assert course_stats.measurement_cells(nb, include_lesson_tag=True) == [1, 5]


def test_prose_leaves_out_code_tables_lists_and_headings_and_ends_at_why():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\nOne two three. Four [five](http://x) six!\n\n- a list item\n"
                                      "| a | table |\n```\ncode here\n```\nSeven eight"),
        nbformat.v4.new_markdown_cell("## Why?\nNot counted at all.")])
    assert course_stats.prose(nb) == {"words": 8, "sentences": 3, "mean": 8 / 3, "short share": 1.0}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_measurement_is_tagged_and_folded_with_its_check(path):
    nb = nbformat.read(path, as_version=4)
    assert course_stats.measurement_cells(nb) == [], (
        "cells whose names only check cells read: tag them 'measure' (folded with their check)")


# below half on purpose, with the reason: the one exception, listed in the closing table of the course's figures
PROOF_HEAVY = {"06_pytorch_xla_under_the_hood": "its lessons are runs the detective reads (planted pitfalls, the "
               "all-reduce on N replicas, the persistent cache in a child): about 2/3 of its code only feeds checks"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_at_least_half_of_the_code_is_lesson(path):
    share = course_stats.notebook_figures(path, NOTEBOOKS)["share"]
    assert share >= 0.5 or (path.stem in PROOF_HEAVY and share >= 0.3), f"{share:.0%} of the code is lesson"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_prose_before_why_reads_in_one_pass(path):
    f = course_stats.prose(nbformat.read(path, as_version=4))
    assert f["mean"] <= 22 and f["short share"] >= 0.9, (
        f"{f['mean']:.1f} words per sentence (goal <= 22), {f['short share']:.0%} of sentences <= 40 words (goal >= 90 %)")

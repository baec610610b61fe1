"""Red output: every stderr line is explained by tools/known_stderr.py or reported, by nbval's plugin and ./course run."""
import re

import known_stderr
import nbformat
import pytest
import run_course
import stderr_check
from stderr_check import explanation, messages, unexplained


def test_a_stderr_text_splits_into_messages_with_their_indented_continuations():
    warning = "/x/torch_xla/__init__.py:246: UserWarning: careful\n  warnings.warn(\n"
    assert messages(warning + "next\n\n") == ["/x/torch_xla/__init__.py:246: UserWarning: careful\n  warnings.warn(",
                                              "next"]
    bar = "\rstrategies:   0%|          | 0/6 [00:00<?, ?it/s]\rstrategies: 100%|██████████| 6/6 [00:11<00:00,  1.87s/it]"
    assert messages(bar) == ["strategies:   0%|          | 0/6 [00:00<?, ?it/s]",
                             "strategies: 100%|██████████| 6/6 [00:11<00:00,  1.87s/it]"]


@pytest.mark.parametrize("entry", known_stderr.KNOWN, ids=lambda k: k.pattern[:40])
def test_each_entry_explains_its_example_and_says_why(entry):
    re.compile(entry.pattern)
    assert explanation(entry.example) is entry, "the entry explains the line it was written for (no earlier entry)"
    assert entry.why.strip() and entry.learner.strip()


def test_progress_bars_are_explained_and_anything_new_is_not():
    assert unexplained(["\rMap: 100%|██████████| 1000/1000 [00:00<00:00, 12345.67 examples/s]",
                        "Map: 1000 examples [00:00, 1234.5 examples/s]\n"]) == []
    new = ["Traceback (most recent call last):", "RuntimeError: something broke", "WARNING:root:a new warning",
           "released at [12:30]", "/x/y.py:3: DeprecationWarning: a new one"]
    assert unexplained(["\n".join(new) + "\n  warnings.warn(\n"]) == new


def executed_notebook(path):
    """An executed notebook's shape: a markdown cell, then code cells with stderr and stdout outputs."""
    stream = nbformat.v4.new_output
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("x = 1", outputs=[stream("stream", name="stdout", text="WARNING: on stdout\n")]),
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("y = 2", outputs=[
            stream("stream", name="stderr", text=known_stderr.KNOWN[0].example + "\r"),
            stream("stream", name="stderr", text=["Something new went wrong\n", "  at line 3\n"])]),
    ])
    nbformat.write(nb, path)
    return path


def test_course_run_lists_the_unexplained_lines_of_an_executed_notebook(tmp_path):
    path = executed_notebook(tmp_path / "05_x.ipynb")
    assert stderr_check.unexplained_in_notebook(path) == [stderr_check.Finding("05_x.ipynb", 1, "Something new went wrong")]
    flags = run_course.stderr_flags([path, tmp_path / "missing.ipynb"])
    assert "1 line(s)" in flags and "05_x.ipynb Cell 1: Something new went wrong" in flags
    clean = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("z = 3")])
    nbformat.write(clean, tmp_path / "06_y.ipynb")
    assert run_course.stderr_flags([tmp_path / "06_y.ipynb"]).endswith("every line explained (tools/known_stderr.py)")


def test_the_summary_counts_messages_and_names_listed_lines_still_seen():
    listed = known_stderr.KNOWN[1]
    pending = known_stderr.Known(listed.pattern, listed.example, listed.why, listed.learner, until="a fix")
    records = [{"notebook": "01_a.ipynb", "cell": 2, "messages": [{"text": pending.example,
                                                                   "explained_by": pending.pattern}]},
               {"notebook": "02_b.ipynb", "cell": 5, "messages": [{"text": "new", "explained_by": None}]}]
    summary = stderr_check.stderr_summary(records, (pending,))
    assert summary.startswith("stderr (red output): 2 messages in 2 notebooks, 1 unexplained (failed cells: "
                              "02_b.ipynb Cell 5)")
    assert pending.until in summary

"""pytest plugin (``-p nbval_stderr``, see `stderr_check.pytest_command`): an nbval cell whose stderr holds a line
``tools/known_stderr.py`` does not explain fails, naming the notebook, the cell and the line.

nbval keeps the outputs of the cell it ran on the test item (``IPyNbCell.test_outputs``: stream outputs with their
``name``, coalesced per stream); the check runs on the report of the cell's call, after nbval's own. A cell that
failed already keeps its own failure. ``--stderr-report PATH`` also writes every cell's stderr messages, each with
the entry that explained it (or none), to a JSON file: ``./course test`` prints its summary.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from stderr_check import explanation, failure_message, messages

_RECORDS = pytest.StashKey[list]()


def pytest_addoption(parser):
    parser.addoption("--stderr-report", default=None, metavar="PATH",
                     help="write each notebook cell's stderr messages and their explanations to this JSON file")


def pytest_configure(config):
    config.stash[_RECORDS] = []


def cell_stderr_texts(item) -> list[str] | None:
    """The stderr stream texts nbval kept for the cell it ran; None for an item that is not an nbval cell."""
    outputs = getattr(item, "test_outputs", None)
    if outputs is None or not hasattr(item, "cell_num"):
        return None
    return [o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    texts = cell_stderr_texts(item) if call.when == "call" else None
    if texts is None:
        return report
    notebook = Path(str(item.fspath)).name
    found = [(m, explanation(m)) for t in texts for m in messages(t)]
    item.config.stash[_RECORDS].append({"notebook": notebook, "cell": item.cell_num, "messages": [
        {"text": m, "explained_by": k.pattern if k else None} for m, k in found]})
    bad = [m.split("\n", 1)[0] for m, k in found if k is None]
    if bad and report.passed:
        report.outcome = "failed"
        report.longrepr = failure_message(notebook, item.cell_num, bad)
    return report


def pytest_sessionfinish(session):
    path = session.config.getoption("stderr_report")
    if path:
        Path(path).write_text(json.dumps(session.config.stash[_RECORDS], indent=1), encoding="utf-8")

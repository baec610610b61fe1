"""Fixtures of the banking77 tests."""
from __future__ import annotations

import pytest


def _evaluate_as_notebook_05(accelerator, model, eval_dl, n_rows: int):
    """Notebook 05's own evaluation (``evaluate`` in its cell tagged ``training-function``, generated into
    `tpu_helpers.banking77.lesson_cells`): predictions and labels of every test row, exactly once. It gathers with ``accelerator.gather``, never ``gather_for_metrics``
    (which loses rows on XLA: the "Why gather?" section of notebook 05, and test_evaluation.py)."""
    import contextlib

    from tpu_helpers.banking77.lesson_cells import evaluate

    return evaluate(accelerator, model, eval_dl, n_rows, contextlib.nullcontext())


@pytest.fixture
def evaluate_as_notebook_05():
    return _evaluate_as_notebook_05

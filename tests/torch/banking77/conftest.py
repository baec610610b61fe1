"""Fixtures of the banking77 tests."""
from __future__ import annotations

import pytest


def _evaluate_as_notebook_05(accelerator, model, eval_dl, n_rows: int):
    """The evaluation loop of notebook 05's training function (its ``training-function`` cell), line for line,
    ending the way ``RunLog.end_epoch`` does (`rows_on_host`): predictions and labels of every test row, exactly
    once. `test_train.test_the_notebook_shows_the_training_function_...` checks that the cell still reads this way.
    It gathers with ``accelerator.gather``, never ``gather_for_metrics`` (which loses rows on XLA: the
    "Why gather?" section of notebook 05, and test_evaluation.py)."""
    import torch

    from tpu_helpers.banking77.evaluation import rows_on_host

    model.eval()
    gathered = []
    for batch in eval_dl:
        with torch.no_grad():
            predictions = model(**batch).logits.argmax(dim=-1)
        gathered.append(accelerator.gather((predictions, batch["labels"])))
    return rows_on_host(gathered, n_rows)


_evaluate_as_notebook_05.cell_lines = (  # what the notebook's cell must still say for this copy to be it"predictions = model(**batch).logits.argmax(dim=-1)",
                       'gathered.append(accelerator.gather((predictions, batch["labels"])))',
                       "log.end_epoch(gathered)")


@pytest.fixture
def evaluate_as_notebook_05():
    return _evaluate_as_notebook_05

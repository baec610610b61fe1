"""Notebook 07's IntentClassifier on a v5e-8's schedule compiles after epoch 1 only at an epoch's first step
(XLA:CPU, a tiny BERT, ``schedule_run.py`` in a process of its own): its ``configure_optimizers`` makes AdamW
capturable with the learning rate a device tensor (notebook 05's option c, issue 49), so the last steps, where AdamW's
``1 - lr * 0.01`` is 1.0 in float32, run the epoch's graph. The control run (a float learning rate, torch's default)
compiles at the last step. About 3 minutes for both runs on a loaded 2-core machine."""
from pathlib import Path

import pytest
from course_testing import run_json_script

pytest.importorskip("torch_xla")
pytest.importorskip("lightning")
SCRIPT = Path(__file__).with_name("schedule_run.py")


def _run(mode: str) -> dict:
    return run_json_script(SCRIPT, mode, drop=("XLA_NO_SPECIAL_SCALARS", "PJRT_DEVICE"))


def test_after_epoch_1_only_an_epochs_first_step_compiles_and_not_with_a_float_learning_rate():
    course, control = _run("course"), _run("float-lr")
    last = course["steps"] - 1
    assert last in course["factor_one_steps"] and last not in course["epoch_first_steps"], course
    assert set(course["compiled_after_epoch_1"]) <= set(course["epoch_first_steps"]), course
    assert set(control["compiled_after_epoch_1"]) & set(control["factor_one_steps"]), \
        f"the control run compiled no graph where the factor turned 1.0: {control}"

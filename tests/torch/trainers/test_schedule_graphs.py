"""Notebook 07's IntentClassifier on the `tpu` profile's schedule compiles after epoch 1 only at an epoch's first
step (XLA:CPU, a tiny BERT, ``schedule_run.py`` in a process of its own): its ``on_fit_start`` makes every scalar a
graph input (`tpu_helpers.xla_torch.scalars`), so the last step, where AdamW's ``1 - lr * 0.01`` is 1.0 in float32,
runs the epoch's graph. The control run keeps ``XLA_NO_SPECIAL_SCALARS=1`` without that hook: the last step
compiles. About 3 minutes for both runs on a loaded 2-core machine."""
from pathlib import Path

import pytest
from course_testing import run_json_script

pytest.importorskip("torch_xla")
pytest.importorskip("lightning")
SCRIPT = Path(__file__).with_name("schedule_run.py")


def _run(mode: str) -> dict:
    return run_json_script(SCRIPT, mode, drop=("XLA_NO_SPECIAL_SCALARS", "PJRT_DEVICE"))


def test_after_epoch_1_only_an_epochs_first_step_compiles_and_not_with_the_variable_alone():
    course, control = _run("course"), _run("variable-only")
    last = course["steps"] - 1
    assert last in course["factor_one_steps"] and last not in course["epoch_first_steps"], course
    assert set(course["compiled_after_epoch_1"]) <= set(course["epoch_first_steps"]), course
    assert last in control["compiled_after_epoch_1"], f"the control run's last step did not compile: {control}"

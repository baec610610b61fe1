"""Notebook 05 on the `tpu` profile's schedule compiles only in epoch 1 (XLA:CPU, a tiny BERT, ``schedule_run.py``
in a process of its own): the last step's ``1 - lr * 0.01`` is 1.0 in float32 and runs epoch 1's graph, because the
training function makes every scalar a graph input (`tpu_helpers.xla_torch.scalars`). The control run keeps
``XLA_NO_SPECIAL_SCALARS=1`` (what `use_framework("torch")` sets) without that call: epoch 3 compiles a graph, so
the variable alone does not do it (torch_xla 2.9 caches scalar inputs by value). About 80 s for both runs."""
import os
import sys
from pathlib import Path

import pytest
from course_testing import run_json_script

pytest.importorskip("torch_xla")
SCRIPT = Path(__file__).with_name("schedule_run.py")


def _run(mode: str) -> dict:
    return run_json_script(SCRIPT, mode, drop=("XLA_NO_SPECIAL_SCALARS", "PJRT_DEVICE"))


def test_the_tpu_schedule_compiles_only_in_epoch_1_and_not_with_the_variable_alone(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))  # tests/ too: course_support
    course, control = _run("course"), _run("variable-only")
    last = 3 * course["steps_per_epoch"] - 1
    # the schedule reaches the factor 1.0 in epoch 3 (step 0 is lr = 0, a graph of its own anyway)
    assert last in course["factor_one_steps"], course
    assert course["epochs"][0]["train"] >= 2, course  # the first step and the steady step, compiled in epoch 1
    assert [e["train"] + e["eval"] for e in course["epochs"][1:]] == [0, 0], course
    assert control["factor_one_steps"] == course["factor_one_steps"]
    assert control["epochs"][2]["train"] >= 1, f"the control run compiled nothing in epoch 3: {control}"

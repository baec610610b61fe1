"""Notebook 05's training function compiles only in epoch 1 on a schedule whose last steps make AdamW's
``1 - lr * 0.01`` exactly 1.0 in float32 (XLA:CPU, a tiny BERT, ``schedule_run.py`` in a process of its own): AdamW
is ``capturable`` on XLA and the learning rate a device tensor, so no float of the schedule enters the graph (issue
49's option c). Its uploads per step stay a few (they do not grow with the weight tensors, as they did when every
scalar was a graph input), and it leaves torch_xla's scalar cache on for the rest of the process. The control
(option d: a float learning rate, the cache kept) compiles one more graph in epoch 3. About 90 s for both runs."""
import os
import sys
from pathlib import Path

import pytest
from course_testing import run_json_script

pytest.importorskip("torch_xla")
SCRIPT = Path(__file__).with_name("schedule_run.py")


def _run(option: str) -> dict:
    return run_json_script(SCRIPT, option, drop=("XLA_NO_SPECIAL_SCALARS", "PJRT_DEVICE"))


def test_the_late_learning_rate_compiles_nothing_after_epoch_1_with_few_uploads_and_no_switch_left(monkeypatch):
    # not tests/ itself: its folder tests/jax would be found as a namespace package `jax` by torch_xla's profiler
    tests = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p and p != tests))
    course, control = _run("c"), _run("d")
    last = 3 * course["steps_per_epoch"] - 1
    assert last in course["factor_one_steps"], course  # the schedule reaches the factor 1.0 in epoch 3
    assert course["epochs"][0]["train"] >= 2, course  # the first step and the steady step, compiled in epoch 1
    assert [e["train"] + e["eval"] for e in course["epochs"][1:]] == [0, 0], course
    per_step = [e["uploads"] / e["steps"] for e in course["epochs"][1:]]
    assert max(per_step) < 4 < course["weight_tensors"], course  # the batch and the learning rate, not per tensor
    assert course["cache_on_after"], "the training function left torch_xla's scalar cache off"
    assert all(0 < e["loss"] < 10 for e in course["epochs"]), course  # finite: a capturable AdamW at lr 0 gives NaN
    assert control["factor_one_steps"] == course["factor_one_steps"]
    assert control["epochs"][2]["train"] >= 1, f"the control run compiled nothing in epoch 3: {control}"

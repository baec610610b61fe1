"""Notebook 05's launch for tests and benchmarks: its own cell (generated into `lesson_cells`), the report read back.

Its own module: `lesson_cells` imports `launch` (the notebook's cell calls ``launch.check_kernel``), so the function
that imports `lesson_cells` cannot live in `launch` without an import cycle.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from typing import Any, Callable, Sequence

from tpu_helpers.banking77.launch import LaunchPlan, plan_launch, prepare_environment
from tpu_helpers.banking77.run_log import TrainReport

__all__ = ["run_as_notebook"]


def run_as_notebook(function: Callable[..., Any], args: Sequence[Any], plan: LaunchPlan | None = None) -> TrainReport:
    """Notebook 05's own launch, for tests and benchmarks: the plan's environment set, then the cell tagged
    ``launch`` (`tpu_helpers.banking77.lesson_cells.launch_training`, generated from that cell) runs
    ``function(*args)`` on every replica, and the `TrainReport` the main replica wrote is read back (a forked
    replica cannot return it). ``args[3]`` is the `TrainConfig`; without a ``report_path`` a temporary one is used.
    """
    from tpu_helpers.banking77.lesson_cells import launch_training  # imports accelerate: only when called

    plan = plan or plan_launch()
    prepare_environment(plan)
    args = list(args)
    config = args[3]
    temporary = None
    if config.report_path is None:
        temporary = tempfile.mkdtemp(prefix="tpu-course-report-")
        args[3] = config = dataclasses.replace(config, report_path=os.path.join(temporary, "report.json"))
    try:
        launch_training(function, tuple(args), plan)
        return TrainReport.load(config.report_path)
    finally:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)

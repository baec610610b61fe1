"""Notebook 05's `TrainConfig` with the settings the course's `RunLog` reads, for the tests and benchmarks."""
from __future__ import annotations

from dataclasses import dataclass

from tpu_helpers.banking77.lesson_cells import TrainConfig as LessonTrainConfig


@dataclass
class TrainConfig(LessonTrainConfig):
    """The lesson's settings, and what the course's `RunLog` reads (the training function ignores these)."""

    progress: bool = True  # RunLog prints a line per epoch (main process only)
    report_path: str | None = None  # where the main process also writes the report (multi-process launches)
    replica_timeout_s: float = 300.0  # several CPU processes (gloo): how long a replica waits for the others

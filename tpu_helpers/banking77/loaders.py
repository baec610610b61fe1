"""Notebook 05's loaders with static shapes: defined in its training-function cell (lesson_cells); re-exported here."""
from tpu_helpers.banking77.lesson_cells import Loaders, make_loaders  # noqa: F401

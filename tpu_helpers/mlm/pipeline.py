"""Notebook 04's input pipeline, defined in its cells (``lesson_cells``); importable here as well."""
from tpu_helpers.mlm.lesson_cells import MaskingSpec, make_mlm_dataset, mask_tokens, shard_files  # noqa: F401

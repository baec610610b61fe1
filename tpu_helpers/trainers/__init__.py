"""Notebook 07, the high-level trainers on a TPU (lesson_cells.py: generated from its cells tagged save)."""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '07_trainers_lightning_hf'

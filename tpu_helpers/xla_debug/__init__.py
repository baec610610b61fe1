"""Notebook 06, PyTorch/XLA under the hood and the slow-run detective (lesson_cells.py: its cells tagged save)."""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '06_pytorch_xla_under_the_hood'

"""Notebook 02, the three XLA rules in PyTorch/XLA (lesson_cells.py: generated from its cells tagged save)."""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '02_xla_rules_pytorch_xla'

"""Notebook 02, the three XLA rules in PyTorch/XLA; lesson_cells.py is generated from its cells tagged save.

Framework: PyTorch/XLA only; exercise_checks.py checks the exercises, solutions.py holds the reference answers.
"""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '02_xla_rules_pytorch_xla'

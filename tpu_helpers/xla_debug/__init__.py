"""Notebook 06, PyTorch/XLA under the hood and the slow-run detective; lesson_cells.py is generated from its cells
tagged save. Framework: PyTorch/XLA only; exercise_checks.py checks the exercises, solutions.py the reference answers.
"""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '06_pytorch_xla_under_the_hood'

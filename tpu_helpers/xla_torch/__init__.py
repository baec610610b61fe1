"""Notebook 02, the three XLA rules in PyTorch/XLA: torch_xla's counters, XLA-friendly losses.

The notebook: ``notebooks/02_xla_rules_pytorch_xla.ipynb`` (its metadata names this package). Framework: PyTorch/XLA
only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '02_xla_rules_pytorch_xla'

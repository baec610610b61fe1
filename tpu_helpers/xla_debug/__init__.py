"""Notebook 06, PyTorch/XLA under the hood: the step recorder and the slow-run diagnosis.

The notebook: ``notebooks/06_pytorch_xla_under_the_hood.ipynb`` (its metadata names this package). Framework: PyTorch/XLA
only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '06_pytorch_xla_under_the_hood'

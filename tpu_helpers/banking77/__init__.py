"""Notebook 05, BERT on BANKING77 with Accelerate: the dataset, length buckets, the training function's
plumbing, the evaluation and the launch plan.

The notebook: ``notebooks/05_banking77_accelerate.ipynb`` (its metadata names this package). Framework: PyTorch/XLA
only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '05_banking77_accelerate'

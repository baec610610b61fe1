"""Notebook 00, is my runtime ready: the readiness probes (each framework in its own process).

The notebook: ``notebooks/00_is_my_runtime_ready.ipynb`` (its metadata names this package). Framework: TensorFlow
only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '00_is_my_runtime_ready'

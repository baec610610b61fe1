"""Notebook 01, the three XLA rules in TensorFlow: `jit_compile` functions whose compilations XLA
itself records, compiled-program statistics, XLA-friendly losses.

The notebook: ``notebooks/01_xla_rules_tensorflow.ipynb`` (its metadata names this package). Framework: TensorFlow
only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '01_xla_rules_tensorflow'

"""Notebook 03, TPU access in TensorFlow: the strategy for this runtime, batches per replica, the
checklist, and what makes a tf.data pipeline one a TPU can read.

The notebook: ``notebooks/03_tpu_access_tensorflow.ipynb`` (its metadata names this package). Framework: TensorFlow
only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '03_tpu_access_tensorflow'

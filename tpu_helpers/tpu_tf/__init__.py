"""Notebook 03, TPU access in TensorFlow: the strategy, batches per replica, the checklist, TPU-readable data."""
FRAMEWORK = 'tf'  # the one framework this package may import
NOTEBOOK = '03_tpu_access_tensorflow'

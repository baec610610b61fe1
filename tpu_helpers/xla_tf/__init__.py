"""Notebook 01, the three XLA rules in TensorFlow: XLA's own compile counts, compiled programs, the jit rule."""
FRAMEWORK = 'tf'  # the one framework this package may import
NOTEBOOK = '01_xla_rules_tensorflow'

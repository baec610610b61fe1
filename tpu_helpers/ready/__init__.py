"""Notebook 00, is my runtime ready: the readiness probes (each framework in its own process)."""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '00_is_my_runtime_ready'

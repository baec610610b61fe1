"""Notebook 05, BERT on BANKING77 with Accelerate: data, buckets, the training function's plumbing, the launch."""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '05_banking77_accelerate'

"""Notebook 07, the high-level trainers on a TPU: Lightning and the Hugging Face ``Trainer``.

The notebook: ``notebooks/07_trainers_lightning_hf.ipynb`` (its metadata names this package). Framework: PyTorch/XLA
only (``FRAMEWORK``). ``xla_cpu.py`` runs Lightning's own XLA accelerator on PyTorch/XLA's CPU device (no TPU
needed), ``recorder.py`` is the slow-run detective as a Lightning ``Callback``, ``replicas.py`` the multi-replica
rehearsal off a TPU (``REPLICAS=N``: Lightning's CPU DDP, each process its share of the bucketed batches, the
replicas' plans compared before each epoch, a record per process); the exercises' checks are in ``exercise_checks.py``,
the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '07_trainers_lightning_hf'

"""Notebook 07, the high-level trainers on a TPU: Lightning's XLA path off a TPU (`xla_cpu`), the slow-run detective
as a callback (`recorder`), the multi-replica rehearsal (`replicas`), and the exercises' checks and answers."""
FRAMEWORK = 'torch'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '07_trainers_lightning_hf'

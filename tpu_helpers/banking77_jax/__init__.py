"""Notebook 09, BANKING77 on JAX and Flax NNX: packed rows, a sharded training step, an Orbax checkpoint."""
FRAMEWORK = 'jax'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '09_banking77_jax_flax'
